//! Cross-crate and interop tests of the binfmt workspace; the tests live in
//! `tests/tests/`, this library holds what they share.

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
