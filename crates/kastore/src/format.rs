//! The fixed structures of a kastore file.
//!
//! ```text
//! header (64 bytes)
//!   0  8  signature  89 4B 41 53 0D 0A 1A 0A  ("\211KAS\r\n\032\n")
//!   8  2  version major u16 (1)
//!  10  2  version minor u16 (0)
//!  12  4  num_items u32
//!  16  8  file_size u64
//!  24 40  reserved, zero
//!
//! item descriptor (64 bytes, num_items of them from offset 64)
//!   0  1  type u8 (0..=9, see ItemType)
//!   1  7  reserved, zero
//!   8  8  key_start u64
//!  16  8  key_len u64      bytes
//!  24  8  array_start u64  8-byte aligned
//!  32  8  array_len u64    elements, not bytes
//!  40 24  reserved, zero
//! ```

use binfmt_core::fixed_layout;
use binfmt_core::layout::{FromBytes, Immutable, IntoBytes, KnownLayout, U16, U32, U64, Unaligned};

/// The 8 bytes every kastore file starts with: `"\x89KAS\r\n\x1a\n"`.
pub const SIGNATURE: [u8; 8] = [0x89, b'K', b'A', b'S', b'\r', b'\n', 0x1a, b'\n'];

/// The size of the header, signature included.
pub const HEADER_SIZE: usize = 64;

/// The size of one item descriptor.
pub const DESCRIPTOR_SIZE: usize = 64;

/// Arrays start on multiples of this many bytes.
pub const ARRAY_ALIGN: u64 = 8;

/// The major version this crate reads and writes.
pub const VERSION_MAJOR: u16 = 1;

/// The minor version this crate writes.
pub const VERSION_MINOR: u16 = 0;

/// The file header.
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct Header {
    /// [`SIGNATURE`].
    pub signature: [u8; 8],
    /// 1.
    pub version_major: U16,
    /// 0.
    pub version_minor: U16,
    /// The number of items.
    pub num_items: U32,
    /// The size of the whole store in bytes.
    pub file_size: U64,
    /// Zero.
    pub reserved: [u8; 40],
}
fixed_layout!(Header, HEADER_SIZE, "kastore header");

/// Where one key and its array sit in the file.
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct ItemDescriptor {
    /// The element type's id (0..=9).
    pub item_type: u8,
    /// Zero.
    pub reserved: [u8; 7],
    /// Where the key starts.
    pub key_start: U64,
    /// The key's length in bytes.
    pub key_len: U64,
    /// Where the array starts (a multiple of 8).
    pub array_start: U64,
    /// The array's length in elements.
    pub array_len: U64,
    /// Zero.
    pub reserved_tail: [u8; 24],
}
fixed_layout!(ItemDescriptor, DESCRIPTOR_SIZE, "kastore item descriptor");

/// The element type of an array: the type ids of the kastore library.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
#[non_exhaustive]
pub enum ItemType {
    /// `int8`, id 0.
    Int8 = 0,
    /// `uint8`, id 1.
    Uint8 = 1,
    /// `int16`, id 2.
    Int16 = 2,
    /// `uint16`, id 3.
    Uint16 = 3,
    /// `int32`, id 4.
    Int32 = 4,
    /// `uint32`, id 5.
    Uint32 = 5,
    /// `int64`, id 6.
    Int64 = 6,
    /// `uint64`, id 7.
    Uint64 = 7,
    /// `float32`, id 8.
    Float32 = 8,
    /// `float64`, id 9.
    Float64 = 9,
}

impl ItemType {
    /// Every type, in id order.
    pub const ALL: [ItemType; 10] = [
        Self::Int8,
        Self::Uint8,
        Self::Int16,
        Self::Uint16,
        Self::Int32,
        Self::Uint32,
        Self::Int64,
        Self::Uint64,
        Self::Float32,
        Self::Float64,
    ];

    /// The type with kastore id `id`, if there is one.
    pub fn from_id(id: u8) -> Option<Self> {
        Self::ALL.get(usize::from(id)).copied()
    }

    /// The kastore type id.
    pub fn id(self) -> u8 {
        self as u8
    }

    /// The size of one element in bytes.
    pub fn size(self) -> u64 {
        match self {
            Self::Int8 | Self::Uint8 => 1,
            Self::Int16 | Self::Uint16 => 2,
            Self::Int32 | Self::Uint32 | Self::Float32 => 4,
            Self::Int64 | Self::Uint64 | Self::Float64 => 8,
        }
    }

    /// The numpy dtype name, as the Python package and its CLI print it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Int8 => "int8",
            Self::Uint8 => "uint8",
            Self::Int16 => "int16",
            Self::Uint16 => "uint16",
            Self::Int32 => "int32",
            Self::Uint32 => "uint32",
            Self::Int64 => "int64",
            Self::Uint64 => "uint64",
            Self::Float32 => "float32",
            Self::Float64 => "float64",
        }
    }

    /// The type called `name` (a numpy dtype name such as `"uint8"`).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }
}

impl std::fmt::Display for ItemType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Where the array after `offset` starts: the next multiple of 8.
pub(crate) fn align_up(offset: u64) -> Option<u64> {
    offset.checked_next_multiple_of(ARRAY_ALIGN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_ids_sizes_and_names() {
        for (id, item_type) in ItemType::ALL.into_iter().enumerate() {
            assert_eq!(usize::from(item_type.id()), id);
            assert_eq!(ItemType::from_id(id as u8), Some(item_type));
            assert_eq!(ItemType::from_name(item_type.name()), Some(item_type));
        }
        assert_eq!(ItemType::from_id(10), None);
        let sizes: Vec<u64> = ItemType::ALL.iter().map(|t| t.size()).collect();
        assert_eq!(sizes, [1, 1, 2, 2, 4, 4, 8, 8, 4, 8]);
    }

    #[test]
    fn alignment() {
        assert_eq!(align_up(128), Some(128));
        assert_eq!(align_up(129), Some(136));
        assert_eq!(align_up(u64::MAX), None);
    }
}
