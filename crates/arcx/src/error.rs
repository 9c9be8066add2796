//! Everything reading, packing or extracting an archive can fail with.

/// `Result` with [`ArcxError`].
pub type Result<T, E = ArcxError> = std::result::Result<T, E>;

/// An ARCX failure. Block and file errors name the block or the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArcxError {
    /// The archive is shorter than a header and a footer.
    #[error(
        "truncated archive: {len} bytes, an archive has at least a 80-byte header and a 40-byte footer"
    )]
    TooShort { len: u64 },

    /// The header does not start with `ARCX0001`.
    #[error("not an ARCX archive: header magic {found:?}")]
    BadHeaderMagic { found: String },

    /// The footer does not start with `ARCXEND1`.
    #[error("bad footer magic {found:?}: the archive is truncated or not ARCX")]
    BadFooterMagic { found: String },

    /// A major version other than 0.
    #[error("unsupported ARCX version {major}.{minor}: this reader reads major version 0")]
    UnsupportedVersion { major: u32, minor: u32 },

    /// The manifest's checksum disagrees with its bytes.
    #[error("manifest checksum mismatch: footer says {expected:08x}, bytes give {found:08x}")]
    ManifestChecksum { expected: u32, found: u32 },

    /// The arcx-cli header's CRC disagrees with its bytes.
    #[error("header checksum mismatch: stored {expected:08x}, bytes give {found:08x}")]
    HeaderChecksum { expected: u64, found: u64 },

    /// The manifest is larger than the configured limit.
    #[error("manifest of {size} bytes exceeds the {limit}-byte limit")]
    ManifestTooLarge { size: u64, limit: u64 },

    /// The manifest does not parse.
    #[error("corrupt manifest: {0}")]
    Manifest(binfmt_core::Error),

    /// A block's stored bytes disagree with its checksum.
    #[error(
        "block {block}: checksum mismatch: manifest says {expected:08x}, bytes give {found:08x}"
    )]
    BlockChecksum {
        block: u64,
        expected: u32,
        found: u32,
    },

    /// A block that does not decompress to its declared size.
    #[error("block {block}: {why}")]
    BlockData { block: u64, why: String },

    /// A file whose bytes disagree with its SHA-256.
    #[error("file {path:?}: SHA-256 mismatch")]
    FileChecksum { path: String },

    /// No file with this path.
    #[error("no file {path:?} in the archive")]
    NotFound { path: String },

    /// A path that the archive cannot hold.
    #[error("cannot pack {path:?}: {why}")]
    BadInputPath { path: String, why: &'static str },

    /// An I/O or lower-level failure.
    #[error(transparent)]
    Core(#[from] binfmt_core::Error),
}
