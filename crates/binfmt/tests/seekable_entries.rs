//! Every format's entries read at any offset (`EntrySource::open_seekable`,
//! what a mount and an fsspec file ask for) give the bytes `read` gives,
//! forward, backward and from the end; past the end is refused or empty.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::{Read, Seek, SeekFrom};

const FILES: &[&str] = &[
    "generated/arcx/multi_block.spec.arcx",
    "generated/arcx/multi_block.arcx-cli.arcx",
    "reference/all_types.kas",
    "reference/map.par4",
    "reference/taridx/golden.taridx",
];

#[test]
fn every_entry_reads_the_same_at_any_offset() {
    for file in FILES {
        let source = binfmt::open(binfmt_tests::fixture(file)).unwrap();
        let entries = source.list().unwrap();
        assert!(!entries.is_empty(), "{file}");
        for entry in entries.iter().filter(|entry| entry.is_regular()) {
            let whole = source.read(&entry.name).unwrap();
            assert_eq!(whole.len() as u64, entry.size, "{file} {}", entry.name);
            let mut reader = source.open_seekable(&entry.name).unwrap();
            let len = whole.len();
            // Positions spread over the entry, visited out of order.
            let mut positions: Vec<usize> = (0..7).map(|i| i * len / 7).collect();
            positions.extend([len.saturating_sub(1), 0, len / 2]);
            positions.reverse();
            for at in positions {
                assert_eq!(reader.seek(SeekFrom::Start(at as u64)).unwrap(), at as u64);
                let mut got = vec![0u8; 64.min(len - at)];
                reader.read_exact(&mut got).unwrap();
                assert_eq!(
                    got,
                    whole[at..at + got.len()],
                    "{file} {} at {at}",
                    entry.name
                );
            }
            let back = 5.min(len);
            reader.seek(SeekFrom::End(-(back as i64))).unwrap();
            let mut tail = Vec::new();
            reader.read_to_end(&mut tail).unwrap();
            assert_eq!(tail, whole[len - back..], "{file} {}", entry.name);
            // Past the end: refused (a byte range), or end-of-file.
            if reader.seek(SeekFrom::Start(len as u64 + 10)).is_ok() {
                assert_eq!(
                    reader.read(&mut [0; 8]).unwrap(),
                    0,
                    "{file} {}",
                    entry.name
                );
            }
            assert!(reader.seek(SeekFrom::Current(-(len as i64) - 20)).is_err());
        }
    }
}
