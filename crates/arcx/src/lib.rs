//! ARCX archives: zstd-compressed blocks, a manifest, and a fixed-size
//! footer that makes opening constant-time; read in both dialects (the
//! format's specification and what the `arcx` 0.3.0 tool writes), written
//! in either. `spec/arcx.md` has both layouts.
//!
//! ```
//! let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("hello.txt"), b"hello")?;
//! let out = dir.path().join("out.arcx");
//! binfmt_arcx::pack_dir(dir.path(), &out, binfmt_arcx::PackOptions::default(), |_| {})?;
//!
//! let archive = binfmt_arcx::Archive::open(&out)?;          // footer, then manifest
//! assert_eq!(archive.read("hello.txt")?, b"hello");   // only that file's blocks
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
pub mod format;
pub mod manifest;
mod reader;
mod writer;

pub use error::{ArcxError, Result};
pub use format::{Codec, Dialect, FOOTER_MAGIC, FOOTER_SIZE, HEADER_MAGIC, HEADER_SIZE};
pub use reader::{Archive, Limits};
pub use writer::{
    InputFile, PackOptions, PackSummary, Packer, Skipped, Walk, pack_dir, walk, walked_size,
};
