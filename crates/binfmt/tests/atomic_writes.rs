//! Every writer, failed or killed midway through its output: the
//! destination is the old file or absent, never partial, and a writer that
//! fails (rather than dies) leaves no temporary file behind.
//!
//! The failure is real: the writer runs under a file-size limit
//! (`prlimit --fsize`, which binds root too) smaller than its output. With
//! SIGXFSZ ignored, the write that crosses the limit fails with EFBIG, an
//! I/O error the writer must handle; with SIGXFSZ at its default, the
//! kernel kills the writer at that write.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use binfmt_tests::{pseudo_random_bytes, write_tree};

/// Output larger than this fails.
const LIMIT: u64 = 256 << 10;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Failure {
    /// SIGXFSZ ignored: the crossing write returns EFBIG.
    IoError,
    /// SIGXFSZ default: the kernel kills the writer at that write.
    Killed,
}

fn run_limited(failure: Failure, args: &[&std::ffi::OsStr]) -> Output {
    let trap = match failure {
        Failure::IoError => "trap '' XFSZ; ",
        Failure::Killed => "",
    };
    Command::new("sh")
        .arg("-c")
        .arg(format!("{trap}exec prlimit --fsize={LIMIT} \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_binfmt"))
        .args(args)
        .output()
        .expect("sh and prlimit")
}

fn names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// A tree of 1 MiB that no compressor shrinks below the limit.
fn tree(dir: &Path) -> PathBuf {
    let tree = dir.join("tree");
    write_tree(
        &tree,
        (0..4).map(|i| (format!("part{i}.bin"), pseudo_random_bytes(i, 256 << 10))),
    );
    tree
}

/// One writer: the arguments that write `out` (in a directory of its own).
struct Writer {
    what: &'static str,
    args: fn(&Path, &Path) -> Vec<std::ffi::OsString>,
    out: &'static str,
}

/// `binfmt convert` of the tree's archive (`source.arcx` beside it) to `to`.
fn convert_args(tree: &Path, out: &Path, to: &str) -> Vec<std::ffi::OsString> {
    let source = tree.parent().unwrap().join("source.arcx");
    vec![
        "convert".into(),
        source.into(),
        "-o".into(),
        out.into(),
        "--to".into(),
        to.into(),
    ]
}

fn writers() -> Vec<Writer> {
    vec![
        Writer {
            what: "arcx pack",
            args: |tree, out| {
                vec![
                    "arcx".into(),
                    "pack".into(),
                    tree.into(),
                    "-o".into(),
                    out.into(),
                ]
            },
            out: "out.arcx",
        },
        Writer {
            what: "kast pack",
            args: |tree, out| {
                vec![
                    "kast".into(),
                    "pack".into(),
                    "-o".into(),
                    out.into(),
                    "--uint8".into(),
                    format!("blob={}", tree.join("part0.bin").display()).into(),
                    "--uint8".into(),
                    format!("more={}", tree.join("part1.bin").display()).into(),
                ]
            },
            out: "out.kas",
        },
        Writer {
            what: "convert to par4",
            args: |tree, out| convert_args(tree, out, "par4"),
            out: "out.par4",
        },
        Writer {
            what: "convert to kast",
            args: |tree, out| convert_args(tree, out, "kast"),
            out: "out.kas",
        },
    ]
}

#[test]
fn a_failed_or_killed_writer_leaves_the_old_file_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let tree = tree(dir.path());
    // The source of the conversions, written without a limit.
    binfmt_arcx::pack_dir(
        &tree,
        dir.path().join("source.arcx"),
        binfmt_arcx::PackOptions::default(),
        |_| {},
    )
    .unwrap();

    for writer in writers() {
        for failure in [Failure::IoError, Failure::Killed] {
            for old in [None, Some(b"the old file".as_slice())] {
                let case = format!("{} ({failure:?}, old file: {})", writer.what, old.is_some());
                let target_dir = dir.path().join("targets").join(case.replace(' ', "_"));
                std::fs::create_dir_all(&target_dir).unwrap();
                let out = target_dir.join(writer.out);
                if let Some(old) = old {
                    std::fs::write(&out, old).unwrap();
                }
                let args = (writer.args)(&tree, &out);
                let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
                let output = run_limited(failure, &args);
                assert!(!output.status.success(), "{case}: the write succeeded");
                match failure {
                    Failure::IoError => {
                        assert_eq!(output.status.code(), Some(1), "{case}");
                        let stderr = String::from_utf8_lossy(&output.stderr);
                        assert!(stderr.contains("binfmt: "), "{case}: {stderr}");
                    }
                    Failure::Killed => assert_eq!(output.status.code(), None, "{case}"),
                }
                match old {
                    Some(old) => assert_eq!(std::fs::read(&out).unwrap(), old, "{case}"),
                    None => assert!(!out.exists(), "{case}: a partial file is in place"),
                }
                let left: BTreeSet<String> = names(&target_dir);
                let expected: BTreeSet<String> =
                    old.map(|_| writer.out.to_owned()).into_iter().collect();
                if failure == Failure::IoError {
                    assert_eq!(left, expected, "{case}: files left behind");
                } else {
                    // A killed writer cannot remove its temporary file; it
                    // is hidden and named after the destination.
                    for name in left.difference(&expected) {
                        assert!(
                            name.starts_with(&format!(".{}.", writer.out))
                                && name.ends_with(".tmp"),
                            "{case}: {name} left behind"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn a_failed_taridx_conversion_leaves_no_part_of_the_fold() {
    let dir = tempfile::tempdir().unwrap();
    // Two small entries, then one larger than the limit.
    let tree = dir.path().join("tree");
    write_tree(
        &tree,
        [
            ("a.bin".to_owned(), pseudo_random_bytes(1, 100_000)),
            ("b.bin".to_owned(), pseudo_random_bytes(2, 100_000)),
            ("c.bin".to_owned(), pseudo_random_bytes(3, 400_000)),
        ],
    );
    let source = dir.path().join("source.arcx");
    binfmt_arcx::pack_dir(&tree, &source, binfmt_arcx::PackOptions::default(), |_| {}).unwrap();
    let target = dir.path().join("fold");
    std::fs::create_dir(&target).unwrap();
    // One entry a shard: two shards are complete before the third fails.
    let output = run_limited(
        Failure::IoError,
        &[
            "convert".as_ref(),
            source.as_os_str(),
            "-o".as_ref(),
            target.join("train.taridx").as_os_str(),
            "--to".as_ref(),
            "taridx".as_ref(),
            "--shard-size".as_ref(),
            "150000".as_ref(),
        ],
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(names(&target).is_empty(), "{:?}", names(&target));
}
