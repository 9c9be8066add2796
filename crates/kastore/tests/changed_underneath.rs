//! A file truncated after it was opened: every read through a source that
//! does not map (`FileSource`, what the CLI uses) is an error, never
//! `SIGBUS`. The truncation happens between open and read, so the test is
//! deterministic; run against a mapped source, the same reads would kill
//! the test process.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Read;
use std::path::Path;

use binfmt_core::FileSource;
use binfmt_kastore::npy::NpyFile;
use binfmt_kastore::{Store, Writer};

fn store_file(dir: &Path) -> std::path::PathBuf {
    let mut writer = Writer::new();
    writer
        .insert("big", (0..200_000u64).collect::<Vec<_>>())
        .unwrap();
    writer.insert("small", vec![1u8, 2, 3]).unwrap();
    let path = dir.join("store.kas");
    writer.write_file(&path).unwrap();
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

#[test]
fn arrays_of_a_store_cut_short_underneath_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = store_file(dir.path());
    let store = Store::new(FileSource::open(&path).unwrap()).unwrap();
    truncate(&path, 65_536);
    let big = store.get("big").unwrap();
    assert!(big.values::<u64>().is_err());
    assert!(big.le_bytes().is_err());
    let mut sink = Vec::new();
    assert!(big.reader().unwrap().read_to_end(&mut sink).is_err());
    let pieces: Vec<_> = big.pieces::<u64>(1000).unwrap().collect();
    assert!(
        pieces.first().unwrap().is_ok(),
        "the first piece lies before the cut"
    );
    let error = pieces.last().unwrap().as_ref().unwrap_err().to_string();
    assert!(error.contains("store.kas"), "{error}");
    // What lies before the cut still reads; nothing after the error.
    assert!(pieces.len() < 200);
    truncate(&path, 0);
    assert!(store.get("small").unwrap().values::<u8>().is_err());
}

#[test]
fn appending_to_a_store_cut_short_underneath_fails_the_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = store_file(dir.path());
    let store = Store::new(FileSource::open(&path).unwrap()).unwrap();
    let mut writer = Writer::with_path_keys();
    writer.append_store(&store).unwrap();
    writer.insert("more", vec![9u16]).unwrap();
    truncate(&path, 1000);
    let out = dir.path().join("out.kas");
    let error = writer.write_file(&out).unwrap_err().to_string();
    assert!(error.contains("\"big\""), "{error}");
    assert!(!out.exists());
}

#[test]
fn npy_files_cut_short_underneath_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mut header = "{'descr': '>i4', 'fortran_order': False, 'shape': (100000,), }".to_owned();
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&u16::try_from(header.len()).unwrap().to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    let values: Vec<i32> = (0..100_000).collect();
    bytes.extend(values.iter().flat_map(|v| v.to_be_bytes()));
    let path = dir.path().join("a.npy");
    std::fs::write(&path, &bytes).unwrap();

    // Whole, big-endian values come back little-endian.
    let (_, read) = binfmt_kastore::npy::read(&path).unwrap();
    assert_eq!(read.len(), 400_000);
    assert_eq!(&read[4..8], &1i32.to_le_bytes());

    let npy = NpyFile::open(&path).unwrap();
    truncate(&path, 1000);
    let mut sink = Vec::new();
    assert!(npy.reader().unwrap().read_to_end(&mut sink).is_err());
}
