//! Cross-crate and interop tests of the binfmt workspace; the tests live in
//! `tests/tests/`, this library holds what they share.

// Test support: a panic here is a failed test, not a crash on user input.
#![allow(clippy::panic)]

use std::path::{Path, PathBuf};

/// The repository root.
pub fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new("."))
}

/// A file under `fixtures/`.
pub fn fixture(relative: &str) -> PathBuf {
    workspace_root().join("fixtures").join(relative)
}

/// How the interop tests find the reference tools.
pub mod interop {
    use std::path::PathBuf;

    /// Whether a missing reference tool fails the test (`BINFMT_INTEROP=require`,
    /// set by `.ci/test`) rather than skipping it with a note.
    fn required() -> bool {
        std::env::var("BINFMT_INTEROP").is_ok_and(|value| value == "require")
    }

    /// Reports a missing tool: a failure when interop is required, a note on
    /// stderr otherwise. Returns `None` so callers can `let Some(..) = .. else { return }`.
    fn missing<T>(what: &str) -> Option<T> {
        let message =
            format!("{what} not found: run `bash .ci/setup-interop` (or `bash .ci/test`)");
        assert!(!required(), "{message}");
        eprintln!("skipping interop test: {message}");
        None
    }

    /// The Python interpreter with the `kastore` package:
    /// `$BINFMT_PYTHON`, or the venv `.ci/setup-interop` makes.
    pub fn python() -> Option<PathBuf> {
        let path = std::env::var_os("BINFMT_PYTHON")
            .map(PathBuf::from)
            .unwrap_or_else(|| super::workspace_root().join("target/interop/venv/bin/python"));
        if path.exists() {
            Some(path)
        } else {
            missing("Python with kastore")
        }
    }

    /// The `arcx` 0.3.0 binary: `$BINFMT_ARCX`, or the one
    /// `.ci/setup-interop` installs.
    pub fn arcx() -> Option<PathBuf> {
        let path = std::env::var_os("BINFMT_ARCX")
            .map(PathBuf::from)
            .unwrap_or_else(|| super::workspace_root().join("target/interop/cargo/bin/arcx"));
        if path.exists() {
            Some(path)
        } else {
            missing("the arcx 0.3.0 tool")
        }
    }

    /// A script under `tests/python/`.
    pub fn python_script(name: &str) -> PathBuf {
        super::workspace_root().join("tests/python").join(name)
    }
}

/// `len` bytes from a fixed xorshift generator: the same data on every run
/// for a given `seed`, with no structure a format could mistake for its own.
pub fn pseudo_random_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 32) as u8
        })
        .collect()
}

/// Running a command-line program in tests.
pub mod cli {
    use std::path::Path;
    use std::process::{Command, Output, Stdio};

    /// Runs `program` with `args`, capturing stdout and stderr.
    pub fn run(program: &str, args: &[&str]) -> Output {
        Command::new(program)
            .args(args)
            .output()
            .unwrap_or_else(|error| panic!("{program}: {error}"))
    }

    /// Runs `program` with `args`, feeding `stdin` to it.
    pub fn run_with_stdin(program: &str, args: &[&str], stdin: &[u8]) -> Output {
        use std::io::Write;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|error| panic!("{program}: {error}"));
        if let Some(mut input) = child.stdin.take() {
            input
                .write_all(stdin)
                .unwrap_or_else(|error| panic!("writing stdin: {error}"));
        }
        child
            .wait_with_output()
            .unwrap_or_else(|error| panic!("{program}: {error}"))
    }

    /// Output bytes as text (invalid UTF-8 replaced).
    pub fn text(bytes: &[u8]) -> String {
        String::from_utf8_lossy(bytes).into_owned()
    }

    /// A path as `&str`, for argument lists.
    pub fn arg(path: &Path) -> &str {
        path.to_str()
            .unwrap_or_else(|| panic!("{} is not UTF-8", path.display()))
    }
}

/// Writes `files` (relative path, bytes) under `dir`, creating directories,
/// and returns them as a map.
pub fn write_tree(
    dir: &Path,
    files: impl IntoIterator<Item = (String, Vec<u8>)>,
) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut written = std::collections::BTreeMap::new();
    for (path, bytes) in files {
        let full = dir.join(&path);
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent)
                .unwrap_or_else(|error| panic!("{}: {error}", parent.display()));
        }
        std::fs::write(&full, &bytes).unwrap_or_else(|error| panic!("{}: {error}", full.display()));
        written.insert(path, bytes);
    }
    written
}
