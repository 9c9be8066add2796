//! Everything reading or writing a PAR4 file can fail with. Chunk errors
//! name the chunk by its offset (and the parent's, for child references);
//! map errors name the bucket chunk and the entry's index in it.
//!
//! Failures every format shares (a file too short, a bad magic, an
//! unsupported version, a range past the end, an I/O error on a path) are
//! [`binfmt_core::Error`] values, carried by [`ParError::Core`].
//!
//! This is the error of the raw chunk tree and of the typed layer. The
//! drop-in API's [`ParcodeError`](crate::ParcodeError) wraps it; nothing
//! here names that type.

use std::io;

/// `Result` with [`ParError`] (the crate root's `Result` is the drop-in
/// API's, with [`ParcodeError`](crate::ParcodeError)).
pub type Result<T, E = ParError> = std::result::Result<T, E>;

/// A PAR4 failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ParError {
    /// The root chunk does not end right before the global header.
    #[error(
        "root chunk at {offset} with length {length} does not end where the global header starts ({limit})"
    )]
    RootOutOfBounds {
        /// The root offset the header states.
        offset: u64,
        /// The root length the header states.
        length: u64,
        /// Where the global header starts.
        limit: u64,
    },

    /// A child reference points outside the file or not wholly before its parent.
    #[error(
        "chunk at {parent}: child {index} at {offset} with length {length} does not end before its parent starts"
    )]
    ChildNotBeforeParent {
        /// The parent chunk.
        parent: u64,
        /// The child's index in the parent's table.
        index: u32,
        /// The child's stated offset.
        offset: u64,
        /// The child's stated length.
        length: u64,
    },

    /// Two children of one chunk share bytes (or are the same chunk).
    #[error("chunk at {parent}: children {first} and {second} overlap at offset {at}")]
    ChildrenOverlap {
        /// The parent chunk.
        parent: u64,
        /// The child that starts first.
        first: u32,
        /// The child that starts inside it.
        second: u32,
        /// Where the second child starts.
        at: u64,
    },

    /// A walk over a subtree reached bytes it had already walked: the
    /// chunks form a graph with shared nodes, not a tree.
    #[error(
        "chunk at {offset} with length {length} shares bytes with the chunk at {other} already read in this walk (PAR4 files are trees)"
    )]
    ChunkReachedTwice {
        /// The chunk reached.
        offset: u64,
        /// Its length.
        length: u64,
        /// The chunk walked earlier that it overlaps.
        other: u64,
    },

    /// A chunk too short for its own trailer.
    #[error("chunk at {offset} has length {length}, too short for its {needed}-byte trailer")]
    ChunkTooShort {
        /// The chunk.
        offset: u64,
        /// Its length.
        length: u64,
        /// The bytes its trailer needs.
        needed: u64,
    },

    /// More children than `Limits::max_children` allows.
    #[error("chunk at {offset}: {count} children exceed the limit of {limit}")]
    ChildLimit {
        /// The chunk.
        offset: u64,
        /// Its child count.
        count: u32,
        /// The limit.
        limit: u32,
    },

    /// A child count larger than the chunk can hold.
    #[error("chunk at {offset}: {count} children need {needed} bytes but the chunk has {length}")]
    TooManyChildren {
        /// The chunk.
        offset: u64,
        /// Its child count.
        count: u32,
        /// The bytes the child table and trailer need.
        needed: u64,
        /// The chunk's length.
        length: u64,
    },

    /// Bits 4-7 of a meta byte are set.
    #[error("chunk at {offset}: reserved bits set in meta byte {meta:#04x}")]
    ReservedBits {
        /// The chunk.
        offset: u64,
        /// Its meta byte.
        meta: u8,
    },

    /// A compression id other than 0 (none) or 1 (LZ4).
    #[error("chunk at {offset}: unknown compression id {id}")]
    UnknownCompression {
        /// The chunk.
        offset: u64,
        /// The id in its meta byte.
        id: u8,
    },

    /// An LZ4 payload that does not decompress to its stated size, or
    /// states a size its block cannot hold.
    #[error("chunk at {offset}: LZ4 payload: {why}")]
    Lz4 {
        /// The chunk.
        offset: u64,
        /// What is wrong.
        why: String,
    },

    /// Chunks nested deeper than the limit.
    #[error("chunk at {offset} is nested deeper than {limit} levels")]
    TooDeep {
        /// The chunk.
        offset: u64,
        /// The limit.
        limit: usize,
    },

    /// A payload that does not hold what the typed layer expects.
    #[error("chunk at {offset}: {what}: {why}")]
    Payload {
        /// The chunk.
        offset: u64,
        /// What the payload should hold.
        what: &'static str,
        /// What is wrong.
        why: String,
    },

    /// A map entry whose offset does not follow the previous one's.
    #[error(
        "map bucket at {bucket}: entry {entry} starts at {start}, not after the previous entry's start ({previous})"
    )]
    EntryOutOfOrder {
        /// The bucket chunk.
        bucket: u64,
        /// The entry's index in the bucket.
        entry: u32,
        /// Its start in the bucket's data.
        start: u64,
        /// The previous entry's start (0 for the first entry, which must start at 0).
        previous: u64,
    },

    /// A map entry that does not decode to exactly its bytes.
    #[error("map bucket at {bucket}: entry {entry} spans {length} bytes but decodes from {used}")]
    EntryLength {
        /// The bucket chunk.
        bucket: u64,
        /// The entry's index in the bucket.
        entry: u32,
        /// The bytes from its offset to the next entry's (or the end).
        length: u64,
        /// The bytes its key and value decode from.
        used: u64,
    },

    /// A map bucket that says it holds no entry but has bytes after its
    /// header: bytes no entry accounts for (found from outside: they were
    /// dropped silently).
    #[error(
        "map bucket at {bucket}: 0 entries, but {bytes} bytes follow its header that no entry accounts for"
    )]
    BucketUnused {
        /// The bucket chunk.
        bucket: u64,
        /// The bytes after the 8-byte header.
        bytes: u64,
    },

    /// A map entry whose stored hash is not the hash of its key.
    #[error(
        "map bucket at {bucket}: entry {entry} stores hash {stored:#018x} but its key hashes to {computed:#018x}"
    )]
    HashMismatch {
        /// The bucket chunk.
        bucket: u64,
        /// The entry's index in the bucket.
        entry: u32,
        /// The hash in the bucket's table.
        stored: u64,
        /// The hash of the decoded key.
        computed: u64,
    },

    /// A map entry in a bucket other than `hash % buckets`.
    #[error(
        "map bucket at {bucket} (bucket {index} of {buckets}): entry {entry} has hash {hash:#018x}, which belongs in bucket {expected}"
    )]
    WrongBucket {
        /// The bucket chunk.
        bucket: u64,
        /// The bucket's index in the container.
        index: u32,
        /// The container's bucket count.
        buckets: u32,
        /// The entry's index in the bucket.
        entry: u32,
        /// The entry's hash.
        hash: u64,
        /// The bucket it belongs in.
        expected: u64,
    },

    /// A key stored twice in one map.
    #[error("map at {offset}: entry {entry} repeats a key stored earlier in the map")]
    DuplicateKey {
        /// The chunk holding the repeat (a bucket, or the inline map).
        offset: u64,
        /// The repeat's index in that chunk.
        entry: u64,
    },

    /// A field of a struct or item that does not decode.
    #[error("field {field} at payload byte {at}: {why}")]
    Field {
        /// The field (or "shard count").
        field: &'static str,
        /// Where in its payload it starts.
        at: u64,
        /// What is wrong.
        why: String,
    },

    /// A struct chunk with fewer children than chunkable fields.
    #[error("missing child chunk for the chunkable field '{field}'")]
    MissingChild {
        /// The field.
        field: &'static str,
    },

    /// A payload producer of the drop-in writer API (a `SerializationJob`)
    /// failed; the box holds its error, a
    /// [`ParcodeError`](crate::ParcodeError), which converting back into
    /// one returns unchanged.
    #[error(transparent)]
    Job(Box<dyn std::error::Error + Send + Sync>),

    /// An index past the end of a collection.
    #[error("index {index} is out of range for {len} items")]
    IndexOutOfRange {
        /// The index asked for.
        index: u64,
        /// The collection's length.
        len: u64,
    },

    /// A value bincode could not encode, or a graph that is not a tree.
    #[error("encoding {what}: {why}")]
    Encode {
        /// What was being encoded.
        what: &'static str,
        /// What went wrong.
        why: String,
    },

    /// A streamed map value whose reader did not produce its declared size.
    #[error("map value {key:?}: declared {declared} bytes, its reader produced {produced}")]
    ValueLength {
        /// The entry's key.
        key: String,
        /// The size given when the entry was added.
        declared: u64,
        /// What the reader produced (counting stops one past the declared size).
        produced: u64,
    },

    /// Reading a streamed map value from the reader its writer was given.
    #[error("reading map value {key:?}: {source}")]
    ValueRead {
        /// The entry's key.
        key: String,
        /// The reader's failure.
        source: io::Error,
    },

    /// An I/O failure with no path to name: writing to a caller's `Write`,
    /// or reading a caller's `Read`.
    #[error("{during}: {source}")]
    Io {
        /// What was being done.
        during: &'static str,
        /// The failure.
        source: io::Error,
    },

    /// A failure every format shares: truncation, bad magic, unsupported
    /// version, a range past the end, I/O on a path.
    #[error(transparent)]
    Core(#[from] binfmt_core::Error),
}

impl ParError {
    /// The `ParError` inside an `io::Error` produced by this crate's readers
    /// (a [`crate::ValueReader`] reports failures as `io::Error::other`), or
    /// the `io::Error` itself wrapped as [`ParError::Io`].
    pub fn from_io(error: io::Error) -> Self {
        binfmt_core::carry::take(error).unwrap_or_else(|source| Self::Io {
            during: "reading a PAR4 value",
            source,
        })
    }

    /// This error as an `io::Error` that [`ParError::from_io`] recovers
    /// ([`binfmt_core::carry`]); an I/O failure is its own `io::Error`.
    pub fn into_io(self) -> io::Error {
        match self {
            Self::Io { source, .. } => source,
            other => binfmt_core::carry::into_io(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_round_trip_recovers_the_typed_error() {
        let error = ParError::TooDeep {
            offset: 9,
            limit: 3,
        };
        let back = ParError::from_io(error.into_io());
        assert!(matches!(
            back,
            ParError::TooDeep {
                offset: 9,
                limit: 3
            }
        ));
        let plain = ParError::from_io(io::Error::from(io::ErrorKind::UnexpectedEof));
        assert!(
            matches!(plain, ParError::Io { source, .. } if source.kind() == io::ErrorKind::UnexpectedEof)
        );
    }
}
