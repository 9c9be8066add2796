//! Checked reads from any [`Source`]: every range is checked against the
//! source's size before anything is allocated or read.
//!
//! ```text
//! bytes_at   (offset, len) ──check──▶ borrowed (Source::borrow_at) │ copied (read_exact_at)
//! region_at  (offset, len) ──check──▶ borrowed │ mapped (Source::map_at) │ copied
//! fill_at    (offset, buf) ──check──▶ copied into the caller's buffer
//! reader     (offset, len) ──check──▶ RangeReader: streamed through the caller's buffer
//! ```

use std::borrow::Cow;

use crate::error::{Error, IoResultExt, Result, What};
use crate::layout::Record;
use crate::range::check_range;
use crate::range_reader::{RangeReader, SourceRange};
use crate::source::{Region, Source, read_fresh};

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
