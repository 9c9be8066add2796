// One set of types for both crates: `tests/tests/parcode_dropin.rs`
// includes this file into `mod theirs` (with `use parcode as dep`, the
// reference) and `mod ours` (with `use binfmt_parcode as dep`), so the
// same definitions are compiled against each derive.

use std::collections::HashMap;

use dep::ParcodeObject;
use serde::{Deserialize, Serialize};

/// An enum, as a plain field (neither derive takes enums themselves).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Kind {
    Plain,
    Tagged(String),
    Sized { w: u32, h: u32 },
}

/// Items of a `Vec` without chunkable fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ParcodeObject)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub label: Option<String>,
}

/// Items of a `Vec` with chunkable fields (a plain field after them too).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ParcodeObject)]
pub struct Heavy {
    pub id: u32,
    #[parcode(chunkable)]
    pub name: String,
    #[parcode(chunkable)]
    pub data: Vec<u8>,
    pub kind: Kind,
}

/// Map values with a chunkable field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ParcodeObject)]
pub struct Profile {
    pub level: u32,
    pub score: u64,
    #[parcode(chunkable)]
    pub inventory: Vec<u32>,
}

/// A nested chunkable struct with a chunkable field of its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ParcodeObject)]
pub struct Settings {
    pub difficulty: u8,
    #[parcode(chunkable)]
    pub history: Vec<String>,
}

/// Every shape the derive produces.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ParcodeObject)]
pub struct World {
    pub id: u64,
    pub name: String,
    pub kind: Kind,
    pub note: Option<String>,
    #[parcode(chunkable)]
    pub settings: Settings,
    #[parcode(chunkable, compression = "lz4")]
    pub terrain: Vec<u8>,
    #[parcode(chunkable)]
    pub points: Vec<Point>,
    #[parcode(chunkable)]
    pub heavy: Vec<Heavy>,
    #[parcode(map)]
    pub players: HashMap<String, Profile>,
    #[parcode(map, compression = "LZ4")]
    pub scores: HashMap<u64, Point>,
    #[parcode(chunkable)]
    pub tags: HashMap<String, u32>,
    #[parcode(chunkable)]
    pub title: String,
    #[parcode(chunkable)]
    pub big: u64,
    pub small: HashMap<u8, u8>,
    pub absent: Option<Kind>,
}

/// A unit struct.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ParcodeObject)]
pub struct Nothing;

/// A field compressed with "zstd", which parcode 0.6.1 cannot write.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ParcodeObject)]
pub struct Packed {
    pub id: u32,
    #[parcode(chunkable, compression = "zstd")]
    pub blob: Vec<u8>,
}

/// A world of `n` players, points and heavy items.
pub fn world(n: usize) -> World {
    let kinds = |i: usize| match i % 3 {
        0 => Kind::Plain,
        1 => Kind::Tagged(format!("t{i}")),
        _ => Kind::Sized {
            w: i as u32,
            h: 2 * i as u32,
        },
    };
    World {
        id: 42,
        name: "Île".into(),
        kind: kinds(2),
        note: Some("hello".into()),
        settings: Settings {
            difficulty: 3,
            history: (0..n).map(|i| format!("event {i}")).collect(),
        },
        terrain: (0..n * 40).map(|i| (i % 7) as u8).collect(),
        points: (0..n)
            .map(|i| Point {
                x: i as f64 / 2.0,
                y: -(i as f64),
                label: (i % 2 == 0).then(|| format!("p{i}")),
            })
            .collect(),
        heavy: (0..n / 10)
            .map(|i| Heavy {
                id: i as u32,
                name: format!("heavy {i}"),
                data: vec![i as u8; i % 50],
                kind: kinds(i),
            })
            .collect(),
        players: (0..n)
            .map(|i| {
                (
                    format!("player{i}"),
                    Profile {
                        level: i as u32 % 60,
                        score: i as u64 * 1000,
                        inventory: (0..(i % 5) as u32).collect(),
                    },
                )
            })
            .collect(),
        scores: (0..n as u64)
            .map(|i| {
                (
                    i * 7,
                    Point {
                        x: i as f64,
                        y: 0.5,
                        label: None,
                    },
                )
            })
            .collect(),
        tags: (0..20).map(|i| (format!("tag{i}"), i)).collect(),
        title: "a chunkable string".into(),
        big: u64::MAX - 1,
        small: (0..10).map(|i| (i, i * 2)).collect(),
        absent: None,
    }
}
