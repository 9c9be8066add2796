//! `binfmt par4 ...`, run as a real process.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use binfmt_tests::cli::{self, text};
use std::path::Path;
use std::process::Output;

use binfmt_parcode::{ChunkGraph, Compression};

fn binfmt(args: &[&str]) -> Output {
    cli::run(env!("CARGO_BIN_EXE_binfmt"), args)
}

/// A Vec of 30 u64 in 3 shards, LZ4-compressed.
fn sample(dir: &Path) -> std::path::PathBuf {
    let items: Vec<u64> = (0..30).collect();
    let mut graph = ChunkGraph::new();
    let root = graph.vec_with_shard_len(&items, 10).unwrap();
    let path = dir.join("vec.par4");
    graph.write_file(root, Compression::Lz4, &path).unwrap();
    path
}

#[test]
fn inspect_refuses_a_graph_of_shared_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dag.par4");
    // 30 levels of diamonds: 2^30 paths if shared chunks were followed.
    std::fs::write(&path, binfmt_tests::par4::diamonds(30)).unwrap();
    for verb in ["inspect", "verify"] {
        let output = binfmt(&["par4", verb, path.to_str().unwrap()]);
        assert!(!output.status.success());
        let stderr = text(&output.stderr);
        assert!(stderr.contains("shares bytes with the chunk"), "{stderr}");
    }
}

#[test]
fn inspect_prints_the_chunk_tree() {
    let dir = tempfile::tempdir().unwrap();
    let path = sample(dir.path());
    let output = binfmt(&["par4", "inspect", path.to_str().unwrap()]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let lines: Vec<String> = text(&output.stdout).lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), 5, "{lines:?}");
    assert!(
        lines[1].starts_with("chunk @")
            && lines[1].contains("lz4")
            && lines[1].ends_with(", 3 children")
    );
    // Each shard: 10 u64 as bincode (varint length 10, then values 0..9 or 10..29 in one byte each).
    assert!(
        lines[2].starts_with("  chunk @0 ") && lines[2].contains("payload 11 B"),
        "{}",
        lines[2]
    );

    let json: serde_json::Value = serde_json::from_slice(
        &binfmt(&["par4", "inspect", "--json", path.to_str().unwrap()]).stdout,
    )
    .unwrap();
    assert_eq!(json["compression"], "lz4");
    assert_eq!(json["children"].as_array().unwrap().len(), 3);
    assert_eq!(json["children"][0]["payload_bytes"], 11);
    assert_eq!(json["children"][0]["offset"], 0);
}

#[test]
fn verify_and_its_failures() {
    let dir = tempfile::tempdir().unwrap();
    let path = sample(dir.path());
    let ok = binfmt(&["par4", "verify", path.to_str().unwrap()]);
    assert!(ok.status.success());
    assert!(text(&ok.stdout).contains("ok, 4 chunks, "));

    let mut bytes = std::fs::read(&path).unwrap();
    // The first shard's LZ4 size prefix claims far more than its block holds.
    // (PAR4 has no checksums: a flipped byte inside a block can still decode.)
    bytes[..4].copy_from_slice(&u32::MAX.to_le_bytes());
    let bad = dir.path().join("bad.par4");
    std::fs::write(&bad, &bytes).unwrap();
    let output = binfmt(&["par4", "verify", bad.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).starts_with(&format!("binfmt: {}: chunk at 0", bad.display())),
        "{}",
        text(&output.stderr)
    );

    let not_par4 = binfmt(&["par4", "inspect", "Cargo.toml"]);
    assert_eq!(not_par4.status.code(), Some(1));
    assert_eq!(binfmt(&["par4", "inspect"]).status.code(), Some(2));
}

#[test]
fn every_subcommand_has_examples() {
    for command in ["inspect", "verify"] {
        assert!(
            text(&binfmt(&["par4", command, "--help"]).stdout).contains("Examples:"),
            "{command}"
        );
    }
}

/// Outside-attack finding 09: maps whose entries lie (a key stored twice,
/// a hash that is not its key's, a key in the wrong bucket, entries out of
/// order or of the wrong length) fail `binfmt par4 verify` and
/// `binfmt verify`, as they fail `list` and `get`: verify never says ok
/// about a file whose entries cannot be read.
#[test]
fn verify_checks_what_map_entries_mean() {
    let dir = binfmt_tests::workspace_root().join("tests/regressions/par4");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        if !name.starts_with("map-") {
            continue;
        }
        for args in [vec!["par4", "verify"], vec!["verify"]] {
            let mut args = args.clone();
            args.push(path.to_str().unwrap());
            let output = cli::run(env!("CARGO_BIN_EXE_binfmt"), &args);
            assert_eq!(
                output.status.code(),
                Some(1),
                "{name}: {args:?} said {}",
                text(&output.stdout)
            );
        }
        checked += 1;
    }
    assert!(checked >= 10, "{checked} map cases");
}

/// Found from outside (issue 27's attack): a bucket whose entry count is
/// set to 0 kept its entry's bytes, and `verify`, `list`, `extract` and
/// `convert` all exited 0 with no entries, dropping them silently. Every
/// command now refuses the bucket, naming it.
#[test]
fn a_bucket_that_disowns_its_bytes_is_refused_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = binfmt_tests::fixture("generated/par4/one.par4");
    let mut bytes = std::fs::read(&fixture).unwrap();
    // The bucket chunk starts the file; its header's first field is the count.
    assert_eq!(bytes[..4], 1u32.to_le_bytes());
    bytes[..4].copy_from_slice(&0u32.to_le_bytes());
    let file = dir.path().join("disowned.par4");
    std::fs::write(&file, &bytes).unwrap();
    let file = file.to_str().unwrap();
    let out = dir.path().join("out");
    let arcx = dir.path().join("x.arcx");
    for args in [
        vec!["verify", file],
        vec!["list", file],
        vec!["extract", file, "-o", out.to_str().unwrap()],
        vec!["convert", file, "-o", arcx.to_str().unwrap()],
    ] {
        let done = binfmt(&args);
        let said = String::from_utf8_lossy(&done.stderr);
        assert_eq!(done.status.code(), Some(1), "{args:?}: {said}");
        assert!(
            said.contains("0 entries, but") && said.contains("no entry accounts for"),
            "{args:?}: {said}"
        );
    }
    assert!(!arcx.exists());
}
