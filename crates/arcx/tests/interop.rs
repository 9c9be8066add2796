//! ARCX against the `arcx` 0.3.0 tool, both directions: archives this crate
//! writes in the arcx-cli dialect list, get and extract with the tool (large
//! files included); archives the tool writes open here, every file compared.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::Command;

use binfmt_arcx::{Archive, Dialect, PackOptions, pack_dir};
use binfmt_tests::interop::arcx;
use binfmt_tests::pseudo_random_bytes;

/// A tree with tiny files, a compressible file of several MiB, an
/// incompressible one over 1 MiB, two under 1 MiB that share a block with
/// others, an empty file, and unicode names.
fn make_tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files: Vec<(String, Vec<u8>)> = vec![
        ("empty.txt".into(), Vec::new()),
        (
            "src/lib.rs".into(),
            b"pub fn answer() -> u32 { 42 }\n".repeat(50),
        ),
        (
            "docs/caf\u{e9}/r\u{e9}sum\u{e9}.md".into(),
            "# Résumé ✓\n".repeat(10).into_bytes(),
        ),
        (
            "data/large_text.csv".into(),
            b"id,name,value\n1,alpha,0.5\n".repeat(200_000),
        ),
        ("data/noise.bin".into(), pseudo_random_bytes(7, 2_500_000)),
        // Under the 1 MiB block size: shares a block with its neighbours.
        ("data/mid.bin".into(), pseudo_random_bytes(8, 700_000)),
        ("data/mid.txt".into(), b"a mid-sized line\n".repeat(40_000)),
    ];
    files.extend((0..300).map(|i| {
        (
            format!("many/{i:03}.json"),
            format!("{{\"i\": {i}}}\n").into_bytes(),
        )
    }));
    binfmt_tests::write_tree(dir, files)
}

fn run(tool: &Path, args: &[&std::ffi::OsStr]) -> std::process::Output {
    let output = Command::new(tool).args(args).output().unwrap();
    assert!(
        output.status.success(),
        "arcx {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

#[test]
fn the_tool_reads_our_arcx_cli_archives() {
    let Some(tool) = arcx() else { return };
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    let files = make_tree(&tree);
    let archive = dir.path().join("ours.arcx");
    pack_dir(
        &tree,
        &archive,
        PackOptions::default().dialect(Dialect::ArcxCli),
        |_| {},
    )
    .unwrap();

    let listing =
        String::from_utf8(run(&tool, &["list".as_ref(), archive.as_os_str()]).stdout).unwrap();
    for path in files.keys() {
        assert!(
            listing.contains(path.as_str()),
            "{path} missing from:\n{listing}"
        );
    }

    let extracted = dir.path().join("extracted");
    run(
        &tool,
        &[
            "extract".as_ref(),
            archive.as_os_str(),
            extracted.as_os_str(),
        ],
    );
    for (path, bytes) in &files {
        assert_eq!(
            &fs::read(extracted.join(path)).unwrap(),
            bytes,
            "extract {path}"
        );
    }

    // Files over 1 MiB: the tool cannot get these out of its own archives.
    for path in ["data/large_text.csv", "data/noise.bin", "src/lib.rs"] {
        let out = dir.path().join("got");
        run(
            &tool,
            &[
                "get".as_ref(),
                archive.as_os_str(),
                path.as_ref(),
                "-o".as_ref(),
                out.as_os_str(),
            ],
        );
        assert_eq!(fs::read(&out).unwrap(), files[path], "get {path}");
    }
}

#[test]
fn we_read_the_tools_archives() {
    let Some(tool) = arcx() else { return };
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    let files = make_tree(&tree);
    let archive = dir.path().join("theirs.arcx");
    run(
        &tool,
        &["pack".as_ref(), tree.as_os_str(), archive.as_os_str()],
    );

    let opened = Archive::open(&archive).unwrap();
    assert_eq!(opened.dialect(), Dialect::ArcxCli);
    assert_eq!(opened.files().len(), files.len());
    for (path, bytes) in &files {
        assert_eq!(&opened.read(path).unwrap(), bytes, "{path}");
    }
    opened.verify().unwrap();
    let extracted = dir.path().join("extracted");
    fs::create_dir(&extracted).unwrap();
    opened
        .extract(&extracted, binfmt_arcx::ExtractOptions::default())
        .unwrap();
    for (path, bytes) in &files {
        assert_eq!(&fs::read(extracted.join(path)).unwrap(), bytes);
    }
}

#[test]
fn the_committed_tool_fixture_reads() {
    let archive = Archive::open(binfmt_tests::fixture("reference/sample.arcx")).unwrap();
    assert_eq!(archive.dialect(), Dialect::ArcxCli);
    let tar = fs::read(binfmt_tests::fixture("reference/sample.tar")).unwrap();
    for file in archive.files() {
        let path = file.path().to_string();
        let bytes = archive.read(&path).unwrap();
        // Each file is also a member of sample.tar, whose payloads start on
        // 512-byte boundaries.
        assert!(
            tar.windows(bytes.len()).any(|w| w == bytes.as_slice()),
            "{path}"
        );
    }
}

/// Every regular file under `dir`, by path relative to it, with its bytes;
/// panics on anything else but directories (a symlink, say).
fn regular_files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut found = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            let kind = fs::symlink_metadata(&path).unwrap().file_type();
            if kind.is_dir() {
                stack.push(path);
            } else {
                assert!(kind.is_file(), "{} is not a regular file", path.display());
                let name = path.strip_prefix(dir).unwrap().to_str().unwrap().to_owned();
                found.insert(name, fs::read(&path).unwrap());
            }
        }
    }
    found
}

/// A symlink and an empty directory: `arcx` 0.3.0 ignores the kind byte
/// and extracts every entry as a regular file, so the arcx-cli dialect
/// leaves them out and says so; the tool's extraction is then exactly the
/// regular files the archive lists, no junk files, and this crate restores
/// their modes and times.
#[cfg(unix)]
#[test]
fn the_arcx_cli_dialect_holds_only_what_the_tool_extracts_right() {
    use std::os::unix::fs::PermissionsExt;
    let Some(tool) = arcx() else { return };
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    fs::create_dir_all(tree.join("bin")).unwrap();
    fs::create_dir_all(tree.join("empty")).unwrap();
    fs::create_dir_all(tree.join("links")).unwrap();
    fs::write(tree.join("bin/run.sh"), b"#!/bin/sh\necho hi\n").unwrap();
    fs::write(tree.join("top.txt"), b"top").unwrap();
    fs::set_permissions(tree.join("bin/run.sh"), fs::Permissions::from_mode(0o750)).unwrap();
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000);
    fs::File::options()
        .write(true)
        .open(tree.join("bin/run.sh"))
        .unwrap()
        .set_modified(time)
        .unwrap();
    std::os::unix::fs::symlink("bin/run.sh", tree.join("run")).unwrap();
    std::os::unix::fs::symlink("../top.txt", tree.join("links/top")).unwrap();
    let archive = dir.path().join("meta.arcx");
    let summary = pack_dir(
        &tree,
        &archive,
        PackOptions::default().dialect(Dialect::ArcxCli),
        |_| {},
    )
    .unwrap();
    let skipped: Vec<_> = summary
        .skipped
        .iter()
        .map(|skipped| skipped.path.strip_prefix(&tree).unwrap().to_path_buf())
        .collect();
    assert_eq!(
        skipped,
        [Path::new("empty"), Path::new("links/top"), Path::new("run")]
    );
    assert_eq!(summary.files, 2);

    // What binfmt says it wrote: regular files only.
    let opened = Archive::open(&archive).unwrap();
    let listed: BTreeMap<String, Vec<u8>> = opened
        .files()
        .map(|file| {
            assert_eq!(file.attributes().kind, binfmt_arcx::FileKind::File);
            let path = file.path().to_string();
            (path.clone(), opened.read(&path).unwrap())
        })
        .collect();
    assert_eq!(listed.keys().collect::<Vec<_>>(), ["bin/run.sh", "top.txt"]);

    let by_tool = dir.path().join("by-tool");
    run(
        &tool,
        &["extract".as_ref(), archive.as_os_str(), by_tool.as_os_str()],
    );
    assert_eq!(regular_files(&by_tool), listed);
    assert!(!by_tool.join("empty").exists() && !by_tool.join("run").exists());

    let ours = dir.path().join("ours");
    opened
        .extract(&ours, binfmt_arcx::ExtractOptions::default().symlinks(true))
        .unwrap();
    assert_eq!(regular_files(&ours), listed);
    let script = fs::metadata(ours.join("bin/run.sh")).unwrap();
    assert_eq!(script.permissions().mode() & 0o777, 0o750);
    assert_eq!(script.modified().unwrap(), time);
}
