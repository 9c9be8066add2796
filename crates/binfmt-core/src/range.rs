//! Validation of offsets, lengths, alignments and counts read from a file.
//!
//! Every number a reader takes from the input passes through one of these
//! before it is used to index, slice or allocate: offset + length is checked
//! arithmetic, a range must lie inside the file, and a count of items must fit
//! in the bytes that remain, so a claimed count of 2^60 records in a 1 KiB file
//! is refused before any allocation.

use std::ops::Range;

use crate::error::{Error, Result, What};

/// `offset + len`, or [`Error::Overflow`] when it does not fit in 64 bits.
pub fn end_of(offset: u64, len: u64, what: impl Into<What>) -> Result<u64> {
    offset.checked_add(len).ok_or_else(|| Error::Overflow {
        what: what.into(),
        offset,
        len,
    })
}

/// Checks that `offset .. offset + len` lies inside a file of `file_size`
/// bytes and returns it as a `usize` range.
pub fn check_range(
    offset: u64,
    len: u64,
    file_size: u64,
    what: impl Into<What>,
) -> Result<Range<usize>> {
    let what = what.into();
    let end = end_of(offset, len, what.clone())?;
    if end > file_size {
        return Err(Error::OutOfBounds {
            what,
            offset,
            len,
            file_size,
        });
    }
    // Both ends are at most `file_size`, which describes bytes this process
    // can address, so only a caller passing a size beyond `usize` reaches this.
    match (usize::try_from(offset), usize::try_from(end)) {
        (Ok(start), Ok(end)) => Ok(start..end),
        _ => Err(Error::OutOfBounds {
            what,
            offset,
            len,
            file_size: usize::MAX as u64,
        }),
    }
}

/// The `len` bytes at `offset` of `bytes`, after [`check_range`].
pub fn slice_at(bytes: &[u8], offset: u64, len: u64, what: impl Into<What>) -> Result<&[u8]> {
    let what = what.into();
    let file_size = bytes.len() as u64;
    let range = check_range(offset, len, file_size, what.clone())?;
    bytes.get(range).ok_or(Error::OutOfBounds {
        what,
        offset,
        len,
        file_size,
    })
}

/// Checks that `offset` is a multiple of `align` (a power of two).
pub fn check_aligned(offset: u64, align: u64, what: impl Into<What>) -> Result<()> {
    debug_assert!(align.is_power_of_two());
    if offset & (align - 1) == 0 {
        Ok(())
    } else {
        Err(Error::Misaligned {
            what: what.into(),
            offset,
            align,
        })
    }
}

/// Checks that `count` items of at least `item_size` bytes each fit in
/// `available` bytes and returns the count as a `usize`, safe to allocate by.
pub fn check_count(
    count: u64,
    item_size: u64,
    available: u64,
    what: impl Into<What>,
) -> Result<usize> {
    let fits = count
        .checked_mul(item_size.max(1))
        .is_some_and(|needed| needed <= available);
    match usize::try_from(count) {
        Ok(count) if fits => Ok(count),
        _ => Err(Error::CountTooLarge {
            what: what.into(),
            count,
            item_size,
            available,
        }),
    }
}

/// Converts a length from the file to `usize`, for hosts where `usize` is
/// narrower than 64 bits.
pub fn to_usize(value: u64, what: impl Into<What>) -> Result<usize> {
    usize::try_from(value).map_err(|_| {
        Error::corrupt(
            what,
            format!("{value} does not fit in this host's address space"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn end_of_detects_overflow() {
        assert_eq!(end_of(10, 20, "x").unwrap(), 30);
        assert!(matches!(
            end_of(u64::MAX - 1, 2, "array"),
            Err(Error::Overflow { offset, len: 2, .. }) if offset == u64::MAX - 1
        ));
    }

    #[test]
    fn range_inside_the_file() {
        assert_eq!(check_range(0, 0, 0, "empty").unwrap(), 0..0);
        assert_eq!(check_range(4, 6, 10, "tail").unwrap(), 4..10);
        assert_eq!(check_range(10, 0, 10, "at end").unwrap(), 10..10);
    }

    #[test]
    fn range_past_the_end_is_out_of_bounds() {
        let error = check_range(8, 3, 10, "block 2").unwrap_err();
        assert!(matches!(
            error,
            Error::OutOfBounds {
                offset: 8,
                len: 3,
                file_size: 10,
                ..
            }
        ));
        assert_eq!(
            error.to_string(),
            "block 2 out of bounds: offset 8 + length 3 is past the end of the 10-byte file"
        );
        assert!(matches!(
            check_range(11, 0, 10, "start past end"),
            Err(Error::OutOfBounds { .. })
        ));
    }

    #[test]
    fn overflowing_range_is_overflow_not_out_of_bounds() {
        assert!(matches!(
            check_range(u64::MAX, 1, 10, "row"),
            Err(Error::Overflow { .. })
        ));
    }

    #[test]
    fn slices_are_checked() {
        let bytes = b"abcdef";
        assert_eq!(slice_at(bytes, 2, 3, "mid").unwrap(), b"cde");
        assert!(slice_at(bytes, 5, 2, "tail").is_err());
    }

    #[test]
    fn alignment() {
        check_aligned(0, 8, "array").unwrap();
        check_aligned(64, 8, "array").unwrap();
        assert!(matches!(
            check_aligned(65, 8, "array"),
            Err(Error::Misaligned {
                offset: 65,
                align: 8,
                ..
            })
        ));
    }

    #[test]
    fn count_bounded_by_remaining_bytes() {
        assert_eq!(check_count(32, 32, 1024, "rows").unwrap(), 32);
        assert!(matches!(
            check_count(33, 32, 1024, "rows"),
            Err(Error::CountTooLarge {
                count: 33,
                item_size: 32,
                available: 1024,
                ..
            })
        ));
    }

    #[test]
    fn huge_count_is_rejected_without_overflow() {
        assert!(matches!(
            check_count(1 << 60, 64, 1024, "items"),
            Err(Error::CountTooLarge { .. })
        ));
        assert!(matches!(
            check_count(u64::MAX, u64::MAX, u64::MAX, "items"),
            Err(Error::CountTooLarge { .. })
        ));
    }

    #[test]
    fn zero_sized_items_still_bounded() {
        // An item of "0 bytes" is counted as 1 byte so a count is never free.
        assert!(check_count(2000, 0, 1024, "entries").is_err());
        assert_eq!(check_count(1024, 0, 1024, "entries").unwrap(), 1024);
    }
}
