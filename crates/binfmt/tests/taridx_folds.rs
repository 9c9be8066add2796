//! Folds for real training pipelines: `taridx pack` writes samples as
//! webdataset reads them back, every fold under a root is found, reported
//! and indexed at once, and the other tar indexes (wids shard lists, DALI
//! `.idx` files, ratarmount's SQLite index) are written and read, against
//! webdataset 1.0.2, wids 0.1.11 and ratarmountcore 0.11.1 from the
//! interop venv; DALI's files against the text its format rules give.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use binfmt_tests::cli::{self, arg, text};
use binfmt_tests::interop::{python, python_script};
use serde_json::Value;

fn binfmt(args: &[&str]) -> Output {
    cli::run(env!("CARGO_BIN_EXE_binfmt"), args)
}

fn ok(output: &Output) -> &Output {
    assert!(
        output.status.success(),
        "stdout: {}\nstderr: {}",
        text(&output.stdout),
        text(&output.stderr)
    );
    output
}

fn script(python: &Path, name: &str, args: &[&str]) {
    let output = Command::new(python)
        .arg(python_script(name))
        .args(args)
        .output()
        .unwrap();
    ok(&output);
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn shards(dir: &Path, fold: &str) -> Vec<PathBuf> {
    binfmt_taridx::fold_shards(dir, fold).unwrap()
}

fn sorted_by_key(samples: &Value) -> Vec<Value> {
    let mut samples = samples.as_array().unwrap().clone();
    samples.sort_by(|a, b| a["__key__"].as_str().cmp(&b["__key__"].as_str()));
    samples
}

/// `taridx pack` from a directory tree and from an archive: deterministic
/// shards of at most N samples, an index byte-identical to indexing them
/// afterwards, and webdataset reads back the original samples.
#[test]
fn pack_writes_samples_webdataset_reads_back() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    script(
        &python,
        "webdataset_interop.py",
        &["pack", arg(&tree), "40"],
    );
    let original = read_json(&dir.path().join("tree.json"));

    let out = dir.path().join("out");
    let index = out.join("train.taridx");
    ok(&binfmt(&[
        "taridx",
        "pack",
        arg(&tree),
        "-o",
        arg(&index),
        "--max-samples",
        "7",
    ]));
    let read = out.join("read.json");
    script(
        &python,
        "webdataset_interop.py",
        &["read", arg(&out), "train_*.tar", arg(&read)],
    );
    let read = read_json(&read);
    let mut samples = Vec::new();
    for shard in read.as_array().unwrap() {
        let in_shard = shard["samples"].as_array().unwrap();
        assert!(in_shard.len() <= 7);
        samples.extend(in_shard.iter().cloned());
    }
    assert_eq!(samples.len(), 40);
    assert_eq!(
        sorted_by_key(&Value::Array(samples)),
        sorted_by_key(&original)
    );

    // The index written in the same pass is the one indexing writes.
    let again = dir.path().join("again.taridx");
    ok(&binfmt(&[
        "taridx",
        "index",
        arg(&out),
        "--fold",
        "train",
        "--keys",
        "webdataset",
        "-o",
        arg(&again),
    ]));
    assert!(std::fs::read(&again).unwrap() == std::fs::read(&index).unwrap());

    // The same input gives the same bytes; so does the same tree in an archive.
    let archive = dir.path().join("tree.arcx");
    ok(&binfmt(&["arcx", "pack", arg(&tree), "-o", arg(&archive)]));
    for (input, name) in [(&tree, "twice"), (&archive, "from-archive")] {
        let other = dir.path().join(name).join("train.taridx");
        ok(&binfmt(&[
            "taridx",
            "pack",
            arg(input),
            "-o",
            arg(&other),
            "--max-samples",
            "7",
        ]));
        assert!(
            std::fs::read(&other).unwrap() == std::fs::read(&index).unwrap(),
            "{name}"
        );
        let ours = shards(&out, "train");
        let theirs = shards(other.parent().unwrap(), "train");
        assert_eq!(ours.len(), theirs.len());
        for (a, b) in ours.iter().zip(&theirs) {
            assert!(
                std::fs::read(a).unwrap() == std::fs::read(b).unwrap(),
                "{name}: {}",
                b.display()
            );
        }
    }
}

/// Every fold under a root: status reports missing and stale indexes,
/// `--all` indexes every fold, and a fold can be indexed on open.
#[test]
fn every_fold_under_a_root() {
    let dir = tempfile::tempdir().unwrap();
    let golden = binfmt_tests::fixture("reference/taridx");
    for (from, to) in [
        ("golden_0000.tar", "train_0000.tar"),
        ("golden_0001.tar", "train_0001.tar"),
        ("golden_0002.tar", "val_0000.tar"),
    ] {
        std::fs::copy(golden.join(from), dir.path().join(to)).unwrap();
    }
    let status = |expect_ok: bool| {
        let output = binfmt(&["taridx", "status", "--json", arg(dir.path())]);
        assert_eq!(
            output.status.success(),
            expect_ok,
            "{}",
            text(&output.stderr)
        );
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        report
            .as_array()
            .unwrap()
            .iter()
            .map(|fold| {
                (
                    fold["fold"].as_str().unwrap().to_owned(),
                    fold["state"].as_str().unwrap().to_owned(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        status(false),
        [
            ("train".into(), "missing".into()),
            ("val".into(), "missing".into())
        ]
    );
    ok(&binfmt(&[
        "taridx",
        "index",
        arg(dir.path()),
        "--all",
        "--jobs",
        "2",
    ]));
    assert_eq!(
        status(true),
        [
            ("train".into(), "fresh".into()),
            ("val".into(), "fresh".into())
        ]
    );
    // The same bytes as indexing one fold at a time.
    let one = dir.path().join("one.taridx");
    ok(&binfmt(&[
        "taridx",
        "index",
        arg(dir.path()),
        "--fold",
        "train",
        "-o",
        arg(&one),
    ]));
    assert!(
        std::fs::read(&one).unwrap() == std::fs::read(dir.path().join("train.taridx")).unwrap()
    );
    std::fs::remove_file(&one).unwrap();
    // A shard cut short: rows end past its end.
    let val = dir.path().join("val_0000.tar");
    let bytes = std::fs::read(&val).unwrap();
    std::fs::write(&val, &bytes[..2048]).unwrap();
    let stale = status(false);
    assert_eq!(stale[1], ("val".into(), "stale".into()));
    // Index on open (opt-in), for a fold with none.
    std::fs::remove_file(dir.path().join("train.taridx")).unwrap();
    let options = binfmt_taridx::DatasetOptions::new()
        .index_if_missing(Some(binfmt_taridx::IndexOptions::new()));
    assert!(binfmt_taridx::Dataset::open_fold(dir.path(), "train").is_err());
    let dataset = binfmt_taridx::Dataset::open_fold_with(dir.path(), "train", options).unwrap();
    assert_eq!(dataset.num_rows(), 14);
    assert!(dir.path().join("train.taridx").exists());
}

/// DALI `.idx` files of webdataset's shards, as the format's rules give
/// them (payload offsets, one line per sample), with and without pax
/// headers; and a TARIDX built back from them.
#[test]
fn dali_index_files() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "1700000000",
            "v1.2 2\ncls 512 1 a.cls jpg 1536 4 a.jpg\ncls 2560 1 b.cls jpg 3584 6 b.jpg\n",
        ),
        (
            "float",
            "v1.2 2\ncls 1536 1 a.cls jpg 3584 4 a.jpg\ncls 5632 1 b.cls jpg 7680 6 b.jpg\n",
        ),
    ];
    for (mtime, expected) in cases {
        let fold = dir.path().join(format!("m{mtime}"));
        std::fs::create_dir(&fold).unwrap();
        let shard = fold.join("wds_0000.tar");
        script(
            &python,
            "tar_indexes_interop.py",
            &["tarwriter", arg(&shard), mtime],
        );
        ok(&binfmt(&[
            "taridx",
            "index",
            arg(&fold),
            "--fold",
            "wds",
            "--keys",
            "webdataset",
        ]));
        let index = fold.join("wds.taridx");
        let idx_dir = fold.join("idx");
        ok(&binfmt(&[
            "taridx",
            "export",
            "dali",
            arg(&index),
            "-o",
            arg(&idx_dir),
            "--with-names",
        ]));
        let written = std::fs::read_to_string(idx_dir.join("wds_0000.idx")).unwrap();
        assert_eq!(written, expected, "{mtime}");
        // v1.1: the same without names, from the index alone.
        ok(&binfmt(&[
            "taridx",
            "export",
            "dali",
            arg(&index),
            "-o",
            arg(&idx_dir),
        ]));
        let v11 = expected
            .replace("v1.2", "v1.1")
            .replace(" a.cls", "")
            .replace(" a.jpg", "")
            .replace(" b.cls", "")
            .replace(" b.jpg", "");
        assert_eq!(
            std::fs::read_to_string(idx_dir.join("wds_0000.idx")).unwrap(),
            v11
        );
        // Back: v1.1 (names from the headers) and v1.2 give the same index.
        for text in [v11.as_str(), expected] {
            std::fs::write(idx_dir.join("wds_0000.idx"), text).unwrap();
            let imported = fold.join("imported.taridx");
            ok(&binfmt(&[
                "taridx",
                "import",
                "dali",
                arg(&shard),
                "--from",
                arg(&idx_dir),
                "--keys",
                "webdataset",
                "-o",
                arg(&imported),
            ]));
            assert!(std::fs::read(&imported).unwrap() == std::fs::read(&index).unwrap());
        }
        // An index that points into the wrong place is refused on import.
        std::fs::write(
            idx_dir.join("wds_0000.idx"),
            expected.replace(" 4 a.jpg", " 5 a.jpg"),
        )
        .unwrap();
        let bad = binfmt(&[
            "taridx",
            "import",
            "dali",
            arg(&shard),
            "--from",
            arg(&idx_dir),
            "-o",
            arg(&fold.join("bad.taridx")),
        ]);
        assert_eq!(bad.status.code(), Some(1), "{mtime}");
    }
}

/// A wids shard list of a fold: wids resolves every shard, and counts as
/// many samples in each as the list says; the list imports back.
#[test]
fn wids_shard_lists() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    script(
        &python,
        "webdataset_interop.py",
        &["write", arg(&src), "src_%04d.tar", "30", "7", "plain"],
    );
    ok(&binfmt(&[
        "taridx",
        "index",
        arg(&src),
        "--fold",
        "src",
        "--keys",
        "webdataset",
    ]));
    let index = src.join("src.taridx");
    let list = src.join("src.json");
    ok(&binfmt(&[
        "taridx",
        "export",
        "wids",
        arg(&index),
        "-o",
        arg(&list),
    ]));
    let counted = dir.path().join("counted.json");
    script(
        &python,
        "tar_indexes_interop.py",
        &["wids", arg(&list), arg(&counted)],
    );
    let counted = read_json(&counted);
    assert_eq!(counted.as_array().unwrap().len(), 5);
    for shard in counted.as_array().unwrap() {
        assert_eq!(shard["exists"], true, "{shard}");
        assert_eq!(shard["nsamples"], shard["counted"], "{shard}");
    }
    let imported = dir.path().join("imported.taridx");
    ok(&binfmt(&[
        "taridx",
        "import",
        "wids",
        arg(&list),
        "--keys",
        "webdataset",
        "-o",
        arg(&imported),
    ]));
    assert!(std::fs::read(&imported).unwrap() == std::fs::read(&index).unwrap());
}

/// ratarmount's SQLite index, both ways: ratarmountcore opens each shard
/// with the exported index (read-only, never re-indexing: it raises when it
/// cannot use it) and lists the same members with the same bytes; an index
/// ratarmountcore wrote imports into the TARIDX indexing writes.
#[test]
fn ratarmount_indexes() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    script(
        &python,
        "webdataset_interop.py",
        &["write", arg(&src), "src_%04d.tar", "25", "9"],
    );
    ok(&binfmt(&[
        "taridx",
        "index",
        arg(&src),
        "--fold",
        "src",
        "--keys",
        "webdataset",
    ]));
    let index = src.join("src.taridx");
    let extracted = dir.path().join("extracted");
    ok(&binfmt(&["extract", arg(&index), "-o", arg(&extracted)]));
    let exported = dir.path().join("exported");
    ok(&binfmt(&[
        "taridx",
        "export",
        "ratarmount",
        arg(&index),
        "-o",
        arg(&exported),
    ]));
    let mut seen = 0;
    for shard in shards(&src, "src") {
        let sqlite = exported.join(format!(
            "{}.index.sqlite",
            shard.file_name().unwrap().to_str().unwrap()
        ));
        let listing = dir.path().join("listing.json");
        script(
            &python,
            "tar_indexes_interop.py",
            &["ratarmount-list", arg(&shard), arg(&sqlite), arg(&listing)],
        );
        let listing = read_json(&listing);
        for (name, hex) in listing.as_object().unwrap() {
            let bytes = std::fs::read(extracted.join(name)).unwrap();
            let ours: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(hex.as_str().unwrap(), ours, "{name}");
            seen += 1;
        }
    }
    let listed = binfmt(&["list", arg(&index)]);
    assert_eq!(text(&ok(&listed).stdout).lines().count(), seen);

    // Indexes ratarmountcore wrote, imported.
    let from = dir.path().join("ratarmount");
    std::fs::create_dir(&from).unwrap();
    let shard_paths = shards(&src, "src");
    for shard in &shard_paths {
        let sqlite = from.join(format!(
            "{}.index.sqlite",
            shard.file_name().unwrap().to_str().unwrap()
        ));
        script(
            &python,
            "tar_indexes_interop.py",
            &["ratarmount-index", arg(shard), arg(&sqlite)],
        );
    }
    let imported = dir.path().join("imported.taridx");
    let mut args = vec!["taridx", "import", "ratarmount"];
    args.extend(shard_paths.iter().map(|p| arg(p)));
    args.extend([
        "--from",
        arg(&from),
        "--keys",
        "webdataset",
        "-o",
        arg(&imported),
    ]);
    ok(&binfmt(&args));
    assert!(std::fs::read(&imported).unwrap() == std::fs::read(&index).unwrap());
}

/// GNU tar, when it is on the machine: `None` with a note when it is not
/// (a failure under `BINFMT_INTEROP=require`, as for the other tools).
fn gnu_tar() -> Option<&'static str> {
    let found = Command::new("tar")
        .arg("--version")
        .output()
        .is_ok_and(|output| text(&output.stdout).contains("GNU tar"));
    if found {
        return Some("tar");
    }
    let message = "GNU tar not found (install the tar package)";
    assert!(
        std::env::var("BINFMT_INTEROP").as_deref() != Ok("require"),
        "{message}"
    );
    eprintln!("skipping interop test: {message}");
    None
}

/// The regular files GNU tar lists (`tar -tvf`: lines of kind `-`).
fn gnu_tar_regular(tar: &str, shard: &Path) -> Vec<String> {
    let output = Command::new(tar).arg("-tvf").arg(shard).output().unwrap();
    let mut names: Vec<String> = text(&output.stdout)
        .lines()
        .filter(|line| line.starts_with('-'))
        .filter_map(|line| line.split_whitespace().last().map(str::to_owned))
        .collect();
    names.sort();
    names
}

/// The regular files Python's tarfile lists.
fn tarfile_regular(python: &Path, shard: &Path) -> Vec<String> {
    let output = Command::new(python)
        .args([
            "-c",
            "import sys, tarfile\nfor m in tarfile.open(sys.argv[1]).getmembers():\n    m.isreg() and print(m.name)",
        ])
        .arg(shard)
        .output()
        .unwrap();
    ok(&output);
    let mut names: Vec<String> = text(&output.stdout).lines().map(str::to_owned).collect();
    names.sort();
    names
}

/// Issue 26, class 7: what follows each typeflag's header is read as GNU
/// tar 1.34 and Python's tarfile read it (spec/taridx.md §3.1). Each shard
/// holds a.txt, an entry `weird` of the typeflag with a size of 1024, whose
/// bytes are a member hidden.txt, then pad.txt. A hard link or directory
/// carries no data: hidden.txt is a member for every tool, binfmt included;
/// where the tools disagree (a symlink, device or FIFO with a size), or GNU
/// tar extracts an unknown typeflag as a regular file, the shard is refused.
#[test]
fn typeflags_are_read_as_gnu_tar_and_tarfile_read_them() {
    use binfmt_tests::build::taridx::{Tar, header};
    let Some(tar) = gnu_tar() else { return };
    let python = python();
    let all = ["a.txt", "hidden.txt", "pad.txt"];
    let outer = ["a.txt", "pad.txt"];
    for (typeflag, name, expect) in [
        (b'1', &b"weird"[..], Ok(&all[..])),
        (b'5', b"weird", Ok(&all[..])),
        (b'5', b"weird/", Ok(&all[..])),
        (b'D', b"weird", Ok(&outer[..])),
        (b'V', b"weird", Ok(&outer[..])),
        (b'2', b"weird", Err("ambiguous")),
        (b'3', b"weird", Err("ambiguous")),
        (b'4', b"weird", Err("ambiguous")),
        (b'6', b"weird", Err("ambiguous")),
        (b'0', b"weird/", Err("ambiguous")),
        (0, b"weird/", Err("ambiguous")),
        (b'A', b"weird", Err("extract as a regular file")),
        (b'M', b"weird", Err("extract as a regular file")),
    ] {
        let case = format!("typeflag {:?} {:?}", char::from(typeflag), text(name));
        let dir = tempfile::tempdir().unwrap();
        let shard = dir.path().join("t_0000.tar");
        let mut bytes = Tar::new();
        bytes.file("a.txt", b"A");
        bytes.block(header(name, 1024, typeflag));
        bytes.file("hidden.txt", b"HIDDEN");
        bytes.file("pad.txt", b"PAD");
        std::fs::write(&shard, bytes.finish()).unwrap();
        let gnu = gnu_tar_regular(tar, &shard);
        let tarfile = python
            .as_deref()
            .map(|python| tarfile_regular(python, &shard));
        let indexed = binfmt(&["taridx", "index", arg(dir.path()), "--fold", "t"]);
        match expect {
            Ok(members) => {
                ok(&indexed);
                let index = dir.path().join("t.taridx");
                ok(&binfmt(&["verify", arg(&index)]));
                let listed = binfmt(&["list", arg(&index)]);
                let mut ours: Vec<String> = text(&ok(&listed).stdout)
                    .lines()
                    .filter_map(|line| line.split('\t').nth(1).map(str::to_owned))
                    .collect();
                ours.sort();
                assert_eq!(ours, members, "{case}: binfmt");
                assert_eq!(gnu, members, "{case}: GNU tar");
                if let Some(tarfile) = &tarfile {
                    assert_eq!(tarfile, members, "{case}: tarfile");
                }
            }
            Err(why) => {
                let stderr = text(&indexed.stderr);
                assert_eq!(indexed.status.code(), Some(1), "{case}: {stderr}");
                assert!(
                    stderr.contains(why) && stderr.contains("at byte 1024"),
                    "{case}: {stderr}"
                );
                assert!(!dir.path().join("t.taridx").exists(), "{case}");
            }
        }
        // Where binfmt refuses a symlink, device or FIFO with a size, the
        // two tools disagree on hidden.txt.
        if matches!(typeflag, b'2' | b'3' | b'4' | b'6') {
            assert_eq!(gnu, outer, "{case}: GNU tar's listing skips the size");
            if let Some(tarfile) = tarfile {
                assert_eq!(tarfile, all, "{case}: tarfile reads no data");
            }
        }
    }
}
