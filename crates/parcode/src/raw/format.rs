//! The fixed structures of a PAR4 file.
//!
//! ```text
//! chunk (at offset O, length L; children always lie before O)
//! ┌──────────────────────────────┬─────────────────────────────┬──────────────┬──────────┐
//! │ payload (maybe compressed)   │ child refs, 16 bytes each   │ child count  │ MetaByte │
//! │                              │ (only when bit 0 is set)    │ u32 (bit 0)  │ 1 byte   │
//! └──────────────────────────────┴─────────────────────────────┴──────────────┴──────────┘
//! MetaByte: bit 0 has children, bits 1-3 compression id (0 none, 1 LZ4), bits 4-7 zero
//! child ref: offset u64 | length u64
//!
//! global header (the last 26 bytes of the file)
//!  0  4  magic "PAR4"
//!  4  2  version u16 (4)
//!  6  8  root offset u64
//! 14  8  root length u64
//! 22  4  checksum u32 (0, as the reference writes)
//! ```

use binfmt_core::fixed_layout;
use binfmt_core::layout::{FromBytes, Immutable, IntoBytes, KnownLayout, U16, U32, U64, Unaligned};

/// The magic at the start of the global header.
pub const MAGIC: [u8; 4] = *b"PAR4";

/// [`MAGIC`] under the reference's name.
pub const MAGIC_BYTES: [u8; 4] = MAGIC;

/// The size of the global header at the end of the file.
pub const GLOBAL_HEADER_SIZE: usize = 26;

/// The format version this crate reads and writes.
pub const VERSION: u16 = 4;

/// The global header, at the end of the file.
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct GlobalHeader {
    /// [`MAGIC`].
    pub magic: [u8; 4],
    /// [`VERSION`].
    pub version: U16,
    /// Where the root chunk starts.
    pub root_offset: U64,
    /// The root chunk's length, trailer included.
    pub root_length: U64,
    /// 0, as the reference writes (readers ignore it).
    pub checksum: U32,
}
fixed_layout!(GlobalHeader, GLOBAL_HEADER_SIZE, "PAR4 global header");

/// Where a child chunk is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct ChildRef {
    /// Where the child chunk starts.
    pub offset: U64,
    /// The child chunk's length, trailer included.
    pub length: U64,
}
fixed_layout!(ChildRef, 16, "PAR4 child reference");

/// The size of a [`ChildRef`].
pub const CHILD_REF_SIZE: u64 = 16;

/// The last byte of every chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetaByte(u8);

impl MetaByte {
    const HAS_CHILDREN: u8 = 0b0000_0001;
    const COMPRESSION: u8 = 0b0000_1110;
    const RESERVED: u8 = 0b1111_0000;

    /// A meta byte for a chunk with or without children and a compression id (0..=7).
    pub fn new(is_chunkable: bool, compression_id: u8) -> Self {
        Self(u8::from(is_chunkable) | ((compression_id & 0x07) << 1))
    }

    /// The meta byte `byte`, as read.
    pub fn from_byte(byte: u8) -> Self {
        Self(byte)
    }

    /// The byte.
    pub fn as_u8(self) -> u8 {
        self.0
    }

    /// Whether a child table and count precede the meta byte (bit 0; the
    /// reference calls a chunk with children "chunkable").
    pub fn is_chunkable(self) -> bool {
        self.0 & Self::HAS_CHILDREN != 0
    }

    /// The compression id, bits 1-3.
    pub fn compression_method(self) -> u8 {
        (self.0 & Self::COMPRESSION) >> 1
    }

    /// Bits 4-7, which must be zero.
    pub fn reserved_bits(self) -> u8 {
        self.0 & Self::RESERVED
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_byte_bits() {
        let meta = MetaByte::new(true, 1);
        assert_eq!(meta.as_u8(), 0b0000_0011);
        assert!(meta.is_chunkable());
        assert_eq!(meta.compression_method(), 1);
        assert_eq!(MetaByte::from_byte(0xf0).reserved_bits(), 0xf0);
        assert_eq!(MetaByte::new(false, 7).as_u8(), 0b0000_1110);
    }
}
