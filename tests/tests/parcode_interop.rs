//! PAR4 against the `parcode` 0.6.1 crate, both directions: files it writes
//! read lazily here; files written here load with its `Parcode::load`.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::HashMap;

use binfmt_parcode::{
    ChunkGraph, Compression, LazyMap, LazyVec, MapLayout, ParFile, StructFields, StructReader,
};
use parcode::{Parcode, ParcodeObject};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ParcodeObject)]
struct Point {
    x: f64,
    y: f64,
    label: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ParcodeObject)]
struct Meta {
    version: u32,
    #[parcode(chunkable)]
    tags: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ParcodeObject)]
struct Catalog {
    name: String,
    count: u64,
    #[parcode(chunkable)]
    ids: Vec<u64>,
    #[parcode(map)]
    index: HashMap<String, Vec<u8>>,
    #[parcode(chunkable)]
    meta: Meta,
}

/// The reference's bytes for `value`, with or without LZ4.
fn reference_bytes<T: parcode::visitor::ParcodeVisitor + Sync>(value: &T, lz4: bool) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ref.par4");
    Parcode::builder()
        .compression(lz4)
        .save(&path, value)
        .unwrap();
    std::fs::read(path).unwrap()
}

fn points(n: usize) -> Vec<Point> {
    (0..n)
        .map(|i| Point {
            x: i as f64 * 0.5,
            y: -(i as f64),
            label: format!("p{i}"),
        })
        .collect()
}

fn blobs(n: usize) -> HashMap<String, Vec<u8>> {
    (0..n)
        .map(|i| {
            (
                format!("entry/{i:06}"),
                binfmt_tests::pseudo_random_bytes(i as u64, i % 50),
            )
        })
        .collect()
}

fn catalog() -> Catalog {
    Catalog {
        name: "shelf".into(),
        count: 7,
        ids: (0..50_000u64).map(|i| i * 3).collect(),
        index: blobs(4_500),
        meta: Meta {
            version: 3,
            tags: vec!["a".into(), "béta".into()],
        },
    }
}

#[test]
fn reference_vecs_read_lazily() {
    for lz4 in [false, true] {
        for n in [0usize, 10, 2_000_000] {
            let items: Vec<u64> = (0..n as u64).map(|i| i.wrapping_mul(0x9e37_79b9)).collect();
            let file = ParFile::new(reference_bytes(&items, lz4)).unwrap();
            let lazy: LazyVec<u64> = LazyVec::new(file.root().unwrap()).unwrap();
            assert_eq!(lazy.len(), n as u64, "n={n} lz4={lz4}");
            for index in [0, n / 3, n.saturating_sub(1)] {
                if index < n {
                    assert_eq!(lazy.get(index as u64).unwrap(), items[index]);
                }
            }
            assert_eq!(lazy.load().unwrap(), items);
            assert_eq!(lazy.iter().count(), n);
            file.verify().unwrap();
        }

        let strings: Vec<String> = (0..20_000)
            .map(|i| format!("string number {i} ✓"))
            .collect();
        let file = ParFile::new(reference_bytes(&strings, lz4)).unwrap();
        let lazy: LazyVec<String> = LazyVec::new(file.root().unwrap()).unwrap();
        assert_eq!(lazy.get(12_345).unwrap(), strings[12_345]);
        assert_eq!(lazy.load().unwrap(), strings);

        let structs = points(30_000);
        let file = ParFile::new(reference_bytes(&structs, lz4)).unwrap();
        let lazy: LazyVec<Point> = LazyVec::new(file.root().unwrap()).unwrap();
        assert_eq!(lazy.get(29_999).unwrap(), structs[29_999]);
        assert_eq!(lazy.load().unwrap(), structs);
    }
}

#[test]
fn reference_maps_read_lazily() {
    for lz4 in [false, true] {
        for n in [0, 3, 20_000] {
            let map = blobs(n);
            let file = ParFile::new(reference_bytes(&map, lz4)).unwrap();
            let lazy: LazyMap<String, Vec<u8>> = LazyMap::new(file.root().unwrap()).unwrap();
            // The reference stores a map saved directly inline.
            assert!(lazy.is_inline());
            assert_eq!(lazy.len().unwrap(), n as u64);
            if n > 0 {
                assert_eq!(
                    lazy.get("entry/000002").unwrap(),
                    map.get("entry/000002").cloned()
                );
            }
            assert_eq!(lazy.get("missing").unwrap(), None);
            assert_eq!(lazy.load().unwrap(), map);
        }
    }
}

#[test]
fn reference_structs_read_lazily_field_by_field() {
    let value = catalog();
    for lz4 in [false, true] {
        let file = ParFile::new(reference_bytes(&value, lz4)).unwrap();
        let mut fields = StructReader::new(file.root().unwrap()).unwrap();
        assert_eq!(fields.field::<String>().unwrap(), "shelf");
        assert_eq!(fields.field::<u64>().unwrap(), 7);
        let ids: LazyVec<u64> = fields.vec().unwrap();
        assert_eq!(ids.len(), 50_000);
        assert_eq!(ids.get(40_000).unwrap(), 120_000);
        let index: LazyMap<String, Vec<u8>> = fields.map().unwrap();
        // #[parcode(map)] is the bucket layout: one bucket per 2000 entries.
        assert!(!index.is_inline());
        assert_eq!(
            index.get("entry/004321").unwrap(),
            value.index.get("entry/004321").cloned()
        );
        assert_eq!(index.get("entry/999999").unwrap(), None);
        assert_eq!(index.load().unwrap(), value.index);
        let mut meta = fields.nested().unwrap();
        assert_eq!(meta.field::<u32>().unwrap(), 3);
        assert_eq!(
            meta.vec::<String>().unwrap().load().unwrap(),
            value.meta.tags
        );
        file.verify().unwrap();
    }
}

fn our_bytes<'a>(
    build: impl FnOnce(&mut ChunkGraph<'a>) -> binfmt_parcode::NodeId,
    compression: Compression,
) -> Vec<u8> {
    let mut graph = ChunkGraph::new();
    let root = build(&mut graph);
    graph.to_bytes(root, compression).unwrap()
}

/// `value` in the layout the reference's derive gives `Catalog`: plain
/// fields, then the chunkable ones (a nested struct included) in order.
fn catalog_node<'a>(g: &mut ChunkGraph<'a>, value: &'a Catalog) -> binfmt_parcode::NodeId {
    let ids = g.vec(&value.ids).unwrap();
    let index = g.map(&value.index, MapLayout::Buckets).unwrap();
    let tags = g.vec(&value.meta.tags).unwrap();
    let mut meta = StructFields::new();
    meta.field(&value.meta.version).unwrap();
    let meta = meta.child(tags).finish(g).unwrap();
    let mut catalog = StructFields::new();
    catalog
        .field(&value.name)
        .unwrap()
        .field(&value.count)
        .unwrap();
    catalog
        .child(ids)
        .child(index)
        .child(meta)
        .finish(g)
        .unwrap()
}

#[test]
fn our_files_load_with_the_reference() {
    for compression in [Compression::None, Compression::Lz4] {
        for n in [0usize, 1, 300_000] {
            let items: Vec<u64> = (0..n as u64).collect();
            let bytes = our_bytes(|g| g.vec(&items).unwrap(), compression);
            assert_eq!(
                Parcode::load_bytes::<Vec<u64>>(bytes).unwrap(),
                items,
                "{compression:?} {n}"
            );
        }
        let strings: Vec<String> = (0..5_000).map(|i| format!("s{i}")).collect();
        let bytes = our_bytes(|g| g.vec(&strings).unwrap(), compression);
        assert_eq!(Parcode::load_bytes::<Vec<String>>(bytes).unwrap(), strings);
        let structs = points(10_000);
        let bytes = our_bytes(|g| g.vec(&structs).unwrap(), compression);
        assert_eq!(Parcode::load_bytes::<Vec<Point>>(bytes).unwrap(), structs);

        for layout in [MapLayout::Buckets, MapLayout::Inline] {
            for n in [0, 2, 9_000] {
                let map = blobs(n);
                let bytes = our_bytes(|g| g.map(&map, layout).unwrap(), compression);
                assert_eq!(
                    Parcode::load_bytes::<HashMap<String, Vec<u8>>>(bytes).unwrap(),
                    map,
                    "{layout:?} {n}"
                );
            }
        }
        let numbers: HashMap<u32, i64> = (0..5_000).map(|i| (i, -i64::from(i))).collect();
        let bytes = our_bytes(
            |g| g.map(&numbers, MapLayout::Buckets).unwrap(),
            compression,
        );
        assert_eq!(
            Parcode::load_bytes::<HashMap<u32, i64>>(bytes).unwrap(),
            numbers
        );

        let value = catalog();
        let bytes = our_bytes(|g| catalog_node(g, &value), compression);
        assert_eq!(Parcode::load_bytes::<Catalog>(bytes).unwrap(), value);
    }
}

#[test]
fn reference_files_written_with_its_lazy_api_agree_with_ours() {
    // The reference reads its own bucket layout lazily; ours must agree on
    // which bucket a key is in (xxh64 of the key's Hash bytes).
    let value = catalog();
    let bytes = our_bytes(|g| catalog_node(g, &value), Compression::Lz4);
    let file = Parcode::open_bytes(bytes).unwrap();
    let lazy = file.root::<Catalog>().unwrap();
    assert_eq!(
        lazy.index.get(&"entry/000777".to_string()).unwrap(),
        value.index.get("entry/000777").cloned()
    );
    assert_eq!(lazy.ids.get(49_999).unwrap(), 149_997);
}

#[test]
fn the_committed_reference_fixture_reads() {
    let file = ParFile::open(binfmt_tests::fixture("reference/map.par4")).unwrap();
    let lazy: LazyMap<String, Vec<u8>> = LazyMap::new(file.root().unwrap()).unwrap();
    assert_eq!(
        lazy.get("hello.txt").unwrap(),
        Some(b"hello, world\n".to_vec())
    );
    assert_eq!(
        lazy.get("café.txt").unwrap(),
        Some(b"unicode name\n".to_vec())
    );
    assert_eq!(lazy.len().unwrap(), 3);
}
