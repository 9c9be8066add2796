//! TARIDX folds written by `binfmt convert`, against the reference: the
//! shards are the committed ones byte for byte, GNU/POSIX `tar -x` extracts
//! every entry unchanged, and the index is what the reference iTar indexer
//! wrote for those shards (`fixtures/reference/converted/`, made by
//! `cargo xtask reference-fixtures`).

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use xtask::fixtures::{CONVERTED_FOLDS, convert_folds};

fn fixtures() -> PathBuf {
    binfmt_tests::workspace_root().join("fixtures")
}

fn shards(dir: &Path, fold: &str) -> Vec<PathBuf> {
    binfmt_taridx::fold_shards(dir, fold).unwrap()
}

/// A row as the reference and this project agree to describe it: where the
/// member is, its size, its sample key and its extension by name (extension
/// ids depend on the order extensions were first seen).
type RowView = (u16, u64, u64, u64, u32, String);

fn rows(index: &binfmt_taridx::Index) -> Vec<RowView> {
    index
        .rows()
        .unwrap()
        .iter()
        .map(|row| {
            let extension = index.extensions()[usize::from(row.extid.get())].clone();
            (
                row.fid.get(),
                row.offset.get(),
                row.size.get(),
                row.keyhash.get(),
                row.crashid.get(),
                extension,
            )
        })
        .collect()
}

#[test]
fn converted_shards_are_the_committed_ones() {
    let out = tempfile::tempdir().unwrap();
    convert_folds(&fixtures().join("generated"), out.path()).unwrap();
    for (fold, _, _) in CONVERTED_FOLDS {
        let ours = shards(out.path(), fold);
        let committed = shards(&fixtures().join("reference/converted"), fold);
        assert_eq!(ours.len(), committed.len(), "{fold}");
        assert!(ours.len() > 1, "{fold} should span several shards");
        for (a, b) in ours.iter().zip(&committed) {
            assert!(
                std::fs::read(a).unwrap() == std::fs::read(b).unwrap(),
                "{} differs from the committed shard",
                a.display()
            );
        }
    }
}

#[test]
fn the_index_is_the_reference_indexers() {
    let out = tempfile::tempdir().unwrap();
    let indexes = convert_folds(&fixtures().join("generated"), out.path()).unwrap();
    let reference_dir = fixtures().join("reference/converted");
    for ((fold, _, _), ours) in CONVERTED_FOLDS.iter().zip(&indexes) {
        let reference_path = reference_dir.join(format!("{fold}.taridx"));
        let reference = binfmt_taridx::Index::open(&reference_path).unwrap();
        let ours_index = binfmt_taridx::Index::open(ours).unwrap();
        // The reference indexer treats every 512-byte header as a member,
        // pax extended headers included (spec/taridx.md §3); this project
        // does not. Apart from those rows, every row is the same.
        let shard_bytes: Vec<Vec<u8>> = shards(&reference_dir, fold)
            .iter()
            .map(|path| std::fs::read(path).unwrap())
            .collect();
        let is_pax_header =
            |row: &RowView| shard_bytes[usize::from(row.0)][row.1 as usize + 156] == b'x';
        let (pax_rows, member_rows): (Vec<RowView>, Vec<RowView>) =
            rows(&reference).into_iter().partition(is_pax_header);
        assert_eq!(member_rows, rows(&ours_index), "{fold}");
        if pax_rows.is_empty() {
            assert!(
                std::fs::read(ours).unwrap() == std::fs::read(&reference_path).unwrap(),
                "{fold}: without pax headers the index must be byte-identical"
            );
        }
    }
    // Both cases are covered: a fold of plain ustar members and one with
    // pax path records (non-ASCII and long names).
    let pax_folds: BTreeSet<bool> = CONVERTED_FOLDS
        .iter()
        .map(|(fold, _, _)| {
            shards(&reference_dir, fold).iter().any(|shard| {
                std::fs::read(shard)
                    .unwrap()
                    .chunks(512)
                    .any(|block| block.get(257..262) == Some(b"ustar") && block[156] == b'x')
            })
        })
        .collect();
    assert_eq!(pax_folds, BTreeSet::from([false, true]));
}

#[test]
fn tar_extracts_every_entry_unchanged() {
    let out = tempfile::tempdir().unwrap();
    convert_folds(&fixtures().join("generated"), out.path()).unwrap();
    for (fold, source, _) in CONVERTED_FOLDS {
        let extracted = out.path().join(format!("{fold}-extracted"));
        std::fs::create_dir(&extracted).unwrap();
        for shard in shards(out.path(), fold) {
            let status = Command::new("tar")
                .arg("-xf")
                .arg(&shard)
                .arg("-C")
                .arg(&extracted)
                .status()
                .expect("tar");
            assert!(status.success(), "tar -xf {}", shard.display());
        }
        let original = binfmt::open(fixtures().join("generated").join(source)).unwrap();
        let entries = original.list().unwrap();
        assert!(!entries.is_empty());
        for entry in entries {
            assert_eq!(
                std::fs::read(extracted.join(&entry.name)).unwrap(),
                original.read(&entry.name).unwrap(),
                "{fold}: {}",
                entry.name
            );
        }
    }
}
