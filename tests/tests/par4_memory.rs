//! The memory bounds spec/limits.md states for PAR4, measured with the
//! counting allocator: constant work at open, one chunk per lazy access,
//! values streamed in bounded pieces both ways, and per-entry costs within
//! a stated constant of the bytes that describe the entry.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::HashMap;
use std::io::{self, Read};

use binfmt_core::FileSource;
use binfmt_parcode::{
    BlobMapWriter, ChunkGraph, Compression, LazyMap, LazyVec, MapLayout, ParError, ParFile,
    TAIL_READ,
};
use binfmt_tests::memory::{Meter, measure};
use binfmt_tests::par4::{Builder, LZ4, NONE, lz4, u64_shard, vec_container};

#[global_allocator]
static METER: Meter = Meter;

/// The meter counts every thread: tests here run one at a time, so no
/// test's allocations land in another's measurement.
fn alone() -> std::sync::MutexGuard<'static, ()> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `len` bytes of a repeating pattern, produced as read.
struct Pattern {
    left: u64,
}

impl Read for Pattern {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(self.left as usize);
        for (i, byte) in buf[..n].iter_mut().enumerate() {
            *byte = (self.left as usize + i) as u8;
        }
        self.left -= n as u64;
        Ok(n)
    }
}

const MIB: usize = 1 << 20;

#[test]
fn a_large_value_is_written_and_read_in_bounded_pieces() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.par4");
    let size = 256 * MIB as u64;
    let mut writer = BlobMapWriter::new();
    writer.add("big", size);
    writer.add("small", 5);
    // Writing: the copy buffer and the small bucket, whatever the value's size.
    let ((), usage) = measure(|| {
        writer
            .write_file(&path, Compression::Lz4, |key| {
                Ok(Pattern {
                    left: if key == "big" { size } else { 5 },
                })
            })
            .unwrap();
    });
    assert!(usage.peak < MIB, "writing peaked at {} bytes", usage.peak);

    // Reading through pread: the bucket's tables and a key prefix, then the
    // caller's buffer.
    let (total, usage) = measure(|| {
        let file = ParFile::new(FileSource::open(&path).unwrap()).unwrap();
        let lazy: LazyMap<String, Vec<u8>> = LazyMap::new(file.root().unwrap()).unwrap();
        let mut value = lazy.reader("big").unwrap().unwrap();
        let mut buffer = vec![0; 64 << 10];
        let mut total = 0u64;
        loop {
            let n = value.read(&mut buffer).unwrap();
            if n == 0 {
                break;
            }
            total += n as u64;
        }
        total
    });
    assert_eq!(total, size);
    assert!(usage.peak < MIB, "reading peaked at {} bytes", usage.peak);
}

#[test]
fn opening_and_one_item_cost_one_chunk() {
    let _alone = alone();
    let items: Vec<u64> = (0..2_000_000).collect();
    let mut graph = ChunkGraph::new();
    let root = graph.vec_with_shard_len(&items, 20_000).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vec.par4");
    graph.write_file(root, Compression::None, &path).unwrap();

    let (file, usage) = measure(|| ParFile::new(FileSource::open(&path).unwrap()).unwrap());
    // The header and root trailer read, the path, the parsed root.
    assert!(
        usage.peak < 2 * TAIL_READ as usize + 4096,
        "open: {}",
        usage.peak
    );
    let lazy: LazyVec<u64> = LazyVec::new(file.root().unwrap()).unwrap();
    let shard_bytes = {
        // Item 1,234,567 is in shard 61.
        let range = lazy.container().child_range(61).unwrap();
        (range.end - range.start) as usize
    };
    let (item, usage) = measure(|| lazy.get(1_234_567).unwrap());
    assert_eq!(item, 1_234_567);
    assert!(
        usage.peak < shard_bytes + 2 * TAIL_READ as usize,
        "get: {} for a {shard_bytes}-byte shard",
        usage.peak
    );
}

#[test]
fn load_reserves_what_the_shards_hold_and_grows_past_claims() {
    let _alone = alone();
    // A valid LZ4 vector: the result and one decompressed shard per thread.
    let items: Vec<u64> = (0..1_000_000).map(|i| i % 100).collect();
    let mut graph = ChunkGraph::new();
    let root = graph.vec_with_shard_len(&items, 50_000).unwrap();
    let file = ParFile::new(graph.to_bytes(root, Compression::Lz4).unwrap()).unwrap();
    let lazy: LazyVec<u64> = LazyVec::new(file.root().unwrap()).unwrap();
    let (loaded, usage) = measure(|| lazy.load().unwrap());
    assert_eq!(loaded, items);
    let result = 8 * items.len();
    let threads = rayon::current_num_threads();
    assert!(
        usage.peak < result + threads * 2 * 50_000 + MIB,
        "load: {}",
        usage.peak
    );

    // 2^32 - 1 items claimed over a 3-item shard: nothing reserved by the claim.
    let mut file = Builder::new();
    let shard = file.chunk(&lz4(&u64_shard(&[5; 3])), &[], LZ4);
    let root = file.chunk(
        &vec_container(u64::from(u32::MAX), &[(u32::MAX, 1)]),
        &[shard],
        NONE,
    );
    let file = ParFile::new(file.finish(root)).unwrap();
    let lazy: LazyVec<u64> = LazyVec::new(file.root().unwrap()).unwrap();
    let (result, usage) = measure(|| lazy.load());
    assert!(matches!(result, Err(ParError::Payload { .. })));
    assert!(usage.largest < 4096, "largest allocation {}", usage.largest);

    // Distinct LZ4 shards whose prefixes claim the most LZ4 allows: the
    // reservation is bounded by 8 bytes per claimed byte, 255 × stored.
    let mut file = Builder::new();
    let shards: Vec<_> = (0..64)
        .map(|_| {
            let mut stored = lz4(&[0; 1000]);
            let block = stored.len() as u64 - 4;
            let claim = (255 * block + 16) as u32;
            stored.splice(..4, claim.to_le_bytes());
            file.chunk(&stored, &[], LZ4)
        })
        .collect();
    let stored: u64 = shards.iter().map(|(_, length)| length).sum();
    let per_shard = (255 * (shards[0].1 - 5) + 16) as u32;
    let root = file.chunk(
        &vec_container(u64::from(per_shard) * 64, &[(per_shard, 64)]),
        &shards,
        NONE,
    );
    let file = ParFile::new(file.finish(root)).unwrap();
    let lazy: LazyVec<u64> = LazyVec::new(file.root().unwrap()).unwrap();
    let (result, usage) = measure(|| lazy.load());
    assert!(result.is_err());
    assert!(
        (usage.largest as u64) <= 8 * (255 * stored + 16 * 64),
        "largest allocation {} for {stored} stored bytes",
        usage.largest
    );
}

#[test]
fn map_entries_cost_a_small_constant_times_their_bytes() {
    let _alone = alone();
    // Many tiny entries: the worst case for per-entry overhead.
    let map: HashMap<String, Vec<u8>> = (0..200_000)
        .map(|i| (format!("{i:x}"), Vec::new()))
        .collect();
    let mut graph = ChunkGraph::new();
    let root = graph.map(&map, MapLayout::Buckets).unwrap();
    let bytes = graph.to_bytes(root, Compression::None).unwrap();
    let size = bytes.len();
    let file = ParFile::new(bytes).unwrap();
    let lazy: LazyMap<String, Vec<u8>> = LazyMap::new(file.root().unwrap()).unwrap();
    let (loaded, usage) = measure(|| lazy.load().unwrap());
    assert_eq!(loaded.len(), map.len());
    // spec/limits.md: load ≤ 16 × the file's bytes.
    assert!(
        usage.peak < 16 * size,
        "load: {} for {size} bytes",
        usage.peak
    );

    // The inline layout: the map, decoded once.
    let mut graph = ChunkGraph::new();
    let root = graph.map(&map, MapLayout::Inline).unwrap();
    let bytes = graph.to_bytes(root, Compression::None).unwrap();
    let size = bytes.len();
    let file = ParFile::new(bytes).unwrap();
    let lazy: LazyMap<String, Vec<u8>> = LazyMap::new(file.root().unwrap()).unwrap();
    let (loaded, usage) = measure(|| lazy.load().unwrap());
    assert_eq!(loaded.len(), map.len());
    assert!(
        usage.peak < 16 * size,
        "inline load: {} for {size} bytes",
        usage.peak
    );
}

#[test]
fn verify_holds_one_path_and_a_record_per_chunk() {
    let _alone = alone();
    let items: Vec<u64> = (0..1_000_000).collect();
    let mut graph = ChunkGraph::new();
    let root = graph.vec_with_shard_len(&items, 100).unwrap();
    let bytes = graph.to_bytes(root, Compression::Lz4).unwrap();
    let file = ParFile::new(bytes).unwrap();
    let (summary, usage) = measure(|| file.verify().unwrap());
    assert_eq!(summary.chunks, 10_001);
    // spec/limits.md: the largest payload, plus 64 bytes per chunk.
    assert!(
        usage.peak < 64 * summary.chunks as usize + 64 * 1024,
        "verify: {}",
        usage.peak
    );
}

#[test]
fn drop_in_loads_cost_about_what_the_value_does() {
    let _alone = alone();
    use binfmt_parcode::Parcode;
    use binfmt_tests::par4::shapes::{Shelf, shelf};
    let (value, built) = measure(|| shelf(20_000));
    let bytes = Parcode::serialize(&value).unwrap();
    let file = Parcode::open_bytes(bytes).unwrap();
    let (loaded, usage) = measure(|| file.load::<Shelf>().unwrap());
    assert_eq!(loaded, value);
    // The value, plus a second copy of each map bucket's entries while they
    // are gathered, plus the walk's record.
    assert!(
        usage.peak < 3 * built.peak + MIB,
        "load: {} for a value of {}",
        usage.peak,
        built.peak
    );
    let lazy = file.root::<Shelf>().unwrap();
    let (item, usage) = measure(|| lazy.items.get_lazy(19_999).unwrap().name.load().unwrap());
    assert_eq!(item, "item 19999");
    assert!(usage.peak < 256 << 10, "get_lazy: {}", usage.peak);
}
