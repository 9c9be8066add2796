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
