//! PAR4 read through a source that is not in memory (a `Read + Seek` that
//! counts what it is asked for): opening reads the header and the root's
//! trailer in one request; one item, one key or one streamed value reads
//! only its chunk (trailer, tables, entry), never the rest of the file.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Read;
use std::sync::Arc;

use binfmt_core::SeekSource;
use binfmt_parcode::{
    ChunkGraph, Compression, GLOBAL_HEADER_SIZE, LazyMap, LazyVec, MapLayout, ParFile, TAIL_READ,
};
use binfmt_tests::counting::{Counted, Stats};

fn counted(bytes: Vec<u8>) -> (SeekSource<Counted>, Arc<Stats>) {
    let (reader, stats) = Counted::new(bytes);
    (SeekSource::new(reader, "counted").unwrap(), stats)
}

/// Bytes opening reads: the header and up to `TAIL_READ` bytes before it.
fn open_bytes(file_len: usize) -> u64 {
    (file_len as u64).min(GLOBAL_HEADER_SIZE as u64 + TAIL_READ)
}

#[test]
fn a_vec_item_reads_its_shard_only() {
    let items: Vec<u64> = (0..300_000).map(|i| i * 7).collect();
    let mut graph = ChunkGraph::new();
    let root = graph.vec_with_shard_len(&items, 10_000).unwrap();
    let bytes = graph.to_bytes(root, Compression::None).unwrap();
    let len = bytes.len();
    let shard_length = {
        let file = ParFile::new(bytes.clone()).unwrap();
        let range = file.root().unwrap().child_range(17).unwrap();
        range.end - range.start
    };
    assert!(shard_length > TAIL_READ);

    let (source, stats) = counted(bytes);
    let file = ParFile::new(source).unwrap();
    assert_eq!(stats.take(), (open_bytes(len), 1), "open");
    let lazy: LazyVec<u64> = LazyVec::new(file.root().unwrap()).unwrap();
    // The container's payload came with its trailer.
    assert_eq!(stats.take(), (0, 0), "container");
    assert_eq!(lazy.len(), 300_000);
    assert_eq!(lazy.get(172_345).unwrap(), 172_345 * 7);
    // The shard's last 64 bytes (its trailer), then the bytes that can
    // hold its count and items 0..=2,345 (9 bytes each at most): not the
    // rest of the shard.
    let prefix = (9 + 9 * 2_346).min(shard_length - 1);
    assert!(64 + prefix < shard_length);
    assert_eq!(stats.take(), (64 + prefix, 2), "get");
}

#[test]
fn a_map_key_and_a_streamed_value_read_their_bucket_tables_and_entry_only() {
    let mut map: HashMap<String, Vec<u8>> = (0..5_000)
        .map(|i| (format!("key/{i:05}"), vec![i as u8; 20]))
        .collect();
    let big = vec![0xAB; 3 << 20];
    map.insert("big".into(), big.clone());
    let mut graph = ChunkGraph::new();
    let root = graph.map(&map, MapLayout::Buckets).unwrap();
    let bytes = graph.to_bytes(root, Compression::None).unwrap();
    let len = bytes.len();

    let (source, stats) = counted(bytes);
    let file = ParFile::new(source).unwrap();
    assert_eq!(stats.take(), (open_bytes(len), 1), "open");
    let lazy: LazyMap<String, Vec<u8>> = LazyMap::new(file.root().unwrap()).unwrap();
    assert_eq!(lazy.bucket_count(), 2);
    assert_eq!(stats.take(), (0, 0), "container");

    // A bucket of about 2,500 entries: its tail, its header and 20 KB of
    // hashes (two reads past 2,304 entries), the 12 bytes of offsets around
    // the key's entry, then the entry; not the 10 KB offset table.
    let tables = 2_600 * 12;
    assert_eq!(
        lazy.get("key/01234").unwrap(),
        Some(vec![1234u32 as u8; 20])
    );
    let (read, requests) = stats.take();
    assert!(
        read < TAIL_READ + 8 + 2_600 * 8 + 12 + 2 * 64,
        "get read {read} bytes"
    );
    assert!(requests <= 6, "get made {requests} requests");

    // The 3 MiB value: the same lookup, then the value's bytes as read.
    let mut value = lazy.reader("big").unwrap().unwrap();
    assert_eq!(value.len(), 3 << 20);
    let (read, _) = stats.take();
    assert!(
        read < 2 * TAIL_READ + 8 + tables,
        "finding the value read {read} bytes"
    );
    let mut streamed = Vec::new();
    value.read_to_end(&mut streamed).unwrap();
    assert_eq!(streamed, big);
    assert_eq!(stats.take().0, 3 << 20, "streaming");
}

#[test]
fn payloads_from_memory_are_borrowed() {
    let items: Vec<u64> = (0..1000).collect();
    let mut graph = ChunkGraph::new();
    let root = graph.vec_with_shard_len(&items, 100).unwrap();
    let file = ParFile::new(graph.to_bytes(root, Compression::None).unwrap()).unwrap();
    let shard = file.root().unwrap().child(3).unwrap();
    assert!(matches!(shard.payload().unwrap(), Cow::Borrowed(_)));

    let (source, _) = counted(graph.to_bytes(root, Compression::None).unwrap());
    let file = ParFile::new(source).unwrap();
    let shard = file.root().unwrap().child(3).unwrap();
    assert!(matches!(shard.payload().unwrap(), Cow::Owned(_)));
    assert_eq!(
        LazyVec::<u64>::new(file.root().unwrap())
            .unwrap()
            .load()
            .unwrap(),
        items
    );
}

/// A source in a `Vec` that does not say so (so readers read by range, as
/// from a remote object), recording every read and every announced range.
#[derive(Debug, Default)]
struct Announced {
    bytes: Vec<u8>,
    announced: std::sync::Mutex<Vec<std::ops::Range<u64>>>,
    reads: std::sync::Mutex<Vec<std::ops::Range<u64>>>,
}

impl binfmt_core::Source for Announced {
    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let start = offset as usize;
        buf.copy_from_slice(&self.bytes[start..start + buf.len()]);
        self.reads
            .lock()
            .unwrap()
            .push(offset..offset + buf.len() as u64);
        Ok(())
    }

    fn name(&self) -> &std::path::Path {
        std::path::Path::new("announced")
    }

    fn will_read(&self, ranges: &[std::ops::Range<u64>]) {
        self.announced
            .lock()
            .unwrap()
            .extend(ranges.iter().cloned());
    }
}

impl Announced {
    fn take(&self) -> (Vec<std::ops::Range<u64>>, Vec<std::ops::Range<u64>>) {
        (
            std::mem::take(&mut *self.announced.lock().unwrap()),
            std::mem::take(&mut *self.reads.lock().unwrap()),
        )
    }
}

fn blob_map() -> (HashMap<String, Vec<u8>>, Vec<u8>) {
    let mut map: HashMap<String, Vec<u8>> = (0..5_000)
        .map(|i| (format!("key/{i:05}"), vec![i as u8; 200]))
        .collect();
    map.insert("big".into(), vec![0xAB; 3 << 20]);
    let mut graph = ChunkGraph::new();
    let root = graph.map(&map, MapLayout::Buckets).unwrap();
    let bytes = graph.to_bytes(root, Compression::None).unwrap();
    (map, bytes)
}

#[test]
fn a_prefetch_announces_every_byte_the_lookups_then_read_and_little_else() {
    let (map, bytes) = blob_map();
    let file_len = bytes.len() as u64;
    let file = ParFile::new(Announced {
        bytes,
        ..Default::default()
    })
    .unwrap();
    let lazy: LazyMap<String, Vec<u8>> = LazyMap::new(file.root().unwrap()).unwrap();
    file.source().take();

    let keys = ["key/00042", "key/04321", "big"];
    lazy.prefetch(keys.iter().copied());
    let (announced, prefetch_reads) = file.source().take();
    for key in keys {
        let mut value = Vec::new();
        lazy.reader(key)
            .unwrap()
            .unwrap()
            .read_to_end(&mut value)
            .unwrap();
        assert_eq!(value, map[key], "{key}");
    }
    let (_, reads) = file.source().take();
    // Every byte read, by the prefetch itself or by the lookups, was
    // announced before.
    for read in prefetch_reads.iter().chain(&reads) {
        assert!(
            announced
                .iter()
                .any(|range| range.start <= read.start && read.end <= range.end),
            "read {read:?} was not announced: {announced:?}"
        );
    }
    // What was announced: the buckets' trailers and tables and the three
    // entries, not the other 4,998 values.
    let total: u64 = announced.iter().map(|range| range.end - range.start).sum();
    assert!(
        total < (3 << 20) + 3 * (64 << 10) + 2 * TAIL_READ,
        "{total} of {file_len} bytes announced"
    );
}

#[test]
fn listing_keys_and_sizes_reads_no_values() {
    let (map, bytes) = blob_map();
    let file = ParFile::new(Announced {
        bytes,
        ..Default::default()
    })
    .unwrap();
    let lazy: LazyMap<String, Vec<u8>> = LazyMap::new(file.root().unwrap()).unwrap();
    file.source().take();
    let mut listed = lazy.value_lens().unwrap();
    listed.sort();
    let mut expected: Vec<(String, u64)> = map
        .iter()
        .map(|(key, value)| (key.clone(), value.len() as u64))
        .collect();
    expected.sort();
    assert_eq!(listed, expected);
    let (_, reads) = file.source().take();
    let read: u64 = reads.iter().map(|range| range.end - range.start).sum();
    // Tables (12 bytes an entry) and each entry's key and length prefix
    // (small entries whole): far less than the values' 4 MiB.
    assert!(
        read < 5_001 * (12 + 220) + 2 * TAIL_READ,
        "listing read {read} bytes"
    );
}
