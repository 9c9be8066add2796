//! The manifest's records: the archive's settings, what an entry is, one
//! chunk, one block, a path as its stored directory and name, and the spec
//! dialect's rule for where a chunk starts in its file. Every other part of
//! the manifest (the model, its decoder and encoder, the table walker)
//! builds on these; they depend on nothing else of the crate but the codec.

use std::fmt;

use binfmt_core::Error;
use serde::{Deserialize, Serialize};

use crate::format::Codec;

/// Archive-level settings, as the spec's MessagePack config section holds them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Config {
    /// The chunk size of large files.
    pub chunk_size: u64,
    /// Files below this size share blocks of up to this size.
    pub small_file_threshold: u64,
    /// `"zstd"` or `"store"`.
    pub codec_default: String,
    /// The zstd level blocks were compressed with.
    pub zstd_level: u64,
    /// `"balanced"` or `"fast"`.
    pub compression_mode: String,
}

impl Config {
    /// The settings a packer records.
    pub fn new(chunk_size: u64, small_file_threshold: u64, zstd_level: u64) -> Self {
        Self {
            chunk_size,
            small_file_threshold,
            codec_default: "zstd".into(),
            zstd_level,
            compression_mode: "balanced".into(),
        }
    }
}

/// What an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum FileKind {
    /// A regular file: its bytes are the content.
    #[default]
    File,
    /// A directory (only empty ones are stored); no bytes.
    Directory,
    /// A symbolic link: its bytes are the link's target.
    Symlink,
}

impl FileKind {
    /// The kind byte.
    pub fn byte(self) -> u8 {
        match self {
            Self::File => 0,
            Self::Directory => 1,
            Self::Symlink => 2,
        }
    }

    /// The kind with this byte.
    pub fn from_byte(byte: u8) -> Option<Self> {
        match byte {
            0 => Some(Self::File),
            1 => Some(Self::Directory),
            2 => Some(Self::Symlink),
            _ => None,
        }
    }

    /// `file`, `directory` or `symlink`.
    pub fn name(self) -> &'static str {
        match self {
            Self::File => "file",
            Self::Directory => "directory",
            Self::Symlink => "symlink",
        }
    }
}

/// An entry's metadata: what it is, its permission bits and its
/// modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Attributes {
    /// What the entry is.
    pub kind: FileKind,
    /// Permission bits (`0o7777` at most; extraction never restores setuid,
    /// setgid or sticky bits).
    pub mode: u32,
    /// Modification time, nanoseconds since the Unix epoch.
    pub mtime_ns: i64,
}

impl Default for Attributes {
    /// A regular file, 0o644, time 0: what archives without metadata hold.
    fn default() -> Self {
        Self {
            kind: FileKind::File,
            mode: 0o644,
            mtime_ns: 0,
        }
    }
}

impl Attributes {
    /// Attributes of a `kind` entry with `mode` (masked to `0o7777`) and
    /// `mtime_ns`.
    pub fn new(kind: FileKind, mode: u32, mtime_ns: i64) -> Self {
        Self {
            kind,
            mode: mode & 0o7777,
            mtime_ns,
        }
    }
}

/// One contiguous piece of a file, inside one block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChunkRecord {
    /// The file it belongs to.
    pub file: u32,
    /// The block that holds it.
    pub block: u32,
    /// Where it starts in the decompressed block.
    pub offset: u32,
    /// Its size.
    pub size: u32,
}

/// One block of the data region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BlockRecord {
    /// How the payload is stored.
    pub codec: Codec,
    /// Where the block's 4-byte size prefix starts.
    pub offset: u64,
    /// Bytes after the size prefix.
    pub stored_size: u32,
    /// Bytes after decompression.
    pub size: u32,
    /// CRC32 of the stored bytes.
    pub checksum: u32,
}

impl BlockRecord {
    /// Where the block ends (after its stored bytes).
    pub fn end(&self) -> u64 {
        self.offset + 4 + u64::from(self.stored_size)
    }
}

/// A path as its stored directory and name, shown joined by `/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathRef<'a> {
    dir: &'a str,
    name: &'a str,
}

impl<'a> PathRef<'a> {
    /// The path `dir`/`name` (`name` alone when `dir` is empty).
    pub(crate) fn new(dir: &'a str, name: &'a str) -> Self {
        Self { dir, name }
    }

    /// The directory part (empty for a top-level entry).
    pub fn dir(&self) -> &'a str {
        self.dir
    }

    /// The last component.
    pub fn name(&self) -> &'a str {
        self.name
    }

    /// Whether this is `path`, without building the joined string.
    pub fn is(&self, path: &str) -> bool {
        if self.dir.is_empty() {
            return path == self.name;
        }
        path.len() == self.dir.len() + 1 + self.name.len()
            && path.starts_with(self.dir)
            && path.as_bytes().get(self.dir.len()) == Some(&b'/')
            && path.ends_with(self.name)
    }

    /// The hash the path index uses: the name's hash seeded with the
    /// directory's, so no joined string is built.
    pub(crate) fn hash(&self) -> u64 {
        split_hash(self.dir, self.name)
    }
}

fn split_hash(dir: &str, name: &str) -> u64 {
    let seed = if dir.is_empty() {
        0
    } else {
        xxhash_rust::xxh3::xxh3_64(dir.as_bytes())
    };
    xxhash_rust::xxh3::xxh3_64_with_seed(name.as_bytes(), seed)
}

impl fmt::Display for PathRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.dir.is_empty() {
            f.write_str(self.dir)?;
            f.write_str("/")?;
        }
        f.write_str(self.name)
    }
}

/// The hash of a path given as one string, the same as [`PathRef`]'s (split
/// at the last `/`, as paths are stored: names hold no `/`).
pub(crate) fn path_hash(path: &str) -> u64 {
    let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
    split_hash(dir, name)
}

/// The spec dialect's rule for chunk `id` of file `path`: its stored
/// position in the file is where the file's earlier chunks end.
pub(crate) fn check_file_offset(
    id: u32,
    stored: u64,
    position: u64,
    path: PathRef<'_>,
) -> Result<(), Error> {
    if stored == position {
        return Ok(());
    }
    Err(Error::corrupt(
        format!("chunk {id}"),
        format!(
            "starts at {stored} in file {path} but the file's earlier chunks end at {position}"
        ),
    ))
}
