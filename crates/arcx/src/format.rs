//! The fixed structures of an ARCX archive, in both dialects.
//!
//! ```text
//! ┌──────────────────┬──────────────────────────────┬──────────────┬─────────────┐
//! │ header (80)      │ blocks: u32 size | payload … │ manifest …   │ footer (40) │
//! └──────────────────┴──────────────────────────────┴──────────────┴─────────────┘
//!
//! header (both dialects)             spec dialect    arcx-cli dialect (arcx 0.3.0)
//!  0  8 magic "ARCX0001"
//!  8  4 version major u32 (0)
//! 12  4 version minor u32 (1)
//! 16  8 manifest_offset u64
//! 24  8 data_offset u64 (80)
//! 32  8 index_offset u64             0               offset of the manifest copy
//! 40  8 flags u64 (0)
//! 48  8 creation timestamp u64       0               0 (the tool writes the time)
//! 56 24                               reserved, 0     creator version u64 (1),
//!                                                     reserved u64 (0), CRC32 of
//!                                                     bytes 0..72 as u64
//!
//! footer                              spec dialect    arcx-cli dialect
//!  0  8 magic "ARCXEND1"
//!  8  8 manifest_offset u64
//! 16  8                               manifest size   index_offset
//! 24  4 / 8                           total files u32 flags u64 (0)
//! 28  4                               CRC32 of manifest
//! 32  8                               reserved, 0     checksum u64 (0)
//! ```

use binfmt_core::fixed_layout;
use binfmt_core::layout::{FromBytes, Immutable, IntoBytes, KnownLayout, U32, U64, Unaligned};

/// The first 8 bytes of every archive.
pub const HEADER_MAGIC: [u8; 8] = *b"ARCX0001";

/// The size of the header.
pub const HEADER_SIZE: usize = 80;

/// The magic that opens the footer.
pub const FOOTER_MAGIC: [u8; 8] = *b"ARCXEND1";

/// The size of the footer.
pub const FOOTER_SIZE: usize = 40;

/// The magic at the start of the (decompressed) manifest.
pub const MANIFEST_MAGIC: [u8; 4] = *b"MFv2";

/// The format version both dialects write: 0.1.
pub const VERSION: (u32, u32) = (0, 1);

/// The header, with the dialect-specific tail as raw fields.
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct Header {
    /// `ARCX0001`.
    pub magic: [u8; 8],
    /// 0.
    pub version_major: U32,
    /// 1.
    pub version_minor: U32,
    /// Where the manifest starts (repeats the footer's).
    pub manifest_offset: U64,
    /// Where the blocks start: 80.
    pub data_offset: U64,
    /// arcx-cli: where the manifest's copy starts; spec: 0.
    pub index_offset: U64,
    /// 0.
    pub flags: U64,
    /// 0 when written here (archives do not depend on the clock).
    pub creation_timestamp: U64,
    /// arcx-cli: creator version; spec: reserved.
    pub tail_0: U64,
    /// arcx-cli: reserved; spec: reserved.
    pub tail_1: U64,
    /// arcx-cli: CRC32 of bytes 0..72, zero-extended; spec: reserved.
    pub tail_2: U64,
}
fixed_layout!(Header, HEADER_SIZE, "ARCX header");

/// The footer, with the dialect-specific fields as raw bytes.
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct Footer {
    /// `ARCXEND1`.
    pub magic: [u8; 8],
    /// Where the manifest starts.
    pub manifest_offset: U64,
    /// spec: manifest size; arcx-cli: index offset.
    pub field_16: U64,
    /// spec: total files (u32) then manifest CRC32 (u32); arcx-cli: flags u64.
    pub field_24: U32,
    /// spec: CRC32 of the manifest; arcx-cli: the high half of the flags.
    pub field_28: U32,
    /// spec: reserved; arcx-cli: checksum u64.
    pub field_32: U64,
}
fixed_layout!(Footer, FOOTER_SIZE, "ARCX footer");

/// The two layouts of the data after the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Dialect {
    /// The layout of the format's own specification (FORMAT.md v0.1).
    #[default]
    Spec,
    /// What the `arcx` 0.3.0 command-line tool writes.
    ArcxCli,
}

impl Dialect {
    /// The name used on the command line: `spec` or `arcx-cli`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Spec => "spec",
            Self::ArcxCli => "arcx-cli",
        }
    }
}

/// How a block's payload is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Codec {
    /// As is.
    Store,
    /// One zstd frame.
    Zstd,
}

impl Codec {
    /// The codec's name in the spec dialect's block table.
    pub fn name(self) -> &'static str {
        match self {
            Self::Store => "store",
            Self::Zstd => "zstd",
        }
    }
}

/// CRC32 (IEEE), the checksum of manifests and block payloads.
pub fn crc32(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}
