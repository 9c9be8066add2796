//! What can be wrong with a tar shard at some offset ([`TarProblem`]), and
//! the bound on the metadata records the scanner reads. A leaf: the scanner
//! (`tar.rs`) reports these, the error type (`error.rs`) carries them.

use std::fmt;

/// The longest GNU long name or pax record set this scanner reads: 1 MiB,
/// far beyond any real path, small enough that a hostile size cannot
/// exhaust memory.
pub const MAX_METADATA_SIZE: u64 = 1 << 20;

/// What is wrong with a shard at some offset.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TarProblem {
    /// Fewer than 512 bytes remain where a header block should be.
    TruncatedHeader {
        /// The bytes that remain.
        available: u64,
    },
    /// The header's checksum field does not match its bytes.
    BadChecksum,
    /// The size field is neither octal nor positive base-256.
    BadSize {
        /// The field's bytes.
        field: Vec<u8>,
    },
    /// The payload runs past the end of the shard.
    PayloadPastEnd {
        /// The payload size.
        size: u64,
        /// The shard's size.
        shard_len: u64,
    },
    /// A GNU long name or pax record set larger than [`MAX_METADATA_SIZE`].
    MetadataTooLarge {
        /// The record's size.
        size: u64,
    },
    /// A pax extended header that does not parse.
    BadPax {
        /// Why.
        why: String,
    },
    /// A sparse file (typeflag `S`, or pax `GNU.sparse.*` records): its
    /// payload is a sparse map and the data blocks, not the file's bytes.
    Sparse,
    /// An entry whose extent tar tools read differently: a symlink, device
    /// or FIFO header with a non-zero size, or a regular file whose name
    /// ends in `/` with a non-zero size ([`extent`](crate::tar::extent)).
    AmbiguousExtent {
        /// The header's typeflag.
        typeflag: u8,
        /// The size it gives.
        size: u64,
    },
    /// A typeflag GNU tar extracts as a regular file (one it does not
    /// know) or refuses (`M`): neither indexed nor left out ([`extent`](crate::tar::extent)).
    UnknownType {
        /// The typeflag.
        typeflag: u8,
    },
}

impl fmt::Display for TarProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TruncatedHeader { available } => {
                write!(f, "truncated header block ({available} of 512 bytes)")
            }
            Self::BadChecksum => f.write_str("header checksum mismatch"),
            Self::BadSize { field } => {
                write!(f, "bad size field {:?}", field.escape_ascii().to_string())
            }
            Self::PayloadPastEnd { size, shard_len } => {
                write!(
                    f,
                    "payload of {size} bytes runs past the end of the {shard_len}-byte shard"
                )
            }
            Self::MetadataTooLarge { size } => write!(
                f,
                "{size}-byte long-name or pax record exceeds the {MAX_METADATA_SIZE}-byte limit"
            ),
            Self::BadPax { why } => write!(f, "bad pax header: {why}"),
            Self::Sparse => f.write_str(
                "a sparse file: its payload holds a sparse map, not the file's bytes, so TARIDX cannot index it (write the shard without --sparse)",
            ),
            Self::AmbiguousExtent { typeflag, size } => write!(
                f,
                "a typeflag {:?} entry with a {size}-byte size field: GNU tar's listing skips that many bytes as data, its extraction and Python's tarfile read the next header there, so which members follow is ambiguous",
                char::from(*typeflag).escape_default().to_string()
            ),
            Self::UnknownType { typeflag } => write!(
                f,
                "an entry of typeflag {:?}, which GNU tar and Python's tarfile extract as a regular file (or GNU tar refuses): TARIDX indexes regular files of typeflag '0', NUL or '7' only, and leaves no member out",
                char::from(*typeflag).escape_default().to_string()
            ),
        }
    }
}
