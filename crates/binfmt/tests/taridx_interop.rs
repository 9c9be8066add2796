//! TARIDX against the tools people write and read shards with: webdataset
//! 1.0.2 (ShardWriter, WebDataset) from the interop venv, and GNU tar.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::Path;
use std::process::{Command, Output};

use binfmt_tests::cli::{self, arg, text};
use binfmt_tests::interop::{python, python_script};
use serde_json::Value;

fn binfmt(args: &[&str]) -> Output {
    cli::run(env!("CARGO_BIN_EXE_binfmt"), args)
}

fn ok(output: &Output) {
    assert!(
        output.status.success(),
        "stdout: {}\nstderr: {}",
        text(&output.stdout),
        text(&output.stderr)
    );
}

fn webdataset(python: &Path, args: &[&str]) {
    let output = Command::new(python)
        .arg(python_script("webdataset_interop.py"))
        .args(args)
        .output()
        .unwrap();
    ok(&output);
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Shards written by webdataset's ShardWriter are resharded by `binfmt
/// convert` (each key rule, a byte limit and a sample limit), and
/// webdataset reads back exactly the original samples, none split.
#[test]
fn webdataset_reads_resharded_shards_as_the_original_samples() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    webdataset(&python, &["write", arg(&src), "src_%04d.tar", "60", "7"]);
    let original = read_json(&src.join("samples.json"));
    assert_eq!(original.as_array().unwrap().len(), 60);

    for keys in ["glzn", "webdataset"] {
        ok(&binfmt(&[
            "taridx",
            "index",
            arg(&src),
            "--fold",
            "src",
            "--keys",
            keys,
        ]));
        let index = src.join("src.taridx");
        ok(&binfmt(&["verify", arg(&index)]));
        // Members named by pax records are found by the names people see.
        let long = format!("{}long0013.jpg", "deep/".repeat(30));
        let got = binfmt(&["taridx", "get", arg(&index), &long]);
        ok(&got);
        let jpg = original[13]["jpg"].as_str().unwrap();
        assert_eq!(hex(&got.stdout), jpg);
        let unicode = binfmt(&["taridx", "get", arg(&index), "café/日本0017.cls"]);
        ok(&unicode);
        assert_eq!(unicode.stdout, b"7");

        for (limit, value) in [("--shard-size", "6000"), ("--shard-samples", "4")] {
            let out = dir.path().join(format!("{keys}{limit}"));
            let target = out.join("train.taridx");
            ok(&binfmt(&[
                "convert",
                arg(&index),
                "-o",
                arg(&target),
                "--to",
                "taridx",
                "--taridx-keys",
                keys,
                limit,
                value,
            ]));
            let read = out.join("read.json");
            webdataset(&python, &["read", arg(&out), "train_*.tar", arg(&read)]);
            let shards = read_json(&read);
            let shards = shards.as_array().unwrap();
            assert!(shards.len() > 5, "{keys} {limit}: {} shards", shards.len());
            let mut samples = Vec::new();
            for shard in shards {
                let in_shard = shard["samples"].as_array().unwrap();
                if limit == "--shard-samples" {
                    assert!(in_shard.len() <= 4, "{keys}: {shard}");
                }
                samples.extend(in_shard.iter().cloned());
            }
            assert_eq!(Value::Array(samples), original, "{keys} {limit}");
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// GNU tar writes `-C dir .` (names `./...`) in GNU and pax formats, with
/// long and non-ASCII names; every member is found by `taridx get` by the
/// name tar extracts it under, and `binfmt list` shows those names.
#[test]
fn gnu_tar_shards_are_read_as_tar_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    let long = format!("{}deep.jpg", "a-rather-long-directory/".repeat(8));
    let files: Vec<(String, Vec<u8>)> = vec![
        ("plain/0001.jpg".into(), b"one".to_vec()),
        ("plain/0001.cls".into(), b"1".to_vec()),
        (long.clone(), vec![7; 1000]),
        (
            "caf\u{e9}/\u{65e5}\u{672c}.txt".into(),
            "ünï".as_bytes().to_vec(),
        ),
        ("top.json".into(), b"{}".to_vec()),
    ];
    binfmt_tests::write_tree(&tree, files.clone());
    for format in ["gnu", "pax"] {
        let fold = dir.path().join(format);
        std::fs::create_dir(&fold).unwrap();
        let shard = fold.join(format!("{format}_0000.tar"));
        let status = Command::new("tar")
            .arg(format!("--format={format}"))
            .arg("-cf")
            .arg(&shard)
            .arg("-C")
            .arg(&tree)
            .arg(".")
            .status()
            .unwrap();
        assert!(status.success());
        ok(&binfmt(&["taridx", "index", arg(&fold), "--fold", format]));
        let index = fold.join(format!("{format}.taridx"));
        for (name, bytes) in &files {
            let got = binfmt(&["taridx", "get", arg(&index), name]);
            ok(&got);
            assert_eq!(&got.stdout, bytes, "{format}: {name}");
            // The `./` form tar wrote is the same member.
            let dotted = binfmt(&["get", arg(&index), &format!("./{name}")]);
            ok(&dotted);
            assert_eq!(&dotted.stdout, bytes, "{format}: ./{name}");
        }
        let listed = binfmt(&["list", arg(&index)]);
        ok(&listed);
        let mut names: Vec<String> = text(&listed.stdout)
            .lines()
            .map(|line| line.split_once('\t').unwrap().1.to_owned())
            .collect();
        names.sort();
        let mut expected: Vec<String> = files.iter().map(|(name, _)| name.clone()).collect();
        expected.sort();
        assert_eq!(names, expected, "{format}");
        let out = dir.path().join(format!("{format}-extracted"));
        ok(&binfmt(&["extract", arg(&index), "-o", arg(&out)]));
        for (name, bytes) in &files {
            assert_eq!(
                &std::fs::read(out.join(name)).unwrap(),
                bytes,
                "{format}: {name}"
            );
        }
        ok(&binfmt(&["verify", arg(&index)]));
    }
}
