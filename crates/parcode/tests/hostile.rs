//! Corrupt PAR4 files fail with clear errors, and writing is deterministic
//! and atomic.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use binfmt_parcode::{ChunkGraph, Compression, LazyVec, Limits, ParError, ParFile};

/// A two-level file: a Vec container with 3 shards of 10 items.
fn sample(compression: Compression) -> Vec<u8> {
    let items: Vec<u64> = (0..30).collect();
    let mut graph = ChunkGraph::new();
    let root = graph.vec_with_shard_len(&items, 10).unwrap();
    graph.to_bytes(root, compression).unwrap()
}

fn header_start(bytes: &[u8]) -> usize {
    bytes.len() - 26
}

fn root_range(bytes: &[u8]) -> (usize, usize) {
    let h = header_start(bytes);
    let offset = u64::from_le_bytes(bytes[h + 6..h + 14].try_into().unwrap()) as usize;
    let length = u64::from_le_bytes(bytes[h + 14..h + 22].try_into().unwrap()) as usize;
    (offset, length)
}

#[test]
fn header_errors() {
    let good = sample(Compression::None);
    let h = header_start(&good);

    let mut bad = good.clone();
    bad[h] = b'X';
    assert!(matches!(
        ParFile::new(bad),
        Err(ParError::Core(binfmt_core::Error::BadMagic { .. }))
    ));

    let mut bad = good.clone();
    bad[h + 4] = 3;
    assert!(matches!(
        ParFile::new(bad),
        Err(ParError::Core(binfmt_core::Error::UnsupportedVersion { found, .. })) if found == "3"
    ));

    let mut bad = good.clone();
    bad[h + 6..h + 14].copy_from_slice(&(h as u64).to_le_bytes());
    assert!(matches!(
        ParFile::new(bad),
        Err(ParError::RootOutOfBounds { .. })
    ));

    let mut bad = good.clone();
    bad[h + 14..h + 22].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(matches!(
        ParFile::new(bad),
        Err(ParError::RootOutOfBounds { .. })
    ));

    for len in 0..26 {
        assert!(matches!(
            ParFile::new(&good[good.len() - len..]),
            Err(ParError::Core(binfmt_core::Error::Truncated { .. }))
        ));
    }
}

#[test]
fn child_reference_errors() {
    let good = sample(Compression::None);
    let (root, length) = root_range(&good);
    // Root trailer: 3 refs (48 bytes), count (4), meta (1).
    let refs = root + length - 53;

    // A child reference is checked when the child is reached.
    let child = |bytes: Vec<u8>, index: u32| {
        let file = ParFile::new(bytes).unwrap();
        let result = file.root().unwrap().child(index).map(|_| ());
        assert!(file.verify().is_err());
        result
    };

    let mut forward = good.clone();
    forward[refs..refs + 8].copy_from_slice(&(root as u64).to_le_bytes());
    assert!(matches!(
        child(forward, 0),
        Err(ParError::ChildNotBeforeParent { index: 0, .. })
    ));

    let mut outside = good.clone();
    outside[refs + 16..refs + 24].copy_from_slice(&(1u64 << 40).to_le_bytes());
    assert!(matches!(
        child(outside, 1),
        Err(ParError::ChildNotBeforeParent { index: 1, .. })
    ));

    let mut overlapping = good.clone();
    overlapping[refs + 8..refs + 16].copy_from_slice(&((root + 1) as u64).to_le_bytes());
    assert!(matches!(
        child(overlapping, 0),
        Err(ParError::ChildNotBeforeParent { .. })
    ));

    let mut zero = good.clone();
    zero[refs + 8..refs + 16].copy_from_slice(&0u64.to_le_bytes());
    assert!(matches!(
        child(zero, 0),
        Err(ParError::ChunkTooShort { length: 0, .. })
    ));
}

#[test]
fn child_count_larger_than_the_chunk() {
    let good = sample(Compression::None);
    let (root, length) = root_range(&good);
    let count_at = root + length - 5;
    for count in [4u32, 1000, u32::MAX] {
        let mut bad = good.clone();
        bad[count_at..count_at + 4].copy_from_slice(&count.to_le_bytes());
        let error = ParFile::new(bad).unwrap_err();
        assert!(
            matches!(error, ParError::TooManyChildren { count: c, .. } if c == count),
            "{count}: {error}"
        );
    }
}

#[test]
fn meta_byte_errors() {
    let good = sample(Compression::None);
    let (root, length) = root_range(&good);
    let meta = root + length - 1;

    let mut reserved = good.clone();
    reserved[meta] |= 0x80;
    assert!(matches!(
        ParFile::new(reserved),
        Err(ParError::ReservedBits { meta: 0x81, .. })
    ));

    let mut unknown = good.clone();
    unknown[meta] = 0b0000_0101; // children, compression id 2
    assert!(matches!(
        ParFile::new(unknown),
        Err(ParError::UnknownCompression { id: 2, .. })
    ));
}

#[test]
fn truncated_and_corrupt_lz4_payloads() {
    let good = sample(Compression::Lz4);
    let file = ParFile::new(good.clone()).unwrap();
    let first = file.root().unwrap().child(0).unwrap();
    let (start, stored) = (first.offset() as usize, first.payload_len() as usize);
    // Claim more output than the block holds.
    let mut claims_more = good.clone();
    claims_more[start..start + 4].copy_from_slice(&1_000_000u32.to_le_bytes());
    let file = ParFile::new(claims_more).unwrap();
    assert!(matches!(
        file.root().unwrap().child(0).unwrap().payload(),
        Err(ParError::Lz4 { .. })
    ));
    // A block cut short: the chunk's stored payload without its last bytes.
    let mut graph = ChunkGraph::new();
    let payload = binfmt_parcode::Compression::Lz4
        .decompress(&first.stored_payload().unwrap(), 0)
        .unwrap()
        .to_vec();
    let leaf = graph.add(payload, vec![]).unwrap();
    let bytes = graph.to_bytes(leaf, Compression::Lz4).unwrap();
    let (root, length) = root_range(&bytes);
    let mut truncated = bytes[..root + length - 1 - 3].to_vec();
    truncated.push(0b0000_0010);
    let h_len = truncated.len() as u64;
    truncated.extend_from_slice(b"PAR4");
    truncated.extend_from_slice(&4u16.to_le_bytes());
    truncated.extend_from_slice(&0u64.to_le_bytes());
    truncated.extend_from_slice(&h_len.to_le_bytes());
    truncated.extend_from_slice(&0u32.to_le_bytes());
    let file = ParFile::new(truncated).unwrap();
    assert!(matches!(
        file.root().unwrap().payload(),
        Err(ParError::Lz4 { .. })
    ));
    assert!(stored > 4);
}

#[test]
fn depth_is_limited() {
    let mut graph = ChunkGraph::new();
    let mut node = graph.add(b"leaf".to_vec(), vec![]).unwrap();
    for _ in 0..10 {
        node = graph.add(Vec::new(), vec![node]).unwrap();
    }
    let bytes = graph.to_bytes(node, Compression::None).unwrap();
    ParFile::new(bytes.clone()).unwrap().verify().unwrap();
    let limits = Limits::default().with_max_depth(5);
    let shallow = ParFile::with_limits(bytes, limits).unwrap();
    assert!(matches!(
        shallow.verify(),
        Err(ParError::TooDeep { limit: 5, .. })
    ));
}

#[test]
fn children_are_limited() {
    let mut graph = ChunkGraph::new();
    let leaves: Vec<_> = (0..10u8)
        .map(|i| graph.add(vec![i], vec![]).unwrap())
        .collect();
    let root = graph.add(Vec::new(), leaves).unwrap();
    let bytes = graph.to_bytes(root, Compression::None).unwrap();
    assert_eq!(
        ParFile::new(bytes.clone())
            .unwrap()
            .root()
            .unwrap()
            .child_count(),
        10
    );
    let limits = Limits::default().with_max_children(9);
    assert!(matches!(
        ParFile::with_limits(bytes, limits),
        Err(ParError::ChildLimit {
            count: 10,
            limit: 9,
            ..
        })
    ));
}

#[test]
fn inconsistent_vec_containers() {
    let good = sample(Compression::None);
    let (root, _) = root_range(&good);
    // The container's item count (first 8 bytes of its payload).
    let mut bad = good.clone();
    bad[root..root + 8].copy_from_slice(&31u64.to_le_bytes());
    let file = ParFile::new(bad).unwrap();
    assert!(matches!(
        LazyVec::<u64>::new(file.root().unwrap()),
        Err(ParError::Payload { .. })
    ));
    let file = ParFile::new(good).unwrap();
    let lazy = LazyVec::<u64>::new(file.root().unwrap()).unwrap();
    assert!(matches!(
        lazy.get(30),
        Err(ParError::IndexOutOfRange { index: 30, len: 30 })
    ));
}

#[test]
fn every_truncation_fails_cleanly() {
    let good = sample(Compression::Lz4);
    for len in 0..good.len() {
        if let Ok(file) = ParFile::new(&good[..len]) {
            let _ = file.verify();
            if let Ok(lazy) = LazyVec::<u64>::new(file.root().unwrap()) {
                let _ = lazy.load();
            }
        }
    }
}

#[test]
fn the_same_graph_gives_the_same_bytes_for_any_thread_count() {
    let items: Vec<String> = (0..200_000).map(|i| format!("item {i}")).collect();
    let write = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let mut graph = ChunkGraph::new();
            let root = graph.vec(&items).unwrap();
            graph.to_bytes(root, Compression::Lz4).unwrap()
        })
    };
    let one = write(1);
    assert_eq!(one, write(4));
    assert_eq!(one, write(2));
}

#[test]
fn write_file_is_atomic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.par4");
    let mut graph = ChunkGraph::new();
    let root = graph.vec(&[1u8, 2, 3]).unwrap();
    let size = graph.write_file(root, Compression::None, &path).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), size);
    assert!(
        graph
            .write_file(root, Compression::None, dir.path().join("missing/out.par4"))
            .is_err()
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}
