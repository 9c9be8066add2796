//! A member's gap and predecessor are checked once while its shard is open
//! (spec/taridx.md §4.2): a row that disagrees with its tar header is still
//! refused on its first read and on every read after it, whatever was read
//! before, and a header rewritten under an open shard is still caught.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::{Seek, SeekFrom, Write};

use binfmt_taridx::{
    Dataset, DatasetOptions, Index, IndexBuilder, KeyRule, Row, RowProblem, ShardBytes, TaridxError,
};
use binfmt_tests::build::taridx::{self as builder, RawIndex, Tar};

/// Three samples of two members each, in one shard.
fn shard() -> Vec<u8> {
    let mut tar = Tar::new();
    for (key, fill) in [("a", b'A'), ("b", b'B'), ("c", b'C')] {
        tar.file(&format!("s/{key}.jpg"), &[fill; 700]);
        tar.file(&format!("s/{key}.cls"), &[fill; 3]);
    }
    tar.finish()
}

fn index_of(shard: &[u8]) -> Vec<u8> {
    let mut index = IndexBuilder::new(KeyRule::Glzn);
    for member in binfmt_taridx::tar::scan(shard).unwrap() {
        index.add(0, member).unwrap();
    }
    index.to_bytes().unwrap()
}

fn dataset(index: Vec<u8>, shard: Vec<u8>) -> Dataset<Vec<u8>> {
    Dataset::new(
        Index::new(index).unwrap(),
        ShardBytes::new([shard]),
        DatasetOptions::new(),
    )
    .unwrap()
}

fn problem(error: &TaridxError) -> Option<&RowProblem> {
    match error {
        TaridxError::RowMismatch { problem, .. } => Some(&**problem),
        _ => None,
    }
}

/// The row of the member at `offset`.
fn row_at(dataset: &Dataset<Vec<u8>>, offset: u64) -> Row {
    *dataset
        .rows()
        .iter()
        .find(|row| row.offset.get() == offset)
        .expect("a row there")
}

#[test]
fn a_lying_row_is_refused_on_every_read() {
    let shard = shard();
    let mut raw = RawIndex::parse(&index_of(&shard));
    // s/b.jpg's row (the third member) says it is s/a.jpg's key.
    let (liar, honest) = (2, 0);
    raw.rows[liar].keyhash = raw.rows[honest].keyhash;
    let liar_offset = raw.rows[liar].offset;
    let dataset = dataset(raw.bytes(), shard);
    let lying = row_at(&dataset, liar_offset);
    for round in 0..3 {
        // Every other member reads (and is remembered as checked).
        for row in dataset.rows().iter().filter(|row| **row != lying) {
            dataset.read(row).unwrap();
        }
        let error = dataset.read(&lying).expect_err("a lying key");
        assert!(
            matches!(problem(&error), Some(RowProblem::Key { name, .. }) if name == "s/b.jpg"),
            "round {round}: {error}"
        );
        let error = dataset.sample_members(&[lying]).expect_err("a lying key");
        assert!(
            matches!(problem(&error), Some(RowProblem::Key { .. })),
            "{error}"
        );
        assert!(dataset.member_info(&lying).is_err());
    }
}

#[test]
fn a_lying_size_fails_its_row_and_its_successor_on_every_read() {
    let shard = shard();
    let mut raw = RawIndex::parse(&index_of(&shard));
    // s/a.cls (3 bytes) is said to have 4: its padded end is unchanged, so
    // only the checks can tell.
    raw.rows[1].size = 4;
    let (cls, next) = (raw.rows[1].offset, raw.rows[2].offset);
    let dataset = dataset(raw.bytes(), shard);
    let (cls, next) = (row_at(&dataset, cls), row_at(&dataset, next));
    for round in 0..3 {
        let error = dataset.read(&next).expect_err("its predecessor lies");
        assert!(
            matches!(problem(&error), Some(RowProblem::Predecessor { .. })),
            "round {round}: {error}"
        );
        let error = dataset.read(&cls).expect_err("its size lies");
        assert!(
            matches!(
                problem(&error),
                Some(RowProblem::Size { member: 3, row: 4 })
            ),
            "round {round}: {error}"
        );
    }
    // The sample holding both is refused as a whole.
    assert!(dataset.sample_members(&[cls, next]).is_err());
}

#[test]
fn checked_members_read_the_same_bytes_again() {
    let shard = shard();
    let dataset = dataset(index_of(&shard), shard);
    let first: Vec<Vec<u8>> = dataset
        .rows()
        .iter()
        .map(|row| dataset.read(row).unwrap())
        .collect();
    let again: Vec<Vec<u8>> = dataset
        .sample_members(dataset.rows())
        .unwrap()
        .into_iter()
        .map(|member| member.into_vec().unwrap())
        .collect();
    assert_eq!(first, again);
    assert_eq!(first[0], vec![b'A'; 700]);
    assert_eq!(first[5], vec![b'C'; 3]);
    let names: Vec<String> = dataset
        .sample_members(dataset.rows())
        .unwrap()
        .iter()
        .map(|member| member.name().to_owned())
        .collect();
    assert_eq!(names[2], "s/b.jpg");
}

#[test]
fn a_header_rewritten_under_an_open_shard_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let shard_bytes = shard();
    let shard_path = dir.path().join("train_0000.tar");
    std::fs::write(&shard_path, &shard_bytes).unwrap();
    let index_path = dir.path().join("train.taridx");
    std::fs::write(&index_path, index_of(&shard_bytes)).unwrap();
    let dataset = Dataset::open(&index_path, std::slice::from_ref(&shard_path)).unwrap();
    for row in dataset.rows() {
        dataset.read(row).unwrap();
    }
    // Checked once: a whole sample is now read by one vectored read into
    // the caller's buffers, its headers still checked.
    let rows = &dataset.rows()[2..4];
    let (mut jpg, mut cls) = (vec![0u8; 700], vec![0u8; 3]);
    let infos = dataset
        .read_sample_into(rows, &mut [&mut jpg, &mut cls])
        .unwrap();
    assert_eq!((jpg, cls), (vec![b'B'; 700], vec![b'B'; 3]));
    assert_eq!(infos[1].name, "s/b.cls");
    assert!(
        dataset
            .read_sample_into(rows, &mut [&mut [0u8; 700], &mut [0u8; 2]])
            .is_err(),
        "a buffer of the wrong size"
    );
    // s/b.jpg's header renamed in place (a valid header of the same size):
    // its gap was checked, but its own header is checked on every read.
    let row = *dataset
        .rows()
        .iter()
        .find(|row| dataset.member_info(row).unwrap().name == "s/b.jpg")
        .unwrap();
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open(&shard_path)
        .unwrap();
    file.seek(SeekFrom::Start(row.offset.get())).unwrap();
    file.write_all(&builder::header(b"s/x.jpg", 700, b'0'))
        .unwrap();
    drop(file);
    for _ in 0..2 {
        let error = dataset.read(&row).expect_err("renamed under the reader");
        assert!(
            matches!(problem(&error), Some(RowProblem::Key { name, .. }) if name == "s/x.jpg"),
            "{error}"
        );
        assert!(dataset.sample_members(&[row]).is_err());
        let error = dataset
            .read_sample_into(&dataset.rows()[2..4], &mut [&mut [0u8; 700], &mut [0u8; 3]])
            .expect_err("renamed under the reader, read with its sample");
        assert!(
            matches!(problem(&error), Some(RowProblem::Key { .. })),
            "{error}"
        );
    }
}

/// A shard whose reads of one block fail (a server's 500 on that range).
#[derive(Debug)]
struct FailingAt {
    bytes: Vec<u8>,
    block: u64,
}

impl binfmt_core::Source for FailingAt {
    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        if (offset..offset + buf.len() as u64).contains(&self.block) {
            return Err(std::io::Error::other("the server answered 500"));
        }
        buf.copy_from_slice(&self.bytes[offset as usize..offset as usize + buf.len()]);
        Ok(())
    }
    fn name(&self) -> &std::path::Path {
        std::path::Path::new("failing.tar")
    }
}

#[derive(Debug)]
struct OneShard(std::sync::Arc<FailingAt>);

impl binfmt_taridx::ShardSet for OneShard {
    fn count(&self) -> usize {
        1
    }
    fn name(&self, _: u16) -> std::path::PathBuf {
        "failing.tar".into()
    }
    fn open(&self, _: u16) -> binfmt_taridx::Result<std::sync::Arc<dyn binfmt_core::Source>> {
        Ok(std::sync::Arc::clone(&self.0) as std::sync::Arc<dyn binfmt_core::Source>)
    }
}

/// Found from outside: a read of the predecessor's header that failed (an
/// HTTP 500) was reported as "no tar header there (checksum mismatch)",
/// telling the user to index again. The read's own error comes out.
#[test]
fn a_failed_read_of_the_predecessor_is_that_failure() {
    let bytes = shard();
    let index = Index::new(index_of(&bytes)).unwrap();
    let predecessor = index.rows().unwrap()[2].offset.get();
    let shard = OneShard(std::sync::Arc::new(FailingAt {
        bytes,
        block: predecessor,
    }));
    let dataset = Dataset::new(index, shard, DatasetOptions::new()).unwrap();
    let row = dataset.rows()[3];
    for error in [
        dataset.read(&row).unwrap_err(),
        dataset.sample_members(&[row]).unwrap_err(),
        dataset.member_info(&row).unwrap_err(),
    ] {
        assert!(problem(&error).is_none(), "{error}");
        assert!(
            error.to_string().contains("the server answered 500"),
            "{error}"
        );
    }
}

/// `touch_headers` is a hint for memory, not a check: rows of shards not
/// open, past the shard's end or of no shard at all are passed over
/// without a panic, and a lying row touched first is still refused.
#[test]
fn touching_headers_checks_nothing_and_survives_lying_rows() {
    let shard = shard();
    let mut raw = RawIndex::parse(&index_of(&shard));
    raw.rows[2].keyhash = raw.rows[0].keyhash;
    let liar_offset = raw.rows[2].offset;
    let dataset = dataset(raw.bytes(), shard);
    let lying = row_at(&dataset, liar_offset);
    let mut past_end = lying;
    past_end.offset.set(u64::MAX - 511);
    let mut no_shard = lying;
    no_shard.fid.set(9);
    // Nothing is open yet: nothing to touch, nothing opened.
    dataset.touch_headers(&[lying, past_end, no_shard]);
    assert_eq!(dataset.shards().open_count(), 0);
    let honest = row_at(&dataset, 0);
    dataset.read(&honest).unwrap();
    dataset.touch_headers(&[lying, past_end, no_shard, honest]);
    assert!(matches!(
        problem(&dataset.sample_members(&[lying]).expect_err("a lying key")),
        Some(RowProblem::Key { .. })
    ));
    assert_eq!(dataset.read(&honest).unwrap(), vec![b'A'; 700]);
}
