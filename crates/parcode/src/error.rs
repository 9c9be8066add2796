//! Everything reading or writing a PAR4 file can fail with. Chunk errors
//! name the chunk by its offset (and the parent's, for child references).

/// `Result` with [`ParError`].
pub type Result<T, E = ParError> = std::result::Result<T, E>;

/// A PAR4 failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ParError {
    /// The file is shorter than the 26-byte global header.
    #[error("truncated file: {len} bytes, a PAR4 file ends with a 26-byte header")]
    TooShort { len: u64 },

    /// The global header does not start with `PAR4`.
    #[error("not a PAR4 file: magic {found:02x?} in the last 26 bytes")]
    BadMagic { found: [u8; 4] },

    /// A version other than 4.
    #[error("unsupported PAR4 version {found}: this reader reads version 4")]
    UnsupportedVersion { found: u16 },

    /// The root chunk does not end right before the global header.
    #[error(
        "root chunk at {offset} with length {length} does not end where the global header starts ({limit})"
    )]
    RootOutOfBounds {
        offset: u64,
        length: u64,
        limit: u64,
    },

    /// A child reference points outside the file or not wholly before its parent.
    #[error(
        "chunk at {parent}: child {index} at {offset} with length {length} does not end before its parent starts"
    )]
    ChildNotBeforeParent {
        parent: u64,
        index: u32,
        offset: u64,
        length: u64,
    },

    /// A chunk too short for its own trailer.
    #[error("chunk at {offset} has length {length}, too short for its {needed}-byte trailer")]
    ChunkTooShort {
        offset: u64,
        length: u64,
        needed: u64,
    },

    /// More children than `Limits::max_children` allows.
    #[error("chunk at {offset}: {count} children exceed the limit of {limit}")]
    ChildLimit { offset: u64, count: u32, limit: u32 },

    /// A child count larger than the chunk can hold.
    #[error("chunk at {offset}: {count} children need {needed} bytes but the chunk has {length}")]
    TooManyChildren {
        offset: u64,
        count: u32,
        needed: u64,
        length: u64,
    },

    /// Bits 4-7 of a meta byte are set.
    #[error("chunk at {offset}: reserved bits set in meta byte {meta:#04x}")]
    ReservedBits { offset: u64, meta: u8 },

    /// A compression id other than 0 (none) or 1 (LZ4).
    #[error("chunk at {offset}: unknown compression id {id}")]
    UnknownCompression { offset: u64, id: u8 },

    /// An LZ4 payload that does not decompress to its stated size.
    #[error("chunk at {offset}: LZ4 payload: {why}")]
    Lz4 { offset: u64, why: String },

    /// Chunks nested deeper than the limit.
    #[error("chunk at {offset} is nested deeper than {limit} levels")]
    TooDeep { offset: u64, limit: usize },

    /// A payload that does not hold what the typed layer expects.
    #[error("chunk at {offset}: {what}: {why}")]
    Payload {
        offset: u64,
        what: &'static str,
        why: String,
    },

    /// An index past the end of a collection.
    #[error("index {index} is out of range for {len} items")]
    IndexOutOfRange { index: u64, len: u64 },

    /// A value bincode could not encode.
    #[error("encoding {what}: {why}")]
    Encode { what: &'static str, why: String },

    /// An I/O or lower-level failure.
    #[error(transparent)]
    Core(#[from] binfmt_core::Error),
}
