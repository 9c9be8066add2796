//! ARCX archives: zstd-compressed blocks, a manifest, and a fixed-size
//! footer that makes opening constant-time; read in both dialects (the
//! format's specification and what the `arcx` 0.3.0 tool writes), written
//! in either. `spec/arcx.md` has both layouts.
//!
//! - [`Archive`] reads through any [`binfmt_core::Source`]: a file by
//!   offset, a map, bytes in memory; opening reads the header, footer and
//!   manifest only, and checks what every reference means;
//! - [`Archive::open_one`] finds one path without decoding the rest of the
//!   manifest (every row's layout still checked; that file's meaning too);
//! - [`Listing`] hands every file on one at a time without building the
//!   manifest's tables (what `list` and `info` need, in less memory);
//! - [`FileReader`] is one file as `std::io::Read`, decompressed block by
//!   block, its SHA-256 checked at the end;
//! - [`Packer`] writes to any `Write + Seek`; [`pack_dir`] packs a tree with
//!   its modes, times, symlinks and empty directories;
//! - [`merge`] and [`Merger`] join part archives into one, copying their
//!   compressed blocks as stored (each checked on the way);
//! - [`Archive::extract`] restores them, safely.
//!
//! ```
//! use std::io::Read;
//!
//! let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("hello.txt"), b"hello")?;
//! let out = dir.path().join("out.arcx");
//! binfmt_arcx::pack_dir(dir.path(), &out, binfmt_arcx::PackOptions::default(), |_| {})?;
//!
//! let archive = binfmt_arcx::Archive::open(&out)?;   // header, footer, manifest
//! let mut hello = Vec::new();
//! archive.reader("hello.txt")?.read_to_end(&mut hello)?;  // only that file's block
//! assert_eq!(hello, b"hello");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod block;
mod check;
mod error;
mod extract;
pub mod format;
mod limits;
mod listing;
mod lookup;
pub mod manifest;
mod merge;
mod reader;
mod stored;
mod tables;
mod walk;
mod writer;

pub use error::{ArcxError, Result};
pub use extract::{ExtractOptions, ExtractSummary};
pub use format::{Codec, Dialect, FOOTER_MAGIC, FOOTER_SIZE, HEADER_MAGIC, HEADER_SIZE};
pub use limits::{Limits, OpenOptions};
pub use listing::{ListSummary, Listed, Listing};
pub use manifest::{Attributes, FileEntry, FileKind, Manifest, PathRef};
pub use merge::{MergeOptions, MergePart, Merger, merge};
pub use reader::{Archive, FileReader, OneFile, VerifySummary};
pub use walk::{PackProgress, pack_dir, pack_dir_into};
pub use writer::{DEFAULT_BLOCK_SIZE, PackOptions, PackSummary, Packer, Skipped};
