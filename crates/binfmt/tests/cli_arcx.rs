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
        #[cfg(unix)]
        assert!(
            text(&packed.stderr).contains("skipped") && text(&packed.stderr).contains("symlink"),
            "{}",
            text(&packed.stderr)
        );

        assert_eq!(
            text(&binfmt(&["arcx", "list", arg(&archive)]).stdout),
            "6\ta.txt\n300000\tsub/b.bin\n"
        );
        let json: serde_json::Value =
            serde_json::from_slice(&binfmt(&["arcx", "list", "--json", arg(&archive)]).stdout)
                .unwrap();
        assert_eq!(json[0]["path"], "a.txt");
        assert_eq!(json[1]["size"], 300000);
        assert_eq!(json[0]["sha256"].as_str().unwrap().len(), 64);

        let info: serde_json::Value =
            serde_json::from_slice(&binfmt(&["arcx", "info", "--json", arg(&archive)]).stdout)
                .unwrap();
        assert_eq!(info["dialect"], dialect);
        assert_eq!(info["files"], 2);
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
            binfmt(&["arcx", "extract", arg(&archive), arg(&extracted)])
                .status
                .success()
        );
        assert_eq!(
            fs::read(extracted.join("sub/b.bin")).unwrap(),
            fs::read(tree.join("sub/b.bin")).unwrap()
        );

        let verified = binfmt(&["arcx", "verify", arg(&archive)]);
        assert!(verified.status.success());
        assert!(text(&verified.stdout).contains("ok, 2 files"));
    }
}

#[test]
fn errors_and_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let tree = tree(dir.path());
    let archive = dir.path().join("x.arcx");
    assert!(
        binfmt(&["arcx", "pack", arg(&tree), arg(&archive)])
            .status
            .success()
    );

    let missing = binfmt(&["arcx", "get", arg(&archive), "nope"]);
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(
        text(&missing.stderr),
        format!(
            "binfmt: {}: no file \"nope\" in the archive\n",
            archive.display()
        )
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
        binfmt(&["arcx", "pack", arg(&tree), arg(&archive), "--level", "30"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        binfmt(&[
            "arcx",
            "pack",
            arg(&tree),
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
