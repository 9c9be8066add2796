//! An ARCX archive read over HTTP (nginx) through `RemoteSource`, against
//! `arcx` 0.3.0 reading the same archive from the same server: the files
//! come out byte for byte, and a `get` of one small file moves no more
//! requests and bytes than the reference tool (plus, while the ARCX reader
//! still checks the 80-byte header at open, that one request).

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

use binfmt_arcx::Archive;
use binfmt_remote::{RemoteOptions, RemoteSource};
use binfmt_tests::interop::{Servers, arcx, servers};
use binfmt_tests::{pseudo_random_bytes, write_tree};

/// Requests and body bytes nginx logged for `name` (at least `at_least`
/// requests).
fn logged(servers: &Servers, name: &str, at_least: usize) -> (u64, u64) {
    let lines = servers.nginx_log(name, at_least);
    (lines.len() as u64, Servers::nginx_body_bytes(&lines))
}

fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files: Vec<(String, Vec<u8>)> = (0..20)
        .map(|i| {
            let text = format!("small file {i}\n").repeat(20 + i * 7);
            (format!("small{i:02}.txt"), text.into_bytes())
        })
        .collect();
    files.push(("sub/big.bin".into(), pseudo_random_bytes(21, 900_000)));
    write_tree(dir, files)
}

#[test]
fn a_small_file_costs_no_more_than_arcx_does() {
    let Some(servers) = servers() else { return };
    let Some(tool) = arcx() else { return };
    let dir = tempfile::tempdir().unwrap();
    let files = tree(&dir.path().join("tree"));
    let packed = dir.path().join("packed.arcx");
    let status = std::process::Command::new(&tool)
        .arg("pack")
        .arg(dir.path().join("tree"))
        .arg(&packed)
        .output()
        .unwrap();
    assert!(status.status.success(), "{status:?}");
    let bytes = fs::read(&packed).unwrap();
    let stem = format!("arcx-{}", std::process::id());
    let (theirs, ours) = (format!("{stem}-theirs.arcx"), format!("{stem}-ours.arcx"));
    for name in [&theirs, &ours] {
        fs::write(servers.www.join(name), &bytes).unwrap();
    }

    let out = dir.path().join("out.txt");
    let run = std::process::Command::new(&tool)
        .arg("get")
        .arg(format!("{}/{theirs}", servers.nginx))
        .arg("small03.txt")
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(run.status.success(), "{run:?}");
    assert_eq!(fs::read(&out).unwrap(), files["small03.txt"]);
    let reference = logged(servers, &theirs, 1);

    let source = RemoteSource::open(
        &format!("{}/{ours}", servers.nginx),
        &RemoteOptions::default(),
    )
    .unwrap();
    let archive = Archive::new(source).unwrap();
    let opened = logged(servers, &ours, archive.source().stats().requests as usize);
    assert_eq!(archive.read("small03.txt").unwrap(), files["small03.txt"]);
    let got = logged(servers, &ours, archive.source().stats().requests as usize);
    eprintln!(
        "arcx 0.3.0 get: {} requests, {} bytes; binfmt: open {} requests, {} bytes; get {} requests, {} bytes (archive {} bytes)",
        reference.0,
        reference.1,
        opened.0,
        opened.1,
        got.0,
        got.1,
        bytes.len()
    );
    let header = binfmt_arcx::HEADER_SIZE as u64;
    assert!(got.0 <= reference.0 + 1, "{got:?} vs {reference:?}");
    assert!(got.1 <= reference.1 + header, "{got:?} vs {reference:?}");

    // Every file, large and small, comes out whole from the same source.
    for (name, expected) in &files {
        assert!(archive.read(name).unwrap() == *expected, "{name}");
    }
}
