//! `binfmt arcx ...`, run as a real process.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use binfmt_tests::cli::{self, arg, text};
use std::fs;
use std::path::Path;
use std::process::Output;

fn binfmt(args: &[&str]) -> Output {
    cli::run(env!("CARGO_BIN_EXE_binfmt"), args)
}

fn tree(dir: &Path) -> std::path::PathBuf {
    let tree = dir.join("tree");
    fs::create_dir_all(tree.join("sub")).unwrap();
    fs::write(tree.join("a.txt"), b"alpha\n").unwrap();
    fs::write(
        tree.join("sub/b.bin"),
        binfmt_tests::pseudo_random_bytes(3, 300_000),
    )
    .unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink("a.txt", tree.join("link")).unwrap();
    tree
}

#[test]
fn pack_list_info_get_extract_verify() {
    let dir = tempfile::tempdir().unwrap();
    let tree = tree(dir.path());
    for dialect in ["spec", "arcx-cli"] {
        let archive = dir.path().join(format!("{dialect}.arcx"));
        let packed = binfmt(&[
            "arcx",
            "pack",
            arg(&tree),
            "-o",
            arg(&archive),
            "--dialect",
            dialect,
            "--level",
            "5",
            "--block-size",
            "65536",
            "--jobs",
            "2",
        ]);
        assert!(packed.status.success(), "{}", text(&packed.stderr));
        assert!(packed.stdout.is_empty());
        // The spec dialect stores the symlink as a symlink (its bytes are
        // its target); the arcx-cli dialect leaves it out, and says so
        // (arcx 0.3.0 would extract it as a regular file).
        let (listing, entries) = if dialect == "spec" {
            assert!(
                !text(&packed.stderr).contains("skipped"),
                "{}",
                text(&packed.stderr)
            );
            ("6\ta.txt\n5\tlink\n300000\tsub/b.bin\n", 3)
        } else {
            let stderr = text(&packed.stderr);
            let skipped: Vec<&str> = stderr
                .lines()
                .filter(|line| line.contains("skipped"))
                .collect();
            assert_eq!(skipped.len(), 1, "{stderr}");
            assert!(
                skipped[0]
                    .contains("link: a symlink: the arcx-cli dialect holds regular files only"),
                "{}",
                skipped[0]
            );
            ("6\ta.txt\n300000\tsub/b.bin\n", 2)
        };
        assert_eq!(
            text(&binfmt(&["arcx", "list", arg(&archive)]).stdout),
            listing
        );
        assert_eq!(text(&binfmt(&["list", arg(&archive)]).stdout), listing);
        let json: serde_json::Value =
            serde_json::from_slice(&binfmt(&["arcx", "list", "--json", arg(&archive)]).stdout)
                .unwrap();
        assert_eq!(json[0]["name"], "a.txt");
        if dialect == "spec" {
            assert_eq!(json[1]["kind"], "symlink");
        }
        assert_eq!(json[entries - 1]["size"], 300000);
        assert_eq!(json[0]["sha256"].as_str().unwrap().len(), 64);
        assert_eq!(json[0]["mode"], "644");

        let info: serde_json::Value =
            serde_json::from_slice(&binfmt(&["arcx", "info", "--json", arg(&archive)]).stdout)
                .unwrap();
        assert_eq!(info["dialect"], dialect);
        assert_eq!(info["entries"], entries);
        assert_eq!(info["format"], "arcx");
        assert_eq!(info["block_size"], 65536);

        assert_eq!(
            binfmt(&["arcx", "get", arg(&archive), "a.txt"]).stdout,
            b"alpha\n"
        );
        let out = dir.path().join("b.out");
        assert!(
            binfmt(&["arcx", "get", arg(&archive), "sub/b.bin", "-o", arg(&out)])
                .status
                .success()
        );
        assert_eq!(
            fs::read(&out).unwrap(),
            fs::read(tree.join("sub/b.bin")).unwrap()
        );

        let extracted = dir.path().join(format!("x-{dialect}"));
        assert!(
            binfmt(&["arcx", "extract", arg(&archive), "-o", arg(&extracted)])
                .status
                .success()
        );
        assert_eq!(
            fs::read(extracted.join("sub/b.bin")).unwrap(),
            fs::read(tree.join("sub/b.bin")).unwrap()
        );

        let verified = binfmt(&["arcx", "verify", arg(&archive)]);
        assert!(verified.status.success());
        assert!(
            text(&verified.stdout).contains(&format!("ok, {entries} files")),
            "{}",
            text(&verified.stdout)
        );
    }
}

#[test]
fn errors_and_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let tree = tree(dir.path());
    let archive = dir.path().join("x.arcx");
    assert!(
        binfmt(&["arcx", "pack", arg(&tree), "-o", arg(&archive)])
            .status
            .success()
    );

    let missing = binfmt(&["arcx", "get", arg(&archive), "nope"]);
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(
        text(&missing.stderr),
        format!("binfmt: {}: no entry \"nope\"\n", archive.display())
    );

    let mut bytes = fs::read(&archive).unwrap();
    bytes[100] ^= 0xff;
    let corrupt = dir.path().join("corrupt.arcx");
    fs::write(&corrupt, &bytes).unwrap();
    let verify = binfmt(&["arcx", "verify", arg(&corrupt)]);
    assert_eq!(verify.status.code(), Some(1));
    assert!(
        text(&verify.stderr).contains("block 0"),
        "{}",
        text(&verify.stderr)
    );

    assert_eq!(
        binfmt(&[
            "arcx",
            "pack",
            arg(&tree),
            "-o",
            arg(&archive),
            "--level",
            "30"
        ])
        .status
        .code(),
        Some(2)
    );
    assert_eq!(
        binfmt(&[
            "arcx",
            "pack",
            arg(&tree),
            "-o",
            arg(&archive),
            "--dialect",
            "zip"
        ])
        .status
        .code(),
        Some(2)
    );
    assert_eq!(binfmt(&["arcx", "list"]).status.code(), Some(2));
    assert_eq!(
        binfmt(&[
            "arcx",
            "pack",
            arg(&dir.path().join("absent")),
            "-o",
            arg(&dir.path().join("y.arcx"))
        ])
        .status
        .code(),
        Some(1)
    );
    assert!(!dir.path().join("y.arcx").exists());
}

#[test]
fn every_subcommand_has_examples() {
    for command in ["pack", "list", "info", "get", "extract", "verify"] {
        assert!(
            text(&binfmt(&["arcx", command, "--help"]).stdout).contains("Examples:"),
            "{command}"
        );
    }
}

/// Modes, times, empty directories and symlinks come back; setuid and
/// setgid bits never do; symlinks only when asked, and only inside.
#[cfg(unix)]
#[test]
fn metadata_round_trips_through_pack_and_extract() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    fs::create_dir_all(tree.join("bin")).unwrap();
    fs::create_dir_all(tree.join("empty")).unwrap();
    let tool = tree.join("bin/tool");
    fs::write(&tool, b"#!/bin/sh\n").unwrap();
    fs::set_permissions(&tool, fs::Permissions::from_mode(0o4755)).unwrap();
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_234_567_890);
    fs::File::options()
        .write(true)
        .open(&tool)
        .unwrap()
        .set_modified(time)
        .unwrap();
    std::os::unix::fs::symlink("bin/tool", tree.join("run")).unwrap();
    std::os::unix::fs::symlink("../../outside", tree.join("bin/escape")).unwrap();
    for dialect in ["spec", "arcx-cli"] {
        let archive = dir.path().join(format!("meta-{dialect}.arcx"));
        let packed = binfmt(&[
            "arcx",
            "pack",
            arg(&tree),
            "-o",
            arg(&archive),
            "--dialect",
            dialect,
        ]);
        assert!(packed.status.success(), "{}", text(&packed.stderr));

        // Without --symlinks: files, modes, times and the empty directory.
        let plain = dir.path().join(format!("plain-{dialect}"));
        let output = binfmt(&["extract", arg(&archive), "-o", arg(&plain)]);
        assert!(output.status.success(), "{}", text(&output.stderr));
        let extracted = fs::metadata(plain.join("bin/tool")).unwrap();
        assert_eq!(
            extracted.permissions().mode() & 0o7777,
            0o755,
            "{dialect}: no setuid"
        );
        assert_eq!(extracted.modified().unwrap(), time, "{dialect}");
        if dialect == "arcx-cli" {
            // Regular files only (arcx 0.3.0 would extract the rest as
            // files): the symlinks and the empty directory are left out,
            // one stderr line each.
            let stderr = text(&packed.stderr);
            let skipped: Vec<&str> = stderr
                .lines()
                .filter(|line| line.starts_with("skipped "))
                .collect();
            assert_eq!(skipped.len(), 3, "{stderr}");
            for (line, name) in skipped.iter().zip(["bin/escape", "empty", "run"]) {
                assert!(line.contains(&format!("/{name}: a")), "{line}");
            }
            assert!(!plain.join("empty").exists());
            assert!(fs::symlink_metadata(plain.join("run")).is_err());
            continue;
        }
        assert!(plain.join("empty").is_dir(), "{dialect}");
        assert!(
            fs::symlink_metadata(plain.join("run")).is_err(),
            "{dialect}"
        );

        // With --symlinks: the inside link is made, the escaping one refused.
        let linked = dir.path().join(format!("linked-{dialect}"));
        let output = binfmt(&[
            "arcx",
            "extract",
            arg(&archive),
            "-o",
            arg(&linked),
            "--symlinks",
        ]);
        assert_eq!(output.status.code(), Some(1), "{dialect}");
        assert!(
            text(&output.stderr).contains("escape"),
            "{}",
            text(&output.stderr)
        );
        assert!(!dir.path().join("outside").exists());
    }
    // Without the escaping link, --symlinks recreates the link, unfollowed.
    fs::remove_file(tree.join("bin/escape")).unwrap();
    let archive = dir.path().join("links.arcx");
    assert!(
        binfmt(&["arcx", "pack", arg(&tree), "-o", arg(&archive)])
            .status
            .success()
    );
    let linked = dir.path().join("linked");
    let output = binfmt(&[
        "arcx",
        "extract",
        arg(&archive),
        "-o",
        arg(&linked),
        "--symlinks",
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(
        fs::read_link(linked.join("run")).unwrap(),
        Path::new("bin/tool")
    );
}

#[test]
fn packing_over_a_file_of_the_packed_directory_is_refused() {
    // The first pack writes the archive inside the tree; the second would
    // replace a file of the tree it reads, and is refused (spec/gates.md;
    // tar skips such a file and writes over it).
    let dir = tempfile::tempdir().unwrap();
    let tree = tree(dir.path());
    let inside = tree.join("self.arcx");
    let first = binfmt(&["arcx", "pack", arg(&tree), "-o", arg(&inside)]);
    assert!(first.status.success(), "{}", text(&first.stderr));
    let listing = text(&binfmt(&["arcx", "list", arg(&inside)]).stdout);
    assert!(!listing.contains("self.arcx"), "{listing}");
    let before = std::fs::read(&inside).unwrap();
    let second = binfmt(&["arcx", "pack", arg(&tree), "-o", arg(&inside)]);
    assert_eq!(second.status.code(), Some(1));
    assert!(
        text(&second.stderr).contains("binfmt never writes its output over what it reads"),
        "{}",
        text(&second.stderr)
    );
    assert_eq!(std::fs::read(&inside).unwrap(), before);
}

/// Found from outside: `extract` without `--symlinks` left symlink entries
/// out with nothing said. It now says how many, and restores them with it.
#[cfg(unix)]
#[test]
fn extract_says_which_symlinks_it_leaves_out() {
    let dir = tempfile::tempdir().unwrap();
    let tree = tree(dir.path());
    let archive = dir.path().join("links.arcx");
    let packed = binfmt(&["arcx", "pack", arg(&tree), "-o", arg(&archive)]);
    assert!(packed.status.success(), "{}", text(&packed.stderr));
    let plain = dir.path().join("plain");
    let output = binfmt(&["extract", arg(&archive), "-o", arg(&plain)]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("left out 1 symlinks"),
        "{}",
        text(&output.stderr)
    );
    assert!(fs::symlink_metadata(plain.join("link")).is_err());
    let linked = dir.path().join("linked");
    let output = binfmt(&["extract", "--symlinks", arg(&archive), "-o", arg(&linked)]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(!text(&output.stderr).contains("left out"));
    assert_eq!(
        fs::read_link(linked.join("link")).unwrap(),
        Path::new("a.txt")
    );
}
