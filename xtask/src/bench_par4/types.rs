// The benchmark's derived types, included into `mod ours` (binfmt-parcode)
// and `mod theirs` (parcode 0.6.1) so both crates run the same definitions.

use std::collections::HashMap;

use dep::ParcodeObject;
use serde::{Deserialize, Serialize};

/// A derived struct holding a large vector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ParcodeObject)]
pub struct Series {
    pub id: u64,
    pub name: String,
    #[parcode(chunkable)]
    pub values: Vec<u64>,
}

/// A derived struct holding a bucketed map.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ParcodeObject)]
pub struct Index {
    pub version: u32,
    #[parcode(map)]
    pub entries: HashMap<String, Vec<u8>>,
}

/// Items of a vector of structs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ParcodeObject)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub id: u32,
    pub label: String,
}

/// A derived struct holding a vector of structs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ParcodeObject)]
pub struct Cloud {
    pub name: String,
    #[parcode(chunkable)]
    pub points: Vec<Point>,
}

pub fn series(values: &[u64]) -> Series {
    Series {
        id: 7,
        name: "series".into(),
        values: values.to_vec(),
    }
}

pub fn index(entries: &HashMap<String, Vec<u8>>) -> Index {
    Index {
        version: 1,
        entries: entries.clone(),
    }
}

pub fn cloud(count: usize) -> Cloud {
    Cloud {
        name: "cloud".into(),
        points: (0..count)
            .map(|i| Point {
                x: i as f64 * 0.25,
                y: -(i as f64),
                id: i as u32,
                label: format!("point {i}"),
            })
            .collect(),
    }
}
