//! The checked reads readers use on any [`Source`] ([`SourceExt`]): a range
//! borrowed or copied, a [`Region`] held whole, a fixed record, and a
//! [`RangeReader`] streaming a range through `std::io::Read` (the one
//! range reader, [`crate::range_reader`]).

use std::borrow::Cow;
use std::ops::Deref;

use super::positional::{MappedRange, Source};
use crate::error::{Error, IoResultExt, Result, What};
use crate::layout::Record;
use crate::range::{check_range, to_usize};
use crate::range_reader::{RangeReader, SourceRange};

/// A range a reader holds whole ([`SourceExt::region_at`]): borrowed from a
/// source in memory, mapped from a file, or read into a buffer.
#[derive(Debug)]
pub enum Region<'a> {
    /// Borrowed from a source whose bytes sit in memory.
    Borrowed(&'a [u8]),
    /// A read-only map of the range.
    Mapped(MappedRange),
    /// Read into a buffer.
    Owned(Vec<u8>),
}

impl Deref for Region<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Self::Borrowed(bytes) => bytes,
            Self::Mapped(map) => map,
            Self::Owned(bytes) => bytes,
        }
    }
}

/// Checked reads from any [`Source`].
pub trait SourceExt: Source {
    /// The `len` bytes at `offset`: borrowed when the source lends them
    /// ([`Source::borrow_at`]), read into a buffer otherwise. The range is
    /// checked against the source's size before anything is allocated.
    fn bytes_at(&self, offset: u64, len: u64, what: impl Into<What>) -> Result<Cow<'_, [u8]>> {
        let what = what.into();
        let range = check_range(offset, len, self.len(), what.clone())?;
        if let Some(bytes) = self.borrow_at(offset, len) {
            return Ok(Cow::Borrowed(bytes));
        }
        Ok(Cow::Owned(read_fresh(self, offset, range.len(), what)?))
    }

    /// The `len` bytes at `offset`, for a reader that holds a large range
    /// whole (an ARCX manifest): borrowed when the source is in memory,
    /// mapped when it maps ranges ([`Source::map_at`]: no copy into fresh
    /// memory), read into a buffer otherwise. The range is checked against
    /// the source's size first.
    fn region_at(&self, offset: u64, len: u64, what: impl Into<What>) -> Result<Region<'_>> {
        let what = what.into();
        let range = check_range(offset, len, self.len(), what.clone())?;
        if let Some(bytes) = self.in_memory() {
            return Ok(Region::Borrowed(bytes.get(range).unwrap_or_default()));
        }
        if let Some(map) = self.map_at(offset, len) {
            return Ok(Region::Mapped(map));
        }
        Ok(match self.bytes_at(offset, len, what)? {
            Cow::Borrowed(bytes) => Region::Borrowed(bytes),
            Cow::Owned(bytes) => Region::Owned(bytes),
        })
    }

    /// Fills `buf` from `offset`, after checking the range.
    fn fill_at(&self, offset: u64, buf: &mut [u8], what: impl Into<What>) -> Result<()> {
        let range = check_range(offset, buf.len() as u64, self.len(), what)?;
        if let Some(bytes) = self.in_memory() {
            buf.copy_from_slice(bytes.get(range).unwrap_or_default());
            return Ok(());
        }
        self.read_exact_at(offset, buf).with_path(self.name())
    }

    /// `N` bytes at `offset`.
    fn array_at<const N: usize>(&self, offset: u64, what: impl Into<What>) -> Result<[u8; N]> {
        let mut out = [0; N];
        self.fill_at(offset, &mut out, what)?;
        Ok(out)
    }

    /// The fixed-layout record at `offset`, copied out.
    fn record_at<R: Record>(&self, offset: u64) -> Result<R> {
        let bytes = self.bytes_at(offset, R::SIZE as u64, R::WHAT)?;
        R::read_at(&bytes, 0).map_err(|error| relocate(error, offset))
    }

    /// A reader of the `len` bytes at `offset`, checked against the source's
    /// size; it reads straight into the caller's buffer, so memory does not
    /// grow with `len`.
    fn reader(
        &self,
        offset: u64,
        len: u64,
        what: impl Into<What>,
    ) -> Result<RangeReader<'_, Self>> {
        SourceRange::new(self, offset, len, what)
    }
}

impl<S: Source + ?Sized> SourceExt for S {}

/// Errors of a record read from a buffer that starts at `offset` carry the
/// file offset instead of 0.
fn relocate(error: Error, offset: u64) -> Error {
    match error {
        Error::Truncated {
            what,
            offset: at,
            needed,
            available,
        } => Error::Truncated {
            what,
            offset: at + offset,
            needed,
            available,
        },
        other => other,
    }
}

/// The `len` bytes at `offset` of `source` as an owned buffer, checked first
/// (a convenience for sources that never borrow).
pub fn read_vec_at<S: Source + ?Sized>(
    source: &S,
    offset: u64,
    len: u64,
    what: impl Into<What>,
) -> Result<Vec<u8>> {
    let what = what.into();
    check_range(offset, len, source.len(), what.clone())?;
    let len = to_usize(len, what.clone())?;
    if let Some(bytes) = source.borrow_at(offset, len as u64) {
        return Ok(bytes.to_vec());
    }
    read_fresh(source, offset, len, what)
}

/// The most bytes made ready (zeroed) ahead of a read: a larger region is
/// read in steps of this size.
pub(super) const READ_STEP: usize = 16 << 20;

/// The `len` bytes at `offset` of `source` in a fresh buffer, for a region
/// already checked against the source's size. That size may be a claim
/// (a server's `Content-Range` total): the buffer's room is reserved
/// fallibly ([`Error::OutOfMemory`], never an abort) and filled one step at
/// a time, so memory is committed only as bytes arrive, and a region the
/// source cannot deliver fails at its first missing step.
fn read_fresh<S: Source + ?Sized>(
    source: &S,
    offset: u64,
    len: usize,
    what: What,
) -> Result<Vec<u8>> {
    let mut buf = crate::alloc::vec_with_capacity(len, what)?;
    while buf.len() < len {
        let start = buf.len();
        buf.resize(start + (len - start).min(READ_STEP), 0);
        if let Some(step) = buf.get_mut(start..) {
            source
                .read_exact_at(offset + start as u64, step)
                .with_path(source.name())?;
        }
    }
    Ok(buf)
}
