//! Packing and reading ARCX archives in both dialects: round trips over
//! generated trees, determinism, corruption, and extraction safety.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use binfmt_arcx::{Archive, ArcxError, Dialect, ExtractOptions, PackOptions, pack_dir};
use binfmt_tests::pseudo_random_bytes;

const DIALECTS: [Dialect; 2] = [Dialect::Spec, Dialect::ArcxCli];

/// A tree of every shape the packer has to handle, with a small block size
/// so blocks fill up and split quickly. Returns relative path → bytes.
fn make_tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files: Vec<(String, Vec<u8>)> = vec![
        ("empty".into(), Vec::new()),
        ("one".into(), b"x".to_vec()),
        ("exactly_one_block.bin".into(), pseudo_random_bytes(1, 4096)),
        (
            "spans/many/blocks.txt".into(),
            b"compressible text line\n".repeat(3000),
        ),
        ("random.bin".into(), pseudo_random_bytes(2, 50_000)),
        ("deep/a/b/c/d/e/f/g/h/file.txt".into(), b"deep".to_vec()),
        (
            "unicode/caf\u{e9}/\u{65e5}\u{672c}.txt".into(),
            "ünïcödé ✓".as_bytes().to_vec(),
        ),
        ("a.txt".into(), b"sorts after the a/ directory".to_vec()),
        ("a/inner.txt".into(), b"inside a".to_vec()),
    ];
    files.extend((0..2000).map(|i| {
        (
            format!("tiny/{i:04}.txt"),
            format!("tiny file {i}\n").into_bytes(),
        )
    }));
    binfmt_tests::write_tree(dir, files)
}

fn options(dialect: Dialect) -> PackOptions {
    PackOptions::default()
        .dialect(dialect)
        .block_size(4096)
        .chunk_size(8192)
}

fn pack(tree: &Path, out: &Path, dialect: Dialect) -> binfmt_arcx::PackSummary {
    pack_dir(tree, out, options(dialect), |_| {}).unwrap()
}

#[test]
fn round_trips_in_both_dialects() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    let files = make_tree(&tree);
    for dialect in DIALECTS {
        let out = dir.path().join(format!("{}.arcx", dialect.name()));
        let summary = pack(&tree, &out, dialect);
        assert_eq!(summary.files, files.len() as u64);
        assert_eq!(summary.archive_size, fs::metadata(&out).unwrap().len());
        let archive = Archive::open(&out).unwrap();
        assert_eq!(archive.dialect(), dialect);
        let listed: Vec<String> = archive.files().map(|f| f.path().to_string()).collect();
        let expected: Vec<&str> = {
            // Component order: "a/inner.txt" before "a.txt".
            let mut paths: Vec<&str> = files.keys().map(String::as_str).collect();
            paths.sort_by(|a, b| a.split('/').cmp(b.split('/')));
            paths
        };
        assert_eq!(listed, expected, "{dialect:?}: sorted order");
        // A listing (no tables built) hands on the same files and totals.
        let source = binfmt_core::FileSource::open(&out).unwrap();
        let listing = binfmt_arcx::Listing::open(&source, Default::default()).unwrap();
        let mut walked = Vec::new();
        listing
            .for_each(|file| {
                walked.push((
                    file.index,
                    file.path.to_string(),
                    file.size,
                    *file.sha256,
                    file.attributes,
                ));
                Ok::<(), ArcxError>(())
            })
            .unwrap();
        let opened: Vec<_> = archive
            .files()
            .map(|f| {
                let path = f.path().to_string();
                (f.index(), path, f.size(), *f.sha256(), f.attributes())
            })
            .collect();
        assert_eq!(walked, opened, "{dialect:?}");
        let totals = listing.summary();
        assert_eq!(totals.dialect, dialect);
        assert_eq!(totals.files, files.len() as u64);
        assert_eq!(totals.bytes, archive.total_size().unwrap());
        assert_eq!(totals.blocks, archive.manifest().blocks().len() as u64);
        assert_eq!(totals.archive_size, archive.size());
        for (path, bytes) in &files {
            assert_eq!(&archive.read(path).unwrap(), bytes, "{dialect:?} {path}");
        }
        archive.verify().unwrap();

        let extracted = dir.path().join(format!("out-{}", dialect.name()));
        fs::create_dir(&extracted).unwrap();
        let summary = archive
            .extract(&extracted, ExtractOptions::default())
            .unwrap();
        assert_eq!(summary.files, files.len() as u64);
        for (path, bytes) in &files {
            assert_eq!(
                &fs::read(extracted.join(path)).unwrap(),
                bytes,
                "extracted {path}"
            );
        }
    }
}

#[test]
fn small_files_share_blocks_and_large_files_split() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    make_tree(&tree);
    let out = dir.path().join("x.arcx");
    pack(&tree, &out, Dialect::Spec);
    let archive = Archive::open(&out).unwrap();
    let manifest = archive.manifest();
    let file = |path: &str| archive.find(path).unwrap();
    // 3000 lines of 23 bytes = 69,000 bytes: 9 chunks of 8192, one block each.
    assert_eq!(file("spans/many/blocks.txt").chunk_ids().len(), 9);
    // Two tiny neighbours share a block.
    let block_of = |path: &str| file(path).chunks().next().unwrap().block;
    assert_eq!(block_of("tiny/0000.txt"), block_of("tiny/0001.txt"));
    assert!(file("empty").chunk_ids().len() <= 1);
    // Incompressible data is stored, not inflated.
    let random_block = &manifest.blocks()[block_of("random.bin") as usize];
    assert_eq!(random_block.codec, binfmt_arcx::Codec::Store);
}

#[test]
fn the_same_tree_gives_the_same_bytes_for_any_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    make_tree(&tree);
    for dialect in DIALECTS {
        let mut outputs = Vec::new();
        for jobs in [1, 3] {
            let out = dir.path().join(format!("{jobs}.arcx"));
            pack_dir(&tree, &out, options(dialect).jobs(Some(jobs)), |_| {}).unwrap();
            outputs.push(fs::read(&out).unwrap());
        }
        assert!(outputs[0] == outputs[1], "{dialect:?}");
    }
}

/// Blocks are compressed as tasks of the current rayon pool when no thread
/// count is given: a packer running on the only thread of a pool (inside
/// `install`) runs them itself while it waits, rather than waiting forever,
/// and writes the same bytes as on its own threads.
#[test]
fn a_packer_on_the_only_thread_of_a_pool_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    // More blocks than may be in flight (8 at least): the packer must wait.
    for i in 0..40 {
        fs::write(
            tree.join(format!("{i:02}.bin")),
            pseudo_random_bytes(i, 300_000),
        )
        .unwrap();
    }
    let block = PackOptions::default()
        .block_size(64 << 10)
        .chunk_size(64 << 10);
    let inside = dir.path().join("inside.arcx");
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    pool.install(|| pack_dir(&tree, &inside, block, |_| {}))
        .unwrap();
    let outside = dir.path().join("outside.arcx");
    pack_dir(&tree, &outside, block.jobs(Some(2)), |_| {}).unwrap();
    assert!(fs::read(&inside).unwrap() == fs::read(&outside).unwrap());
    Archive::open(&inside).unwrap().verify().unwrap();
}

#[cfg(unix)]
#[test]
fn special_files_are_skipped_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    fs::create_dir(&tree).unwrap();
    fs::write(tree.join("real.txt"), b"real").unwrap();
    let fifo = tree.join("fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let summary = pack(&tree, &dir.path().join("x.arcx"), Dialect::Spec);
    assert_eq!(summary.files, 1);
    assert_eq!(summary.skipped.len(), 1);
    assert_eq!(summary.skipped[0].path, fifo);
}

/// A packed archive and the offsets of its parts.
fn sample(dialect: Dialect) -> (tempfile::TempDir, PathBuf, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    fs::create_dir(&tree).unwrap();
    fs::write(tree.join("a.txt"), b"alpha ".repeat(500)).unwrap();
    fs::write(tree.join("b.bin"), pseudo_random_bytes(9, 10_000)).unwrap();
    let out = dir.path().join("x.arcx");
    pack(&tree, &out, dialect);
    let bytes = fs::read(&out).unwrap();
    (dir, out, bytes)
}

#[test]
fn a_flipped_byte_anywhere_is_detected() {
    for dialect in DIALECTS {
        let (_dir, _out, bytes) = sample(dialect);
        // Every byte of the data region, the manifest region and the footer.
        for at in (80..bytes.len()).step_by(7) {
            let mut corrupt = bytes.clone();
            corrupt[at] ^= 0x40;
            let outcome = Archive::new(corrupt).and_then(|archive| archive.verify());
            // The arcx-cli footer's flags and checksum (always 0, never
            // read by the tool) and the spec footer's reserved bytes carry
            // nothing to corrupt.
            let unused_cli_footer = dialect == Dialect::ArcxCli && at >= bytes.len() - 16;
            let spec_reserved = dialect == Dialect::Spec && at >= bytes.len() - 8;
            if unused_cli_footer || spec_reserved {
                continue;
            }
            assert!(
                outcome.is_err(),
                "{dialect:?}: flip at {at} of {} went unnoticed",
                bytes.len()
            );
        }
    }
}

#[test]
fn block_corruption_names_the_block_and_file_corruption_the_file() {
    let (_dir, _out, bytes) = sample(Dialect::Spec);
    let mut corrupt = bytes.clone();
    corrupt[90] ^= 1;
    let archive = Archive::new(corrupt).unwrap();
    // Byte 90 is in the first block written: b.bin's (small files are
    // written when their shared block is full, or at the end).
    assert!(archive.read("a.txt").is_ok());
    let error = archive.read("b.bin").unwrap_err();
    assert!(
        matches!(
            error,
            ArcxError::BlockChecksum { .. } | ArcxError::BlockData { .. }
        ),
        "{error}"
    );
    assert!(error.to_string().starts_with("block "), "{error}");
}

#[test]
fn truncations_and_header_damage() {
    for dialect in DIALECTS {
        let (_dir, _out, bytes) = sample(dialect);
        for len in [
            0,
            10,
            79,
            80,
            119,
            bytes.len() / 2,
            bytes.len() - 41,
            bytes.len() - 1,
        ] {
            assert!(
                Archive::new(bytes[..len].to_vec()).is_err(),
                "{dialect:?} truncated to {len}"
            );
        }
        let mut bad = bytes.clone();
        bad[0] = b'X';
        assert!(matches!(
            Archive::new(bad),
            Err(ArcxError::Core(binfmt_core::Error::BadMagic {
                offset: 0,
                ..
            }))
        ));
        let mut bad = bytes.clone();
        bad[8] = 1;
        assert!(matches!(
            Archive::new(bad),
            Err(ArcxError::Core(
                binfmt_core::Error::UnsupportedVersion { .. }
            ))
        ));
        let mut bad = bytes.clone();
        let footer = bad.len() - 40;
        bad[footer] = b'Y';
        assert!(matches!(
            Archive::new(bad),
            Err(ArcxError::Core(binfmt_core::Error::BadMagic { offset, .. })) if offset == footer as u64
        ));
    }
}

#[test]
fn hostile_manifest_sizes_and_offsets() {
    let (_dir, _out, bytes) = sample(Dialect::Spec);
    let footer = bytes.len() - 40;
    let mut huge = bytes.clone();
    huge[footer + 16..footer + 24].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(matches!(Archive::new(huge), Err(ArcxError::Manifest(_))));
    let mut outside = bytes.clone();
    outside[footer + 8..footer + 16].copy_from_slice(&(1u64 << 50).to_le_bytes());
    assert!(Archive::new(outside).is_err());
    let mut inside_header = bytes.clone();
    inside_header[footer + 8..footer + 16].copy_from_slice(&10u64.to_le_bytes());
    assert!(Archive::new(inside_header).is_err());
}

#[cfg(unix)]
#[test]
fn extraction_never_writes_through_symlinks() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    fs::create_dir_all(tree.join("sub")).unwrap();
    fs::write(tree.join("sub/file.txt"), b"payload").unwrap();
    fs::write(tree.join("top.txt"), b"top").unwrap();
    let out = dir.path().join("x.arcx");
    pack(&tree, &out, Dialect::Spec);
    let archive = Archive::open(&out).unwrap();

    let outside = dir.path().join("outside");
    fs::create_dir(&outside).unwrap();
    // A directory on the way is a symlink to outside: refused.
    let target = dir.path().join("t1");
    fs::create_dir(&target).unwrap();
    std::os::unix::fs::symlink(&outside, target.join("sub")).unwrap();
    assert!(matches!(
        archive.extract(&target, ExtractOptions::default()),
        Err(ArcxError::Core(binfmt_core::Error::UnsafePath { .. }))
    ));
    assert_eq!(
        fs::read_dir(&outside).unwrap().count(),
        0,
        "nothing written outside"
    );

    // The file itself is a symlink: it is replaced, not followed.
    let target = dir.path().join("t2");
    fs::create_dir(&target).unwrap();
    let victim = outside.join("victim");
    fs::write(&victim, b"untouched").unwrap();
    std::os::unix::fs::symlink(&victim, target.join("top.txt")).unwrap();
    archive.extract(&target, ExtractOptions::default()).unwrap();
    assert_eq!(fs::read(&victim).unwrap(), b"untouched");
    assert_eq!(fs::read(target.join("top.txt")).unwrap(), b"top");
    assert!(
        !fs::symlink_metadata(target.join("top.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn packing_refuses_paths_an_archive_cannot_hold() {
    let dir = tempfile::tempdir().unwrap();
    let mut packer =
        binfmt_arcx::Packer::create(dir.path().join("x.arcx"), PackOptions::default()).unwrap();
    for path in ["", "/abs", "a/../b", "a\\b", "dir/", "nul\0"] {
        assert!(
            matches!(
                packer.add(path, &mut &b"x"[..]),
                Err(ArcxError::BadInputPath { .. })
            ),
            "{path:?}"
        );
    }
    packer.add("fine", &mut &b"x"[..]).unwrap();
    assert!(matches!(
        packer.add("fine", &mut &b"again"[..]),
        Err(ArcxError::BadInputPath {
            why: "added twice",
            ..
        })
    ));
    packer.commit().unwrap();
}

#[test]
fn a_failed_pack_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let missing_tree = dir.path().join("no-such-dir");
    assert!(
        pack_dir(
            &missing_tree,
            dir.path().join("x.arcx"),
            PackOptions::default(),
            |_| {}
        )
        .is_err()
    );
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// An archive of one file named `path` (which the packer would refuse),
/// otherwise sound: written byte by byte, checksums right.
fn archive_naming(path: &str) -> Vec<u8> {
    let mut archive = binfmt_tests::build::arcx::Archive::of(&[("placeholder", b"payload")]);
    let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
    archive.strings = vec![dir.into(), name.into()];
    archive.files[0].dir = 0;
    archive.files[0].name = 1;
    archive.spec()
}

#[test]
fn extraction_refuses_hostile_names_in_a_real_archive() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    fs::create_dir(&outside).unwrap();
    let absolute = format!("{}/escaped", outside.display());
    for path in [
        "../escaped",
        "inner/../../escaped",
        absolute.as_str(),
        "nul\0byte",
        "back\\slash",
        "./escaped",
        "a//b",
    ] {
        let bytes = archive_naming(path);
        let archive = Archive::new(bytes).unwrap();
        assert_eq!(archive.files().next().unwrap().path().to_string(), path);
        // The archive is otherwise sound: its file reads and verifies.
        assert_eq!(archive.read(path).unwrap(), b"payload");
        let target = dir.path().join("target").join(format!("{:x}", path.len()));
        fs::create_dir_all(&target).unwrap();
        let refused = archive.extract(&target, ExtractOptions::default());
        assert!(
            matches!(
                refused,
                Err(ArcxError::Core(binfmt_core::Error::UnsafePath { .. }))
            ),
            "{path:?}: {refused:?}"
        );
        assert_eq!(fs::read_dir(&target).unwrap().count(), 0, "{path:?}");
        assert_eq!(fs::read_dir(&outside).unwrap().count(), 0, "{path:?}");
        assert!(!dir.path().join("escaped").exists(), "{path:?}");
    }
}

/// The arcx-cli dialect holds regular files only (`arcx` 0.3.0 extracts
/// every entry as one): a walk leaves symlinks and empty directories out
/// and reports each, and the packer refuses them; the spec dialect keeps
/// them.
#[cfg(unix)]
#[test]
fn the_arcx_cli_dialect_leaves_out_what_the_tool_would_extract_as_files() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    fs::create_dir_all(tree.join("empty")).unwrap();
    fs::write(tree.join("file.txt"), b"file").unwrap();
    std::os::unix::fs::symlink("file.txt", tree.join("link")).unwrap();
    for dialect in DIALECTS {
        let out = dir.path().join(format!("{dialect:?}.arcx"));
        let summary =
            pack_dir(&tree, &out, PackOptions::default().dialect(dialect), |_| {}).unwrap();
        let archive = Archive::open(&out).unwrap();
        let kinds: Vec<(String, &str)> = archive
            .files()
            .map(|file| (file.path().to_string(), file.attributes().kind.name()))
            .collect();
        let skipped: Vec<(PathBuf, &str)> = summary
            .skipped
            .iter()
            .map(|skipped| {
                (
                    skipped.path.strip_prefix(&tree).unwrap().into(),
                    skipped.why,
                )
            })
            .collect();
        if dialect == Dialect::ArcxCli {
            assert_eq!(kinds, [("file.txt".to_owned(), "file")]);
            assert_eq!(skipped.len(), 2, "{skipped:?}");
            assert_eq!(skipped[0].0, Path::new("empty"));
            assert!(skipped[0].1.contains("empty directory"), "{}", skipped[0].1);
            assert_eq!(skipped[1].0, Path::new("link"));
            assert!(skipped[1].1.contains("symlink"), "{}", skipped[1].1);
        } else {
            assert_eq!(
                kinds,
                [
                    ("empty".to_owned(), "directory"),
                    ("file.txt".to_owned(), "file"),
                    ("link".to_owned(), "symlink")
                ]
            );
            assert!(skipped.is_empty());
        }
    }
    let options = PackOptions::default().dialect(Dialect::ArcxCli);
    let mut packer = binfmt_arcx::Packer::new(std::io::Cursor::new(Vec::new()), options).unwrap();
    assert!(matches!(
        packer.add_directory("d", 0o755, 0),
        Err(ArcxError::BadInputPath { .. })
    ));
    let symlink = binfmt_arcx::Attributes::new(binfmt_arcx::FileKind::Symlink, 0o777, 0);
    assert!(matches!(
        packer.add_with("l", symlink, &mut &b"target"[..]),
        Err(ArcxError::BadInputPath { .. })
    ));
}
