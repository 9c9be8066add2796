//! Fallible reservations for tables an input describes.
//!
//! A count read from a file is first checked against the bytes present
//! ([`ByteReader::count`](crate::ByteReader::count)); what remains can still be
//! more memory than the process may take (a limited address space, a
//! container). Reserving through these functions turns that into
//! [`Error::OutOfMemory`] naming the table instead of an abort.

use crate::error::{Error, What};

/// An empty vector with room for `count` items, or [`Error::OutOfMemory`].
///
/// # Examples
///
/// ```
/// let rows: Vec<u64> = binfmt_core::alloc::vec_with_capacity(1000, "rows").unwrap();
/// assert!(rows.capacity() >= 1000);
/// assert!(binfmt_core::alloc::vec_with_capacity::<u64>(usize::MAX / 2, "rows").is_err());
/// ```
pub fn vec_with_capacity<T>(count: usize, what: impl Into<What>) -> Result<Vec<T>, Error> {
    let mut items = Vec::new();
    reserve(&mut items, count, what)?;
    Ok(items)
}

/// Room for `more` items in `items`, or [`Error::OutOfMemory`].
pub fn reserve<T>(items: &mut Vec<T>, more: usize, what: impl Into<What>) -> Result<(), Error> {
    items.try_reserve(more).map_err(|_| Error::OutOfMemory {
        what: what.into(),
        bytes: (more as u64).saturating_mul(size_of::<T>() as u64),
    })
}
