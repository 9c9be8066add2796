//! `binfmt taridx ...`, run as a real process.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use binfmt_tests::cli::{self, arg, text};
use std::process::Output;

use binfmt_tests::fixture;

fn binfmt(args: &[&str]) -> Output {
    cli::run(env!("CARGO_BIN_EXE_binfmt"), args)
}

/// A copy of the golden fold's shards in a fresh directory.
fn golden_fold() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..3 {
        let name = format!("golden_{i:04}.tar");
        std::fs::copy(
            fixture(&format!("reference/taridx/{name}")),
            dir.path().join(name),
        )
        .unwrap();
    }
    dir
}

#[test]
fn index_a_fold_like_the_reference_indexer() {
    let dir = golden_fold();
    for jobs in ["1", "3"] {
        let output = binfmt(&[
            "taridx",
            "index",
            arg(dir.path()),
            "--fold",
            "golden",
            "--jobs",
            jobs,
        ]);
        assert!(output.status.success(), "{}", text(&output.stderr));
        assert!(output.stdout.is_empty(), "messages go to stderr");
        let ours = std::fs::read(dir.path().join("golden.taridx")).unwrap();
        assert!(ours == std::fs::read(fixture("reference/taridx/golden.taridx")).unwrap());
    }
}

#[test]
fn index_explicit_shards_in_the_given_order() {
    let dir = golden_fold();
    let out = dir.path().join("custom.taridx");
    let second = dir.path().join("golden_0002.tar");
    let first = dir.path().join("golden_0000.tar");
    let output = binfmt(&[
        "taridx",
        "index",
        "-o",
        arg(&out),
        arg(&second),
        arg(&first),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let info: serde_json::Value =
        serde_json::from_slice(&binfmt(&["taridx", "info", "--json", arg(&out)]).stdout).unwrap();
    assert_eq!(info["rows"], 11);
    // golden_0002.tar came first: its extensions were seen first.
    assert_eq!(info["extensions"][0], "tar.gz");
}

#[test]
fn info_text_and_json() {
    let golden = fixture("reference/taridx/golden.taridx");
    let info = text(&binfmt(&["taridx", "info", arg(&golden)]).stdout);
    assert!(
        info.contains("rows: 17\n")
            && info.contains("stems: 8\n")
            && info.contains("contiguous: yes\n"),
        "{info}"
    );
    assert!(
        info.contains("extensions: jpg, json, cls, seg.mask.png, (none), tar.gz\n"),
        "{info}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&binfmt(&["taridx", "info", "--json", arg(&golden)]).stdout)
            .unwrap();
    assert_eq!(json["version"], "1.0");
    assert_eq!(json["stems"], 8);
    assert_eq!(json["crash_stems"], 0);
    assert_eq!(json["keys"], "glzn");
    let mixed: serde_json::Value = serde_json::from_slice(
        &binfmt(&[
            "taridx",
            "info",
            "--json",
            arg(&fixture("reference/taridx/mixed.taridx")),
        ])
        .stdout,
    )
    .unwrap();
    assert_eq!(mixed["contiguous"], false);
}

#[test]
fn get_one_payload_or_all() {
    let golden = fixture("reference/taridx/golden.taridx");
    let tar_bytes = std::fs::read(fixture("reference/taridx/golden_0000.tar")).unwrap();
    let one = binfmt(&["taridx", "get", arg(&golden), "000001", "--ext", "json"]);
    assert!(one.status.success(), "{}", text(&one.stderr));
    assert_eq!(one.stdout.len(), 40);
    // The second member: the first (700 bytes) pads to 1024, so its header
    // is at 512 + 1024 and its payload 512 bytes later.
    assert_eq!(one.stdout, &tar_bytes[2048..2088]);

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sample");
    let all = binfmt(&["taridx", "get", arg(&golden), "000004", "-o", arg(&out)]);
    assert!(all.status.success(), "{}", text(&all.stderr));
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["000004.jpg", "000004.json", "000004.seg.mask.png"]);
    assert_eq!(
        std::fs::metadata(out.join("000004.jpg")).unwrap().len(),
        3000
    );

    let single = binfmt(&["taridx", "get", arg(&golden), "000005"]);
    assert_eq!(single.stdout.len(), 1);
}

#[test]
fn errors_and_exit_codes() {
    let golden = fixture("reference/taridx/golden.taridx");
    let missing = binfmt(&["taridx", "get", arg(&golden), "nope"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        text(&missing.stderr).starts_with("binfmt: ") && text(&missing.stderr).contains("nope")
    );

    let ambiguous = binfmt(&["taridx", "get", arg(&golden), "000001"]);
    assert_eq!(ambiguous.status.code(), Some(2));
    assert!(
        text(&ambiguous.stderr).contains("\"s/000001.jpg\", \"s/000001.json\", \"s/000001.cls\""),
        "{}",
        text(&ambiguous.stderr)
    );

    let dir = golden_fold();
    let shard = dir.path().join("golden_0002.tar");
    let mut bytes = std::fs::read(&shard).unwrap();
    bytes[100] ^= 1; // mode field of the first header
    std::fs::write(&shard, bytes).unwrap();
    let corrupt = binfmt(&["taridx", "index", arg(dir.path()), "--fold", "golden"]);
    assert_eq!(corrupt.status.code(), Some(1));
    assert_eq!(
        text(&corrupt.stderr),
        format!(
            "binfmt: shard {}: header checksum mismatch at byte 0\n",
            shard.display()
        )
    );
    assert!(!dir.path().join("golden.taridx").exists());

    let bad_index = dir.path().join("bad.taridx");
    std::fs::write(&bad_index, b"TARIDX\0\0\x02\0").unwrap();
    let bad = binfmt(&["taridx", "info", arg(&bad_index)]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        text(&bad.stderr).contains("bad.taridx: truncated taridx header"),
        "{}",
        text(&bad.stderr)
    );

    assert_eq!(
        binfmt(&["taridx", "index", arg(dir.path())]).status.code(),
        Some(2)
    );
    assert_eq!(
        binfmt(&["taridx", "index", "a", "b", "--fold", "x"])
            .status
            .code(),
        Some(2)
    );
    let no_shards = binfmt(&["taridx", "index", arg(dir.path()), "--fold", "absent"]);
    assert_eq!(no_shards.status.code(), Some(1));
}

#[test]
fn every_subcommand_has_examples() {
    for command in ["index", "info", "get", "status", "pack", "export", "import"] {
        assert!(
            text(&binfmt(&["taridx", command, "--help"]).stdout).contains("Examples:"),
            "{command}"
        );
    }
}

use binfmt_tests::build::taridx as builder;

#[test]
fn index_refuses_to_write_over_a_shard() {
    let dir = golden_fold();
    let shard = dir.path().join("golden_0000.tar");
    let before = std::fs::read(&shard).unwrap();
    let output = binfmt(&["taridx", "index", arg(&shard), "-o", arg(&shard)]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("binfmt never writes its output over what it reads"),
        "{}",
        text(&output.stderr)
    );
    assert!(std::fs::read(&shard).unwrap() == before);
}

/// A fold whose members `cat/1.jpg` and `dog/1.jpg` share glzn's key `1`
/// and an extension, and a member whose WebDataset key climbs out.
fn shared_stem_fold(dir: &std::path::Path, keys: &str) -> std::path::PathBuf {
    let mut tar = builder::Tar::new();
    tar.file("cat/1.jpg", b"CAT");
    tar.file("dog/1.jpg", b"DOG");
    tar.file("cat/1.cls", b"7");
    tar.file("../../evil.jpg", b"EVIL");
    std::fs::write(dir.join("f_0000.tar"), tar.finish()).unwrap();
    let output = binfmt(&["taridx", "index", arg(dir), "--fold", "f", "--keys", keys]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    dir.join("f.taridx")
}

#[test]
fn get_never_loses_or_hides_a_member() {
    let dir = tempfile::tempdir().unwrap();
    let index = shared_stem_fold(dir.path(), "glzn");
    let out = dir.path().join("out");
    // Two members would land on out/1.jpg: refused, both named, nothing written.
    let both = binfmt(&["taridx", "get", arg(&index), "1", "-o", arg(&out)]);
    assert_eq!(both.status.code(), Some(1), "{}", text(&both.stderr));
    let message = text(&both.stderr);
    assert!(
        message.contains("\"cat/1.jpg\"") && message.contains("\"dog/1.jpg\""),
        "{message}"
    );
    assert!(!out.exists());
    // --ext never answers "choose one with --ext".
    let ext = binfmt(&["taridx", "get", arg(&index), "1", "--ext", "jpg"]);
    assert_eq!(ext.status.code(), Some(1));
    let message = text(&ext.stderr);
    assert!(
        message.contains("\"cat/1.jpg\"")
            && message.contains("\"dog/1.jpg\"")
            && !message.contains("with --ext"),
        "{message}"
    );
    // By full name, each is found; --ext X -o FILE writes a file.
    let dog = binfmt(&["taridx", "get", arg(&index), "dog/1.jpg"]);
    assert!(dog.status.success(), "{}", text(&dog.stderr));
    assert_eq!(dog.stdout, b"DOG");
    let file = dir.path().join("label");
    let cls = binfmt(&[
        "taridx",
        "get",
        arg(&index),
        "1",
        "--ext",
        "cls",
        "-o",
        arg(&file),
    ]);
    assert!(cls.status.success(), "{}", text(&cls.stderr));
    assert_eq!(std::fs::read(&file).unwrap(), b"7");
}

#[test]
fn get_writes_through_the_extraction_gate() {
    let dir = tempfile::tempdir().unwrap();
    let index = shared_stem_fold(dir.path(), "webdataset");
    let out = dir.path().join("deep/out");
    // The WebDataset key "../../evil" would write out/../../evil.jpg.
    // One member: -o names the file itself, so nothing climbs out.
    std::fs::create_dir_all(dir.path().join("deep")).unwrap();
    let evil = binfmt(&["taridx", "get", arg(&index), "../../evil", "-o", arg(&out)]);
    assert!(evil.status.success(), "{}", text(&evil.stderr));
    assert_eq!(std::fs::read(&out).unwrap(), b"EVIL");
    assert!(!dir.path().join("evil.jpg").exists());
    std::fs::remove_file(&out).unwrap();
    // Keys of several members go through safe_target.
    let mut tar = builder::Tar::new();
    tar.file("../up.jpg", b"1");
    tar.file("../up.cls", b"2");
    std::fs::write(dir.path().join("g_0000.tar"), tar.finish()).unwrap();
    assert!(
        binfmt(&[
            "taridx",
            "index",
            arg(dir.path()),
            "--fold",
            "g",
            "--keys",
            "webdataset"
        ])
        .status
        .success()
    );
    let sample = binfmt(&[
        "taridx",
        "get",
        arg(&dir.path().join("g.taridx")),
        "../up",
        "-o",
        arg(&out),
    ]);
    assert_eq!(sample.status.code(), Some(1));
    assert!(
        text(&sample.stderr).contains("'..' component"),
        "{}",
        text(&sample.stderr)
    );
    assert!(!dir.path().join("deep/up.jpg").exists());
}

#[test]
fn compressed_shards_are_named_for_what_they_are() {
    let dir = golden_fold();
    let shard = dir.path().join("golden_0001.tar");
    let status = std::process::Command::new("gzip")
        .arg("-k")
        .arg(&shard)
        .status()
        .unwrap();
    assert!(status.success());
    let gz = dir.path().join("golden_0001.tar.gz");
    let output = binfmt(&[
        "taridx",
        "index",
        arg(&gz),
        "-o",
        arg(&dir.path().join("x.taridx")),
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        text(&output.stderr),
        format!(
            "binfmt: {} is gzip-compressed; TARIDX needs uncompressed tar (decompress it first)\n",
            gz.display()
        )
    );
}

/// A fold of 10,000 one-member shards lists, gets and extracts with at most
/// 256 open files.
#[test]
fn ten_thousand_shards_under_ulimit_256() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = binfmt_taridx::SampleWriter::create(
        dir.path(),
        "many",
        binfmt_taridx::SampleWriterOptions::new().max_samples(1),
    )
    .unwrap();
    for i in 0..10_000 {
        writer
            .write(&format!("{i:05}"), &[("txt", format!("{i}").as_bytes())])
            .unwrap();
    }
    let fold = writer.finish().unwrap();
    assert_eq!(fold.shards.len(), 10_000);
    let index = arg(&fold.index).to_owned();
    let limited = |args: &[&str]| {
        let mut all = vec!["--nofile=256", env!("CARGO_BIN_EXE_binfmt")];
        all.extend_from_slice(args);
        cli::run("prlimit", &all)
    };
    let list = limited(&["list", &index]);
    assert!(list.status.success(), "{}", text(&list.stderr));
    assert_eq!(text(&list.stdout).lines().count(), 10_000);
    let get = limited(&["taridx", "get", &index, "09999"]);
    assert!(get.status.success(), "{}", text(&get.stderr));
    assert_eq!(get.stdout, b"9999");
    let out = dir.path().join("extracted");
    let extract = limited(&["extract", &index, "-o", arg(&out)]);
    assert!(extract.status.success(), "{}", text(&extract.stderr));
    assert_eq!(std::fs::read(out.join("04321.txt")).unwrap(), b"4321");
    let verify = limited(&["verify", &index]);
    assert!(verify.status.success(), "{}", text(&verify.stderr));
}

/// Finding 07: a member named like the shard it is in. Every command that
/// writes refuses an output that is one of the files it reads (the index or
/// any shard, by device and inode, through symlinks), and the shard stays
/// as it was. The fold is tests/regressions/taridx_cli/shard_named/
/// (`BINFMT_BLESS=1` rewrites it).
#[test]
fn no_output_is_written_over_a_shard_being_read() {
    let mut tar = binfmt_tests::build::taridx::Tar::new();
    tar.file("train_0000.tar", b"OVERWRITTEN SHARD");
    let shard = tar.finish();
    let committed = binfmt_tests::workspace_root().join("tests/regressions/taridx_cli/shard_named");
    let dir = tempfile::tempdir().unwrap();
    let fold = dir.path();
    std::fs::write(fold.join("train_0000.tar"), &shard).unwrap();
    let output = binfmt(&["taridx", "index", arg(fold), "--fold", "train"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    for name in ["train.taridx", "train_0000.tar"] {
        let built = std::fs::read(fold.join(name)).unwrap();
        if std::env::var_os("BINFMT_BLESS").is_some() {
            std::fs::create_dir_all(&committed).unwrap();
            std::fs::write(committed.join(name), &built).unwrap();
        }
        assert!(
            std::fs::read(committed.join(name)).unwrap() == built,
            "{name} differs from the committed regression"
        );
    }
    std::os::unix::fs::symlink("train_0000.tar", fold.join("link.tar")).unwrap();
    let index = fold.join("train.taridx");
    let shard_path = fold.join("train_0000.tar");
    let link = fold.join("link.tar");
    let runs: Vec<Vec<&str>> = vec![
        vec!["extract", arg(&index), "-o", arg(fold)],
        vec!["get", arg(&index), "train_0000.tar", "-o", arg(&shard_path)],
        vec!["get", arg(&index), "train_0000.tar", "-o", arg(&link)],
        vec![
            "convert",
            arg(&index),
            "-o",
            arg(&shard_path),
            "--to",
            "arcx",
        ],
        vec!["convert", arg(&index), "-o", arg(&link), "--to", "par4"],
        vec![
            "taridx",
            "get",
            arg(&index),
            "train_0000.tar",
            "-o",
            arg(&shard_path),
        ],
        vec!["taridx", "get", arg(&index), "train_0000", "-o", arg(&link)],
    ];
    for args in runs {
        let output = binfmt(&args);
        assert!(!output.status.success(), "{args:?} succeeded");
        let stderr = text(&output.stderr);
        assert!(
            stderr.contains("train_0000.tar") && stderr.contains("read"),
            "{args:?}: {stderr}"
        );
        assert!(
            std::fs::read(&shard_path).unwrap() == shard,
            "{args:?} wrote over the shard"
        );
    }
}

/// Outside-attack finding 11: names with a carriage return or an escape
/// sequence cannot forge lines in `taridx info`, `status` or the `wrote`
/// lines; finding 13: an extension holding a newline (which the index's
/// one-per-line extension block cannot hold) is refused by name, and no
/// unreadable index is written.
#[test]
fn names_cannot_forge_lines_or_break_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let mut tar = builder::Tar::new();
    tar.file("a.b\rcontiguous: no", b"A");
    tar.file("c.\x1b[31mred", b"C");
    std::fs::write(dir.path().join("f_0000.tar"), tar.finish()).unwrap();
    let output = binfmt(&["taridx", "index", arg(dir.path()), "--fold", "f"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let info = binfmt(&["taridx", "info", arg(&dir.path().join("f.taridx"))]);
    assert!(info.status.success(), "{}", text(&info.stderr));
    let shown = text(&info.stdout);
    assert!(!shown.contains(['\r', '\x1b']), "{shown:?}");
    assert!(shown.contains("b\\rcontiguous"), "{shown:?}");
    let forged = shown
        .lines()
        .filter(|line| line.starts_with("contiguous: "));
    assert_eq!(forged.count(), 1, "{shown:?}");

    let status_root = tempfile::tempdir().unwrap();
    let forged = status_root.path().join("x\nmissing\tFORGED_0000.tar");
    std::fs::write(&forged, builder::Tar::new().finish()).unwrap();
    let status = binfmt(&["taridx", "status", arg(status_root.path())]);
    let lines = text(&status.stdout);
    assert_eq!(lines.lines().count(), 1, "{lines:?}");
    assert!(!lines.contains('\x1b'), "{lines:?}");

    let bad = tempfile::tempdir().unwrap();
    let mut tar = builder::Tar::new();
    tar.file("a.j\npg", b"A");
    std::fs::write(bad.path().join("n_0000.tar"), tar.finish()).unwrap();
    let output = binfmt(&["taridx", "index", arg(bad.path()), "--fold", "n"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("extension holds a newline")
            && text(&output.stderr).contains("n_0000.tar: the member at byte 0"),
        "{}",
        text(&output.stderr)
    );
    assert!(!bad.path().join("n.taridx").exists());
}

/// Outside-attack finding 15: a sparse file in pax format 1.0 (as
/// `tar --sparse --format=pax` writes it: a header named
/// `GNUSparseFile.0/s.bin` whose payload is the sparse map and the data)
/// and a GNU `S` member are refused by name and offset, not indexed as
/// their encoded bytes nor left out.
#[test]
fn sparse_members_are_refused() {
    for gnu in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let mut tar = builder::Tar::new();
        tar.file("before.txt", b"fine");
        if gnu {
            tar.block(builder::header(b"s.bin", 512, b'S'))
                .data(&[7; 512]);
        } else {
            tar.pax(&[
                ("GNU.sparse.major", b"1"),
                ("GNU.sparse.minor", b"0"),
                ("GNU.sparse.name", b"s.bin"),
                ("GNU.sparse.realsize", b"1048576"),
            ]);
            tar.file("GNUSparseFile.0/s.bin", b"1\n0\n5\n");
        }
        std::fs::write(dir.path().join("s_0000.tar"), tar.finish()).unwrap();
        let output = binfmt(&["taridx", "index", arg(dir.path()), "--fold", "s"]);
        assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
        let message = text(&output.stderr);
        assert!(
            message.contains("a sparse file") && message.contains("at byte 1024"),
            "{message}"
        );
        assert!(!dir.path().join("s.taridx").exists());
    }
}

/// Issue 26, class 1: an index whose rows stop before a shard's last
/// member, or with no rows for a shard of its fold, is stale for `status`
/// and refused by `verify`, `list`, `extract` and `convert` (nothing is
/// written), each naming the shard and the member's offset; bytes after
/// the end-of-archive blocks are not members (as GNU tar reads them).
#[test]
fn an_index_that_does_not_cover_its_shards_is_refused() {
    use binfmt_tests::build::taridx::Tar;
    let dir = tempfile::tempdir().unwrap();
    let (fold, elsewhere) = (dir.path().join("fold"), dir.path().join("elsewhere"));
    std::fs::create_dir_all(&fold).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    let shard = |names: &[&str]| {
        let mut tar = Tar::new();
        for name in names {
            tar.file(name, name.as_bytes());
        }
        tar.finish()
    };
    let index = fold.join("train.taridx");
    let out = dir.path().join("out.arcx");
    let extracted = dir.path().join("extracted");
    // The index of `indexed` (shards written elsewhere), over the fold's
    // `shards`, written after them (so not older than a shard).
    let stale_fold = |shards: &[&[&str]], indexed: &[&[&str]]| {
        for (fid, names) in shards.iter().enumerate() {
            std::fs::write(fold.join(format!("train_{fid:04}.tar")), shard(names)).unwrap();
        }
        let mut paths = Vec::new();
        for (fid, names) in indexed.iter().enumerate() {
            let path = elsewhere.join(format!("train_{fid:04}.tar"));
            std::fs::write(&path, shard(names)).unwrap();
            paths.push(path);
        }
        let mut args = vec!["taridx", "index", "-o", arg(&index)];
        args.extend(paths.iter().map(|path| arg(path)));
        let output = binfmt(&args);
        assert!(output.status.success(), "{}", text(&output.stderr));
        // binfmt recorded where the indexed shards are; an index written
        // by another tool (glzn) has no such list, and is read over the
        // fold's shards by their names.
        std::fs::remove_file(binfmt_taridx::shard_list_path(&index)).unwrap();
    };
    let commands = |expect: &str| {
        for args in [
            vec!["verify", arg(&index)],
            vec!["taridx", "verify", arg(&index)],
            vec!["list", arg(&index)],
            vec!["extract", arg(&index), "-o", arg(&extracted)],
            vec!["convert", arg(&index), "-o", arg(&out), "--to", "arcx"],
        ] {
            let output = binfmt(&args);
            let stderr = text(&output.stderr);
            assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
            assert!(
                stderr.contains(expect) && stderr.contains("has no row"),
                "{args:?}: {stderr}"
            );
        }
        assert!(!out.exists(), "convert wrote its output");
        let output = binfmt(&["taridx", "status", arg(&fold)]);
        let stdout = text(&output.stdout);
        assert_eq!(output.status.code(), Some(1), "{stdout}");
        assert!(
            stdout.starts_with("stale\ttrain") && stdout.contains(expect),
            "{stdout}"
        );
    };
    // Rows stop before the shard's last member, b.jpg at byte 1024.
    stale_fold(&[&["a.jpg", "b.jpg"]], &[&["a.jpg"]]);
    commands("train_0000.tar: the regular file \"b.jpg\" at byte 1024");
    // A whole shard without rows.
    stale_fold(&[&["a.jpg", "b.jpg"], &["c.jpg"]], &[&["a.jpg", "b.jpg"]]);
    commands("train_0001.tar: the regular file \"c.jpg\" at byte 0");
    // Indexed in full, with junk after shard 1's end-of-archive blocks.
    let mut junk = shard(&["c.jpg"]);
    junk.extend(shard(&["hidden.jpg"]));
    std::fs::write(fold.join("train_0001.tar"), &junk).unwrap();
    let output = binfmt(&["taridx", "index", arg(&fold), "--fold", "train"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    for args in [
        vec!["verify", arg(&index)],
        vec!["taridx", "status", arg(&fold)],
        vec!["convert", arg(&index), "-o", arg(&out), "--to", "arcx"],
    ] {
        let output = binfmt(&args);
        assert!(
            output.status.success(),
            "{args:?}: {}",
            text(&output.stderr)
        );
    }
    let listed = text(&binfmt(&["list", arg(&index)]).stdout);
    assert!(
        listed.contains("c.jpg") && !listed.contains("hidden.jpg"),
        "{listed}"
    );
}

/// `taridx index -o` naming a shard through a hard link or a symlink is
/// refused by the output gate (device and inode), the shard untouched.
#[test]
fn index_output_through_a_link_to_a_shard_is_refused() {
    let dir = golden_fold();
    let shard = dir.path().join("golden_0000.tar");
    let before = std::fs::read(&shard).unwrap();
    let hard = dir.path().join("hard.taridx");
    let soft = dir.path().join("soft.taridx");
    std::fs::hard_link(&shard, &hard).unwrap();
    std::os::unix::fs::symlink(&shard, &soft).unwrap();
    for out in [&hard, &soft] {
        let output = binfmt(&["taridx", "index", arg(&shard), "-o", arg(out)]);
        assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
        assert!(
            text(&output.stderr).contains("binfmt never writes its output over what it reads"),
            "{}",
            text(&output.stderr)
        );
        assert!(std::fs::read(&shard).unwrap() == before);
    }
}
