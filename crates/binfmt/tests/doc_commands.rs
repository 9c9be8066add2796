//! Every command the documentation shows runs, and succeeds: the fenced
//! `sh` and `console` blocks of `README.md` and `docs/*.md`, and every line
//! under "Examples:" in `binfmt --help` and each subcommand's `--help`.
//!
//! Each block (and each `--help` section) runs in one `bash -eo pipefail`
//! inside a fresh copy of a scratch directory holding the files the
//! examples name, with this build's `binfmt` first on `PATH`. The markers
//! (`<!-- doc-test: skip: REASON -->`, `<!-- doc-test: servers -->`,
//! `<!-- doc-test: setup: COMMAND -->`) and the scratch directory's files
//! are described in ARCHITECTURE.md, "Testing the docs".

#![allow(clippy::panic, clippy::indexing_slicing)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const BINFMT: &str = env!("CARGO_BIN_EXE_binfmt");

/// Where a remote block's URLs point before the test rewrites them.
const EXAMPLE_HTTP: &str = "https://example.org/";
const EXAMPLE_S3: &str = "s3://datasets/";

fn repo() -> &'static Path {
    binfmt_tests::workspace_root()
}

/// One runnable block of a page, or one `--help` section.
#[derive(Debug, Default)]
struct Block {
    /// `FILE:LINE` of the opening fence, or `binfmt SUBCOMMAND --help`.
    place: String,
    /// The commands, one per line (continuations kept).
    script: String,
    /// `<!-- doc-test: skip: REASON -->`.
    skip: Option<String>,
    /// `<!-- doc-test: servers -->`.
    servers: bool,
    /// `<!-- doc-test: setup: COMMAND -->`, in order.
    setup: Vec<String>,
}

/// The markers on the comment lines right above line `fence` of `lines`.
fn markers(lines: &[&str], fence: usize, place: &str, block: &mut Block) {
    let mut at = fence;
    while at > 0 {
        at -= 1;
        let line = lines[at].trim();
        let Some(marker) = line
            .strip_prefix("<!-- doc-test:")
            .and_then(|rest| rest.strip_suffix("-->"))
        else {
            break;
        };
        let marker = marker.trim();
        if let Some(reason) = marker.strip_prefix("skip:") {
            assert!(!reason.trim().is_empty(), "{place}: a skip needs a reason");
            block.skip = Some(reason.trim().to_owned());
        } else if marker == "servers" {
            block.servers = true;
        } else if let Some(command) = marker.strip_prefix("setup:") {
            block.setup.insert(0, command.trim().to_owned());
        } else {
            panic!("{place}: unknown doc-test marker `{marker}`");
        }
    }
}

/// The `sh` and `console` blocks of a Markdown page.
fn page_blocks(path: &Path) -> Vec<Block> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let name = path
        .strip_prefix(repo())
        .unwrap_or(path)
        .display()
        .to_string();
    let lines: Vec<&str> = text.lines().collect();
    let mut blocks = Vec::new();
    let mut at = 0;
    while at < lines.len() {
        let Some(info) = lines[at].trim().strip_prefix("```") else {
            at += 1;
            continue;
        };
        let language = info.trim().to_owned();
        let fence = at;
        let mut body = Vec::new();
        at += 1;
        while at < lines.len() && lines[at].trim() != "```" {
            body.push(lines[at].trim());
            at += 1;
        }
        at += 1;
        let commands: Vec<&str> = match language.as_str() {
            "sh" => body,
            "console" => body
                .into_iter()
                .filter_map(|line| line.strip_prefix("$ "))
                .collect(),
            _ => continue,
        };
        let place = format!("{name}:{}", fence + 1);
        let mut block = Block {
            script: commands.join("\n"),
            ..Block::default()
        };
        markers(&lines, fence, &place, &mut block);
        block.place = place;
        blocks.push(block);
    }
    blocks
}

/// README.md and docs/*.md.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![repo().join("README.md")];
    let docs = repo().join("docs");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&docs)
        .unwrap_or_else(|e| panic!("{}: {e}", docs.display()))
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    found.sort();
    pages.extend(found);
    pages
}

fn all_page_blocks() -> Vec<Block> {
    pages().iter().flat_map(|page| page_blocks(page)).collect()
}

/// `binfmt ARGS --help`'s text.
fn help(path: &[String]) -> String {
    let output = Command::new(BINFMT)
        .args(path)
        .arg("--help")
        .output()
        .unwrap_or_else(|e| panic!("{BINFMT}: {e}"));
    assert!(output.status.success(), "binfmt {path:?} --help failed");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The indented lines under `heading` in a help text.
fn section<'t>(text: &'t str, heading: &str) -> Vec<&'t str> {
    text.lines()
        .skip_while(|line| *line != heading)
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .map(str::trim)
        .collect()
}

/// One block per `--help` that has examples, every subcommand walked.
fn help_blocks() -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut todo: Vec<Vec<String>> = vec![Vec::new()];
    while let Some(path) = todo.pop() {
        let text = help(&path);
        for line in section(&text, "Commands:") {
            let Some(name) = line.split_whitespace().next() else {
                continue;
            };
            if name != "help" {
                let mut sub = path.clone();
                sub.push(name.to_owned());
                todo.push(sub);
            }
        }
        let examples = section(&text, "Examples:");
        if examples.is_empty() {
            continue;
        }
        let script = examples.join("\n");
        blocks.push(Block {
            place: format!("binfmt {} --help", path.join(" ")),
            servers: script.contains(EXAMPLE_HTTP) || script.contains(EXAMPLE_S3),
            script,
            ..Block::default()
        });
    }
    blocks
}

fn write(path: impl AsRef<Path>, bytes: impl AsRef<[u8]>) {
    let path = path.as_ref();
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{}: {e}", parent.display()));
    }
    std::fs::write(path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("{}: {e}", to.display()));
    let entries = std::fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
    for entry in entries {
        let entry = entry.unwrap_or_else(|e| panic!("{}: {e}", from.display()));
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            copy_dir(&source, &target);
        } else {
            std::fs::copy(&source, &target)
                .unwrap_or_else(|e| panic!("{} -> {}: {e}", source.display(), target.display()));
        }
    }
}

fn copy(dir: &Path, from: &str, to: &str) {
    write(
        dir.join(to),
        std::fs::read(dir.join(from)).unwrap_or_else(|e| panic!("{from}: {e}")),
    );
}

/// Runs `script` with bash in `dir`, this build's binfmt first on PATH.
fn bash(dir: &Path, script: &str, env: &[(&str, String)]) -> std::process::Output {
    let bin = Path::new(BINFMT).parent().unwrap_or(Path::new("."));
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![bin.to_path_buf()];
    paths.extend(std::env::split_paths(&path));
    let mut command = Command::new("bash");
    command
        .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", script])
        .current_dir(dir)
        .env(
            "PATH",
            std::env::join_paths(paths).unwrap_or_else(|e| panic!("PATH: {e}")),
        )
        .env("HOME", dir.join("home"));
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().unwrap_or_else(|e| panic!("bash: {e}"))
}

fn run(dir: &Path, script: &str) {
    let output = bash(dir, script, &[]);
    assert!(
        output.status.success(),
        "making the scratch directory: `{script}` failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn f64_bytes(values: impl Iterator<Item = f64>) -> Vec<u8> {
    values.flat_map(f64::to_le_bytes).collect()
}

/// A version 1.0 `.npy` file of float64 values.
fn npy(values: &[f64]) -> Vec<u8> {
    let mut header = format!(
        "{{'descr': '<f8', 'fortran_order': False, 'shape': ({},), }}",
        values.len()
    );
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    let len = u16::try_from(header.len()).unwrap_or(u16::MAX);
    bytes.extend_from_slice(&len.to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend(f64_bytes(values.iter().copied()));
    bytes
}

/// The files the examples name (ARCHITECTURE.md, "Testing the docs").
fn make_scratch(dir: &Path) {
    copy_dir(&repo().join("fixtures"), &dir.join("fixtures"));
    for home in [
        ".local/share/bash-completion/completions",
        ".zfunc",
        ".config/fish/completions",
        ".cache",
    ] {
        std::fs::create_dir_all(dir.join("home").join(home))
            .unwrap_or_else(|e| panic!("{home}: {e}"));
    }
    // Source trees and the archives of them.
    write(
        dir.join("src/lib.rs"),
        "pub fn answer() -> u32 {\n    42\n}\n",
    );
    write(
        dir.join("src/main.rs"),
        "fn main() {\n    println!(\"hello\");\n}\n",
    );
    write(
        dir.join("tree/src/lib.rs"),
        "pub fn answer() -> u32 {\n    42\n}\n",
    );
    write(dir.join("tree/src/main.rs"), "fn main() {}\n");
    write(dir.join("tree/a.txt"), "hello\n");
    run(dir, "binfmt arcx pack tree -o data.arcx && rm -r tree");
    copy(dir, "data.arcx", "data/train.arcx");
    run(dir, "binfmt convert data.arcx -o data.par4 --to par4");
    copy(dir, "data.par4", "files.par4");
    copy(dir, "fixtures/generated/par4/vec_u64.par4", "items.par4");
    // kastores and the raw inputs of `kast pack`.
    write(dir.join("time.f64"), f64_bytes((0..5).map(f64::from)));
    write(
        dir.join("new.f64"),
        f64_bytes((0..5).map(|i| f64::from(i) + 0.5)),
    );
    write(dir.join("left.f64"), f64_bytes((0..4).map(f64::from)));
    write(dir.join("right.f64"), f64_bytes((1..5).map(f64::from)));
    write(
        dir.join("weights.f64"),
        f64_bytes((0..8).map(|i| f64::from(i) / 8.0)),
    );
    write(dir.join("flags.u32"), [0u8; 20]);
    write(dir.join("flags.i32"), [0u8; 20]);
    write(dir.join("config.json"), "{\"layers\": 2}\n");
    write(dir.join("time.npy"), npy(&[0.0, 1.5, 3.0]));
    run(
        dir,
        "binfmt kast pack -o tables.trees --float64 nodes/time=time.f64 --uint32 nodes/flags=flags.u32 \
         --float64 edges/left=left.f64 --float64 edges/right=right.f64\n\
         binfmt kast pack -o data.kas --float64 weights=weights.f64 --uint8 config=config.json",
    );
    copy(dir, "tables.trees", "sim.trees");
    copy(dir, "data.kas", "a.kas");
    copy(dir, "tables.trees", "b.kas");
    // Tar folds: samples s/NNNNNN in shards/train and wds/train,
    // cat/NNNNNN in data/train (three shards).
    for i in 100..=130u32 {
        let image = vec![u8::try_from(i % 251).unwrap_or(0); 100 + i as usize];
        let label = (i % 10).to_string();
        write(dir.join(format!("images/s/{i:06}.jpg")), &image);
        write(dir.join(format!("images/s/{i:06}.cls")), &label);
        write(dir.join(format!("cat-images/cat/{i:06}.jpg")), &image);
        write(dir.join(format!("cat-images/cat/{i:06}.cls")), &label);
    }
    run(
        dir,
        "binfmt taridx pack images/ -o shards/train.taridx\n\
         binfmt taridx pack images/ -o wds/train.taridx && binfmt taridx index wds/ --fold train\n\
         binfmt taridx pack cat-images/ -o data/train.taridx --max-samples 12 && rm -r cat-images\n\
         binfmt taridx index data/ --fold train\n\
         cp data/train_0000.tar val_0000.tar && cp data/train_0001.tar val_0001.tar\n\
         cp data/train_0000.tar shard_0000.tar && cp data/train.taridx train.taridx\n\
         binfmt taridx export wids data/train.taridx -o data/train.json\n\
         binfmt taridx export dali data/train.taridx -o data/\n\
         binfmt taridx export ratarmount data/train.taridx\n\
         mkdir hub && cp data/train_0000.tar hub/train-000000.tar && cp data/train_0001.tar hub/train-000001.tar",
    );
}

/// The scratch directory every block starts from, made once.
fn template() -> &'static Path {
    static TEMPLATE: OnceLock<PathBuf> = OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("doc_commands/template");
        if dir.exists() {
            std::fs::remove_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        }
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        make_scratch(&dir);
        dir
    })
}

/// A fresh copy of the template.
fn scratch() -> tempfile::TempDir {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap_or_else(|e| panic!("a scratch directory: {e}"));
    copy_dir(template(), dir.path());
    dir
}

/// The command as the test runs it: `cargo run ... -p binfmt --` is the
/// built binary.
fn as_run(script: &str) -> String {
    script
        .replace("cargo run --release -p binfmt -- ", "binfmt ")
        .replace("cargo run -p binfmt -- ", "binfmt ")
}

/// Runs `blocks`, the remote ones against `remote` (URL rewrites and the
/// S3 variables); returns a report of every failure.
fn run_blocks(blocks: &[Block], remote: Option<&Remote>) -> String {
    let mut failures = String::new();
    for block in blocks {
        let dir = scratch();
        let mut script = as_run(&block.script);
        let mut env = Vec::new();
        if let Some(remote) = remote {
            script = script
                .replace(EXAMPLE_HTTP, &remote.http)
                .replace(EXAMPLE_S3, &remote.s3);
            env.clone_from(&remote.env);
        }
        let script = block
            .setup
            .iter()
            .map(String::as_str)
            .chain([script.as_str()])
            .collect::<Vec<_>>()
            .join("\n");
        let output = bash(dir.path(), &script, &env);
        if !output.status.success() {
            let _ = writeln!(
                failures,
                "\n{} failed ({}):\n{}\nstderr:\n{}",
                block.place,
                output.status,
                script,
                String::from_utf8_lossy(&output.stderr)
            );
        }
    }
    failures
}

/// The test servers with the template's files on them.
struct Remote {
    http: String,
    s3: String,
    env: Vec<(&'static str, String)>,
}

/// The scratch files `blocks` name by URL (a TARIDX index with its
/// shards), as paths relative to the scratch directory.
fn named_by_url(blocks: &[Block]) -> Vec<String> {
    let mut names = Vec::new();
    for block in blocks {
        for prefix in [EXAMPLE_HTTP, EXAMPLE_S3] {
            for (at, _) in block.script.match_indices(prefix) {
                let rest = &block.script[at + prefix.len()..];
                let name = rest.split_whitespace().next().unwrap_or_default();
                // A URL the template has no file for is an output.
                if !template().join(name).exists() {
                    continue;
                }
                names.push(name.to_owned());
                let Some(fold) = name.strip_suffix(".taridx") else {
                    continue;
                };
                let (dir, stem) = fold.rsplit_once('/').unwrap_or(("", fold));
                let entries = std::fs::read_dir(template().join(dir))
                    .unwrap_or_else(|e| panic!("{dir}: {e}"));
                for entry in entries.filter_map(Result::ok) {
                    let file = entry.file_name().to_string_lossy().into_owned();
                    if file.starts_with(&format!("{stem}_")) && file.ends_with(".tar") {
                        let shard = if dir.is_empty() {
                            file
                        } else {
                            format!("{dir}/{file}")
                        };
                        names.push(shard);
                    }
                }
            }
        }
    }
    names.sort();
    names.dedup();
    names
}

/// Puts the files `blocks` name by URL on the test servers (nginx's
/// document root and the S3 bucket), under `doc-commands/`.
fn remote(blocks: &[Block]) -> Option<Remote> {
    let servers = binfmt_tests::interop::servers()?;
    for name in named_by_url(blocks) {
        let path = template().join(&name);
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        write(servers.www.join("doc-commands").join(&name), &bytes);
        servers.s3_put(&format!("doc-commands/{name}"), &bytes);
    }
    Some(Remote {
        http: format!("{}/doc-commands/", servers.nginx),
        s3: format!("s3://{}/doc-commands/", servers.s3_bucket),
        env: servers.s3_env(&servers.s3_secret_access_key),
    })
}

#[test]
fn every_command_in_the_readme_and_docs_runs() {
    let blocks: Vec<Block> = all_page_blocks()
        .into_iter()
        .filter(|block| block.skip.is_none() && !block.servers)
        .collect();
    assert!(blocks.len() >= 10, "only {} blocks found", blocks.len());
    let failures = run_blocks(&blocks, None);
    assert!(failures.is_empty(), "{failures}");
}

#[test]
fn every_help_example_runs() {
    let blocks: Vec<Block> = help_blocks()
        .into_iter()
        .filter(|block| !block.servers)
        .collect();
    assert!(
        blocks.len() >= 20,
        "only {} --help sections with examples",
        blocks.len()
    );
    let failures = run_blocks(&blocks, None);
    assert!(failures.is_empty(), "{failures}");
}

#[test]
fn every_command_reading_urls_runs_against_the_test_servers() {
    let blocks: Vec<Block> = all_page_blocks()
        .into_iter()
        .filter(|block| block.skip.is_none() && block.servers)
        .chain(help_blocks().into_iter().filter(|block| block.servers))
        .collect();
    assert!(!blocks.is_empty(), "no remote examples found");
    let Some(remote) = remote(&blocks) else {
        return;
    };
    let failures = run_blocks(&blocks, Some(&remote));
    assert!(failures.is_empty(), "{failures}");
}

#[test]
fn the_readme_shows_the_two_commands_and_tests_the_first() {
    let readme = page_blocks(&repo().join("README.md"));
    let tour = readme
        .iter()
        .find(|block| block.script == "cargo run --release -p binfmt -- tour fixtures/")
        .unwrap_or_else(|| panic!("README.md lost its first command"));
    assert!(tour.skip.is_none(), "the tour must run");
    let test = readme
        .iter()
        .find(|block| block.script == "bash .ci/test")
        .unwrap_or_else(|| panic!("README.md lost its test command"));
    assert!(
        test.skip.is_some(),
        "bash .ci/test would run this test again"
    );
}

#[test]
fn markers_and_console_prompts_are_read() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let page = dir.path().join("page.md");
    write(
        &page,
        "text\n\n<!-- doc-test: setup: touch x -->\n<!-- doc-test: servers -->\n```sh\nbinfmt list https://example.org/a.arcx\n```\n\n\
         <!-- doc-test: skip: installs -->\n```sh\npip install .\n```\n\n```console\n$ binfmt sniff x\nx\tunknown\n```\n\n```text\nbinfmt nothing\n```\n",
    );
    let blocks = page_blocks(&page);
    assert_eq!(blocks.len(), 3);
    assert!(blocks[0].servers && blocks[0].setup == ["touch x"] && blocks[0].skip.is_none());
    assert_eq!(blocks[1].skip.as_deref(), Some("installs"));
    assert_eq!(blocks[2].script, "binfmt sniff x");
    assert!(
        blocks[2].place.ends_with("page.md:14"),
        "{}",
        blocks[2].place
    );
}
