//! Every writer writes to `s3://` (SeaweedFS on loopback) the bytes it
//! writes locally; a killed writer leaves no object and no upload; wrong
//! credentials fail in one line before any work; an output is never one
//! of the inputs, by URL or by ETag (spec/remote.md, "Writing").

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use binfmt_tests::cli::text;
use binfmt_tests::interop::{Servers, servers};
use binfmt_tests::pseudo_random_bytes;

const BIN: &str = env!("CARGO_BIN_EXE_binfmt");

/// binfmt with `args`, the test bucket's variables (signing with
/// `secret`) and nothing else of the environment.
fn command(servers: &Servers, secret: &str, args: &[&str]) -> Command {
    let mut command = Command::new(BIN);
    command
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(servers.s3_env(secret));
    command
}

fn run(servers: &Servers, secret: &str, args: &[&str]) -> Output {
    command(servers, secret, args)
        .output()
        .expect("binfmt runs")
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

/// A prefix of the test bucket no other run uses.
fn run_prefix(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("s3writes-{name}-{}-{nanos}", std::process::id())
}

/// A tree with a file larger than two upload parts (so ARCX's header,
/// written last at offset 0, lands in the held first part) and small files.
fn tree(dir: &Path) {
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("large.bin"), pseudo_random_bytes(1, 21 << 20)).unwrap();
    for i in 0..40 {
        std::fs::write(
            dir.join("sub").join(format!("s{i:03}.txt")),
            pseudo_random_bytes(100 + i, 3000),
        )
        .unwrap();
    }
}

fn same_object(servers: &Servers, key: &str, local: &Path) {
    let remote = servers
        .s3_get(key)
        .unwrap_or_else(|| panic!("no object {key}"));
    let local_bytes = std::fs::read(local).unwrap();
    assert!(
        remote == local_bytes,
        "{key} ({} bytes) differs from {} ({} bytes)",
        remote.len(),
        local.display(),
        local_bytes.len()
    );
}

#[test]
fn every_writer_writes_to_s3_what_it_writes_locally() {
    let Some(servers) = servers() else { return };
    let secret = servers.s3_secret_access_key.as_str();
    let bucket = &servers.s3_bucket;
    let run_id = run_prefix("writers");
    let scratch = tempfile::tempdir().unwrap();
    let local = scratch.path().join("local");
    let input = scratch.path().join("tree");
    tree(&input);
    let s3 = |name: &str| format!("s3://{bucket}/{run_id}/{name}");
    let key = |name: &str| format!("{run_id}/{name}");
    let at = |name: &str| local.join(name);
    std::fs::create_dir_all(&local).unwrap();
    let path = |p: &Path| p.to_str().unwrap().to_owned();

    // arcx pack: 21 MiB + small files, a multipart upload.
    ok(run(
        servers,
        secret,
        &["arcx", "pack", &path(&input), "-o", &s3("tree.arcx")],
    ));
    ok(run(
        servers,
        secret,
        &["arcx", "pack", &path(&input), "-o", &path(&at("tree.arcx"))],
    ));
    same_object(servers, &key("tree.arcx"), &at("tree.arcx"));

    // convert to every format, from a local file and from the S3 object.
    for (target, extra) in [
        ("kas", None),
        ("par4", None),
        ("arcx", Some("--dialect=arcx-cli")),
    ] {
        let name = format!("converted.{target}");
        let mut remote_args = vec!["convert"];
        let from = path(&at("tree.arcx"));
        let (to_s3, to_local) = (s3(&name), path(&at(&name)));
        remote_args.extend([from.as_str(), "-o", to_s3.as_str()]);
        remote_args.extend(extra);
        ok(run(servers, secret, &remote_args));
        let mut local_args = vec!["convert", from.as_str(), "-o", to_local.as_str()];
        local_args.extend(extra);
        ok(run(servers, secret, &local_args));
        same_object(servers, &key(&name), &at(&name));
    }
    let from_s3 = s3("tree.arcx");
    ok(run(
        servers,
        secret,
        &["convert", &from_s3, "-o", &s3("again.kas")],
    ));
    same_object(servers, &key("again.kas"), &at("converted.kas"));

    // convert to TARIDX: the shards and the index under the prefix.
    ok(run(
        servers,
        secret,
        &[
            "convert",
            &path(&at("tree.arcx")),
            "-o",
            &s3("conv/fold.taridx"),
            "--shard-size",
            "8000000",
        ],
    ));
    ok(run(
        servers,
        secret,
        &[
            "convert",
            &path(&at("tree.arcx")),
            "-o",
            &path(&at("conv/fold.taridx")),
            "--shard-size",
            "8000000",
        ],
    ));
    let names: Vec<String> = std::fs::read_dir(at("conv"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(names.len() >= 3, "{names:?}");
    for name in &names {
        same_object(
            servers,
            &key(&format!("conv/{name}")),
            &at(&format!("conv/{name}")),
        );
    }
    ok(run(servers, secret, &["verify", &s3("conv/fold.taridx")]));

    // kast pack.
    let large = path(&input.join("large.bin"));
    let array = format!("big={large}");
    ok(run(
        servers,
        secret,
        &["kast", "pack", "--uint8", &array, "-o", &s3("packed.kas")],
    ));
    ok(run(
        servers,
        secret,
        &[
            "kast",
            "pack",
            "--uint8",
            &array,
            "-o",
            &path(&at("packed.kas")),
        ],
    ));
    same_object(servers, &key("packed.kas"), &at("packed.kas"));

    // taridx pack: a tree of samples into a fold under the prefix.
    let samples = scratch.path().join("samples");
    std::fs::create_dir_all(&samples).unwrap();
    for i in 0..300 {
        std::fs::write(samples.join(format!("k{i:04}.txt")), format!("text {i}")).unwrap();
        std::fs::write(
            samples.join(format!("k{i:04}.bin")),
            pseudo_random_bytes(i, 700),
        )
        .unwrap();
    }
    ok(run(
        servers,
        secret,
        &[
            "taridx",
            "pack",
            &path(&samples),
            "-o",
            &s3("packed/train.taridx"),
            "--max-samples",
            "100",
        ],
    ));
    ok(run(
        servers,
        secret,
        &[
            "taridx",
            "pack",
            &path(&samples),
            "-o",
            &path(&at("packed/train.taridx")),
            "--max-samples",
            "100",
        ],
    ));
    for name in [
        "train.taridx",
        "train_0000.tar",
        "train_0001.tar",
        "train_0002.tar",
    ] {
        same_object(
            servers,
            &key(&format!("packed/{name}")),
            &at(&format!("packed/{name}")),
        );
    }

    // taridx index of local shards to S3: the shards go too, the index last.
    let shard_dir = at("packed");
    let shards: Vec<String> = (0..3)
        .map(|i| path(&shard_dir.join(format!("train_{i:04}.tar"))))
        .collect();
    let mut index_args = vec!["taridx", "index", "--keys", "webdataset"];
    index_args.extend(shards.iter().map(String::as_str));
    let published = s3("published/train.taridx");
    index_args.extend(["-o", published.as_str()]);
    ok(run(servers, secret, &index_args));
    same_object(
        servers,
        &key("published/train.taridx"),
        &at("packed/train.taridx"),
    );
    same_object(
        servers,
        &key("published/train_0001.tar"),
        &at("packed/train_0001.tar"),
    );
    let listed = ok(run(servers, secret, &["list", &published]));
    assert_eq!(text(&listed.stdout).lines().count(), 600);

    // taridx export (DALI indexes) and import (from them) to S3.
    let dali_local = at("dali");
    let dali_args = |out: &str| {
        vec![
            "taridx".to_owned(),
            "export".to_owned(),
            "dali".to_owned(),
            path(&at("packed/train.taridx")),
            "-o".to_owned(),
            out.to_owned(),
        ]
    };
    let args = dali_args(&path(&dali_local));
    ok(run(
        servers,
        secret,
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    let args = dali_args(&s3("dali"));
    ok(run(
        servers,
        secret,
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    for entry in std::fs::read_dir(&dali_local).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        same_object(
            servers,
            &key(&format!("dali/{name}")),
            &dali_local.join(&name),
        );
    }
    let mut import_args = vec!["taridx", "import", "--keys", "webdataset", "dali", "--from"];
    let dali_dir = path(&dali_local);
    import_args.push(&dali_dir);
    import_args.extend(shards.iter().map(String::as_str));
    let imported = s3("imported/train.taridx");
    let mut remote_import = import_args.clone();
    remote_import.extend(["-o", imported.as_str()]);
    ok(run(servers, secret, &remote_import));
    same_object(
        servers,
        &key("imported/train.taridx"),
        &at("packed/train.taridx"),
    );
    ok(run(servers, secret, &["verify", &imported]));
}

#[test]
fn wrong_credentials_fail_in_one_line_before_any_work() {
    let Some(servers) = servers() else { return };
    let scratch = tempfile::tempdir().unwrap();
    tree(&scratch.path().join("tree"));
    let target = format!("s3://{}/{}/x.arcx", servers.s3_bucket, run_prefix("secret"));
    let tree_path = scratch.path().join("tree");
    let started = Instant::now();
    let output = run(
        servers,
        "not-the-secret",
        &["arcx", "pack", tree_path.to_str().unwrap(), "-o", &target],
    );
    assert!(!output.status.success());
    let stderr = text(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("access denied"), "{stderr}");
    assert!(!stderr.contains("not-the-secret"), "{stderr}");
    // Failing at the first request, not after packing 21 MiB.
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn an_output_is_never_an_input_by_url_or_etag() {
    let Some(servers) = servers() else { return };
    let secret = servers.s3_secret_access_key.as_str();
    let prefix = run_prefix("gate");
    let bytes = std::fs::read(binfmt_tests::fixture("generated/arcx/unicode.spec.arcx")).unwrap();
    servers.s3_put(&format!("{prefix}/in.arcx"), &bytes);
    servers.s3_put(&format!("{prefix}/copy.arcx"), &bytes);
    let input = format!("s3://{}/{prefix}/in.arcx", servers.s3_bucket);
    for output in [
        input.clone(),
        format!("s3://{}/{prefix}/copy.arcx", servers.s3_bucket),
    ] {
        let refused = run(
            servers,
            secret,
            &["convert", &input, "-o", &output, "--to", "arcx"],
        );
        assert!(!refused.status.success());
        assert!(
            text(&refused.stderr).contains("never writes its output over what it reads"),
            "{}",
            text(&refused.stderr)
        );
    }
    assert_eq!(servers.s3_get(&format!("{prefix}/in.arcx")).unwrap(), bytes);
}

#[test]
fn plain_http_is_no_output() {
    let Some(servers) = servers() else { return };
    let output = run(
        servers,
        &servers.s3_secret_access_key,
        &[
            "convert",
            binfmt_tests::fixture("generated/arcx/unicode.spec.arcx")
                .to_str()
                .unwrap(),
            "-o",
            &format!("{}/x.kas", servers.nginx),
        ],
    );
    assert!(!output.status.success());
    assert!(
        text(&output.stderr).contains("only s3://"),
        "{}",
        text(&output.stderr)
    );
}

/// A writer killed by SIGTERM (or SIGINT) mid-upload: no object, and its
/// multipart upload aborted.
#[test]
fn a_killed_writer_leaves_no_object_and_no_upload() {
    let Some(servers) = servers() else { return };
    let scratch = tempfile::tempdir().unwrap();
    let dir: PathBuf = scratch.path().join("big");
    std::fs::create_dir_all(&dir).unwrap();
    for i in 0..24 {
        std::fs::write(
            dir.join(format!("f{i:02}.bin")),
            pseudo_random_bytes(i, 8 << 20),
        )
        .unwrap();
    }
    for signal in ["TERM", "INT"] {
        let prefix = run_prefix(&format!("killed-{signal}"));
        let key = format!("{prefix}/big.arcx");
        let url = format!("s3://{}/{key}", servers.s3_bucket);
        let args = ["arcx", "pack", dir.to_str().unwrap(), "-o", &url];
        let mut child = command(servers, &servers.s3_secret_access_key, &args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Wait until the upload is under way (a part sent), then kill it.
        let started = Instant::now();
        while servers.s3_uploads_in_progress(&prefix).is_empty() {
            assert!(
                child.try_wait().unwrap().is_none(),
                "the writer ended before its upload was seen"
            );
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "no upload started"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let exit = child.wait().unwrap();
        assert!(!exit.success(), "{exit:?}");
        assert_eq!(
            servers.s3_get(&key),
            None,
            "a killed writer's object appeared"
        );
        assert_eq!(
            servers.s3_uploads_in_progress(&prefix),
            Vec::<String>::new(),
            "a killed writer left its upload ({signal})"
        );
    }
}

/// What the outside attack found, refused: a TARIDX index read from S3
/// written over by `taridx pack`, shards published under the index's or
/// its list's name, and control characters dropped from an output URL.
#[test]
fn remote_inputs_sidecar_names_and_control_characters_are_refused() {
    let Some(servers) = servers() else { return };
    let secret = servers.s3_secret_access_key.as_str();
    let prefix = run_prefix("refusals");
    let s3 = |name: &str| format!("s3://{}/{prefix}/{name}", servers.s3_bucket);
    let scratch = tempfile::tempdir().unwrap();
    let samples = scratch.path().join("samples");
    std::fs::create_dir_all(&samples).unwrap();
    for i in 0..5 {
        std::fs::write(samples.join(format!("k{i}.txt")), format!("{i}")).unwrap();
    }
    let samples = samples.to_str().unwrap();
    ok(run(
        servers,
        secret,
        &["taridx", "pack", samples, "-o", &s3("train.taridx")],
    ));
    let index = servers.s3_get(&format!("{prefix}/train.taridx")).unwrap();
    let refused = run(
        servers,
        secret,
        &[
            "taridx",
            "pack",
            &s3("train.taridx"),
            "-o",
            &s3("train.taridx"),
        ],
    );
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("never writes its output over"),
        "{}",
        text(&refused.stderr)
    );
    assert_eq!(
        servers.s3_get(&format!("{prefix}/train.taridx")).unwrap(),
        index
    );

    let local = scratch.path().join("local");
    ok(run(
        servers,
        secret,
        &[
            "taridx",
            "pack",
            samples,
            "-o",
            local.join("x.taridx").to_str().unwrap(),
        ],
    ));
    for name in ["pub.taridx", "pub.taridx.shards.json"] {
        let shard = scratch.path().join("odd").join(name);
        std::fs::create_dir_all(shard.parent().unwrap()).unwrap();
        std::fs::copy(local.join("x_0000.tar"), &shard).unwrap();
        let refused = run(
            servers,
            secret,
            &[
                "taridx",
                "index",
                shard.to_str().unwrap(),
                "-o",
                &s3("pub/pub.taridx"),
            ],
        );
        assert!(!refused.status.success());
        assert!(
            text(&refused.stderr).contains("named as the index"),
            "{}",
            text(&refused.stderr)
        );
        assert_eq!(servers.s3_get(&format!("{prefix}/pub/{name}")), None);
    }

    for bad in ["raw\nname.arcx", "tab\tname.arcx"] {
        let refused = run(servers, secret, &["arcx", "pack", samples, "-o", &s3(bad)]);
        assert!(!refused.status.success());
        assert!(
            text(&refused.stderr).contains("control character"),
            "{}",
            text(&refused.stderr)
        );
    }
}
