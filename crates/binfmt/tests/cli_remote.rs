//! Every reading command over HTTP (nginx) and S3 (SeaweedFS) against the
//! same command on the local file, for all four formats and both ARCX
//! dialects; and the errors a user meets on a remote read (a wrong secret,
//! a missing object, a wrong range, a dropped connection), each one line
//! naming the URL.
//!
//! The servers run on 127.0.0.1, started by `bash .ci/servers start`
//! (`.ci/test` does it); without them every test skips with a note, unless
//! `BINFMT_INTEROP=require`.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use binfmt_tests::cli::{arg, text};
use binfmt_tests::fixture;
use binfmt_tests::interop::{Servers, servers};

/// One file (with the shards beside it, for TARIDX), an entry of it, and
/// the per-format command that reads it.
struct Case {
    file: &'static str,
    beside: &'static [&'static str],
    entry: &'static str,
    command: &'static str,
}

const CASES: &[Case] = &[
    Case {
        file: "generated/arcx/multi_block.spec.arcx",
        beside: &[],
        entry: "text/0001.txt",
        command: "arcx",
    },
    Case {
        file: "generated/arcx/multi_block.arcx-cli.arcx",
        beside: &[],
        entry: "text/0001.txt",
        command: "arcx",
    },
    Case {
        file: "reference/all_types.kas",
        beside: &[],
        entry: "int16",
        command: "kast",
    },
    Case {
        file: "reference/map.par4",
        beside: &[],
        entry: "hello.txt",
        command: "par4",
    },
    Case {
        file: "reference/taridx/golden.taridx",
        beside: &[
            "reference/taridx/golden_0000.tar",
            "reference/taridx/golden_0001.tar",
            "reference/taridx/golden_0002.tar",
        ],
        entry: "s/000001.json",
        command: "taridx",
    },
];

/// Where one case's file is: on disk, on nginx and in the S3 bucket.
struct Places {
    local: PathBuf,
    http: String,
    s3: String,
}

/// The directory (and key prefix) this run publishes under.
fn run_dir() -> String {
    format!("cli-remote-{}", std::process::id())
}

/// Publishes every case once: copied into nginx's document root and put
/// into the bucket, under one directory per run.
fn published(servers: &Servers) -> &'static [Places] {
    static PLACES: OnceLock<Vec<Places>> = OnceLock::new();
    PLACES.get_or_init(|| {
        let dir = run_dir();
        std::fs::create_dir_all(servers.www.join(&dir)).unwrap();
        CASES
            .iter()
            .map(|case| {
                for relative in std::iter::once(&case.file).chain(case.beside) {
                    let local = fixture(relative);
                    let name = file_name(&local);
                    let bytes = std::fs::read(&local).unwrap();
                    std::fs::write(servers.www.join(&dir).join(name), &bytes).unwrap();
                    servers.s3_put(&format!("{dir}/{name}"), &bytes);
                }
                let local = fixture(case.file);
                let name = file_name(&local);
                Places {
                    http: format!("{}/{dir}/{name}", servers.nginx),
                    s3: format!("s3://{}/{dir}/{name}", servers.s3_bucket),
                    local,
                }
            })
            .collect()
    })
}

fn file_name(path: &Path) -> &str {
    path.file_name().unwrap().to_str().unwrap()
}

/// Runs binfmt with the environment a user reading the test bucket has.
fn binfmt(servers: &Servers, secret: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_binfmt"))
        .args(args)
        .envs(servers.s3_env(secret))
        .output()
        .unwrap()
}

/// `binfmt` with the right secret, which must succeed.
fn ok(servers: &Servers, args: &[&str]) -> Output {
    let output = binfmt(servers, &servers.s3_secret_access_key, args);
    assert!(
        output.status.success(),
        "binfmt {}: {}",
        args.join(" "),
        text(&output.stderr)
    );
    output
}

/// Output with the file's location, and the directory it sits in, replaced
/// by placeholders: a URL must print exactly what its local file prints,
/// with the URL where the path would be.
fn normalized(output: &[u8], location: &str) -> String {
    let directory = &location[..location.rfind('/').unwrap()];
    text(output)
        .replace(location, "FILE")
        .replace(&format!("{directory}/"), "DIR/")
}

/// Every file under `root`, by relative path.
fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, files: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, files);
            } else {
                let relative = path.strip_prefix(root).unwrap().to_string_lossy();
                files.insert(relative.into_owned(), std::fs::read(&path).unwrap());
            }
        }
    }
    let mut files = BTreeMap::new();
    walk(root, root, &mut files);
    files
}

/// The commands that print to stdout, for one case at `location`.
fn printing_commands<'a>(case: &'a Case, location: &'a str) -> Vec<Vec<&'a str>> {
    let mut commands = vec![
        vec!["info", location],
        vec!["list", location],
        vec!["get", location, case.entry],
        vec!["verify", location],
        vec!["sniff", location],
        vec![case.command, "info", location],
        vec![case.command, "list", location],
        vec![case.command, "get", location, case.entry],
        vec![case.command, "verify", location],
    ];
    match case.command {
        "arcx" => commands.push(vec!["arcx", "list", "--json", location]),
        "kast" => commands.push(vec!["kast", "dump", location, case.entry]),
        _ => {}
    }
    commands
}

#[test]
fn every_reading_command_prints_over_http_and_s3_what_it_prints_locally() {
    let Some(servers) = servers() else { return };
    for (case, places) in CASES.iter().zip(published(servers)) {
        let local = arg(&places.local);
        for remote in [&places.http, &places.s3] {
            for (local_args, remote_args) in printing_commands(case, local)
                .into_iter()
                .zip(printing_commands(case, remote))
            {
                let expected = ok(servers, &local_args);
                let got = ok(servers, &remote_args);
                assert_eq!(
                    normalized(&got.stdout, remote),
                    normalized(&expected.stdout, local),
                    "binfmt {}",
                    remote_args.join(" ")
                );
                assert!(
                    got.stderr.is_empty(),
                    "binfmt {}: {}",
                    remote_args.join(" "),
                    text(&got.stderr)
                );
            }
        }
    }
}

#[test]
fn extract_and_convert_write_over_http_and_s3_what_they_write_locally() {
    let Some(servers) = servers() else { return };
    let scratch = tempfile::tempdir().unwrap();
    for (number, (case, places)) in CASES.iter().zip(published(servers)).enumerate() {
        let local = arg(&places.local);
        let write = |location: &str, tag: &str| -> BTreeMap<String, Vec<u8>> {
            let out = scratch.path().join(format!("{number}-{tag}"));
            std::fs::create_dir(&out).unwrap();
            let extracted = out.join("extract");
            ok(servers, &["extract", location, "-o", arg(&extracted)]);
            ok(
                servers,
                &[
                    case.command,
                    "extract",
                    location,
                    "-o",
                    arg(&out.join("own")),
                ],
            );
            for to in ["arcx", "kast", "par4", "taridx"] {
                let target = match to {
                    "taridx" => out.join("fold/fold.taridx"),
                    _ => out.join(format!("converted.{to}")),
                };
                ok(
                    servers,
                    &["convert", location, "--to", to, "-o", arg(&target)],
                );
            }
            tree(&out)
        };
        let expected = write(local, "local");
        assert!(
            expected.keys().any(|name| name.starts_with("extract/")),
            "{}: nothing extracted",
            case.file
        );
        for (tag, remote) in [("http", &places.http), ("s3", &places.s3)] {
            assert_eq!(write(remote, tag), expected, "{} over {tag}", case.file);
        }
    }
}

/// The `requests: N, bytes: M` line of `-v`, as numbers.
fn stats_line(stderr: &[u8]) -> (u64, u64) {
    let stderr = text(stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    let (requests, bytes) = lines[0]
        .strip_prefix("requests: ")
        .and_then(|rest| rest.split_once(", bytes: "))
        .unwrap_or_else(|| panic!("not a stats line: {stderr}"));
    (requests.parse().unwrap(), bytes.parse().unwrap())
}

#[test]
fn dash_v_after_the_subcommand_prints_the_cost_of_the_operation() {
    let Some(servers) = servers() else { return };
    let scratch = tempfile::tempdir().unwrap();
    let arcx = &published(servers)[1];
    let out = scratch.path().join("entry");
    let size = std::fs::metadata(&arcx.local).unwrap().len();

    let got = ok(
        servers,
        &["get", "-v", &arcx.http, "text/0001.txt", "-o", arg(&out)],
    );
    let (requests, bytes) = stats_line(&got.stderr);
    assert!((1..=3).contains(&requests), "{requests} requests");
    assert!(bytes > 0 && bytes < size, "{bytes} of {size} bytes");
    let entry = std::fs::read(&out).unwrap();

    let got = ok(
        servers,
        &["get", "--stats", &arcx.s3, "text/0001.txt", "-o", arg(&out)],
    );
    let (requests, _) = stats_line(&got.stderr);
    assert!(requests >= 1);
    assert_eq!(std::fs::read(&out).unwrap(), entry);

    // A local file costs no requests, and says so.
    let got = ok(
        servers,
        &[
            "get",
            "-v",
            arg(&arcx.local),
            "text/0001.txt",
            "-o",
            arg(&out),
        ],
    );
    assert_eq!(stats_line(&got.stderr), (0, 0));
}

/// A failed command's one line of stderr.
fn error_line(output: &Output, args: &[&str]) -> String {
    assert!(
        !output.status.success(),
        "binfmt {} succeeded",
        args.join(" ")
    );
    let stderr = text(&output.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "binfmt {}: {stderr}", args.join(" "));
    assert!(
        !stderr.contains("panicked"),
        "binfmt {}: {stderr}",
        args.join(" ")
    );
    lines[0].to_owned()
}

#[test]
fn a_wrong_secret_is_one_line_naming_the_url_never_the_secret() {
    let Some(servers) = servers() else { return };
    let places = &published(servers)[0];
    let secret = "not-the-secret-7f3a9c";
    for args in [
        vec!["info", places.s3.as_str()],
        vec!["get", places.s3.as_str(), "text/0001.txt"],
    ] {
        let line = error_line(&binfmt(servers, secret, &args), &args);
        assert!(line.contains(&places.s3), "{line}");
        assert!(!line.contains(secret), "{line}");
        assert!(!line.contains(&servers.s3_secret_access_key), "{line}");
    }
}

#[test]
fn a_missing_object_is_one_line_naming_the_url() {
    let Some(servers) = servers() else { return };
    published(servers);
    let http = format!("{}/{}/missing.arcx", servers.nginx, run_dir());
    let s3 = format!("s3://{}/{}/missing.arcx", servers.s3_bucket, run_dir());
    for url in [&http, &s3] {
        for command in ["info", "list", "verify", "sniff"] {
            let args = [command, url.as_str()];
            let line = error_line(
                &binfmt(servers, &servers.s3_secret_access_key, &args),
                &args,
            );
            assert!(line.contains(url.as_str()), "{line}");
            assert!(line.contains("not found") || line.contains("404"), "{line}");
        }
    }
}

#[test]
fn wrong_ranges_and_dropped_connections_are_errors_never_wrong_bytes() {
    let Some(servers) = servers() else { return };
    let scratch = tempfile::tempdir().unwrap();
    // The misbehaving server serves the document root's top level.
    let name = format!("{}-multi_block.arcx-cli.arcx", run_dir());
    std::fs::copy(
        fixture("generated/arcx/multi_block.arcx-cli.arcx"),
        servers.www.join(&name),
    )
    .unwrap();
    for mode in ["wrong-suffix", "shifted", "short", "drop-always"] {
        let url = format!("{}/{mode}/{name}", servers.misbehaving);
        let out = scratch.path().join(mode);
        let args = ["get", url.as_str(), "text/0001.txt", "-o", arg(&out)];
        let line = error_line(
            &binfmt(servers, &servers.s3_secret_access_key, &args),
            &args,
        );
        assert!(line.contains(&url), "{mode}: {line}");
        assert!(!out.exists(), "{mode}: wrote {}", out.display());
    }
    // A connection dropped once is retried, and the bytes are right.
    let url = format!("{}/drop-once/{name}", servers.misbehaving);
    let got = ok(servers, &["get", url.as_str(), "text/0001.txt"]);
    let expected = ok(
        servers,
        &[
            "get",
            arg(&fixture("generated/arcx/multi_block.arcx-cli.arcx")),
            "text/0001.txt",
        ],
    );
    assert_eq!(got.stdout, expected.stdout);
}

#[test]
fn a_server_that_ignores_ranges_is_read_whole_with_a_warning() {
    let Some(servers) = servers() else { return };
    let places = &published(servers)[2];
    let url = format!(
        "{}/{}/{}",
        servers.http_server,
        run_dir(),
        file_name(&places.local)
    );
    let got = ok(servers, &["list", url.as_str()]);
    let expected = ok(servers, &["list", arg(&places.local)]);
    assert_eq!(got.stdout, expected.stdout);
    let stderr = text(&got.stderr);
    assert!(
        stderr.starts_with("binfmt: warning: ") && stderr.contains("range"),
        "{stderr}"
    );
}

/// Issue 28: a refused connection printed the HTTP client's retry report
/// ("Generic HTTP error ... max_retries: 4, retry_timeout: 30s"). It is one
/// line saying what is wrong and what to check. No server needed: a port
/// just closed refuses.
#[test]
fn a_refused_connection_says_what_to_check() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/data.arcx");
    let done = Command::new(env!("CARGO_BIN_EXE_binfmt"))
        .args(["list", &url])
        .output()
        .unwrap();
    assert_eq!(done.status.code(), Some(1));
    let said = text(&done.stderr);
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(
        said.contains("connection refused") && said.contains("is the server running"),
        "{said}"
    );
    assert!(
        !said.contains("retries") && !said.contains("Generic"),
        "{said}"
    );
}
