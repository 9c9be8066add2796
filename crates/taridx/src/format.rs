//! The fixed structures of a `.taridx` file.
//!
//! ```text
//! header (64 bytes)                        row (32 bytes, packed)
//!  0  8  magic "TARIDX\0\0"                 0  2  fid       shard id
//!  8  2  major u16 (1)                      2  8  offset    of the member's tar header
//! 10  2  minor u16 (0)                     10  8  size      payload bytes
//! 12  2  rec_size u16 (32)                 18  2  extid     index into the extension block
//! 14  2  hdr_size u16 (64)                 20  4  crashid   0, or 1.. into the crash block
//! 16  8  n_stems u64                       24  8  keyhash   xxh64(stem, seed 0)
//! 24  8  n_rows u64
//! 32  4  n_ext u32
//! 36  4  n_crash u32
//! 40  8  off_crash u64
//! 48  8  off_arr u64
//! 56  1  flags u8 (bit 0: rows contiguous by (keyhash, crashid);
//!                   bit 1: keys by WebDataset's rule, minor 1)
//! 57  7  reserved
//! ```

use binfmt_core::fixed_layout;
use binfmt_core::layout::{FromBytes, Immutable, IntoBytes, KnownLayout, U16, U32, U64, Unaligned};

/// The 8-byte magic field at the start of every index.
pub const MAGIC: [u8; 8] = *b"TARIDX\0\0";

/// The size of the header.
pub const HEADER_SIZE: u16 = 64;

/// The size of one row.
pub const ROW_SIZE: u16 = 32;

/// The major version this crate reads and writes.
pub const VERSION_MAJOR: u16 = 1;

/// The minor version of indexes keyed by glzn's rule: what glzn writes.
pub const VERSION_MINOR: u16 = 0;

/// The minor version of indexes keyed by WebDataset's rule
/// ([`FLAG_WEBDATASET_KEYS`]): readers of minor 0 would take the keys for
/// glzn stems.
pub const VERSION_MINOR_WEBDATASET_KEYS: u16 = 1;

/// Header flag: rows form one contiguous run per `(keyhash, crashid)`.
pub const FLAG_CONTIGUOUS: u8 = 0x01;

/// Header flag: keys follow WebDataset's rule (the path up to the first dot
/// of the basename) instead of glzn's (the basename up to its first dot).
pub const FLAG_WEBDATASET_KEYS: u8 = 0x02;

/// The index header.
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct Header {
    /// `TARIDX\0\0`.
    pub magic: [u8; 8],
    /// Major version (1).
    pub major: U16,
    /// Minor version (0, or 1 with WebDataset keys).
    pub minor: U16,
    /// Row size (32).
    pub rec_size: U16,
    /// Header size (64).
    pub hdr_size: U16,
    /// Distinct `(keyhash, crashid)` keys.
    pub n_stems: U64,
    /// Rows.
    pub n_rows: U64,
    /// Extensions in the extension block.
    pub n_ext: U32,
    /// Stems in the crash-stem block.
    pub n_crash: U32,
    /// Where the crash-stem block starts.
    pub off_crash: U64,
    /// Where the rows start.
    pub off_arr: U64,
    /// [`FLAG_CONTIGUOUS`], [`FLAG_WEBDATASET_KEYS`].
    pub flags: u8,
    /// Zero; ignored on read.
    pub reserved: [u8; 7],
}
fixed_layout!(Header, HEADER_SIZE as usize, "taridx header");

/// One tar member: where its payload is and which sample it belongs to.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct Row {
    /// Shard id: the shard's position in the fold.
    pub fid: U16,
    /// Offset of the member's own 512-byte tar header.
    pub offset: U64,
    /// Payload size; the payload starts at `offset + 512`.
    pub size: U64,
    /// Index into the extension block.
    pub extid: U16,
    /// 0 for the canonical key of its hash, else 1.. into the crash block.
    pub crashid: U32,
    /// xxh64 of the key's UTF-8 bytes, seed 0.
    pub keyhash: U64,
}
fixed_layout!(Row, ROW_SIZE as usize, "taridx row");

impl Row {
    /// The sample key rows are grouped by.
    pub fn key(&self) -> (u64, u32) {
        (self.keyhash.get(), self.crashid.get())
    }

    /// Where the payload starts in the shard.
    pub fn payload_offset(&self) -> u64 {
        self.offset.get().saturating_add(crate::tar::BLOCK)
    }
}
