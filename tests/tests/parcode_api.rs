//! Every entry point of the drop-in API and every derive attribute, on this
//! crate alone (interop with the reference is `parcode_dropin.rs`), and
//! hostile files through it: every failure a typed error.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::HashMap;
use std::sync::Arc;

use binfmt_parcode::{
    Compression, ParError, ParFile, Parcode, ParcodeError, ParcodeFile, ParcodeObject,
};
use binfmt_tests::par4::{Builder, NONE, string, varint};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ParcodeObject)]
struct Leaf {
    id: u32,
    #[parcode(chunkable)]
    label: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ParcodeObject)]
struct Tree {
    name: String,
    #[parcode(chunkable)]
    leaves: Vec<Leaf>,
    #[parcode(map)]
    by_name: HashMap<String, Leaf>,
    #[parcode(chunkable, compression = "lz4")]
    numbers: Vec<i64>,
    #[parcode(chunkable)]
    first: Leaf,
    #[parcode(chunkable)]
    count: u32,
    // An attribute on a plain field has no effect, as in the reference.
    #[parcode(compression = "none")]
    plain: Vec<u8>,
}

fn tree(n: usize) -> Tree {
    let leaves: Vec<Leaf> = (0..n)
        .map(|i| Leaf {
            id: i as u32,
            label: format!("leaf {i}"),
        })
        .collect();
    Tree {
        name: "oak".into(),
        by_name: leaves
            .iter()
            .map(|l| (l.label.clone(), l.clone()))
            .collect(),
        leaves,
        numbers: (0..n as i64).map(|i| i - 500).collect(),
        first: Leaf {
            id: 0,
            label: "root leaf".into(),
        },
        count: n as u32,
        plain: vec![1, 2, 3],
    }
}

#[test]
fn save_load_open_by_path_and_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let value = tree(2_500);
    let path = dir.path().join("tree.par4");
    Parcode::save(&path, &value).unwrap();
    assert_eq!(Parcode::load::<Tree, _>(&path).unwrap(), value);
    let sync = dir.path().join("sync.par4");
    Parcode::save_sync(&sync, &value).unwrap();
    // The same bytes, whichever writer.
    assert_eq!(std::fs::read(&sync).unwrap(), std::fs::read(&path).unwrap());
    let lz4 = dir.path().join("lz4.par4");
    Parcode::builder()
        .compression(true)
        .save(&lz4, &value)
        .unwrap();
    Parcode::builder()
        .compression(true)
        .save_sync(dir.path().join("lz4sync.par4"), &value)
        .unwrap();
    // Every chunk LZ4: different bytes (tiny chunks even grow), same value.
    assert_ne!(std::fs::read(&lz4).unwrap(), std::fs::read(&path).unwrap());
    assert_eq!(Parcode::load::<Tree, _>(&lz4).unwrap(), value);

    let mut written = Vec::new();
    Parcode::write(&mut written, &value).unwrap();
    let mut sync_written = Vec::new();
    Parcode::write_sync(&mut sync_written, &value).unwrap();
    assert_eq!(written, sync_written);
    assert_eq!(written, Parcode::serialize(&value).unwrap());
    assert_eq!(written, std::fs::read(&path).unwrap());
    let mut compressed = Vec::new();
    Parcode::builder()
        .compression(true)
        .write_sync(&mut compressed, &value)
        .unwrap();
    assert_eq!(compressed, std::fs::read(&lz4).unwrap());
    assert_eq!(Parcode::load_bytes::<Tree>(written.clone()).unwrap(), value);
    assert_eq!(
        Parcode::load_bytes::<Tree>(Arc::new(written.clone())).unwrap(),
        value
    );

    for file in [
        Parcode::open(&path).unwrap(),
        Parcode::open_bytes(written.clone()).unwrap(),
        ParcodeFile::from_source(
            binfmt_core::SeekSource::new(std::io::Cursor::new(written.clone()), "cursor").unwrap(),
        )
        .unwrap(),
    ] {
        assert_eq!(file.file_size(), written.len() as u64);
        assert_eq!(file.load::<Tree>().unwrap(), value);
        file.verify().unwrap();
        let lazy = file.root::<Tree>().unwrap();
        assert_eq!(lazy.name, "oak");
        assert_eq!(lazy.plain, vec![1, 2, 3]);
        assert_eq!(lazy.first.id, 0);
        assert_eq!(lazy.first.label.load().unwrap(), "root leaf");
        assert_eq!(lazy.count.load().unwrap(), 2_500);
        assert_eq!(file.load_lazy::<Tree>().unwrap().name, "oak");
        assert_eq!(file.read_lazy::<Tree>().unwrap().name, "oak");
    }
}

#[test]
fn collection_and_map_promises() {
    let value = tree(2_500);
    let file = Parcode::open_bytes(Parcode::serialize(&value).unwrap()).unwrap();
    let lazy = file.root::<Tree>().unwrap();

    let leaves = &lazy.leaves;
    assert_eq!((leaves.len(), leaves.is_empty()), (2_500, false));
    assert_eq!(leaves.get(1_999).unwrap(), value.leaves[1_999]);
    assert_eq!(
        leaves.get_lazy(42).unwrap().label.load().unwrap(),
        "leaf 42"
    );
    assert_eq!(leaves.first().unwrap().unwrap().id, 0);
    assert_eq!(leaves.last().unwrap().unwrap().id, 2_499);
    assert_eq!(
        leaves
            .iter()
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap(),
        value.leaves
    );
    let mut views = leaves.iter_lazy().unwrap();
    assert_eq!(views.size_hint(), (2_500, Some(2_500)));
    views.nth(10).unwrap().unwrap();
    assert_eq!(views.len(), 2_489);
    assert_eq!(leaves.load().unwrap(), value.leaves);
    assert!(matches!(
        leaves.get(2_500),
        Err(ParcodeError::Format(detail)) if matches!(detail.typed(), Some(ParError::IndexOutOfRange { .. }))
    ));

    let map = &lazy.by_name;
    let key = "leaf 1234".to_string();
    assert_eq!(map.get(&key).unwrap(), Some(value.by_name[&key].clone()));
    assert_eq!(
        map.get_lazy(&key).unwrap().unwrap().label.load().unwrap(),
        key
    );
    assert!(map.contains_key(&key).unwrap());
    assert!(!map.contains_key(&"nope".to_string()).unwrap());
    assert!(map.get_lazy(&"nope".to_string()).unwrap().is_none());
    assert_eq!(
        (map.len().unwrap(), map.is_empty().unwrap()),
        (2_500, false)
    );
    assert_eq!(map.load().unwrap(), value.by_name);
    assert_eq!(lazy.numbers.load().unwrap(), value.numbers);

    // An empty #[parcode(map)] map: the reference panics on `get`.
    let empty = Tree {
        by_name: HashMap::new(),
        ..tree(0)
    };
    let file = Parcode::open_bytes(Parcode::serialize(&empty).unwrap()).unwrap();
    let lazy = file.root::<Tree>().unwrap();
    assert_eq!(lazy.by_name.get(&key).unwrap(), None);
    assert!(lazy.by_name.is_empty().unwrap());
    assert!(lazy.leaves.first().unwrap().is_none());
    assert_eq!(lazy.leaves.iter_lazy().unwrap().count(), 0);
}

#[test]
fn per_field_compression_is_per_chunk() {
    let file = ParFile::new(Parcode::serialize(&tree(5_000)).unwrap()).unwrap();
    let root = file.root().unwrap();
    // leaves, by_name, numbers, first, count.
    let numbers = root.child(2).unwrap();
    assert_eq!(numbers.compression(), Compression::Lz4);
    assert!(
        numbers
            .children()
            .unwrap()
            .iter()
            .all(|shard| shard.compression() == Compression::Lz4)
    );
    assert_eq!(root.child(0).unwrap().compression(), Compression::None);
    assert_eq!(root.compression(), Compression::None);
}

#[test]
fn chunk_node_methods_and_the_inspector() {
    let numbers: Vec<u64> = (0..100_000).collect();
    let bytes = Parcode::serialize(&numbers).unwrap();
    let file = Parcode::open_bytes(bytes.clone()).unwrap();
    let root = file.root_node().unwrap();
    assert!(root.children().unwrap().len() > 1, "a vector is sharded");
    assert_eq!(root.len(), 100_000);
    assert_eq!(root.get::<u64>(77_777).unwrap(), 77_777);
    assert_eq!(root.decode_parallel_collection::<u64>().unwrap(), numbers);
    assert_eq!(root.clone().iter::<u64>().unwrap().count(), 100_000);
    assert_eq!(
        root.get_child_by_index(0).unwrap().offset(),
        root.child(0).unwrap().offset()
    );
    assert!(root.get::<u64>(100_000).is_err());

    let report = Parcode::inspect_bytes(bytes).unwrap();
    assert_eq!(report.global_version, 4);
    assert_eq!(report.root_offset, root.offset());
    let text = report.to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "=== PARCODE INSPECTOR REPORT ===");
    assert!(lines[4].starts_with("└── [Vec Container]"), "{text}");
    assert!(lines[4].contains("[Vec<100000> items across"), "{text}");
    assert!(
        lines[5].contains("[Vec Shard]") && lines[5].ends_with(" items]"),
        "{text}"
    );

    let value = tree(5_000);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tree.par4");
    Parcode::save(&path, &value).unwrap();
    let report = Parcode::inspect(&path).unwrap().to_string();
    assert!(report.contains("[Map Container]") && report.contains("[Hashtable with 2 buckets]"));
    assert!(report.contains("[Map Bucket]") && report.contains(" entries]"));
    assert!(report.contains("[Generic Container]"));
    assert_eq!(
        Parcode::open(&path).unwrap().inspect().unwrap().file_size,
        std::fs::metadata(&path).unwrap().len()
    );
}

mod renamed {
    // The derive told where the runtime is.
    use binfmt_parcode as runtime;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize, runtime::ParcodeObject)]
    #[parcode(crate = "runtime")]
    pub struct Named {
        pub id: u8,
        #[parcode(chunkable)]
        pub items: Vec<u8>,
    }
}

#[test]
fn the_crate_path_can_be_given() {
    let value = renamed::Named {
        id: 3,
        items: vec![1; 10],
    };
    let bytes = Parcode::serialize(&value).unwrap();
    assert_eq!(Parcode::load_bytes::<renamed::Named>(bytes).unwrap(), value);
}

// Hostile files through the drop-in API: typed errors, no panics.

/// A `Leaf` chunk: plain field `id`, one child (the label).
fn leaf(file: &mut Builder, id: u8, label: &str) -> (u64, u64) {
    let label = file.chunk(&string(label), &[], NONE);
    file.chunk(&varint(u64::from(id)), &[label], NONE)
}

fn load_error<T: binfmt_parcode::ParcodeNative + std::fmt::Debug>(bytes: Vec<u8>) -> ParError {
    let error = Parcode::load_bytes::<T>(bytes).unwrap_err();
    match error.typed() {
        Some(typed) => clone_kind(typed),
        None => panic!("untyped error: {error}"),
    }
}

/// The variant of a typed error, for matching (ParError is not Clone).
fn clone_kind(error: &ParError) -> ParError {
    match error {
        ParError::ChunkReachedTwice {
            offset,
            length,
            other,
        } => ParError::ChunkReachedTwice {
            offset: *offset,
            length: *length,
            other: *other,
        },
        ParError::MissingChild { field } => ParError::MissingChild { field },
        other => ParError::Encode {
            what: "other",
            why: other.to_string(),
        },
    }
}

#[derive(Debug, PartialEq, Serialize, Deserialize, ParcodeObject)]
struct Pair {
    #[parcode(chunkable)]
    a: Leaf,
    #[parcode(chunkable)]
    b: Leaf,
}

#[test]
fn a_shared_chunk_in_a_nested_load_is_refused() {
    // Two struct fields whose leaves share their label chunk.
    let mut file = Builder::new();
    let label = file.chunk(&string("shared"), &[], NONE);
    let a = file.chunk(&varint(1), &[label], NONE);
    let b = file.chunk(&varint(2), &[label], NONE);
    let root = file.chunk(b"", &[a, b], NONE);
    let error = load_error::<Pair>(file.finish(root));
    assert!(
        matches!(error, ParError::ChunkReachedTwice { .. }),
        "{error}"
    );
}

#[test]
fn missing_extra_and_trailing_pieces_are_refused() {
    // A Leaf without its label chunk.
    let mut file = Builder::new();
    let root = file.chunk(&varint(1), &[], NONE);
    let error = load_error::<Leaf>(file.finish(root));
    assert!(
        matches!(error, ParError::MissingChild { field: "label" }),
        "{error}"
    );

    // A Leaf with a stray byte after its plain field.
    let mut file = Builder::new();
    let label = file.chunk(&string("x"), &[], NONE);
    let root = file.chunk(&[1, 0xEE], &[label], NONE);
    let error = Parcode::load_bytes::<Leaf>(file.finish(root)).unwrap_err();
    assert!(
        matches!(
            error.typed(),
            Some(ParError::Payload { what: "struct", .. })
        ),
        "{error}"
    );

    // A Pair with a third child.
    let mut file = Builder::new();
    let a = leaf(&mut file, 1, "a");
    let b = leaf(&mut file, 2, "b");
    let c = leaf(&mut file, 3, "c");
    let root = file.chunk(b"", &[a, b, c], NONE);
    let error = Parcode::load_bytes::<Pair>(file.finish(root)).unwrap_err();
    assert!(
        matches!(error.typed(), Some(ParError::Payload { .. })),
        "{error}"
    );

    // Not a PAR4 file: the reference's words, then ours; typed.
    let error = Parcode::load_bytes::<Leaf>(vec![0; 100]).unwrap_err();
    match &error {
        ParcodeError::Format(detail) => {
            assert!(detail.contains("Magic"), "{detail}");
            assert!(matches!(
                detail.typed(),
                Some(ParError::Core(binfmt_core::Error::BadMagic { .. }))
            ));
        }
        other => panic!("{other}"),
    }
    assert!(matches!(
        Parcode::load::<Leaf, _>("/nonexistent/binfmt.par4"),
        Err(ParcodeError::Io(_))
    ));
}

#[test]
fn vectors_of_structs_are_checked_item_by_item() {
    // A shard of two Leaf items whose count says three.
    let mut file = Builder::new();
    let one = file.chunk(&string("one"), &[], NONE);
    let two = file.chunk(&string("two"), &[], NONE);
    let shard = file.chunk(
        &[varint(3), varint(1), varint(2)].concat(),
        &[one, two],
        NONE,
    );
    let root = file.chunk(
        &binfmt_tests::par4::vec_container(2, &[(2, 1)]),
        &[shard],
        NONE,
    );
    let bytes = file.finish(root);
    let file = Parcode::open_bytes(bytes.clone()).unwrap();
    let lazy = file.root::<Vec<Leaf>>().unwrap();
    assert!(lazy.load().is_err());
    assert!(lazy.get(1).is_err());
    assert!(lazy.get_lazy(1).is_err());
    assert!(Parcode::load_bytes::<Vec<Leaf>>(bytes).is_err());

    // A million items claimed over one shard of a few bytes: refused
    // before anything is reserved for them.
    let mut file = Builder::new();
    let shard = file.chunk(&[varint(1_000_000), varint(1)].concat(), &[], NONE);
    let root = file.chunk(
        &binfmt_tests::par4::vec_container(1_000_000, &[(1_000_000, 1)]),
        &[shard],
        NONE,
    );
    let error = Parcode::load_bytes::<Vec<Leaf>>(file.finish(root)).unwrap_err();
    assert!(
        matches!(error.typed(), Some(ParError::Payload { .. })),
        "{error}"
    );
}
