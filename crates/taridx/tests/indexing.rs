//! Indexing tar shards: byte-identical to the reference indexer's golden
//! files, rows field by field against Python's tarfile, the same bytes for
//! any thread count, and corrupt shards refused with nothing written.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::{Path, PathBuf};
use std::process::Command;

use binfmt_taridx::tar::TarProblem;
use binfmt_taridx::{
    Dataset, Index, IndexOptions, KeyRule, ShardFiles, TaridxError, fold_shards, index_fold,
    index_shards, keyhash,
};
use binfmt_tests::{fixture, interop::python, interop::python_script};

fn copy_fold(fold: &str, to: &Path) {
    for entry in std::fs::read_dir(fixture("reference/taridx")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap();
        if name.starts_with(&format!("{fold}_")) {
            std::fs::copy(&path, to.join(name)).unwrap();
        }
    }
}

#[test]
fn flat_ustar_folds_match_the_reference_indexer_byte_for_byte() {
    for fold in ["golden", "mixed"] {
        let dir = tempfile::tempdir().unwrap();
        copy_fold(fold, dir.path());
        let written = index_fold(dir.path(), fold, IndexOptions::default(), || {}).unwrap();
        let ours = std::fs::read(written).unwrap();
        let reference = std::fs::read(fixture(&format!("reference/taridx/{fold}.taridx"))).unwrap();
        assert!(
            ours == reference,
            "{fold}: index differs from the reference indexer's"
        );
    }
}

#[test]
fn the_golden_indexes_read_and_verify() {
    let golden = Index::open(fixture("reference/taridx/golden.taridx")).unwrap();
    assert_eq!(
        golden.extensions(),
        ["jpg", "json", "cls", "seg.mask.png", "", "tar.gz"]
    );
    assert_eq!(golden.n_stems(), 8);
    assert!(golden.is_contiguous());
    let shards = fold_shards(fixture("reference/taridx"), "golden").unwrap();
    golden.verify(Some(&ShardFiles::new(shards))).unwrap();

    let mixed = Index::open(fixture("reference/taridx/mixed.taridx")).unwrap();
    assert!(!mixed.is_contiguous());
    mixed.verify(None).unwrap();
}

#[test]
fn any_thread_count_gives_the_same_bytes() {
    let shards = fold_shards(fixture("reference/taridx"), "golden").unwrap();
    let serial = index_shards(&shards, IndexOptions::new().jobs(Some(1)), || {})
        .unwrap()
        .to_bytes()
        .unwrap();
    for jobs in [2, 3, 8] {
        let parallel = index_shards(&shards, IndexOptions::new().jobs(Some(jobs)), || {})
            .unwrap()
            .to_bytes()
            .unwrap();
        assert!(parallel == serial, "jobs = {jobs}");
    }
}

/// Shards in USTAR, GNU and PAX formats, made by tarfile, with its own list
/// of regular members.
fn variety(dir: &Path) -> Option<serde_json::Value> {
    let python = python()?;
    let status = Command::new(python)
        .arg(python_script("make_shards.py"))
        .arg("variety")
        .arg(dir)
        .status()
        .unwrap();
    assert!(status.success());
    Some(serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap())
}

#[test]
fn rows_match_tarfiles_members_field_by_field() {
    let dir = tempfile::tempdir().unwrap();
    let Some(manifest) = variety(dir.path()) else {
        return;
    };
    let shard_names = ["ustar_0000.tar", "gnu_0001.tar", "pax_0002.tar"];
    let shards: Vec<PathBuf> = shard_names
        .iter()
        .map(|name| dir.path().join(name))
        .collect();
    let mut builder = index_shards(&shards, IndexOptions::default(), || {}).unwrap();
    let index = Index::new(builder.to_bytes().unwrap()).unwrap();
    index
        .verify(Some(&ShardFiles::new(shards.clone())))
        .unwrap();

    let all_rows = index.rows().unwrap();
    let mut rows = all_rows.iter();
    let mut expected_count = 0;
    for (fid, name) in shard_names.iter().enumerate() {
        for member in manifest[name].as_array().unwrap() {
            let (member_name, offset_data, size) = (
                member[0].as_str().unwrap(),
                member[1].as_u64().unwrap(),
                member[2].as_u64().unwrap(),
            );
            let row = rows
                .next()
                .unwrap_or_else(|| panic!("no row for {member_name}"));
            let split = KeyRule::Glzn.split(member_name);
            assert_eq!(usize::from(row.fid.get()), fid, "{member_name}");
            assert_eq!(
                row.offset.get() + 512,
                offset_data,
                "{member_name}: payload offset"
            );
            assert_eq!(row.size.get(), size, "{member_name}");
            assert_eq!(row.keyhash.get(), keyhash(&split.key), "{member_name}");
            assert_eq!(
                index.extensions()[usize::from(row.extid.get())],
                split.extension,
                "{member_name}"
            );
            expected_count += 1;
        }
    }
    assert!(
        rows.next().is_none(),
        "rows beyond tarfile's regular members"
    );
    assert_eq!(index.num_rows(), expected_count);
    // Directories are not rows; names come from GNU long names and pax paths.
    assert!(index.extensions().contains(&"tar.gz".to_owned()));
    assert!(index.extensions().contains(&"jpeg".to_owned()));
}

#[test]
fn payloads_through_the_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let Some(_) = variety(dir.path()) else { return };
    for (i, name) in ["ustar_0000.tar", "gnu_0001.tar", "pax_0002.tar"]
        .iter()
        .enumerate()
    {
        std::fs::rename(
            dir.path().join(name),
            dir.path().join(format!("v_{i:04}.tar")),
        )
        .unwrap();
    }
    index_fold(dir.path(), "v", IndexOptions::default(), || {}).unwrap();
    let dataset = Dataset::open_fold(dir.path(), "v").unwrap();
    dataset.verify().unwrap();
    let rows = dataset.lookup("日本");
    assert_eq!(rows.len(), 1);
    assert_eq!(dataset.extension(&rows[0]), Some("txt"));
    assert_eq!(dataset.read(&rows[0]).unwrap().len(), 12);
    assert_eq!(
        dataset.member_info(&rows[0]).unwrap().name,
        "p/café/日本.txt"
    );
    // A stem split across two shards is one sample whose rows are in both.
    let split = dataset.lookup("across");
    let fids: Vec<u16> = split.iter().map(|row| row.fid.get()).collect();
    assert_eq!(fids, [0, 1]);
    let positions: Vec<usize> = split
        .iter()
        .map(|row| dataset.rows().iter().position(|r| r == row).unwrap())
        .collect();
    assert_eq!(positions[0] + 1, positions[1], "adjacent rows: one run");
    // "empty" is a stem in shards 0 and 2 (dir/empty.txt, p/empty): two runs.
    assert!(!dataset.is_contiguous());
    let two_blocks = &dataset.lookup("two")[0];
    assert_eq!(
        dataset.member_info(two_blocks).unwrap().name,
        "dir/two.blocks.bin"
    );
    assert_eq!(dataset.lookup_verified("two").unwrap().len(), 1);
}

#[test]
fn a_corrupt_shard_fails_with_its_name_and_offset_and_leaves_no_index() {
    let dir = tempfile::tempdir().unwrap();
    copy_fold("golden", dir.path());
    let shard = dir.path().join("golden_0001.tar");
    let mut bytes = std::fs::read(&shard).unwrap();
    // The second member's header: first member is at 0 with 2 bytes of payload.
    bytes[512 + 512 + 10] ^= 0x20;
    std::fs::write(&shard, &bytes).unwrap();
    let error = index_fold(dir.path(), "golden", IndexOptions::default(), || {}).unwrap_err();
    assert!(
        matches!(&error, TaridxError::Shard { shard: s, offset: 1024, problem: TarProblem::BadChecksum } if s == &shard),
        "{error}"
    );
    assert!(
        error.to_string().contains("golden_0001.tar") && error.to_string().contains("byte 1024")
    );
    assert!(!dir.path().join("golden.taridx").exists());
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        3,
        "no temporary file left"
    );
}

#[test]
fn truncated_shards() {
    let dir = tempfile::tempdir().unwrap();
    copy_fold("golden", dir.path());
    let shard = dir.path().join("golden_0000.tar");
    let bytes = std::fs::read(&shard).unwrap();
    // Inside the first payload (700 bytes at 512): the payload runs past the end.
    std::fs::write(&shard, &bytes[..900]).unwrap();
    assert!(matches!(
        index_fold(dir.path(), "golden", IndexOptions::default(), || {}),
        Err(TaridxError::Shard {
            offset: 0,
            problem: TarProblem::PayloadPastEnd { size: 700, .. },
            ..
        })
    ));
    // Half a header block after the first member (whose padded payload ends at 1536).
    std::fs::write(&shard, &bytes[..1536 + 100]).unwrap();
    assert!(matches!(
        index_fold(dir.path(), "golden", IndexOptions::default(), || {}),
        Err(TaridxError::Shard {
            offset: 1536,
            problem: TarProblem::TruncatedHeader { available: 100 },
            ..
        })
    ));
    // Ending on a block boundary without the end-of-archive blocks is accepted.
    std::fs::write(&shard, &bytes[..1536]).unwrap();
    let path = index_fold(dir.path(), "golden", IndexOptions::default(), || {}).unwrap();
    assert_eq!(
        Index::open(path)
            .unwrap()
            .rows()
            .unwrap()
            .iter()
            .filter(|r| r.fid.get() == 0)
            .count(),
        1
    );
}
