//! Reading through a non-mapped source (a `Read + Seek` that counts what it
//! is asked for): opening an index reads its header and blocks only, a row
//! is one 32-byte read, and reading a member reads its header (with the
//! lookback window for pax and GNU records, in the same read) and its
//! payload, nothing else.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

use binfmt_core::{SeekSource, Source};
use binfmt_taridx::{Dataset, DatasetOptions, Index, IndexBuilder, KeyRule, ShardSet, TarWriter};
use binfmt_tests::counting::{Counted, Stats};

/// Shards read through counted `Read + Seek` sources.
#[derive(Debug)]
struct CountedShards(Vec<Arc<SeekSource<Counted>>>);

impl ShardSet for CountedShards {
    fn count(&self) -> usize {
        self.0.len()
    }
    fn name(&self, fid: u16) -> PathBuf {
        PathBuf::from(format!("counted-{fid}"))
    }
    fn open(&self, fid: u16) -> binfmt_taridx::Result<Arc<dyn Source>> {
        Ok(Arc::clone(&self.0[usize::from(fid)]) as Arc<dyn Source>)
    }
}

fn shard() -> Vec<u8> {
    let mut tar = TarWriter::new(Vec::new());
    for i in 0..20 {
        tar.append_bytes(&format!("s/{i:04}.jpg"), &vec![i as u8; 700])
            .unwrap();
        tar.append_bytes(&format!("s/{i:04}.cls"), b"1").unwrap();
    }
    // A long name: a pax header before the member.
    tar.append_bytes(&format!("{}/0099.txt", "d".repeat(150)), b"pax")
        .unwrap();
    tar.finish().unwrap()
}

fn counted(bytes: Vec<u8>, name: &str) -> (SeekSource<Counted>, Arc<Stats>) {
    let (reader, stats) = Counted::new(bytes);
    (SeekSource::new(reader, name).unwrap(), stats)
}

#[test]
fn each_operation_reads_only_what_it_needs() {
    let shard = shard();
    let members = binfmt_taridx::tar::scan(&shard).unwrap();
    let mut builder = IndexBuilder::new(KeyRule::Glzn);
    for member in members.clone() {
        builder.add(0, member).unwrap();
    }
    let index_bytes = builder.to_bytes().unwrap();
    let off_arr = u64::from_le_bytes(index_bytes[48..56].try_into().unwrap());

    let (source, index_stats) = counted(index_bytes.clone(), "index");
    index_stats.take();
    let index = Index::new(source).unwrap();
    // The header, then both blocks in one read.
    assert_eq!(index_stats.take(), (off_arr, 2));
    assert_eq!(index.row(7).unwrap().size.get(), 1);
    assert_eq!(index_stats.take(), (32, 1));

    let (shard_source, shard_stats) = counted(shard.clone(), "shard");
    let dataset = Dataset::new(
        index,
        CountedShards(vec![Arc::new(shard_source)]),
        DatasetOptions::new(),
    )
    .unwrap();
    // The rows, once, in one read.
    assert_eq!(index_stats.take(), (41 * 32, 1));
    shard_stats.take();

    // Member 4 (s/0002.jpg) at 2 × 2560: the previous member's header (is
    // its row's size right?), then its own header with the gap since that
    // member's end (empty here) and its payload, in one read (a window:
    // spec/taridx.md §4.2); the payload is then read from memory.
    let row = dataset.rows()[4];
    assert_eq!(row.offset.get(), 2 * 2560);
    let mut member = dataset.member(&row).unwrap();
    assert_eq!(shard_stats.take(), (512 + 512 + 700, 2));
    let mut payload = vec![0; 700];
    member.read_exact(&mut payload).unwrap();
    assert_eq!(payload, vec![2u8; 700]);
    assert_eq!(member.read(&mut [0; 8]).unwrap(), 0);
    assert_eq!(shard_stats.take(), (0, 0));
    // Read again while its shard is open: its gap and predecessor are
    // remembered as checked, so only its header (checked again) and
    // payload are read, in one read.
    assert_eq!(dataset.read(&row).unwrap(), vec![2u8; 700]);
    assert_eq!(shard_stats.take(), (512 + 700, 1));

    // The pax-named member: found by its real name through its key's rows
    // only (the previous member's header, then its own header with the
    // gap before it: empty, the name fits the ustar prefix), then read.
    let name = format!("{}/0099.txt", "d".repeat(150));
    let row = dataset.find(&name).unwrap().unwrap();
    assert_eq!(shard_stats.take(), (512 + 512, 2));
    assert_eq!(dataset.read(&row).unwrap(), b"pax");
    // Its check was remembered by `find`: its header and payload, one read.
    assert_eq!(shard_stats.take(), (512 + 3, 1));
    // Nothing read opening a dataset's shards before a row needs them.
    assert_eq!(index_stats.take(), (0, 0));
}
