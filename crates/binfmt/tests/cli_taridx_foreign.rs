//! `binfmt taridx import`, `export` and `pack` against hand-built hostile
//! inputs, through the binary: an output never replaces an input (by
//! device and inode: names, symlinks, hard links), a FIFO or a device is
//! never read, a ratarmount database is data and never a program, an
//! export never writes what `verify` refuses, and wids URLs resolve from
//! the list's directory (also with wids 0.1.11 from the interop venv).

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use binfmt_tests::build::taridx::{RawIndex, Tar};
use binfmt_tests::cli::{arg, text};
use binfmt_tests::interop::{python, python_script};

/// Runs binfmt in `cwd` (the tests' own directory when `None`). A run
/// still going after a minute is killed and fails the test: a FIFO read
/// without a writer blocks forever, and the test must report it, not hang.
fn binfmt_in(cwd: Option<&Path>, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_binfmt"));
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(cwd) = cwd {
        command.current_dir(cwd);
    }
    let mut child = command.spawn().unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("binfmt {args:?} hung (killed after a minute)");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn binfmt(args: &[&str]) -> Output {
    binfmt_in(None, args)
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

/// Exit 1, with `needle` in the error line; returns stderr.
fn refused(output: &Output, needle: &str) -> String {
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "stderr: {stderr}");
    assert!(stderr.contains(needle), "{needle:?} not in: {stderr}");
    stderr
}

fn mkfifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

/// A fold `DIR/f_0000.tar`, `DIR/f_0001.tar` of WebDataset samples (two per
/// shard, two members each) and its index `DIR/f.taridx`.
fn fold(dir: &Path) -> (PathBuf, Vec<PathBuf>) {
    std::fs::create_dir_all(dir).unwrap();
    let mut shards = Vec::new();
    for fid in 0..2 {
        let mut tar = Tar::new();
        for sample in 0..2 {
            let key = format!("s{fid}{sample}");
            tar.file(&format!("{key}.cls"), b"7");
            tar.file(&format!("{key}.jpg"), format!("JPEG {key}").as_bytes());
        }
        let shard = dir.join(format!("f_{fid:04}.tar"));
        std::fs::write(&shard, tar.finish()).unwrap();
        shards.push(shard);
    }
    let index = dir.join("f.taridx");
    ok(&binfmt(&[
        "taridx",
        "index",
        arg(dir),
        "--fold",
        "f",
        "--keys",
        "webdataset",
    ]));
    (index, shards)
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

/// Export, import and pack never write over what they read: named
/// directly, through a symlink or through a hard link; all outputs are
/// checked before the first is written.
#[test]
fn outputs_never_replace_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (index, shards) = fold(&data);
    let index_bytes = read(&index);
    let shard_bytes = read(&shards[0]);

    // export wids over the index, a shard, a symlink to the index.
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&index, &link).unwrap();
    for out in [&index, &shards[0], &link] {
        let output = binfmt(&["taridx", "export", "wids", arg(&index), "-o", arg(out)]);
        refused(&output, "never writes its output over what it reads");
    }
    // export dali and ratarmount where an output is a hard link to a shard
    // or the index: refused, and nothing at all is written.
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::hard_link(&index, out.join("f_0001.idx")).unwrap();
    let output = binfmt(&["taridx", "export", "dali", arg(&index), "-o", arg(&out)]);
    refused(&output, "never writes its output over what it reads");
    assert!(!out.join("f_0000.idx").exists(), "nothing is written");
    std::fs::hard_link(&shards[1], out.join("f_0001.tar.index.sqlite")).unwrap();
    let output = binfmt(&[
        "taridx",
        "export",
        "ratarmount",
        arg(&index),
        "-o",
        arg(&out),
    ]);
    refused(&output, "never writes its output over what it reads");
    assert!(!out.join("f_0000.tar.index.sqlite").exists());

    // import over the wids list it reads, or over one of its shards.
    let list = data.join("f.json");
    ok(&binfmt(&[
        "taridx",
        "export",
        "wids",
        arg(&index),
        "-o",
        arg(&list),
    ]));
    let list_bytes = read(&list);
    for out in [&list, &shards[1]] {
        let output = binfmt(&["taridx", "import", "wids", arg(&list), "-o", arg(out)]);
        refused(&output, "never writes its output over what it reads");
    }
    assert_eq!(read(&list), list_bytes);

    // import over the DALI .idx or the SQLite database it reads.
    ok(&binfmt(&["taridx", "export", "dali", arg(&index)]));
    let idx = data.join("f_0000.idx");
    let idx_bytes = read(&idx);
    let output = binfmt(&[
        "taridx",
        "import",
        "dali",
        arg(&shards[0]),
        arg(&shards[1]),
        "--keys",
        "webdataset",
        "-o",
        arg(&idx),
    ]);
    refused(&output, "never writes its output over what it reads");
    assert_eq!(read(&idx), idx_bytes);
    ok(&binfmt(&["taridx", "export", "ratarmount", arg(&index)]));
    let sqlite = data.join("f_0001.tar.index.sqlite");
    let sqlite_bytes = read(&sqlite);
    let output = binfmt(&[
        "taridx",
        "import",
        "ratarmount",
        arg(&shards[0]),
        arg(&shards[1]),
        "-o",
        arg(&sqlite),
    ]);
    refused(&output, "never writes its output over what it reads");
    assert_eq!(read(&sqlite), sqlite_bytes);

    // pack -o naming a file it walks (directly, and through a hard link).
    let images = dir.path().join("images");
    std::fs::create_dir(&images).unwrap();
    std::fs::write(images.join("a.jpg"), b"JPEG a").unwrap();
    std::fs::write(images.join("train.taridx"), b"not an index, a member").unwrap();
    let target = images.join("train.taridx");
    let output = binfmt(&["taridx", "pack", arg(&images), "-o", arg(&target)]);
    refused(&output, "never writes its output over what it reads");
    assert_eq!(read(&target), b"not an index, a member");
    let elsewhere = dir.path().join("packed");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::hard_link(images.join("a.jpg"), elsewhere.join("p.taridx")).unwrap();
    let output = binfmt(&[
        "taridx",
        "pack",
        arg(&images),
        "-o",
        arg(&elsewhere.join("p.taridx")),
    ]);
    refused(&output, "never writes its output over what it reads");
    assert_eq!(read(&images.join("a.jpg")), b"JPEG a");
    assert!(!elsewhere.join("p_0000.tar").exists(), "no shard written");

    assert_eq!(read(&index), index_bytes);
    assert_eq!(read(&shards[0]), shard_bytes);
}

/// Two shards whose DALI `.idx` names agree (`wds2idx` cuts at the first
/// dot: fold `d.v1` gives `d.idx` for every shard) would write one file
/// twice, the second over the first: refused before either is written.
#[test]
fn outputs_never_replace_each_other() {
    let dir = tempfile::tempdir().unwrap();
    for fid in 0..2 {
        let mut tar = Tar::new();
        tar.file(&format!("k{fid}.jpg"), b"x");
        std::fs::write(dir.path().join(format!("d.v1_{fid:04}.tar")), tar.finish()).unwrap();
    }
    ok(&binfmt(&[
        "taridx",
        "index",
        arg(dir.path()),
        "--fold",
        "d.v1",
    ]));
    let output = binfmt(&[
        "taridx",
        "export",
        "dali",
        arg(&dir.path().join("d.v1.taridx")),
    ]);
    refused(&output, "two outputs of this command are this one file");
    assert!(!dir.path().join("d.idx").exists());
}

/// A wids list, a DALI `.idx` or a ratarmount database that is a FIFO or a
/// device (a symlink to `/dev/zero`) is refused before a byte is read; a
/// file larger than what its shard allows is refused before it is read.
#[test]
fn special_files_are_never_read() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (_, shards) = fold(&data);
    let out = dir.path().join("out.taridx");
    let fifo = dir.path().join("list.json");
    mkfifo(&fifo);
    let zero = dir.path().join("zero.json");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    for (list, kind) in [(&fifo, "a FIFO"), (&zero, "a character device")] {
        let output = binfmt(&["taridx", "import", "wids", arg(list), "-o", arg(&out)]);
        refused(&output, kind);
    }

    let from = dir.path().join("from");
    std::fs::create_dir(&from).unwrap();
    mkfifo(&from.join("f_0000.idx"));
    std::os::unix::fs::symlink("/dev/zero", from.join("f_0001.idx")).unwrap();
    mkfifo(&from.join("f_0000.tar.index.sqlite"));
    std::os::unix::fs::symlink("/dev/zero", from.join("f_0001.tar.index.sqlite")).unwrap();
    for (shard, kind) in [(&shards[0], "a FIFO"), (&shards[1], "a character device")] {
        for format in ["dali", "ratarmount"] {
            let output = binfmt(&[
                "taridx",
                "import",
                format,
                arg(shard),
                "--from",
                arg(&from),
                "-o",
                arg(&out),
            ]);
            refused(&output, kind);
        }
    }

    // Larger than the shard allows: a sparse file, refused by its size.
    let big = dir.path().join("big");
    std::fs::create_dir(&big).unwrap();
    let shard_len = std::fs::metadata(&shards[0]).unwrap().len();
    for (name, len) in [
        ("f_0000.idx", shard_len + (1 << 20) + 1),
        ("f_0000.tar.index.sqlite", 2 * shard_len + (64 << 20) + 1),
    ] {
        let file = std::fs::File::create(big.join(name)).unwrap();
        file.set_len(len).unwrap();
    }
    for format in ["dali", "ratarmount"] {
        let output = binfmt(&[
            "taridx",
            "import",
            format,
            arg(&shards[0]),
            "--from",
            arg(&big),
            "-o",
            arg(&out),
        ]);
        refused(&output, "limit");
    }
    assert!(!out.exists());
}

/// A ratarmount database for shard `f_0000.tar` in `dir`, made by `make`
/// from a connection holding nothing.
fn database(dir: &Path, make: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("f_0000.tar.index.sqlite");
    let db = rusqlite::Connection::open(&path).unwrap();
    db.execute_batch(make).unwrap();
    path
}

const FILES: &str = "CREATE TABLE files (path TEXT, name TEXT, offsetheader INTEGER, \
    offset INTEGER, size INTEGER, mtime REAL, mode INTEGER, type INTEGER, linkname TEXT, \
    uid INTEGER, gid INTEGER, istar BOOL, issparse BOOL, isgenerated BOOL, \
    recursiondepth INTEGER);";

/// A ratarmount database is data: `files` must be a plain table with the
/// columns read (a view running a recursive query forever, a view or a
/// generated column building huge names, a trigger: refused by schema,
/// before any is run), its rows are bounded by the shard's size, and the
/// path is never read as an SQLite URI.
#[test]
fn ratarmount_databases_never_run_code() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (index, shards) = fold(&data);
    let out = dir.path().join("out.taridx");
    let import = |from: &Path| {
        binfmt(&[
            "taridx",
            "import",
            "ratarmount",
            arg(&shards[0]),
            "--from",
            arg(from),
            "-o",
            arg(&out),
        ])
    };
    let cases = [
        (
            "forever",
            "CREATE VIEW files (path, name, offsetheader, offset, size, mode, issparse) AS \
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) \
             SELECT '', 'a.jpg', i * 512, i * 512 + 512, 1, 33188, 0 FROM n;",
            "\"files\" has a view",
        ),
        (
            "huge",
            "CREATE VIEW files (path, name, offsetheader, offset, size, mode, issparse) AS \
             SELECT '', printf('%.*c', 1000000000, 'x'), 0, 512, 1, 33188, 0;",
            "\"files\" has a view",
        ),
        (
            "generated",
            "CREATE TABLE files (path TEXT, n TEXT, offsetheader INTEGER, offset INTEGER, \
             size INTEGER, mode INTEGER, issparse BOOL, \
             name TEXT GENERATED ALWAYS AS (printf('%.*c', 1000000000, n)) VIRTUAL); \
             INSERT INTO files (path, n, offsetheader, offset, size, mode, issparse) \
             VALUES ('', 'x', 0, 512, 1, 33188, 0);",
            "generated column",
        ),
        (
            "trigger",
            &format!(
                "{FILES} CREATE TABLE log (x); \
                 CREATE TRIGGER t AFTER INSERT ON files BEGIN INSERT INTO log VALUES (1); END;"
            ),
            "\"files\" has a trigger",
        ),
        (
            // A name longer than SQLITE_LIMIT_LENGTH: never read whole.
            "long",
            &format!(
                "{FILES} INSERT INTO files VALUES ('', printf('%.*c', 3000000, 'x'), 0, 512, \
                 1, 0, 33188, 0, '', 0, 0, 0, 0, 0, 0);"
            ),
            "too big",
        ),
        (
            "columns",
            "CREATE TABLE files (path TEXT, name TEXT);",
            "no \"offset\" column",
        ),
        (
            "virtual",
            "CREATE VIRTUAL TABLE files USING fts5(path, name, offset, size, mode, issparse);",
            "virtual table",
        ),
        (
            // Far more regular files than a shard of this size can hold
            // (one 512-byte header each): refused while they are read.
            "rows",
            &format!(
                "{FILES} WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n \
                 WHERE i < 100000) INSERT INTO files \
                 SELECT '', 'k' || i || '.jpg', i * 512, i * 512 + 512, 0, 0, 33188, 0, '', \
                 0, 0, 0, 0, 0, 0 FROM n;"
            ),
            "more regular files than",
        ),
    ];
    for (name, make, needle) in cases {
        let from = dir.path().join(name);
        database(&from, make);
        refused(&import(&from), needle);
        assert!(!out.exists(), "{name}");
    }

    // The path is a path: a directory literally named like an SQLite URI
    // (which SQLite, built with SQLITE_USE_URI, would read as one and open
    // `decoy/...` instead) is read as named.
    let uri = data.join("file:decoy?mode=ro");
    std::fs::create_dir(&uri).unwrap();
    ok(&binfmt(&[
        "taridx",
        "export",
        "ratarmount",
        arg(&index),
        "-o",
        arg(&uri),
    ]));
    database(&data.join("decoy"), FILES);
    let imported = data.join("imported.taridx");
    ok(&binfmt_in(
        Some(&data),
        &[
            "taridx",
            "import",
            "ratarmount",
            "f_0000.tar",
            "f_0001.tar",
            "--from",
            "file:decoy?mode=ro",
            "--keys",
            "webdataset",
            "-o",
            "imported.taridx",
        ],
    ));
    assert!(read(&imported) == read(&index));
}

/// The index with `edit` applied to its rows, written to `DIR/f.taridx`.
fn edited(index: &Path, edit: impl FnOnce(&mut RawIndex)) {
    let mut raw = RawIndex::parse(&read(index));
    edit(&mut raw);
    std::fs::write(index, raw.bytes()).unwrap();
}

/// Export first runs what verify runs: a row past its shard's end, two
/// rows on one member, a row in a shard that is not there, a member without
/// a row are refused and nothing is written.
#[test]
fn export_never_writes_what_verify_refuses() {
    type Case = (&'static str, fn(&mut RawIndex), &'static str);
    let cases: [Case; 4] = [
        (
            "past",
            |raw| raw.rows.last_mut().unwrap().offset = 1 << 20,
            "past the end",
        ),
        (
            "aliased",
            |raw| {
                let first = raw.rows[0];
                raw.rows[2] = first;
            },
            "",
        ),
        ("fid", |raw| raw.rows.last_mut().unwrap().fid = 7, "shard"),
        (
            // The last member of the last shard without its row.
            "short",
            |raw| {
                raw.rows.pop();
            },
            "has no row",
        ),
    ];
    for (name, edit, needle) in cases {
        let dir = tempfile::tempdir().unwrap();
        let (index, _) = fold(dir.path());
        edited(&index, edit);
        let verify = binfmt(&["verify", arg(&index)]);
        assert_ne!(verify.status.code(), Some(0), "{name}: verify refuses it");
        let out = dir.path().join("out");
        for format in ["wids", "dali", "ratarmount"] {
            let target = if format == "wids" {
                out.join("f.json")
            } else {
                out.clone()
            };
            std::fs::create_dir_all(&out).unwrap();
            let output = binfmt(&["taridx", "export", format, arg(&index), "-o", arg(&target)]);
            refused(&output, needle);
            assert_eq!(
                std::fs::read_dir(&out).unwrap().count(),
                0,
                "{name} {format}: nothing written"
            );
        }
    }
}

/// wids URLs resolve from the list's directory, wherever the list and the
/// current directory are: `import wids` (from another directory) reads
/// back the same index, and wids 0.1.11 finds every shard.
#[test]
fn wids_urls_resolve_from_the_list() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (index, _) = fold(&data);
    let lists = dir.path().join("lists");
    std::fs::create_dir(&lists).unwrap();
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    // Exported from the fold's parent, relative paths throughout.
    ok(&binfmt_in(
        Some(dir.path()),
        &[
            "taridx",
            "export",
            "wids",
            "data/f.taridx",
            "-o",
            "lists/f.json",
        ],
    ));
    let list: serde_json::Value = serde_json::from_slice(&read(&lists.join("f.json"))).unwrap();
    let urls: Vec<&str> = list["shardlist"]
        .as_array()
        .unwrap()
        .iter()
        .map(|shard| shard["url"].as_str().unwrap())
        .collect();
    assert_eq!(urls, ["../data/f_0000.tar", "../data/f_0001.tar"]);
    let imported = dir.path().join("imported.taridx");
    ok(&binfmt_in(
        Some(&elsewhere),
        &[
            "taridx",
            "import",
            "wids",
            "../lists/f.json",
            "--keys",
            "webdataset",
            "-o",
            arg(&imported),
        ],
    ));
    assert!(read(&imported) == read(&index));

    let Some(python) = python() else { return };
    let counted = dir.path().join("counted.json");
    let output = Command::new(python)
        .arg(python_script("tar_indexes_interop.py"))
        .args(["wids", arg(&lists.join("f.json")), arg(&counted)])
        .current_dir(&elsewhere)
        .output()
        .unwrap();
    ok(&output);
    let counted: serde_json::Value = serde_json::from_slice(&read(&counted)).unwrap();
    for shard in counted.as_array().unwrap() {
        assert_eq!(shard["exists"], true, "{shard}");
        assert_eq!(shard["nsamples"], shard["counted"], "{shard}");
    }
}
/// An import accounts for every member of every shard: a DALI `.idx`
/// listing only the first sample, and an empty ratarmount table, are
/// refused, not written as an index that drops the rest.
#[test]
fn imports_cover_every_member() {
    let dir = tempfile::tempdir().unwrap();
    let (index, shards) = fold(dir.path());
    let out = dir.path().join("out.taridx");
    ok(&binfmt(&["taridx", "export", "dali", arg(&index)]));
    let idx = dir.path().join("f_0000.idx");
    let text = std::fs::read_to_string(&idx).unwrap();
    let first: Vec<&str> = text.lines().take(2).collect();
    std::fs::write(
        &idx,
        format!("{}\n", first.join("\n").replace("v1.1 2", "v1.1 1")),
    )
    .unwrap();
    let output = binfmt(&[
        "taridx",
        "import",
        "dali",
        arg(&shards[0]),
        "--keys",
        "webdataset",
        "-o",
        arg(&out),
    ]);
    refused(&output, "has no row");
    assert!(!out.exists());

    let from = dir.path().join("empty");
    database(&from, FILES);
    let output = binfmt(&[
        "taridx",
        "import",
        "ratarmount",
        arg(&shards[0]),
        "--from",
        arg(&from),
        "-o",
        arg(&out),
    ]);
    refused(&output, "has no row");
    assert!(!out.exists());
}

/// An index by URL is refused before anything is read or written, with a
/// line saying what export takes (not a local-file error about the URL).
#[test]
fn export_of_a_remote_index_says_it_takes_a_local_fold() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("list.json");
    for index in [
        "s3://bucket/train.taridx",
        "https://example.invalid/train.taridx",
    ] {
        let output = binfmt(&["taridx", "export", "wids", index, "-o", arg(&out)]);
        refused(&output, "taridx export reads a local fold");
        assert!(!out.exists(), "nothing is written");
    }
}
