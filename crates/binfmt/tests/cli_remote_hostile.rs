//! The remote client against a hostile environment, through the CLI: AWS
//! variables that would panic object_store, URLs that hide credentials,
//! dot segments or a length the HTTP stack cannot take, a `--cache-dir`
//! someone tampered with, and a server lying about the object's size.
//! Each failure is exit 1 and one line naming what is wrong, never a
//! panic, never a secret.
//!
//! The tests of the environment and of URLs need no server (nothing
//! listens on 127.0.0.1:9, and most are refused before any request); the
//! cache and size tests use the misbehaving server of `bash .ci/servers
//! start` and skip without it (unless `BINFMT_INTEROP=require`).

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use binfmt_tests::cli::{arg, text};
use binfmt_tests::fixture;
use binfmt_tests::interop::servers;

/// Nothing listens here: a request is refused at once.
const CLOSED: &str = "http://127.0.0.1:9";

/// binfmt with no AWS variable but `env`.
fn binfmt(env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_binfmt"));
    for (name, _) in std::env::vars() {
        if name.starts_with("AWS_") {
            command.env_remove(name);
        }
    }
    command
        .args(args)
        .envs(env.iter().copied())
        // A panic would show its backtrace; the test must see none.
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap()
}

/// The one line a failed command printed, checked: exit 1, no panic, none
/// of `hidden`.
fn one_error_line(output: &Output, what: &str, hidden: &[&str]) -> String {
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{what}: {stderr}");
    assert!(!stderr.contains("panicked"), "{what}: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{what}: {stderr}");
    for secret in hidden {
        assert!(
            !stderr.contains(secret),
            "{what} shows {secret:?}: {stderr}"
        );
    }
    lines[0].to_owned()
}

#[test]
fn a_misconfigured_environment_is_one_line_naming_the_variable_never_its_value() {
    let bad_header = "tok\nen-SECRETVALUE";
    let cases: &[(&str, &str)] = &[
        ("AWS_SESSION_TOKEN", bad_header),
        ("AWS_ACCESS_KEY_ID", bad_header),
        ("AWS_SECRET_ACCESS_KEY", "sec\r\nret-SECRETVALUE"),
        ("AWS_REGION", "us-east-1\nSECRETVALUE"),
        ("AWS_DEFAULT_REGION", "us-east-1/SECRETVALUE"),
        ("AWS_ENDPOINT_URL", "not a url SECRETVALUE"),
        ("AWS_ENDPOINT", "SECRETVALUE"),
        ("AWS_ENDPOINT_URL_S3", "ftp://SECRETVALUE"),
        ("AWS_ENDPOINT_URL_STS", "::SECRETVALUE"),
        ("AWS_METADATA_ENDPOINT", "SECRETVALUE"),
        ("AWS_CONTAINER_CREDENTIALS_FULL_URI", "SECRETVALUE"),
        ("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "SECRETVALUE"),
        ("AWS_PROXY_URL", "SECRETVALUE"),
        // Values object_store's builder parses, and whose error repeats them.
        ("AWS_TIMEOUT", "SECRETVALUE"),
        ("AWS_SKIP_SIGNATURE", "SECRETVALUE"),
        ("AWS_CHECKSUM_ALGORITHM", "SECRETVALUE"),
        ("AWS_SERVER_SIDE_ENCRYPTION", "SECRETVALUE"),
    ];
    let long = format!("http://127.0.0.1:9/{}", "a".repeat(70_000));
    let all = cases
        .iter()
        .copied()
        .chain(std::iter::once(("AWS_ENDPOINT_URL", long.as_str())));
    for (name, value) in all {
        let mut env = vec![
            ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
            ("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMIEXAMPLEKEY"),
            ("AWS_ALLOW_HTTP", "true"),
        ];
        if !name.contains("ENDPOINT") {
            env.push(("AWS_ENDPOINT_URL", CLOSED));
        }
        env.retain(|(other, _)| *other != name);
        env.push((name, value));
        for args in [
            &["info", "s3://bucket/data/a.arcx"][..],
            &["taridx", "list", "s3://bucket/data/index.taridx"][..],
        ] {
            let what = format!("{name} with {}", args.join(" "));
            let line = one_error_line(
                &binfmt(&env, args),
                &what,
                &["SECRETVALUE", "wJalrXUtnFEMIEXAMPLEKEY", &"a".repeat(1000)],
            );
            assert!(line.contains(name), "{what}: {line}");
        }
    }
}

#[test]
fn no_line_holds_userinfo_or_a_secret_variable() {
    for url in [
        "http://alice:hunter2pw@127.0.0.1:9/a.arcx",
        "https://alice:hunter2pw@127.0.0.1:9/a.arcx",
        "s3://alice:hunter2pw@bucket/a.arcx",
        "HTTP://alice:hunter2pw@127.0.0.1:9/a/%2e%2e/b.arcx",
    ] {
        let line = one_error_line(&binfmt(&[], &["info", url]), url, &["hunter2pw"]);
        assert!(line.contains("***@"), "{url}: {line}");
    }
    // A request that fails (nothing listens) with secrets in the
    // environment: neither the secret key nor the token is printed.
    let env = [
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMIEXAMPLEKEY"),
        ("AWS_SESSION_TOKEN", "FwoGZXIvYXdzEXAMPLETOKEN"),
        ("AWS_ENDPOINT_URL", CLOSED),
        ("AWS_ALLOW_HTTP", "true"),
    ];
    let output = binfmt(
        &env,
        &["get", "s3://bucket/wJalrXUtnFEMIEXAMPLEKEY.arcx", "x"],
    );
    one_error_line(
        &output,
        "a refused S3 request",
        &["wJalrXUtnFEMIEXAMPLEKEY", "FwoGZXIvYXdzEXAMPLETOKEN"],
    );
}

#[test]
fn dot_segments_encoded_or_not_and_overlong_urls_are_refused() {
    for path in [
        "a/../b.arcx",
        "a/%2e%2e/b.arcx",
        "a/%2E%2E/b.arcx",
        "a/.%2e/b.arcx",
        "a/%2e./b.arcx",
        "a/%2e/b.arcx",
        "a/..%2Fb.arcx",
    ] {
        for base in [CLOSED, "s3://bucket"] {
            let url = format!("{base}/{path}");
            let line = one_error_line(&binfmt(&[], &["info", &url]), &url, &[]);
            assert!(line.contains("`.` or `..`"), "{url}: {line}");
        }
    }
    for base in [CLOSED, "s3://bucket"] {
        let url = format!("{base}/{}.arcx", "a".repeat(70_000));
        let line = one_error_line(&binfmt(&[], &["info", &url]), "a long URL", &[]);
        assert!(line.contains("more than the 8192"), "{line}");
    }
}

/// The misbehaving server's URL for `fixture` published under `mode`, and
/// the local file.
fn published(mode: &str, relative: &str) -> Option<(String, PathBuf)> {
    let servers = servers()?;
    let local = fixture(relative);
    let name = format!(
        "cli-remote-hostile-{}-{}",
        std::process::id(),
        local.file_name().unwrap().to_str().unwrap()
    );
    std::fs::copy(&local, servers.www.join(&name)).unwrap();
    Some((format!("{}/{mode}/{name}", servers.misbehaving), local))
}

/// Every cache file under `dir`.
fn cache_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for object in std::fs::read_dir(dir).unwrap() {
        let object = object.unwrap().path();
        if object.is_dir() && !object.is_symlink() {
            for entry in std::fs::read_dir(&object).unwrap() {
                files.push(entry.unwrap().path());
            }
        }
    }
    files
}

#[test]
fn the_disk_cache_checks_every_range_and_never_follows_or_blocks() {
    let Some((url, local)) = published("ok", "generated/arcx/multi_block.spec.arcx") else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let cache = scratch.path().join("cache");
    let get = |size: &str| {
        binfmt(
            &[],
            &[
                "get",
                &url,
                "text/0001.txt",
                "--cache-dir",
                arg(&cache),
                "--cache-size",
                size,
            ],
        )
    };
    let expected = binfmt(&[], &["get", arg(&local), "text/0001.txt"]).stdout;
    assert_eq!(get("1000000").stdout, expected);
    let files = cache_files(&cache);
    assert!(!files.is_empty());

    // One byte changed in every cached range: refetched, right bytes.
    for file in &files {
        let mut bytes = std::fs::read(file).unwrap();
        *bytes.last_mut().unwrap() ^= 0x20;
        std::fs::write(file, bytes).unwrap();
    }
    let got = get("1000000");
    assert!(got.status.success(), "{}", text(&got.stderr));
    assert_eq!(got.stdout, expected);

    // Every cached range a FIFO: a miss, not a hang.
    for file in cache_files(&cache) {
        std::fs::remove_file(&file).unwrap();
        assert!(
            Command::new("mkfifo")
                .arg(&file)
                .status()
                .unwrap()
                .success()
        );
    }
    let got = get("1000000");
    assert!(got.status.success(), "{}", text(&got.stderr));
    assert_eq!(got.stdout, expected);

    // Another user's directory planted as an object directory, and a
    // cache entry made a symlink to one of its files: eviction (a limit the
    // planted files alone exceed) deletes none of them, reads follow none.
    let victim = scratch.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    let precious = vec![b'p'; 1000];
    for name in ["0-40", "12170-40", "notes.txt"] {
        std::fs::write(victim.join(name), &precious).unwrap();
    }
    std::os::unix::fs::symlink(&victim, cache.join(format!("{:0>32}", "ab"))).unwrap();
    let entry = &cache_files(&cache)[0];
    std::fs::remove_file(entry).unwrap();
    std::os::unix::fs::symlink(victim.join("notes.txt"), entry).unwrap();
    let got = get("200");
    assert!(got.status.success(), "{}", text(&got.stderr));
    assert_eq!(got.stdout, expected);
    for name in ["0-40", "12170-40", "notes.txt"] {
        assert_eq!(
            std::fs::read(victim.join(name)).unwrap(),
            precious,
            "{name}"
        );
    }
}

#[test]
fn a_cache_dir_other_users_can_write_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let scratch = tempfile::tempdir().unwrap();
    let cache = scratch.path().join("shared");
    std::fs::create_dir(&cache).unwrap();
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let url = format!("{CLOSED}/a.arcx");
    let output = binfmt(&[], &["info", &url, "--cache-dir", arg(&cache)]);
    let line = one_error_line(&output, "a shared cache directory", &[]);
    assert!(line.contains("writable by other users"), "{line}");
    let link = scratch.path().join("link");
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::symlink(&cache, &link).unwrap();
    let output = binfmt(&[], &["info", &url, "--cache-dir", arg(&link)]);
    let line = one_error_line(&output, "a symlinked cache directory", &[]);
    assert!(line.contains("symlink"), "{line}");
}

#[test]
fn a_server_claiming_64_gib_for_a_small_object_is_an_error_not_an_abort() {
    for (relative, command) in [
        ("reference/taridx/golden.taridx", "taridx"),
        ("reference/all_types.kas", "kast"),
        ("reference/map.par4", "par4"),
        ("generated/arcx/multi_block.spec.arcx", "arcx"),
    ] {
        let Some((url, _)) = published("huge-total", relative) else {
            return;
        };
        for args in [
            vec!["info", url.as_str()],
            vec!["list", url.as_str()],
            vec!["verify", url.as_str()],
            vec![command, "info", url.as_str()],
        ] {
            let line = one_error_line(&binfmt(&[], &args), &args.join(" "), &[]);
            assert!(line.contains(&url), "{line}");
        }
    }
}

/// Found from outside: over plain HTTP, which cannot list, a fold's shards
/// are as many as the rows point into, so a shard past them holding members
/// no row covers was never looked at (`verify` said ok). Coverage now
/// probes where the next shard would be.
#[test]
fn a_shard_past_the_rows_over_http_is_not_dropped_silently() {
    use binfmt_tests::build::taridx::Tar;
    let Some(servers) = servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let shard = |first: usize| {
        let mut tar = Tar::new();
        for i in first..first + 2 {
            tar.file(&format!("s/{i:06}.json"), b"{}\n");
        }
        tar.finish()
    };
    let local = dir.path().join("fold_0000.tar");
    std::fs::write(&local, shard(0)).unwrap();
    let index = dir.path().join("fold.taridx");
    let made = binfmt(&[], &["taridx", "index", arg(&local), "-o", arg(&index)]);
    assert!(made.status.success(), "{}", text(&made.stderr));
    let published = servers
        .www
        .join(format!("cli-remote-hostile-{}-fold", std::process::id()));
    std::fs::create_dir_all(&published).unwrap();
    std::fs::copy(&local, published.join("fold_0000.tar")).unwrap();
    std::fs::copy(&index, published.join("fold.taridx")).unwrap();
    let url = format!(
        "{}/{}/fold.taridx",
        servers.nginx,
        published.file_name().unwrap().to_str().unwrap()
    );
    let covered = binfmt(&[], &["verify", &url]);
    assert!(covered.status.success(), "{}", text(&covered.stderr));
    std::fs::write(published.join("fold_0001.tar"), shard(10)).unwrap();
    let output = binfmt(&[], &["verify", &url]);
    let line = one_error_line(&output, "an uncovered shard over HTTP", &[]);
    assert!(
        line.contains("fold_0001.tar") && line.contains("has no row"),
        "{line}"
    );
    std::fs::remove_dir_all(&published).unwrap();
}

/// Found from outside: `--cache-size 0` was taken (and made empty object
/// directories); like Python's `cache_size=0`, it is refused.
#[test]
fn a_cache_of_no_bytes_is_a_usage_error() {
    let scratch = tempfile::tempdir().unwrap();
    let cache = scratch.path().join("cache");
    let out = binfmt(
        &[],
        &[
            "get",
            "http://127.0.0.1:9/x.arcx",
            "a",
            "--cache-dir",
            arg(&cache),
            "--cache-size",
            "0",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--cache-size"),
        "{}",
        text(&out.stderr)
    );
    assert!(!cache.exists());
}
