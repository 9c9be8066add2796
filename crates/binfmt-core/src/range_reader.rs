//! A byte range of a [`Source`] as `std::io::Read + Seek`: the one range
//! reader of the workspace (a member of a tar shard, a value of a PAR4 map,
//! an ARCX block are each one of these, with their own error names on top).
//!
//! ```text
//! source: ... │ start ─────────── position ──────────── end │ ...
//!               ◀──────────── len (checked ≤ source) ──────▶
//!               read: at most end - position bytes, then 0 (end of range)
//!               seek: to any position in start ..= end, else InvalidInput
//! ```
//!
//! The range is checked against the source's size once, when the reader is
//! made; a read then never goes past its end, whatever the caller's buffer.
//! A source in memory is copied from directly; any other is read with
//! [`Source::read_exact_at`] straight into the caller's buffer, so memory
//! does not grow with the range.

use std::io::{self, Read, Seek, SeekFrom};

use crate::error::{Error, Result, What};
use crate::range::check_range;
use crate::source::Source;

/// `len` bytes of a source from `start`, read in order as `std::io::Read`
/// and repositioned with `std::io::Seek` (positions are relative to
/// `start`). `S` is the source or anything that is one: a reference, a
/// `Box`, an `Arc`.
#[derive(Debug)]
pub struct SourceRange<S> {
    source: S,
    start: u64,
    position: u64,
    end: u64,
}

/// A [`SourceRange`] over a borrowed source, from
/// [`SourceExt::reader`](crate::SourceExt::reader).
pub type RangeReader<'a, S> = SourceRange<&'a S>;

impl<S: Source> SourceRange<S> {
    /// The `len` bytes of `source` at `start`, checked against its size
    /// ([`Error::OutOfBounds`], [`Error::Overflow`]; `what` names them).
    pub fn new(source: S, start: u64, len: u64, what: impl Into<What>) -> Result<Self> {
        let range = check_range(start, len, source.len(), what)?;
        Ok(Self {
            source,
            start,
            position: start,
            end: start + range.len() as u64,
        })
    }

    /// The source.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// Where the range starts in the source.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// The range's length in bytes.
    pub fn len(&self) -> u64 {
        self.end - self.start
    }

    /// Whether the range is empty.
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }

    /// The bytes read so far (the position, relative to the start).
    pub fn position(&self) -> u64 {
        self.position - self.start
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> u64 {
        self.end - self.position
    }

    /// The whole range, borrowed, when the source is in memory.
    pub fn as_slice(&self) -> Option<&[u8]> {
        self.source.borrow_at(self.start, self.len())
    }

    /// Reads the next bytes into `buf` (as many as fit and remain; 0 at the
    /// end of the range), failures being [`Error::Io`] errors that name the
    /// source. Each side's `Read` wraps these in its own error type.
    pub fn read_checked(&mut self, buf: &mut [u8]) -> Result<usize> {
        self.read_raw(buf)
            .map_err(|error| Error::io(self.source.name(), error))
    }

    /// Reads the next bytes into `buf`, failures as the source gives them.
    fn read_raw(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = usize::try_from(self.remaining())
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let Some(buf) = buf.get_mut(..n) else {
            return Ok(0);
        };
        if n == 0 {
            return Ok(0);
        }
        match self.source.in_memory() {
            Some(bytes) => {
                let start = usize::try_from(self.position).map_err(io::Error::other)?;
                let piece = bytes
                    .get(start..start + n)
                    .ok_or(io::ErrorKind::UnexpectedEof)?;
                buf.copy_from_slice(piece);
            }
            None => self.source.read_exact_at(self.position, buf)?,
        }
        self.position += n as u64;
        Ok(n)
    }
}

impl<S: Source> Read for SourceRange<S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_raw(buf)
    }
}

impl<S: Source> Seek for SourceRange<S> {
    /// Moves to a position inside the range (its end included); a position
    /// before the start or past the end is an `InvalidInput` error and
    /// leaves the position as it was.
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(offset) => i128::from(offset),
            SeekFrom::End(delta) => i128::from(self.len()) + i128::from(delta),
            SeekFrom::Current(delta) => i128::from(self.position()) + i128::from(delta),
        };
        let Some(relative) = u64::try_from(target).ok().filter(|&at| at <= self.len()) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "seek to {target} outside a range of {} bytes of {}",
                    self.len(),
                    self.source.name().display()
                ),
            ));
        };
        self.position = self.start + relative;
        Ok(relative)
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Seek, SeekFrom};

    use super::SourceRange;

    #[test]
    fn reads_stop_at_the_end_and_seeks_stay_inside() {
        let bytes: Vec<u8> = (0..20).collect();
        let mut range = SourceRange::new(&bytes, 5, 10, "range").unwrap();
        assert_eq!(range.as_slice(), Some(&bytes[5..15]));
        let mut buf = [0; 4];
        assert_eq!(range.read(&mut buf).unwrap(), 4);
        assert_eq!(buf, [5, 6, 7, 8]);
        assert_eq!((range.position(), range.remaining()), (4, 6));
        let mut rest = Vec::new();
        range.read_to_end(&mut rest).unwrap();
        assert_eq!(rest, (9..15).collect::<Vec<u8>>());
        assert_eq!(range.read(&mut buf).unwrap(), 0);
        assert_eq!(range.seek(SeekFrom::End(-2)).unwrap(), 8);
        assert_eq!(range.read_checked(&mut buf).unwrap(), 2);
        assert_eq!(&buf[..2], &[13, 14]);
        assert_eq!(range.seek(SeekFrom::Current(-10)).unwrap(), 0);
        assert!(range.seek(SeekFrom::Current(-1)).is_err());
        assert!(range.seek(SeekFrom::Start(11)).is_err());
        assert_eq!(range.position(), 0);
        assert_eq!(range.seek(SeekFrom::Start(10)).unwrap(), 10);
        assert_eq!(range.read(&mut buf).unwrap(), 0);
    }

    #[test]
    fn a_range_past_the_source_is_refused() {
        let bytes = vec![0u8; 8];
        assert!(SourceRange::new(&bytes, 4, 5, "range").is_err());
        assert!(SourceRange::new(&bytes, u64::MAX, 2, "range").is_err());
        assert!(SourceRange::new(&bytes, 8, 0, "range").unwrap().is_empty());
    }
}
