//! The memory bounds spec/limits.md states for TARIDX, measured with a
//! counting allocator (this binary's own): opening counts block entries
//! before materialising anything, crash stems cost 8 bytes each once looked
//! up, rows are viewed in place from memory, verify stays within a constant
//! per row, and reading a member streams it through bounded buffers.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::Read;

use binfmt_core::SeekSource;
use binfmt_core::layout::{IntoBytes, U16, U32, U64};
use binfmt_taridx::format::{Header, MAGIC};
use binfmt_taridx::{
    Dataset, DatasetOptions, Index, IndexBuilder, KeyRule, Row, ShardBytes, TarWriter, tar::Member,
};
use binfmt_tests::counting::Counted;
use binfmt_tests::memory::{Meter, measure};

#[global_allocator]
static METER: Meter = Meter;

/// An index of `rows` rows and a crash block of `crash_lines` empty lines.
fn index(rows: u64, crash_lines: u32) -> Vec<u8> {
    let ext = b"jpg";
    let crash = vec![b'\n'; crash_lines.saturating_sub(1) as usize];
    let off_crash = 64 + ext.len() as u64;
    let header = Header {
        magic: MAGIC,
        major: U16::new(1),
        minor: U16::new(0),
        rec_size: U16::new(32),
        hdr_size: U16::new(64),
        n_stems: U64::new(rows),
        n_rows: U64::new(rows),
        n_ext: U32::new(1),
        n_crash: U32::new(crash_lines),
        off_crash: U64::new(off_crash),
        off_arr: U64::new(off_crash + crash.len() as u64),
        flags: 1,
        reserved: [0; 7],
    };
    let rows: Vec<Row> = (0..rows)
        .map(|i| Row {
            fid: U16::new(0),
            offset: U64::new(i * 1024),
            size: U64::new(1),
            extid: U16::new(0),
            crashid: U32::new(0),
            keyhash: U64::new(i),
        })
        .collect();
    [header.as_bytes(), ext, &crash, rows.as_bytes()].concat()
}

const MIB: usize = 1 << 20;

/// 2 million crash stems in a 2 MB block: 48 MB as strings, which the
/// reader never makes. Opening from memory allocates next to nothing;
/// through a stream it copies the block once; the lookup table is 8 bytes
/// per stem.
fn a_crash_block_costs_its_bytes_not_a_string_per_line() {
    const LINES: u32 = 2_000_000;
    let bytes = index(0, LINES);
    let block = LINES as usize - 1;

    let (index_in_memory, usage) = measure(|| Index::new(bytes.clone()).unwrap());
    // The clone of the input itself, plus a few small allocations.
    assert!(usage.peak < bytes.len() + 64 * 1024, "{usage:?}");
    let (id, usage) = measure(|| index_in_memory.crash_id("not there"));
    assert_eq!(id, 0);
    assert!(usage.peak <= 8 * LINES as usize + 64 * 1024, "{usage:?}");

    let (counted, _) = Counted::new(bytes);
    let (_, usage) = measure(|| Index::new(SeekSource::new(counted, "crash").unwrap()).unwrap());
    assert!(usage.peak < block + 64 * 1024, "{usage:?}");
    assert!(usage.peak < 8 * MIB, "{usage:?}");
}

/// Rows are viewed in place from memory; verify needs at most 112 bytes per
/// row (a sort key per row and the set of distinct sample keys).
fn rows_in_place_and_verify_per_row() {
    const ROWS: u64 = 200_000;
    let bytes = index(ROWS, 0);
    let index = Index::new(bytes).unwrap();
    let (rows, usage) = measure(|| index.rows().unwrap().len());
    assert_eq!(rows, ROWS as usize);
    assert!(usage.peak < 1024, "{usage:?}");
    let (total, usage) = measure(|| index.verify(None).unwrap());
    assert_eq!(total, ROWS);
    assert!(usage.peak <= 112 * ROWS as usize, "{usage:?}");
}

/// A member is read through bounded buffers: a 64 MiB payload read in
/// 64 KiB pieces allocates the lookback window and nothing that grows with
/// it.
fn members_stream() {
    const SIZE: u64 = 64 << 20;
    let mut tar = TarWriter::new(Vec::new());
    tar.append("big/0001.bin", SIZE, std::io::repeat(7).take(SIZE))
        .unwrap();
    let shard = tar.finish().unwrap();
    let mut builder = IndexBuilder::new(KeyRule::Glzn);
    builder
        .add(
            0,
            Member {
                offset: 0,
                size: SIZE,
                name: b"big/0001.bin".to_vec(),
            },
        )
        .unwrap();
    let index = Index::new(builder.to_bytes().unwrap()).unwrap();
    let dataset = Dataset::new(index, ShardBytes::new([shard]), DatasetOptions::new()).unwrap();
    let row = dataset.rows()[0];
    let mut buffer = vec![0u8; 64 << 10];
    let (read, usage) = measure(|| {
        let mut member = dataset.member(&row).unwrap();
        let mut read = 0u64;
        loop {
            let n = member.read(&mut buffer).unwrap();
            if n == 0 {
                break read;
            }
            read += n as u64;
        }
    });
    assert_eq!(read, SIZE);
    assert!(usage.peak < 64 * 1024, "{usage:?}");
}

/// One test, so that no other test allocates while one is measured.
#[test]
fn memory_bounds() {
    a_crash_block_costs_its_bytes_not_a_string_per_line();
    rows_in_place_and_verify_per_row();
    members_stream();
}
