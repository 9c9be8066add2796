//! Fixed-layout little-endian records, read and written without hand-written
//! shifting.
//!
//! A record is a `#[repr(C)]` struct of zerocopy's unaligned little-endian
//! integers ([`U16`], [`U32`], [`U64`], ...) and byte arrays, so it has
//! alignment 1, no padding, and the same bytes on every host. Readers view a
//! record (or a run of them) in place inside a mapped file; writers append
//! `record.as_bytes()`.
//!
//! ```
//! use binfmt_core::layout::{FromBytes, Immutable, IntoBytes, KnownLayout, Record, Unaligned, U16, U64};
//!
//! /// `id u16 | offset u64`, packed: the u64 sits at byte 2.
//! #[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
//! #[repr(C)]
//! struct Entry {
//!     id: U16,
//!     offset: U64,
//! }
//! binfmt_core::fixed_layout!(Entry, 10, "entry");
//!
//! let bytes = [7, 0, 0x10, 0, 0, 0, 0, 0, 0, 0];
//! let entry = Entry::ref_at(&bytes, 0)?;
//! assert_eq!((entry.id.get(), entry.offset.get()), (7, 16));
//! assert_eq!(entry.as_bytes(), &bytes);
//! # Ok::<(), binfmt_core::Error>(())
//! ```

pub use zerocopy::little_endian::{F32, F64, I16, I32, I64, U16, U32, U64};
pub use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::error::{Error, Result};
use crate::range::check_count;

/// A fixed-size, alignment-1 on-disk structure. Implement it with
/// [`fixed_layout!`](crate::fixed_layout), which also checks the size at
/// compile time.
pub trait Record: FromBytes + IntoBytes + KnownLayout + Immutable + Unaligned + Sized {
    /// What the record is called in error messages.
    const WHAT: &'static str;
    /// The record's size in bytes.
    const SIZE: usize = size_of::<Self>();

    /// Views the record at `offset` of `bytes` in place.
    fn ref_at(bytes: &[u8], offset: u64) -> Result<&Self> {
        let tail = tail_from(bytes, offset, Self::WHAT)?;
        Self::ref_from_prefix(tail)
            .map(|(record, _)| record)
            .map_err(|_| truncated(Self::WHAT, offset, Self::SIZE as u64, tail.len()))
    }

    /// Copies the record at `offset` of `bytes` out.
    fn read_at(bytes: &[u8], offset: u64) -> Result<Self> {
        let tail = tail_from(bytes, offset, Self::WHAT)?;
        Self::read_from_prefix(tail)
            .map(|(record, _)| record)
            .map_err(|_| truncated(Self::WHAT, offset, Self::SIZE as u64, tail.len()))
    }

    /// Views `count` consecutive records starting at `offset` in place. The
    /// count is checked against the bytes present before anything else.
    fn slice_at(bytes: &[u8], offset: u64, count: u64) -> Result<&[Self]> {
        let tail = tail_from(bytes, offset, Self::WHAT)?;
        let count = check_count(count, Self::SIZE as u64, tail.len() as u64, Self::WHAT)?;
        <[Self]>::ref_from_prefix_with_elems(tail, count)
            .map(|(records, _)| records)
            .map_err(|_| truncated(Self::WHAT, offset, (count * Self::SIZE) as u64, tail.len()))
    }

    /// Views every record from `offset` to the end of `bytes`, which must be a
    /// whole number of records.
    fn slice_to_end(bytes: &[u8], offset: u64) -> Result<&[Self]> {
        let tail = tail_from(bytes, offset, Self::WHAT)?;
        let remainder = tail.len() % Self::SIZE;
        if remainder != 0 {
            return Err(Error::corrupt(
                Self::WHAT,
                format!(
                    "the {} bytes from offset {offset} to the end are not a multiple of the {}-byte record ({remainder} left over)",
                    tail.len(),
                    Self::SIZE
                ),
            ));
        }
        Self::slice_at(bytes, offset, (tail.len() / Self::SIZE) as u64)
    }
}

/// Implements [`Record`] for a type and asserts at compile time that it is
/// exactly `size` bytes with alignment 1.
#[macro_export]
macro_rules! fixed_layout {
    ($ty:ty, $size:expr, $what:expr) => {
        const _: () = ::core::assert!(::core::mem::size_of::<$ty>() == $size);
        const _: () = ::core::assert!(::core::mem::align_of::<$ty>() == 1);
        impl $crate::layout::Record for $ty {
            const WHAT: &'static str = $what;
        }
    };
}

fn tail_from<'a>(bytes: &'a [u8], offset: u64, what: &'static str) -> Result<&'a [u8]> {
    usize::try_from(offset)
        .ok()
        .and_then(|start| bytes.get(start..))
        .ok_or(Error::OutOfBounds {
            what: what.into(),
            offset,
            len: 0,
            file_size: bytes.len() as u64,
        })
}

fn truncated(what: &'static str, offset: u64, needed: u64, available: usize) -> Error {
    Error::Truncated {
        what: what.into(),
        offset,
        needed,
        available: available as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The TARIDX row shape: an 8-byte field at byte 2, 32 bytes in all.
    #[derive(Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, PartialEq)]
    #[repr(C)]
    struct Row {
        fid: U16,
        offset: U64,
        size: U64,
        extid: U16,
        crashid: U32,
        keyhash: U64,
    }
    fixed_layout!(Row, 32, "row");

    fn row(n: u64) -> Row {
        Row {
            fid: U16::new(n as u16),
            offset: U64::new(n * 512),
            size: U64::new(n + 1),
            extid: U16::new(2),
            crashid: U32::new(0),
            keyhash: U64::new(0x0123_4567_89ab_cdef ^ n),
        }
    }

    #[test]
    fn record_bytes_are_little_endian_and_packed() {
        let bytes = row(1).as_bytes().to_vec();
        assert_eq!(bytes.len(), 32);
        assert_eq!(&bytes[0..2], &[1, 0]);
        assert_eq!(&bytes[2..10], &512u64.to_le_bytes());
        assert_eq!(
            &bytes[24..32],
            &(0x0123_4567_89ab_cdef_u64 ^ 1).to_le_bytes()
        );
    }

    #[test]
    fn views_at_unaligned_offsets() {
        let mut bytes = vec![0xee; 3];
        bytes.extend_from_slice(row(5).as_bytes());
        assert_eq!(Row::ref_at(&bytes, 3).unwrap(), &row(5));
        assert_eq!(Row::read_at(&bytes, 3).unwrap(), row(5));
    }

    #[test]
    fn short_input_is_truncated() {
        let bytes = row(1).as_bytes()[..31].to_vec();
        assert!(matches!(
            Row::ref_at(&bytes, 0),
            Err(Error::Truncated {
                needed: 32,
                available: 31,
                ..
            })
        ));
        assert!(matches!(
            Row::read_at(&bytes, 40),
            Err(Error::OutOfBounds { offset: 40, .. })
        ));
    }

    #[test]
    fn slices_of_records() {
        let bytes: Vec<u8> = (0..4).flat_map(|n| row(n).as_bytes().to_vec()).collect();
        let rows = Row::slice_at(&bytes, 32, 3).unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[2], row(3));
        assert_eq!(Row::slice_to_end(&bytes, 0).unwrap().len(), 4);
    }

    #[test]
    fn claimed_count_beyond_the_bytes_is_refused() {
        let bytes = vec![0; 1024];
        assert!(matches!(
            Row::slice_at(&bytes, 0, 1 << 60),
            Err(Error::CountTooLarge { .. })
        ));
        assert!(matches!(
            Row::slice_at(&bytes, 0, 33),
            Err(Error::CountTooLarge { count: 33, .. })
        ));
    }

    #[test]
    fn ragged_tail_is_corrupt() {
        let bytes = vec![0; 65];
        assert!(matches!(
            Row::slice_to_end(&bytes, 0),
            Err(Error::Corrupt { .. })
        ));
        assert_eq!(Row::slice_to_end(&bytes, 1).unwrap().len(), 2);
    }
}
