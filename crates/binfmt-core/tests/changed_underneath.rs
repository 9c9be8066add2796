//! A file truncated after it was opened, for each source the CLI reads
//! local files through: every read is an error, never `SIGBUS`. The file is
//! cut between open and read, so the test is deterministic. (A mapped
//! source, `ByteSource::open` or a `MapOnDemand` once mapped, would end this
//! process on the same reads: that is the caveat spec/limits.md states.)

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Read;
use std::path::Path;

use binfmt_core::{FileSource, Source, SourceExt, source::read_vec_at};

const SIZE: usize = 1 << 20;

fn file(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("data.bin");
    std::fs::write(&path, vec![7u8; SIZE]).unwrap();
    path
}

fn truncate(path: &Path, len: u64) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len)
        .unwrap();
}

/// Every way a reader asks a source for bytes, each past the cut.
fn every_read_fails(source: &dyn Source) {
    let at = (SIZE / 2) as u64;
    assert!(source.bytes_at(at, 100, "range").is_err());
    assert!(source.bytes_at(at, 200_000, "large range").is_err());
    assert!(source.region_at(at, 200_000, "region").is_err());
    assert!(source.array_at::<8>(at, "record").is_err());
    assert!(read_vec_at(source, at, 10, "vec").is_err());
    let mut sink = Vec::new();
    assert!(
        source
            .reader(0, SIZE as u64, "whole")
            .unwrap()
            .read_to_end(&mut sink)
            .is_err()
    );
    let error = source.bytes_at(at, 100, "range").unwrap_err().to_string();
    assert!(
        error.contains("data.bin") && error.contains("shorter than when it was opened"),
        "{error}"
    );
}

#[test]
fn a_file_source_cut_short_underneath_gives_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = file(dir.path());
    let source = FileSource::open(&path).unwrap();
    truncate(&path, 4096);
    every_read_fails(&source);
    // What lies before the cut still reads.
    assert_eq!(&*source.bytes_at(0, 16, "head").unwrap(), &[7; 16]);
}
