//! PAR4 files built by hand to mean something harmful, one meaning at a
//! time (spec/parcode.md §4, issue 11): aliasing chunks, graphs that are not
//! trees, size claims, and map entries that disagree with their tables.
//! Each is rejected with its typed error, and each is kept as a regression
//! input in `tests/regressions/par4/` (checked byte for byte here; set
//! `BINFMT_BLESS=1` to rewrite them), which `hostile.rs` runs through every
//! PAR4 reading path.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::Read;
use std::time::{Duration, Instant};

use binfmt_parcode::{LazyMap, LazyVec, ParError, ParFile};
use binfmt_tests::par4::{
    Builder, ChunkRef, Entry, LZ4, NONE, bucket, bucket_map, bucket_with_offsets, bytes, lz4,
    lz4_claiming, spread, string, string_hash, u64_shard, varint, vec_container,
};

/// Checks `bytes` against the committed regression input `name` (or
/// writes it under `BINFMT_BLESS=1`) and returns them.
fn regression(name: &str, bytes: Vec<u8>) -> Vec<u8> {
    let path = binfmt_tests::workspace_root()
        .join("tests/regressions/par4")
        .join(format!("{name}.bin"));
    if std::env::var_os("BINFMT_BLESS").is_some() {
        std::fs::write(&path, &bytes).unwrap();
    } else {
        let committed = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (BINFMT_BLESS=1 writes it)", path.display()));
        assert_eq!(
            committed,
            bytes,
            "{} differs from what the test builds",
            path.display()
        );
    }
    bytes
}

fn map(bytes: &[u8]) -> (ParFile<Vec<u8>>, ()) {
    (ParFile::new(bytes.to_vec()).unwrap(), ())
}

/// The errors a map file gives for `get(key)`, `reader(key)` and `load()`.
fn map_errors(bytes: &[u8], key: &str) -> [ParError; 3] {
    let (file, ()) = map(bytes);
    let lazy: LazyMap<String, Vec<u8>> = LazyMap::new(file.root().unwrap()).unwrap();
    let get = lazy.get(key).unwrap_err();
    let reader = match lazy.reader(key) {
        Err(error) => error,
        Ok(Some(mut value)) => {
            let mut sink = Vec::new();
            ParError::from_io(value.read_to_end(&mut sink).unwrap_err())
        }
        Ok(None) => panic!("{key}: no error, no value"),
    };
    [get, reader, lazy.load().unwrap_err()]
}

// (a) Children lie before their parent (checked when reached) and share no
// bytes (checked by every operation over all of a chunk's children).

#[test]
fn a_child_after_its_parent_is_refused_when_reached() {
    let mut file = Builder::new();
    let leaf = file.chunk(b"leaf", &[], NONE);
    let parent_at = file.offset();
    let root = file.chunk(b"", &[leaf, (parent_at, 5)], NONE);
    let bytes = regression("child-after-parent", file.finish(root));
    // Checked when the child is reached (one path), and by every walk.
    let file = ParFile::new(bytes).unwrap();
    assert!(matches!(
        file.root().unwrap().child(1),
        Err(ParError::ChildNotBeforeParent { index: 1, .. })
    ));
    assert!(matches!(
        file.verify(),
        Err(ParError::ChildNotBeforeParent { index: 1, .. })
    ));
}

#[test]
fn vec_shards_all_pointing_at_one_lz4_chunk_are_refused_before_anything_is_reserved() {
    // The example: every shard of a container is one chunk whose
    // LZ4 prefix claims a large size; loading would reserve shards × claim.
    let mut file = Builder::new();
    let shard = file.chunk(&lz4(&u64_shard(&[7; 1000])), &[], LZ4);
    let shards = vec![shard; 4096];
    let root = file.chunk(&vec_container(4096 * 1000, &[(1000, 4096)]), &shards, NONE);
    let bytes = regression("vec-shards-alias-one-chunk", file.finish(root));
    // Every operation over all shards checks they are distinct first;
    // reaching one shard needs no such check.
    let file = ParFile::new(bytes).unwrap();
    let lazy: LazyVec<u64> = LazyVec::new(file.root().unwrap()).unwrap();
    assert_eq!(lazy.get(5).unwrap(), 7);
    assert!(matches!(
        lazy.load(),
        Err(ParError::ChildrenOverlap {
            first: 0,
            second: 1,
            ..
        })
    ));
    assert!(matches!(
        lazy.iter().next(),
        Some(Err(ParError::ChildrenOverlap { .. }))
    ));
    assert!(matches!(
        file.verify(),
        Err(ParError::ChunkReachedTwice { .. })
    ));
}

#[test]
fn children_sharing_some_bytes_are_refused() {
    let mut file = Builder::new();
    let a = file.chunk(&u64_shard(&[1, 2, 3]), &[], NONE);
    let b = (a.0 + 1, a.1 - 1); // the tail of `a`, itself a valid chunk
    // Out of file order, so the sorted check finds them.
    let root = file.chunk(&vec_container(6, &[(3, 2)]), &[b, a], NONE);
    let bytes = regression("children-overlap", file.finish(root));
    let file = ParFile::new(bytes).unwrap();
    assert!(matches!(
        file.root().unwrap().check_children_disjoint(),
        Err(ParError::ChildrenOverlap {
            first: 1,
            second: 0,
            ..
        })
    ));
    let lazy: LazyVec<u64> = LazyVec::new(file.root().unwrap()).unwrap();
    assert!(matches!(lazy.load(), Err(ParError::ChildrenOverlap { .. })));
    assert!(matches!(
        file.verify(),
        Err(ParError::ChunkReachedTwice { .. })
    ));
}

// (b) A walk over a subtree refuses a chunk reached twice.

#[test]
fn a_graph_of_shared_chunks_is_refused_by_every_walk_in_linear_time() {
    let bytes = regression("dag-diamonds", binfmt_tests::par4::diamonds(30));
    let file = ParFile::new(bytes.clone()).unwrap();
    let start = Instant::now();
    assert!(matches!(
        file.verify(),
        Err(ParError::ChunkReachedTwice { .. })
    ));
    assert!(start.elapsed() < Duration::from_secs(2));

    // Every chunk lists every earlier one: K chunks, K²/2 edges.
    let mut file = Builder::new();
    let mut earlier: Vec<ChunkRef> = Vec::new();
    for _ in 0..200 {
        let chunk = file.chunk(b"x", &earlier, NONE);
        earlier.push(chunk);
    }
    let root = *earlier.last().unwrap();
    let bytes = regression("dag-all-earlier", file.finish(root));
    let file = ParFile::new(bytes).unwrap();
    let start = Instant::now();
    assert!(matches!(
        file.verify(),
        Err(ParError::ChunkReachedTwice { .. })
    ));
    assert!(start.elapsed() < Duration::from_secs(2));
}

// (c) LazyVec::load reserves only what the shards' bytes hold.

#[test]
fn an_item_count_beyond_the_shards_bytes_is_not_reserved() {
    // One LZ4 shard of a few bytes, the container claiming 2^32 - 1 items.
    let mut file = Builder::new();
    let shard = file.chunk(&lz4(&u64_shard(&[5; 3])), &[], LZ4);
    let root = file.chunk(
        &vec_container(u64::from(u32::MAX), &[(u32::MAX, 1)]),
        &[shard],
        NONE,
    );
    let bytes = regression("vec-count-beyond-bytes", file.finish(root));
    let file = ParFile::new(bytes).unwrap();
    let lazy: LazyVec<u64> = LazyVec::new(file.root().unwrap()).unwrap();
    assert_eq!(lazy.len(), u64::from(u32::MAX));
    assert!(matches!(lazy.load(), Err(ParError::Payload { .. })));
}

// (e) LZ4 size claims.

#[test]
fn lz4_claims_beyond_the_block_or_short_of_it_are_refused() {
    let items: Vec<u64> = (0..100).collect();
    for (name, claim) in [
        ("lz4-claim-beyond-ratio", u32::MAX),
        ("lz4-claim-short", 10),
    ] {
        let mut file = Builder::new();
        let shard = file.chunk(&lz4_claiming(&u64_shard(&items), claim), &[], LZ4);
        let root = file.chunk(&vec_container(100, &[(100, 1)]), &[shard], NONE);
        let bytes = regression(name, file.finish(root));
        let file = ParFile::new(bytes).unwrap();
        let lazy: LazyVec<u64> = LazyVec::new(file.root().unwrap()).unwrap();
        assert!(matches!(lazy.get(3), Err(ParError::Lz4 { .. })), "{name}");
        // A short claim may already be refused for holding too few bytes
        // for the items the run table says.
        assert!(
            matches!(
                lazy.load(),
                Err(ParError::Lz4 { .. } | ParError::Payload { .. })
            ),
            "{name}"
        );
        assert!(matches!(file.verify(), Err(ParError::Lz4 { .. })), "{name}");
    }
}

// (d) Map entries against their tables.

const ENTRIES: [(&str, &[u8]); 4] = [
    ("alpha", b"first"),
    ("beta", b"second"),
    ("gamma", b""),
    ("delta", b"fourth value"),
];

#[test]
fn the_valid_map_the_hostile_ones_are_made_from_reads() {
    for id in [NONE, LZ4] {
        let bytes = bucket_map(&spread(&ENTRIES, 2), id);
        let file = ParFile::new(bytes).unwrap();
        let lazy: LazyMap<String, Vec<u8>> = LazyMap::new(file.root().unwrap()).unwrap();
        for (key, value) in ENTRIES {
            assert_eq!(lazy.get(key).unwrap().as_deref(), Some(value));
            let mut streamed = Vec::new();
            lazy.reader(key)
                .unwrap()
                .unwrap()
                .read_to_end(&mut streamed)
                .unwrap();
            assert_eq!(streamed, value);
        }
        assert_eq!(lazy.load().unwrap().len(), 4);
        file.verify().unwrap();
    }
}

#[test]
fn repeated_bucket_references_are_refused() {
    let mut file = Builder::new();
    let one = file.chunk(&bucket(&[Entry::blob("k", b"v")]), &[], NONE);
    let root = file.chunk(&2u32.to_le_bytes(), &[one, one], NONE);
    let bytes = regression("map-bucket-refs-repeated", file.finish(root));
    let file = ParFile::new(bytes).unwrap();
    let lazy: LazyMap<String, Vec<u8>> = LazyMap::new(file.root().unwrap()).unwrap();
    assert!(matches!(lazy.load(), Err(ParError::ChildrenOverlap { .. })));
    assert!(matches!(lazy.len(), Err(ParError::ChildrenOverlap { .. })));
}

#[test]
fn entry_offsets_must_start_at_zero_and_increase() {
    let entries = [Entry::blob("alpha", b"first"), Entry::blob("alpha2", b"x")];
    let first_len = entries[0].bytes.len() as u32;
    for (name, offsets) in [
        ("map-offsets-repeated", [0, 0]),
        ("map-offsets-decreasing", [first_len, 0]),
        ("map-offsets-first-not-zero", [1, first_len]),
    ] {
        let mut file = Builder::new();
        let one = file.chunk(&bucket_with_offsets(&entries, &offsets), &[], NONE);
        let root = file.chunk(&1u32.to_le_bytes(), &[one], NONE);
        let bytes = regression(name, file.finish(root));
        for error in map_errors(&bytes, "alpha") {
            assert!(
                matches!(error, ParError::EntryOutOfOrder { .. }),
                "{name}: {error}"
            );
        }
    }
}

#[test]
fn an_entry_must_decode_to_exactly_its_bytes() {
    // "alpha"'s value followed by a stray byte that belongs to no entry.
    let mut entry = Entry::blob("alpha", b"first");
    entry.bytes.push(0xEE);
    let mut file = Builder::new();
    let one = file.chunk(&bucket(&[entry]), &[], NONE);
    let root = file.chunk(&1u32.to_le_bytes(), &[one], NONE);
    let bytes = regression("map-entry-longer-than-its-value", file.finish(root));
    for error in map_errors(&bytes, "alpha") {
        assert!(
            matches!(error, ParError::EntryLength { entry: 0, .. }),
            "{error}"
        );
    }
}

#[test]
fn a_stored_hash_must_be_its_keys() {
    // "alpha" stored under the hash of "beta", in beta's bucket: a lookup of
    // "beta" finds it as a candidate and must not take it silently.
    let entry = Entry {
        hash: string_hash("beta"),
        bytes: [string("alpha"), bytes(b"first")].concat(),
    };
    let mut file = Builder::new();
    let one = file.chunk(&bucket(&[entry]), &[], NONE);
    let root = file.chunk(&1u32.to_le_bytes(), &[one], NONE);
    let bytes = regression("map-hash-mismatch", file.finish(root));
    for error in map_errors(&bytes, "beta") {
        assert!(
            matches!(error, ParError::HashMismatch { entry: 0, .. }),
            "{error}"
        );
    }
}

#[test]
fn a_key_must_be_in_its_bucket() {
    let mut buckets = spread(&ENTRIES, 2);
    // Move one entry of bucket 0 into bucket 1, hash unchanged.
    let moved = buckets[0].pop().unwrap();
    buckets[1].push(moved);
    let bytes = regression("map-key-in-wrong-bucket", bucket_map(&buckets, NONE));
    let file = ParFile::new(bytes).unwrap();
    let lazy: LazyMap<String, Vec<u8>> = LazyMap::new(file.root().unwrap()).unwrap();
    assert!(matches!(
        lazy.load(),
        Err(ParError::WrongBucket {
            index: 1,
            buckets: 2,
            expected: 0,
            ..
        })
    ));
}

#[test]
fn a_key_stored_twice_is_an_error_not_a_silent_pick() {
    for id in [NONE, LZ4] {
        let twice = vec![
            Entry::blob("alpha", b"first"),
            Entry::blob("alpha", b"other"),
        ];
        let name = if id == NONE {
            "map-duplicate-key"
        } else {
            "map-duplicate-key-lz4"
        };
        let bytes = regression(name, bucket_map(&[twice], id));
        for error in map_errors(&bytes, "alpha") {
            assert!(
                matches!(error, ParError::DuplicateKey { entry: 1, .. }),
                "{error}"
            );
        }
    }
}

#[test]
fn an_inline_map_with_a_repeated_key_is_an_error_not_an_overwrite() {
    let mut payload = varint(3);
    for (key, value) in [("a", &b"1"[..]), ("b", b"2"), ("a", b"3")] {
        payload.extend(string(key));
        payload.extend(bytes(value));
    }
    let mut file = Builder::new();
    let root = file.chunk(&payload, &[], NONE);
    let bytes = regression("map-inline-duplicate-key", file.finish(root));
    for error in map_errors(&bytes, "a") {
        assert!(
            matches!(error, ParError::DuplicateKey { entry: 2, .. }),
            "{error}"
        );
    }
}

#[test]
fn a_map_entry_claiming_a_value_longer_than_the_bucket_is_refused() {
    // The value's length prefix claims 1 GiB; the bucket holds 5 bytes.
    let entry = Entry {
        hash: string_hash("alpha"),
        bytes: [string("alpha"), varint(1 << 30), b"first".to_vec()].concat(),
    };
    let mut file = Builder::new();
    let one = file.chunk(&bucket(&[entry]), &[], NONE);
    let root = file.chunk(&1u32.to_le_bytes(), &[one], NONE);
    let bytes = regression("map-value-claims-past-its-entry", file.finish(root));
    let [get, reader, load] = map_errors(&bytes, "alpha");
    assert!(matches!(get, ParError::Payload { .. }), "{get}");
    assert!(matches!(reader, ParError::EntryLength { .. }), "{reader}");
    assert!(matches!(load, ParError::Payload { .. }), "{load}");
}
