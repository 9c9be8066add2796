//! Everything reading, packing or extracting an archive can fail with.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// `Result` with [`ArcxError`].
pub type Result<T, E = ArcxError> = std::result::Result<T, E>;

/// An ARCX failure. Block and file errors name the block or the file;
/// failures every format shares (bad magic, unsupported version, truncated,
/// out of bounds, I/O) are [`ArcxError::Core`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArcxError {
    /// The manifest's checksum disagrees with its bytes.
    #[error("manifest checksum mismatch: footer says {expected:08x}, bytes give {found:08x}")]
    ManifestChecksum {
        /// The footer's CRC32.
        expected: u32,
        /// The manifest's CRC32.
        found: u32,
    },

    /// The arcx-cli header's CRC disagrees with its bytes.
    #[error("header checksum mismatch: stored {expected:08x}, bytes give {found:08x}")]
    HeaderChecksum {
        /// The stored CRC32.
        expected: u64,
        /// The CRC32 of header bytes 0..72.
        found: u64,
    },

    /// A header field that repeats a footer field disagrees with it.
    #[error("header {field} is {header} but the footer says {footer}")]
    HeaderFooterMismatch {
        /// The field.
        field: &'static str,
        /// The header's value.
        header: u64,
        /// The footer's value.
        footer: u64,
    },

    /// The manifest does not parse or its references are inconsistent.
    #[error("corrupt manifest: {0}")]
    Manifest(binfmt_core::Error),

    /// Two chunks of one block cover the same bytes.
    #[error("corrupt manifest: chunks {first} and {second} overlap in block {block}")]
    ChunkOverlap {
        /// The block.
        block: u32,
        /// The chunk that starts first.
        first: u32,
        /// The chunk that starts inside it.
        second: u32,
    },

    /// A file lists a chunk that belongs to another file (or lists it twice).
    #[error("corrupt manifest: file {file:?} lists chunk {chunk}, which belongs to file {owner}")]
    ChunkReused {
        /// The chunk.
        chunk: u32,
        /// The file listing it.
        file: String,
        /// The file the chunk names.
        owner: u32,
    },

    /// A file goes back to a shared block that later files already left.
    #[error(
        "corrupt manifest: file {file:?} is in shared block {block}, before a block an earlier file used; files must visit shared blocks in order"
    )]
    SharedBlockRevisited {
        /// The file.
        file: String,
        /// The block it goes back to.
        block: u32,
    },

    /// A block's stored bytes disagree with its checksum.
    #[error(
        "block {block}: checksum mismatch: manifest says {expected:08x}, bytes give {found:08x}"
    )]
    BlockChecksum {
        /// The block.
        block: u32,
        /// The manifest's CRC32.
        expected: u32,
        /// The stored bytes' CRC32.
        found: u32,
    },

    /// A block that does not decompress to its declared size.
    #[error("block {block}: {why}")]
    BlockData {
        /// The block.
        block: u32,
        /// What is wrong.
        why: String,
    },

    /// A file whose bytes disagree with its SHA-256.
    #[error("file {path:?}: SHA-256 mismatch")]
    FileChecksum {
        /// The file.
        path: String,
    },

    /// No file with this path.
    #[error("no file {path:?} in the archive")]
    NotFound {
        /// The path asked for.
        path: String,
    },

    /// A path that the archive cannot hold, or a second file at one path.
    #[error("cannot pack {path:?}: {why}")]
    BadInputPath {
        /// The path.
        path: String,
        /// Why it is refused.
        why: &'static str,
    },

    /// More than the format can describe (a block over 4 GiB, 2^32 files).
    #[error("cannot pack: {0}")]
    TooLarge(&'static str),

    /// A part of a merge that cannot be merged: which part, and why.
    #[error("{part}: {source}")]
    Part {
        /// The part.
        part: MergePart,
        /// Why it is refused.
        source: Box<ArcxError>,
    },

    /// A path that two parts of a merge both hold.
    #[error("cannot merge: {path:?} is in {first} and in {second}")]
    DuplicatePath {
        /// The path.
        path: String,
        /// The earlier part holding it.
        first: MergePart,
        /// The later part holding it.
        second: MergePart,
    },

    /// A part of another dialect, or packed with other settings, than the
    /// archive a merge writes (inside [`ArcxError::Part`]).
    #[error("its {setting} is {found}, the merged archive's is {expected}")]
    MergeMismatch {
        /// The setting: `dialect`, `chunk size`, `zstd level`, ...
        setting: &'static str,
        /// The merged archive's.
        expected: String,
        /// The part's.
        found: String,
    },

    /// A merger used after a part failed while its blocks were copied: the
    /// output holds some of them, so nothing more can be merged into it.
    #[error("the merge stopped at {part}: {why}")]
    MergeStopped {
        /// The part that failed.
        part: MergePart,
        /// Its error.
        why: String,
    },

    /// A failure every format shares, or I/O.
    #[error(transparent)]
    Core(#[from] binfmt_core::Error),
}

impl ArcxError {
    /// The ARCX error inside an I/O error from an entry reader (a
    /// [`crate::FileReader`] reports its failures that way), or the I/O
    /// error itself, about `path`, as [`ArcxError::Core`].
    pub fn from_io(error: io::Error, path: &std::path::Path) -> Self {
        binfmt_core::carry::take(error)
            .unwrap_or_else(|error| ArcxError::Core(binfmt_core::Error::io(path, error)))
    }

    /// This error as an I/O error, for `Read` implementations
    /// ([`binfmt_core::carry`]).
    pub(crate) fn into_io(self) -> io::Error {
        binfmt_core::carry::into_io(self)
    }
}

/// One part of a merge, as errors name it: its position among the parts
/// (from 0) and its source's name (its path or URL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergePart {
    /// Its position among the parts, from 0.
    pub index: usize,
    /// Its source's name.
    pub name: PathBuf,
}

impl fmt::Display for MergePart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "part {} ({})", self.index, self.name.display())
    }
}
