//! The contract every command inherits (spec/gates.md): each `binfmt`
//! command, run as a real process, against each hostile class, from one
//! table. A command that `binfmt help` lists and the table lacks fails
//! `every_command_is_in_the_table`, so a new command cannot skip the
//! contract.
//!
//! The classes:
//! - a FIFO, or a symlink to `/dev/zero`, where the command reads a file:
//!   refused by kind, never read, never a hang;
//! - the output named as one of the inputs (the same path, or a hard link to
//!   it): refused, the input unchanged;
//! - an input path holding a newline, ESC and a right-to-left override:
//!   nothing printed raw;
//! - a URL with `user:password@`, and `AWS_SECRET_ACCESS_KEY` set: neither
//!   printed;
//! - environment variables that object_store would choke on: one line
//!   naming the variable, never a panic;
//! - a TARIDX index that does not cover its shard's last member: every
//!   command that reads the whole fold refuses it.
//!
//! Every run of every class must also end within the timeout and never
//! panic (exit status 101).

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use binfmt_tests::build::taridx::Tar;
use binfmt_tests::fixture;

const BIN: &str = env!("CARGO_BIN_EXE_binfmt");
/// Set in every run's environment; must never be printed.
const SECRET: &str = "contract-secret-7f3a9c21";
/// A password in a URL; must never be printed.
const PASSWORD: &str = "hunter2-contract";
const TIMEOUT: Duration = Duration::from_secs(30);
/// A file name that would forge a line, colour the terminal and reverse
/// what follows it if printed raw.
const HOSTILE_STEM: &str = "evil\nforged line\u{1b}[31m\u{202e}gpj";

/// What a command reads where `{in}` stands (the file the classes attack).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Input {
    /// No input file.
    None,
    Arcx,
    Kast,
    Par4,
    /// A TARIDX index with its three shards beside it.
    Taridx,
    /// A tar shard.
    Tar,
    /// A directory of small files (what pack walks).
    Dir,
    /// A wids shard list naming a shard beside it.
    WidsList,
    /// A `.npy` file.
    Npy,
    /// Raw bytes for one kastore array.
    Raw,
    /// A copy of the fixtures directory (what the tour reads).
    Fixtures,
}

/// One command of the table.
struct Row {
    /// The command words (`"taridx export"`).
    command: &'static str,
    /// The arguments; `{in}` is the input, `{dir}` its directory, `{out}` a
    /// file to write, `{outdir}` a directory to write into.
    args: &'static [&'static str],
    input: Input,
    /// `{out}` is a file the command writes (so it must never be an input).
    writes: bool,
    /// `{in}` may be a URL.
    url: bool,
    /// It reads every member of a TARIDX fold, so an index that leaves a
    /// member out must be refused.
    whole_fold: bool,
    /// stdout carries data, not lines of text.
    data_stdout: bool,
}

const fn row(command: &'static str, args: &'static [&'static str], input: Input) -> Row {
    Row {
        command,
        args,
        input,
        writes: false,
        url: false,
        whole_fold: false,
        data_stdout: false,
    }
}

impl Row {
    const fn writes(mut self) -> Self {
        self.writes = true;
        self
    }
    const fn url(mut self) -> Self {
        self.url = true;
        self
    }
    const fn whole(mut self) -> Self {
        self.whole_fold = true;
        self
    }
    const fn data(mut self) -> Self {
        self.data_stdout = true;
        self
    }
}

use Input::*;

/// Every command `binfmt` has, with the inputs it is attacked through.
/// Generic commands appear once per format.
fn table() -> Vec<Row> {
    let mut rows = vec![
        row("sniff", &["{in}"], Arcx).url(),
        row("sniff", &["{in}"], Taridx).url(),
        row("completions", &["bash"], None).data(),
        row("tour", &["{dir}"], Fixtures),
    ];
    for input in [Arcx, Kast, Par4, Taridx] {
        rows.extend([
            row("info", &["{in}"], input).url(),
            row("list", &["{in}"], input).url(),
            row("get", &["{in}", "{name}", "-o", "{out}"], input)
                .url()
                .writes(),
            row("get", &["{in}", "{name}", "-o", "-"], input)
                .url()
                .data(),
            row("extract", &["{in}", "-o", "{outdir}"], input)
                .url()
                .whole(),
            row("verify", &["{in}"], input).url().whole(),
            row("convert", &["{in}", "-o", "{out}", "--to", "{to}"], input)
                .url()
                .writes()
                .whole(),
        ]);
    }
    // `mount --daemon` returns once mounted; the case unmounts `{mnt}`.
    for input in [Arcx, Kast, Par4, Taridx] {
        rows.push(
            row("mount", &["--daemon", "{in}", "{mnt}"], input)
                .url()
                .whole(),
        );
    }
    rows.extend([
        row("kast info", &["{in}"], Kast).url(),
        row("kast list", &["-l", "{in}"], Kast).url(),
        row("kast get", &["{in}", "int16", "-o", "{out}"], Kast)
            .url()
            .writes(),
        row("kast dump", &["{in}", "int16"], Kast).url(),
        row("kast extract", &["{in}", "-o", "{outdir}"], Kast).url(),
        row("kast verify", &["{in}"], Kast).url(),
        row("kast pack", &["-o", "{out}", "--uint8", "k={in}"], Raw).writes(),
        row("kast pack", &["-o", "{out}", "--npy", "k={in}"], Npy).writes(),
        row("taridx index", &["{in}", "-o", "{out}"], Tar).writes(),
        row("taridx info", &["{in}"], Taridx).url(),
        row("taridx list", &["{in}"], Taridx).url(),
        row(
            "taridx get",
            &["{in}", "s/000001.json", "-o", "{out}"],
            Taridx,
        )
        .url()
        .writes(),
        row("taridx extract", &["{in}", "-o", "{outdir}"], Taridx)
            .url()
            .whole(),
        row("taridx verify", &["{in}"], Taridx).url().whole(),
        row("taridx status", &["{dir}"], Taridx).whole(),
        row("taridx pack", &["{in}", "-o", "{out}"], Dir).writes(),
        row("taridx export", &["wids", "{in}", "-o", "{out}"], Taridx)
            .writes()
            .whole(),
        row("taridx export", &["dali", "{in}", "-o", "{outdir}"], Taridx).whole(),
        row(
            "taridx export",
            &["ratarmount", "{in}", "-o", "{outdir}"],
            Taridx,
        )
        .whole(),
        row("taridx import", &["wids", "{in}", "-o", "{out}"], WidsList).writes(),
        row("par4 info", &["{in}"], Par4).url(),
        row("par4 list", &["{in}"], Par4).url(),
        row("par4 get", &["{in}", "hello.txt", "-o", "{out}"], Par4)
            .url()
            .writes(),
        row("par4 extract", &["{in}", "-o", "{outdir}"], Par4).url(),
        row("par4 verify", &["{in}"], Par4).url(),
        row("arcx info", &["{in}"], Arcx).url(),
        row("arcx list", &["{in}"], Arcx).url(),
        row(
            "arcx get",
            &["{in}", "sample/0001.json", "-o", "{out}"],
            Arcx,
        )
        .url()
        .writes(),
        row("arcx extract", &["{in}", "-o", "{outdir}"], Arcx).url(),
        row("arcx verify", &["{in}"], Arcx).url(),
        row("arcx pack", &["{in}", "-o", "{out}"], Dir).writes(),
    ]);
    rows
}

/// The leaf commands `binfmt help` lists, as `"taridx export"`.
fn listed_commands() -> BTreeSet<String> {
    fn commands(help: &str) -> Vec<String> {
        let mut names = Vec::new();
        let mut inside = false;
        for line in help.lines() {
            if line.starts_with("Commands:") {
                inside = true;
                continue;
            }
            if inside {
                let Some(name) = line
                    .strip_prefix("  ")
                    .and_then(|l| l.split_whitespace().next())
                else {
                    break;
                };
                if name != "help" {
                    names.push(name.to_owned());
                }
            }
        }
        names
    }
    let mut leaves = BTreeSet::new();
    let top = run_plain(&["--help"]);
    for name in commands(&top) {
        let sub = commands(&run_plain(&[&name, "--help"]));
        if sub.is_empty() {
            leaves.insert(name);
        } else {
            leaves.extend(sub.into_iter().map(|leaf| format!("{name} {leaf}")));
        }
    }
    leaves
}

fn run_plain(args: &[&str]) -> String {
    let output = Command::new(BIN).args(args).output().unwrap();
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn every_command_is_in_the_table() {
    let listed = listed_commands();
    assert!(listed.len() > 20, "binfmt help lists {listed:?}");
    let covered: BTreeSet<String> = table().iter().map(|row| row.command.to_owned()).collect();
    let missing: Vec<&String> = listed.difference(&covered).collect();
    assert!(
        missing.is_empty(),
        "commands missing from the contract table: {missing:?}"
    );
    let unknown: Vec<&String> = covered.difference(&listed).collect();
    assert!(unknown.is_empty(), "table rows for no command: {unknown:?}");
}

/// How one run ended.
struct Run {
    status: Option<i32>,
    stdout: Vec<u8>,
    stderr: String,
    what: String,
}

impl Run {
    /// Fails the test on a hang, a panic, a secret or a raw control byte
    /// on stderr; the checks every class shares.
    fn check_common(&self) {
        let what = &self.what;
        assert_ne!(self.status, Some(101), "{what}: panicked: {}", self.stderr);
        assert!(!self.stderr.contains("panicked"), "{what}: {}", self.stderr);
        for secret in [SECRET, PASSWORD] {
            assert!(!self.stderr.contains(secret), "{what}: secret on stderr");
            assert!(
                !String::from_utf8_lossy(&self.stdout).contains(secret),
                "{what}: secret on stdout"
            );
        }
        for c in ['\u{1b}', '\u{202e}', '\r'] {
            assert!(
                !self.stderr.contains(c),
                "{what}: {c:?} printed raw on stderr: {:?}",
                self.stderr
            );
        }
        assert!(
            !self.stderr.lines().any(|line| line.starts_with("forged")),
            "{what}: a name forged a line on stderr: {:?}",
            self.stderr
        );
    }

    fn failed(&self) -> bool {
        self.status != Some(0)
    }
}

/// Runs binfmt with `args` and `env`, killing it after the timeout.
fn run(what: String, args: &[String], env: &[(&str, &str)], cwd: &Path) -> Run {
    let mut command = Command::new(BIN);
    command
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        .env("AWS_ACCESS_KEY_ID", "contract-access-key")
        .env("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
        .env("AWS_REGION", "us-east-1")
        .env_remove("AWS_SESSION_TOKEN");
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stdout.read_to_end(&mut bytes);
        bytes
    });
    let err = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stderr.read_to_end(&mut bytes);
        bytes
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {TIMEOUT:?} (a hang)");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Run {
        status: status.code(),
        stdout: out.join().unwrap(),
        stderr: String::from_utf8_lossy(&err.join().unwrap()).into_owned(),
        what,
    }
}

/// Runs `check` on every row, and fails listing every row that failed
/// (not only the first), so one broken command does not hide another.
fn each_row(rows: impl IntoIterator<Item = Row>, check: impl Fn(&Row)) {
    let mut failures = Vec::new();
    for row in rows {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&row)));
        if let Err(panic) = outcome {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            failures.push(message);
        }
    }
    assert!(
        failures.is_empty(),
        "{} rows failed:\n{}",
        failures.len(),
        failures.join("\n---\n")
    );
}

/// A place for one run: a fresh directory holding a valid input named
/// `stem` (and what it needs beside it).
struct Case {
    dir: tempfile::TempDir,
    input: PathBuf,
}

fn copy(from: &Path, to: &Path) {
    std::fs::copy(from, to).unwrap_or_else(|error| panic!("{}: {error}", from.display()));
}

/// A tar shard of three small samples numbered from `first` (a fourth
/// after them with `extra`).
fn small_shard(first: usize, extra: bool) -> Vec<u8> {
    let mut tar = Tar::new();
    let count = if extra { 4 } else { 3 };
    for i in first..first + count {
        tar.file(
            &format!("s/{i:06}.json"),
            format!("{{\"i\": {i}}}\n").as_bytes(),
        );
    }
    tar.finish()
}

impl Drop for Case {
    /// A mount a row made is undone before its directory is removed.
    fn drop(&mut self) {
        let mnt = self.root().join("mnt");
        if mnt.exists() {
            let _ = Command::new("umount")
                .arg("-l")
                .arg(&mnt)
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// Whether FUSE mounts can be made here (`mount` rows need it to succeed).
fn fuse_usable() -> bool {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/fuse")
        .is_ok()
}

impl Case {
    fn new(input: Input, stem: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let reference = |name: &str| fixture(&format!("reference/{name}"));
        let input = match input {
            None => root.join("nothing"),
            Arcx => {
                let path = root.join(format!("{stem}.arcx"));
                copy(&reference("sample.arcx"), &path);
                path
            }
            Kast => {
                let path = root.join(format!("{stem}.kas"));
                copy(&reference("all_types.kas"), &path);
                path
            }
            Par4 => {
                let path = root.join(format!("{stem}.par4"));
                copy(&reference("map.par4"), &path);
                path
            }
            Taridx => {
                // Two shards of small samples, indexed by binfmt itself (the
                // index command's own contract is a row of the table).
                let shards: Vec<PathBuf> = (0..2)
                    .map(|fid| root.join(format!("{stem}_{fid:04}.tar")))
                    .collect();
                for (fid, shard) in shards.iter().enumerate() {
                    std::fs::write(shard, small_shard(fid * 10, false)).unwrap();
                }
                let path = root.join(format!("{stem}.taridx"));
                let mut args = vec!["taridx".to_owned(), "index".to_owned()];
                args.extend(shards.iter().map(|s| s.to_str().unwrap().to_owned()));
                args.extend(["-o".to_owned(), path.to_str().unwrap().to_owned()]);
                let made = run("setup: taridx index".into(), &args, &[], root);
                assert_eq!(made.status, Some(0), "{}", made.stderr);
                path
            }
            Tar => {
                let path = root.join(format!("{stem}.tar"));
                std::fs::write(&path, small_shard(0, false)).unwrap();
                path
            }
            Dir => {
                let path = root.join(stem);
                std::fs::create_dir(&path).unwrap();
                for i in 0..3 {
                    std::fs::write(
                        path.join(format!("{i:06}.json")),
                        format!("{{\"i\": {i}}}\n"),
                    )
                    .unwrap();
                }
                path
            }
            WidsList => {
                std::fs::write(root.join("shard_0000.tar"), small_shard(0, false)).unwrap();
                let path = root.join(format!("{stem}.json"));
                let list = serde_json::json!({
                    "__kind__": "wids-shard-index-v1",
                    "wids_version": 1,
                    "shardlist": [{"url": "shard_0000.tar", "nsamples": 3}],
                });
                std::fs::write(&path, list.to_string()).unwrap();
                path
            }
            Npy => {
                let path = root.join(format!("{stem}.npy"));
                let mut header =
                    b"{'descr': '<i2', 'fortran_order': False, 'shape': (3,), }".to_vec();
                while (10 + header.len() + 1) % 64 != 0 {
                    header.push(b' ');
                }
                header.push(b'\n');
                let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
                bytes.extend_from_slice(&u16::try_from(header.len()).unwrap().to_le_bytes());
                bytes.extend_from_slice(&header);
                bytes.extend_from_slice(&[1, 0, 2, 0, 3, 0]);
                std::fs::write(&path, bytes).unwrap();
                path
            }
            Raw => {
                let path = root.join(format!("{stem}.bin"));
                std::fs::write(&path, b"raw bytes").unwrap();
                path
            }
            Fixtures => {
                let path = root.join(format!("{stem}.arcx"));
                copy(&reference("sample.arcx"), &path);
                copy(&reference("all_types.kas"), &root.join("all_types.kas"));
                path
            }
        };
        Self { dir, input }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    /// The row's arguments with `input` where `{in}` stands.
    fn args(&self, row: &Row, input: &str, out: &Path) -> Vec<String> {
        let mut words: Vec<String> = row.command.split(' ').map(str::to_owned).collect();
        for arg in row.args {
            let word = match *arg {
                "{in}" => input.to_owned(),
                "{dir}" => self.root().to_str().unwrap().to_owned(),
                "{out}" => out.to_str().unwrap().to_owned(),
                "{outdir}" => self.root().join("out-dir").to_str().unwrap().to_owned(),
                "{mnt}" => {
                    let mnt = self.root().join("mnt");
                    std::fs::create_dir_all(&mnt).unwrap();
                    mnt.to_str().unwrap().to_owned()
                }
                "{name}" => entry_name(row.input).to_owned(),
                "{to}" => convert_target(row.input).to_owned(),
                other => other.replace("{in}", input),
            };
            words.push(word);
        }
        words
    }

    /// The output file for a run: beside the input, in another format.
    fn out(&self, row: &Row) -> PathBuf {
        let extension = match (row.command, row.input) {
            ("convert", input) => convert_target_extension(input),
            (command, _) if command.ends_with("pack") && command.starts_with("kast") => "kas",
            (command, _) if command.ends_with("pack") && command.starts_with("arcx") => "arcx",
            (command, _) if command.contains("taridx") && !command.contains("get") => {
                if row.args.first() == Some(&"wids") && command.ends_with("export") {
                    "json"
                } else {
                    "taridx"
                }
            }
            _ => "out",
        };
        self.root().join(format!("output.{extension}"))
    }
}

fn entry_name(input: Input) -> &'static str {
    match input {
        Arcx => "sample/0001.json",
        Kast => "int16",
        Par4 => "hello.txt",
        _ => "s/000001.json",
    }
}

fn convert_target(input: Input) -> &'static str {
    match input {
        Arcx => "kast",
        _ => "arcx",
    }
}

fn convert_target_extension(input: Input) -> &'static str {
    match convert_target(input) {
        "kast" => "kas",
        other => other,
    }
}

fn describe(row: &Row, class: &str) -> String {
    format!("binfmt {} {:?} ({class})", row.command, row.args)
}

/// Each command first runs as it should, so the classes below attack a
/// command that works.
#[test]
fn every_command_works_on_its_valid_input() {
    each_row(table(), |row| {
        if row.command == "mount" && !fuse_usable() {
            assert!(
                std::env::var("BINFMT_INTEROP").as_deref() != Ok("require"),
                "/dev/fuse cannot be opened: mount cannot be checked"
            );
            eprintln!("note: /dev/fuse cannot be opened; mount's valid run skipped");
            return;
        }
        let case = Case::new(row.input, "valid");
        let out = case.out(row);
        let args = case.args(row, case.input.to_str().unwrap(), &out);
        let result = run(describe(row, "valid"), &args, &[], case.root());
        result.check_common();
        assert_eq!(result.status, Some(0), "{}: {}", result.what, result.stderr);
    });
}

/// A FIFO or a symlink to `/dev/zero` where the input should be: refused
/// by kind, never read (a FIFO with no writer would block the read).
#[test]
fn special_files_are_refused_as_inputs() {
    each_row(
        table()
            .into_iter()
            .filter(|row| !matches!(row.input, None | Fixtures)),
        |row| {
            for special in ["fifo", "/dev/zero"] {
                let case = Case::new(row.input, "special");
                let target = &case.input;
                if target.is_dir() {
                    // A directory input: the special file sits inside it.
                    let inside = target.join("000009.json");
                    make_special(special, &inside);
                } else {
                    std::fs::remove_file(target).unwrap();
                    make_special(special, target);
                }
                let out = case.out(row);
                let args = case.args(row, target.to_str().unwrap(), &out);
                let result = run(describe(row, special), &args, &[], case.root());
                result.check_common();
                if target.is_dir() {
                    // Walking a tree, a FIFO is skipped with a note (as tar
                    // does) or the walk refuses it; a symlink may be stored as
                    // a link. Neither is read: the output stays small.
                    assert!(
                        result.failed()
                            || result.stderr.contains("000009.json")
                            || special != "fifo",
                        "{}: the FIFO was neither refused nor named: {}",
                        result.what,
                        result.stderr
                    );
                    if !result.failed() {
                        let size = std::fs::metadata(&out).map_or(0, |m| m.len());
                        assert!(size < 1 << 20, "{}: {size}-byte output", result.what);
                    }
                } else {
                    let kind = if special == "fifo" {
                        "FIFO"
                    } else {
                        "character device"
                    };
                    assert!(result.failed(), "{}: succeeded", result.what);
                    // A report (taridx status) names it on stdout.
                    let said = result.stderr.clone() + &String::from_utf8_lossy(&result.stdout);
                    assert!(
                        said.contains(kind),
                        "{}: the refusal does not name {kind}: {said}",
                        result.what,
                    );
                }
            }
        },
    );
}

fn make_special(kind: &str, path: &Path) {
    if kind == "fifo" {
        let status = Command::new("mkfifo").arg(path).status().unwrap();
        assert!(status.success());
    } else {
        std::os::unix::fs::symlink(kind, path).unwrap();
    }
}

/// The output named as the input, by the same path or by a hard link:
/// refused, the input's bytes unchanged.
#[test]
fn outputs_never_replace_inputs() {
    each_row(table().into_iter().filter(|row| row.writes), |row| {
        for how in ["same path", "hard link"] {
            let case = Case::new(row.input, "input");
            let victim = if case.input.is_dir() {
                // What pack walks: a file inside the directory, named as
                // the command's output would be.
                let out = case.out(row);
                let inside = case.input.join(out.file_name().unwrap());
                std::fs::write(&inside, b"a file pack reads").unwrap();
                inside
            } else {
                case.input.clone()
            };
            let before = std::fs::read(&victim).unwrap();
            let out = match how {
                "same path" => victim.clone(),
                _ => {
                    let extension = case.out(row).extension().unwrap().to_owned();
                    let link = case.root().join("link-to-input").with_extension(extension);
                    std::fs::hard_link(&victim, &link).unwrap();
                    link
                }
            };
            let args = case.args(row, case.input.to_str().unwrap(), &out);
            let result = run(describe(row, how), &args, &[], case.root());
            result.check_common();
            assert!(result.failed(), "{}: wrote over its input", result.what);
            assert!(
                result
                    .stderr
                    .contains("never writes its output over what it reads"),
                "{}: {}",
                result.what,
                result.stderr
            );
            assert_eq!(std::fs::read(&victim).unwrap(), before, "{}", result.what);
        }
    });
}

/// An input whose path holds a newline, ESC and a right-to-left override,
/// valid and damaged: nothing printed raw, on stderr or in a listing.
#[test]
fn hostile_names_are_never_printed_raw() {
    each_row(table().into_iter().filter(|row| row.input != None), |row| {
        for damaged in [false, true] {
            let case = Case::new(row.input, HOSTILE_STEM);
            if damaged && case.input.is_file() {
                let mut bytes = std::fs::read(&case.input).unwrap();
                bytes.truncate(bytes.len() / 2);
                std::fs::write(&case.input, bytes).unwrap();
            }
            let out = case.out(row);
            let args = case.args(row, case.input.to_str().unwrap(), &out);
            let class = if damaged {
                "hostile name, damaged"
            } else {
                "hostile name"
            };
            let result = run(describe(row, class), &args, &[], case.root());
            result.check_common();
            if !row.data_stdout {
                let stdout = String::from_utf8_lossy(&result.stdout);
                assert!(
                    !stdout.contains('\u{1b}') && !stdout.contains('\u{202e}'),
                    "{}: raw control characters on stdout: {stdout:?}",
                    result.what
                );
                assert!(
                    !stdout.lines().any(|line| line.starts_with("forged")),
                    "{}: a name forged a line on stdout: {stdout:?}",
                    result.what
                );
            }
        }
    });
}

/// A URL carrying a password, for every command that reads URLs: refused
/// or failed without printing it (the secret key in the environment is
/// checked on every run).
#[test]
fn secrets_are_never_printed() {
    each_row(table().into_iter().filter(|row| row.url), |row| {
        let case = Case::new(row.input, "secret");
        let extension = case.input.extension().unwrap().to_str().unwrap().to_owned();
        // Every spelling a URL parser reads userinfo from (found from
        // outside: `http:u:p@h` was taken for a local path and echoed).
        for prefix in ["http://", "http:", "http:/", "http:\\\\", "HTTPS://"] {
            let url = format!("{prefix}user:{PASSWORD}@127.0.0.1:9/data.{extension}");
            let out = case.out(row);
            let args = case.args(row, &url, &out);
            let result = run(describe(row, "userinfo"), &args, &[], case.root());
            result.check_common();
            assert!(result.failed(), "{}: succeeded", result.what);
        }
    });
    // The secret key's value in a name the command prints, on stdout as on
    // stderr (found from outside: sniff and list printed it raw).
    each_row(
        table().into_iter().filter(|row| row.input != Input::None),
        |row| {
            let case = Case::new(row.input, &format!("named-{SECRET}"));
            let out = case.out(row);
            let args = case.args(row, case.input.to_str().unwrap(), &out);
            let result = run(describe(row, "secret in a name"), &args, &[], case.root());
            result.check_common();
        },
    );
}

/// Environment variables that break an HTTP header or are no URL: one
/// error line naming the variable and not its value, never a panic.
#[test]
fn a_bad_environment_is_one_line_naming_the_variable() {
    let bad: [(&str, &str); 4] = [
        ("AWS_SESSION_TOKEN", "token-value\nInjected: header"),
        ("AWS_ACCESS_KEY_ID", "key-value\r\nInjected: header"),
        ("AWS_REGION", "region-value\nx"),
        ("AWS_ENDPOINT_URL", "endpoint-value::not a url"),
    ];
    each_row(table().into_iter().filter(|row| row.url), |row| {
        for (variable, value) in bad {
            let case = Case::new(row.input, "env");
            let extension = case.input.extension().unwrap().to_str().unwrap().to_owned();
            let url = format!("s3://bucket/data.{extension}");
            let out = case.out(row);
            let args = case.args(row, &url, &out);
            let result = run(
                describe(row, variable),
                &args,
                &[(variable, value)],
                case.root(),
            );
            result.check_common();
            assert_eq!(result.status, Some(1), "{}: {}", result.what, result.stderr);
            assert_eq!(
                result.stderr.lines().count(),
                1,
                "{}: {}",
                result.what,
                result.stderr
            );
            assert!(
                result.stderr.contains(variable),
                "{}: {}",
                result.what,
                result.stderr
            );
            let first = value.split(['\n', '\r', ' ']).next().unwrap();
            assert!(
                !result.stderr.contains(first),
                "{}: the value was printed",
                result.what
            );
        }
    });
}

/// A TARIDX index that stops before its shard's last member: every
/// command that reads the whole fold refuses it instead of dropping the
/// member.
#[test]
fn an_index_that_leaves_members_out_is_refused() {
    each_row(
        table()
            .into_iter()
            .filter(|row| row.whole_fold && row.input == Taridx),
        |row| {
            let case = Case::new(Tar, "fold_0000");
            let index = case.root().join("fold.taridx");
            let made = run(
                "index".into(),
                &[
                    "taridx".into(),
                    "index".into(),
                    case.input.to_str().unwrap().into(),
                    "-o".into(),
                    index.to_str().unwrap().into(),
                ],
                &[],
                case.root(),
            );
            assert_eq!(made.status, Some(0), "{}", made.stderr);
            // The same shard with a fourth member after the indexed three.
            std::fs::write(&case.input, small_shard(0, true)).unwrap();
            let out = case.out(row);
            let args = case.args(row, index.to_str().unwrap(), &out);
            let result = run(describe(row, "uncovered member"), &args, &[], case.root());
            result.check_common();
            assert!(
                result.failed(),
                "{}: succeeded though the index leaves s/000003.json out: {}",
                result.what,
                String::from_utf8_lossy(&result.stdout)
            );
        },
    );
}

/// The table's rows are unique, so a command's classes are not run twice
/// under one description by mistake.
#[test]
fn rows_are_distinct() {
    let mut seen = BTreeMap::new();
    for row in table() {
        let key = format!("{} {:?} {:?}", row.command, row.args, row.input);
        assert!(seen.insert(key.clone(), ()).is_none(), "{key} twice");
    }
}
