//! Shards named as users name them (issue 28, point 1): `NAME-000000.tar`,
//! `NAME.000000.tar` and glzn's `NAME_0000.tar` found by `--all` and
//! `status`; shards given as patterns; the shard list written beside an
//! index whose shards glzn's names would not find, and read by every later
//! command, locally, over HTTP (nginx) and from S3 (SeaweedFS); an index
//! whose shards are nowhere fails at open saying where it looked.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::{Path, PathBuf};
use std::process::Output;

use binfmt_tests::cli::{self, arg, text};
use binfmt_tests::interop::servers;
use serde_json::Value;

fn binfmt(args: &[&str]) -> Output {
    cli::run(env!("CARGO_BIN_EXE_binfmt"), args)
}

fn ok(output: Output) -> Output {
    assert!(
        output.status.success(),
        "stdout: {}\nstderr: {}",
        text(&output.stdout),
        text(&output.stderr)
    );
    output
}

/// The golden fold's three shards, copied under `names`.
fn shards_named(dir: &Path, names: &[&str]) -> Vec<PathBuf> {
    let golden = binfmt_tests::fixture("reference/taridx");
    names
        .iter()
        .enumerate()
        .map(|(fid, name)| {
            let to = dir.join(name);
            std::fs::copy(golden.join(format!("golden_{fid:04}.tar")), &to).unwrap();
            to
        })
        .collect()
}

fn golden_bytes() -> Vec<u8> {
    std::fs::read(binfmt_tests::fixture("reference/taridx/golden.taridx")).unwrap()
}

fn status(dir: &Path) -> (bool, Vec<(String, String)>) {
    let output = binfmt(&["taridx", "status", "--json", arg(dir)]);
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let folds = report
        .as_array()
        .unwrap()
        .iter()
        .map(|fold| {
            (
                fold["fold"].as_str().unwrap().to_owned(),
                fold["state"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    (output.status.success(), folds)
}

fn listed(index: &Path) -> String {
    text(&ok(binfmt(&["list", arg(index)])).stdout)
}

/// `--all` and `status` find folds named the three ways; the two that are
/// not glzn's get a shard list, glzn's keeps glzn's files exactly.
#[test]
fn every_naming_is_a_fold() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    shards_named(
        dir,
        &["shard-000000.tar", "shard-000001.tar", "shard-000002.tar"],
    );
    shards_named(dir, &["my_data.0.tar", "my_data.1.tar", "my_data.2.tar"]);
    shards_named(
        dir,
        &["golden_0000.tar", "golden_0001.tar", "golden_0002.tar"],
    );
    let missing = |fold: &str| (fold.to_owned(), "missing".to_owned());
    assert_eq!(
        status(dir),
        (
            false,
            vec![missing("golden"), missing("my_data"), missing("shard")]
        )
    );
    ok(binfmt(&["taridx", "index", arg(dir), "--all"]));
    let fresh = |fold: &str| (fold.to_owned(), "fresh".to_owned());
    assert_eq!(
        status(dir),
        (
            true,
            vec![fresh("golden"), fresh("my_data"), fresh("shard")]
        )
    );
    // Every index is glzn's index of these shards, byte for byte.
    for fold in ["golden", "my_data", "shard"] {
        let index = dir.join(format!("{fold}.taridx"));
        assert!(std::fs::read(&index).unwrap() == golden_bytes(), "{fold}");
    }
    assert!(!dir.join("golden.taridx.shards.json").exists());
    let list: Value =
        serde_json::from_slice(&std::fs::read(dir.join("shard.taridx.shards.json")).unwrap())
            .unwrap();
    assert_eq!(list["__kind__"], "wids-shard-index-v1");
    let urls: Vec<&str> = list["shardlist"]
        .as_array()
        .unwrap()
        .iter()
        .map(|shard| shard["url"].as_str().unwrap())
        .collect();
    assert_eq!(
        urls,
        ["shard-000000.tar", "shard-000001.tar", "shard-000002.tar"]
    );
    let golden = listed(&dir.join("golden.taridx"));
    assert_eq!(listed(&dir.join("shard.taridx")), golden);
    assert_eq!(listed(&dir.join("my_data.taridx")), golden);
    // A list gone: status says so (a plain HTTP server could not find the
    // shards), though the names still find them here.
    std::fs::remove_file(dir.join("my_data.taridx.shards.json")).unwrap();
    let (good, folds) = status(dir);
    assert!(!good && folds[1] == ("my_data".into(), "stale".into()));
    assert_eq!(listed(&dir.join("my_data.taridx")), golden);
}

#[test]
fn a_fold_named_two_ways_is_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    shards_named(dir.path(), &["t-0.tar"]);
    shards_named(dir.path(), &["t.0.tar"]);
    let output = binfmt(&["taridx", "status", arg(dir.path())]);
    assert_eq!(output.status.code(), Some(1));
    let error = text(&output.stderr);
    assert!(error.contains("named both t-N.tar and t.N.tar"), "{error}");
    assert!(error.contains("binfmt taridx index 'PATTERN'"), "{error}");
}

#[test]
fn no_folds_is_an_error_saying_how_shards_are_named() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
    for command in [
        vec!["taridx", "status", arg(dir.path())],
        vec!["taridx", "index", arg(dir.path()), "--all"],
    ] {
        let output = binfmt(&command);
        assert_eq!(output.status.code(), Some(1), "{command:?}");
        let error = text(&output.stderr);
        assert!(
            error.contains("FOLD_N.tar, FOLD-N.tar or FOLD.N.tar"),
            "{error}"
        );
    }
}

/// Patterns as webdataset writes shard lists, in any directory, and the
/// index then read by every command with no shard named again.
#[test]
fn patterns_and_the_recorded_list() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    shards_named(
        &data,
        &["train-000000.tar", "train-000001.tar", "train-000002.tar"],
    );
    let lists = dir.path().join("lists");
    std::fs::create_dir(&lists).unwrap();
    let index = lists.join("all.taridx");
    let pattern = data.join("train-{000000..000002}.tar");
    ok(binfmt(&[
        "taridx",
        "index",
        arg(&pattern),
        "-o",
        arg(&index),
    ]));
    assert!(std::fs::read(&index).unwrap() == golden_bytes());
    let list = std::fs::read_to_string(lists.join("all.taridx.shards.json")).unwrap();
    assert!(list.contains("\"../data/train-000000.tar\""), "{list}");
    let golden = listed(&binfmt_tests::fixture("reference/taridx/golden.taridx"));
    assert_eq!(listed(&index), golden);
    ok(binfmt(&["verify", arg(&index)]));
    let got = ok(binfmt(&[
        "taridx",
        "get",
        arg(&index),
        "s/000001.json",
        "-o",
        "-",
    ]));
    assert!(!got.stdout.is_empty());
    // A glob gives the same shards in name order; the same index.
    let glob = data.join("train-*.tar");
    let again = lists.join("glob.taridx");
    ok(binfmt(&["taridx", "index", arg(&glob), "-o", arg(&again)]));
    assert!(std::fs::read(&again).unwrap() == golden_bytes());
    // A file whose name looks like a pattern is itself.
    let odd = data.join("odd-{1}.tar");
    std::fs::copy(data.join("train-000000.tar"), &odd).unwrap();
    ok(binfmt(&[
        "taridx",
        "index",
        arg(&odd),
        "-o",
        arg(&lists.join("odd.taridx")),
    ]));
    // Patterns that name nothing, or more shards than an index numbers.
    let none = binfmt(&[
        "taridx",
        "index",
        arg(&data.join("val-*.tar")),
        "-o",
        arg(&lists.join("n.taridx")),
    ]);
    assert!(
        text(&none.stderr).contains("no file matches it"),
        "{}",
        text(&none.stderr)
    );
    let many = binfmt(&[
        "taridx",
        "index",
        "x-{0..70000}.tar",
        "-o",
        arg(&lists.join("m.taridx")),
    ]);
    assert!(
        text(&many.stderr).contains("65536"),
        "{}",
        text(&many.stderr)
    );
    assert!(!lists.join("n.taridx").exists() && !lists.join("m.taridx").exists());
    // The library reads the list too.
    let shards = binfmt_taridx::find_shards(&index).unwrap();
    assert_eq!(shards.len(), 3);
    assert!(shards[2].ends_with("data/train-000002.tar"), "{shards:?}");
}

/// An index away from its shards fails at open, in every reader, saying
/// where it looked.
#[test]
fn shards_not_found_say_where_they_were_looked_for() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("train.taridx");
    std::fs::write(&index, golden_bytes()).unwrap();
    for command in [
        vec!["list", arg(&index)],
        vec!["taridx", "get", arg(&index), "s/000001.json", "-o", "-"],
        vec!["verify", arg(&index)],
    ] {
        let output = binfmt(&command);
        assert_eq!(output.status.code(), Some(1), "{command:?}");
        let error = text(&output.stderr);
        assert!(
            error.contains(
                "train.taridx.shards.json, then train_*.tar, train-N.tar and train.N.tar in"
            ),
            "{error}"
        );
    }
    let error = binfmt_taridx::Dataset::open_fold(dir.path(), "train").unwrap_err();
    assert!(
        matches!(error, binfmt_taridx::TaridxError::NoShards { .. }),
        "{error}"
    );
}

/// Over HTTP (which cannot list) and from S3, the shard list finds shards
/// named `train-N.tar`, in a subdirectory of the index's; a list naming an
/// object outside the index's directory is refused.
#[test]
fn remote_folds_read_their_shard_list() {
    let Some(servers) = servers() else { return };
    let run = format!("shard-names-{}", std::process::id());
    let local = tempfile::tempdir().unwrap();
    let data = local.path().join("data");
    std::fs::create_dir(&data).unwrap();
    shards_named(
        &data,
        &["train-000000.tar", "train-000001.tar", "train-000002.tar"],
    );
    let index = local.path().join("train.taridx");
    ok(binfmt(&[
        "taridx",
        "index",
        arg(&data.join("train-*.tar")),
        "-o",
        arg(&index),
    ]));
    let golden = listed(&binfmt_tests::fixture("reference/taridx/golden.taridx"));
    let mut files = vec![
        ("train.taridx".to_owned(), std::fs::read(&index).unwrap()),
        (
            "train.taridx.shards.json".to_owned(),
            std::fs::read(local.path().join("train.taridx.shards.json")).unwrap(),
        ),
    ];
    for n in 0..3 {
        let name = format!("data/train-{n:06}.tar");
        files.push((
            name.clone(),
            std::fs::read(local.path().join(&name)).unwrap(),
        ));
    }
    std::fs::create_dir_all(servers.www.join(&run).join("data")).unwrap();
    for (name, bytes) in &files {
        std::fs::write(servers.www.join(&run).join(name), bytes).unwrap();
        servers.s3_put(&format!("{run}/{name}"), bytes);
    }
    let env = servers.s3_env(&servers.s3_secret_access_key);
    let remote = |args: &[&str]| -> Output {
        std::process::Command::new(env!("CARGO_BIN_EXE_binfmt"))
            .args(args)
            .envs(env.clone())
            .output()
            .unwrap()
    };
    for url in [
        format!("{}/{run}/train.taridx", servers.nginx),
        format!("s3://{}/{run}/train.taridx", servers.s3_bucket),
    ] {
        let names = ok(remote(&["list", &url]));
        let shown = text(&names.stdout);
        assert_eq!(shown, golden, "{url}");
        ok(remote(&["verify", &url]));
        let got = ok(remote(&["get", &url, "s/000001.json", "-o", "-"]));
        assert!(!got.stdout.is_empty());
    }
    // A list that leaves the index's directory is refused remotely.
    let outside = br#"{"wids_version": 1, "shardlist": [{"url": "../x.tar", "nsamples": 1}]}"#;
    std::fs::write(
        servers.www.join(&run).join("train.taridx.shards.json"),
        outside,
    )
    .unwrap();
    let refused = remote(&["list", &format!("{}/{run}/train.taridx", servers.nginx)]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        text(&refused.stderr).contains("not a relative object name"),
        "{}",
        text(&refused.stderr)
    );
}

/// A moved index: with its shard list but not its shards, it fails at open
/// naming the shard and the list, and saying what to do; `--shards DIR`
/// finds them in DIR, by the list there or by their names.
#[test]
fn a_moved_index_names_what_is_missing_and_shards_dir_finds_them() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    shards_named(
        &data,
        &["train-000000.tar", "train-000001.tar", "train-000002.tar"],
    );
    let index = data.join("train.taridx");
    ok(binfmt(&[
        "taridx",
        "index",
        arg(&data.join("train-*.tar")),
        "-o",
        arg(&index),
    ]));
    let moved = dir.path().join("moved");
    std::fs::create_dir(&moved).unwrap();
    let away = moved.join("train.taridx");
    std::fs::copy(&index, &away).unwrap();
    std::fs::copy(
        data.join("train.taridx.shards.json"),
        moved.join("train.taridx.shards.json"),
    )
    .unwrap();
    let output = binfmt(&["list", arg(&away)]);
    assert_eq!(output.status.code(), Some(1));
    let error = text(&output.stderr);
    assert!(
        error.contains("train-000000.tar, which its shard list")
            && error.contains("moved/train.taridx.shards.json")
            && error.contains("move it back"),
        "{error}"
    );
    let error = binfmt_taridx::find_shards(&away).unwrap_err();
    assert!(
        matches!(error, binfmt_taridx::TaridxError::NoShards { .. }),
        "{error}"
    );
    let get = |extra: &[&str]| {
        let mut args = vec!["taridx", "get", arg(&away), "s/000001.json", "-o", "-"];
        args.extend_from_slice(extra);
        binfmt(&args)
    };
    assert!(!ok(get(&["--shards", arg(&data)])).stdout.is_empty());
    // Without the list there, the names in DIR.
    std::fs::remove_file(data.join("train.taridx.shards.json")).unwrap();
    assert!(!ok(get(&["--shards", arg(&data)])).stdout.is_empty());
}

/// Found from outside: `get -o` and `convert -o` wrote over the shard list
/// the index was read through; `taridx index` refused a list that is a
/// shard only after writing the index.
#[test]
fn the_shard_list_is_an_input_of_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    shards_named(dir, &["x-0.tar", "x-1.tar", "x-2.tar"]);
    let index = dir.join("x.taridx");
    ok(binfmt(&[
        "taridx",
        "index",
        arg(&dir.join("x-{0..2}.tar")),
        "-o",
        arg(&index),
    ]));
    let list = dir.join("x.taridx.shards.json");
    let before = std::fs::read(&list).unwrap();
    for args in [
        vec!["get", arg(&index), "s/000001.json", "-o", arg(&list)],
        vec![
            "taridx",
            "get",
            arg(&index),
            "s/000001.json",
            "-o",
            arg(&list),
        ],
        vec!["convert", arg(&index), "-o", arg(&list), "--to", "arcx"],
    ] {
        let output = binfmt(&args);
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        assert!(
            text(&output.stderr).contains("never writes its output over"),
            "{}",
            text(&output.stderr)
        );
        assert_eq!(std::fs::read(&list).unwrap(), before, "{args:?}");
    }
    let q = dir.join("q.taridx");
    // A shard whose name is where the index's list would go.
    let shard = dir.join("q.taridx.shards.json");
    std::fs::copy(dir.join("x-0.tar"), &shard).unwrap();
    let output = binfmt(&["taridx", "index", arg(&shard), "-o", arg(&q)]);
    assert_eq!(output.status.code(), Some(1));
    assert!(!q.exists(), "the index was written before the refusal");
}

/// Found from outside: a fold whose names hold a `:` (its list says
/// `./v:w-000000.tar`, so wids reads no scheme) could not be read over
/// HTTP.
#[test]
fn names_with_a_colon_read_over_http() {
    let Some(servers) = servers() else { return };
    let run = format!("shard-colon-{}", std::process::id());
    let site = servers.www.join(&run);
    std::fs::create_dir_all(&site).unwrap();
    shards_named(
        &site,
        &["v:w-000000.tar", "v:w-000001.tar", "v:w-000002.tar"],
    );
    let index = site.join("v:w.taridx");
    ok(binfmt(&[
        "taridx",
        "index",
        arg(&site.join("v:w-*.tar")),
        "-o",
        arg(&index),
    ]));
    let list = std::fs::read_to_string(site.join("v:w.taridx.shards.json")).unwrap();
    assert!(list.contains("\"./v:w-000000.tar\""), "{list}");
    let golden = listed(&binfmt_tests::fixture("reference/taridx/golden.taridx"));
    let url = format!("{}/{run}/v:w.taridx", servers.nginx);
    assert_eq!(text(&ok(binfmt(&["list", &url])).stdout), golden);
}
