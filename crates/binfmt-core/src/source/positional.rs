//! The trait every reader reads through, [`Source`]: bytes at `(offset,
//! length)`, with what a source can lend or map; bytes in memory (`[u8]`,
//! `Vec<u8>`) as sources, and references and shared pointers forwarding.

use std::fmt;
use std::io;
use std::ops::Deref;
use std::path::Path;
use std::sync::Arc;

use memmap2::Mmap;

/// Bytes at `(offset, length)`: the one way readers get bytes.
///
/// Implementations take `&self` so that one source serves several readers
/// and threads at once.
pub trait Source: Send + Sync + fmt::Debug {
    /// The size of the source in bytes.
    fn len(&self) -> u64;

    /// Whether the source holds no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The whole source, when its bytes already sit in memory; readers then
    /// borrow slices of it instead of copying.
    fn in_memory(&self) -> Option<&[u8]> {
        None
    }

    /// The `len` bytes at `offset`, borrowed, when the source can lend them
    /// without copying: by default the range of [`Source::in_memory`]. A
    /// range past the end gives `None`.
    fn borrow_at(&self, offset: u64, len: u64) -> Option<&[u8]> {
        let start = usize::try_from(offset).ok()?;
        let end = start.checked_add(usize::try_from(len).ok()?)?;
        self.in_memory()?.get(start..end)
    }

    /// Fills `buf` with the bytes at `offset`. Callers check the range
    /// against [`Source::len`] first ([`SourceExt`](super::SourceExt) does).
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()>;

    /// Fills `bufs`, one after another, with the bytes from `offset` on:
    /// one request for a source that can (a file: one `preadv`), one
    /// [`Source::read_exact_at`] per buffer by default. Callers check the
    /// whole range against [`Source::len`] first.
    fn read_vectored_exact_at(
        &self,
        offset: u64,
        bufs: &mut [io::IoSliceMut<'_>],
    ) -> io::Result<()> {
        let mut offset = offset;
        for buf in bufs.iter_mut() {
            self.read_exact_at(offset, buf)?;
            offset = offset.saturating_add(buf.len() as u64);
        }
        Ok(())
    }

    /// What the source is called in error messages: its path or URL.
    fn name(&self) -> &Path;

    /// A hint that these ranges will be read soon; a source that pays per
    /// request (a remote object) may fetch them together. The default does
    /// nothing.
    fn will_read(&self, ranges: &[std::ops::Range<u64>]) {
        let _ = ranges;
    }

    /// The `len` bytes at `offset` as a read-only map, when the source maps
    /// ranges (a [`FileSource`](super::FileSource) with [`FileSource::map_regions`](super::FileSource::map_regions)); `None`
    /// otherwise, and the caller reads them. Callers check the range against
    /// [`Source::len`] first ([`SourceExt::region_at`](super::SourceExt::region_at) does).
    fn map_at(&self, offset: u64, len: u64) -> Option<MappedRange> {
        let _ = (offset, len);
        None
    }
}

/// A range of a file mapped read-only ([`Source::map_at`]).
#[derive(Debug)]
pub struct MappedRange(pub(super) Mmap);

impl Deref for MappedRange {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}
const MEMORY: &str = "<memory>";

impl Source for [u8] {
    fn len(&self) -> u64 {
        <[u8]>::len(self) as u64
    }

    fn in_memory(&self) -> Option<&[u8]> {
        Some(self)
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let start = usize::try_from(offset).map_err(io::Error::other)?;
        let piece = self
            .get(start..)
            .and_then(|tail| tail.get(..buf.len()))
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(piece);
        Ok(())
    }

    fn name(&self) -> &Path {
        Path::new(MEMORY)
    }
}

impl Source for Vec<u8> {
    fn len(&self) -> u64 {
        self.as_slice().len() as u64
    }

    fn in_memory(&self) -> Option<&[u8]> {
        Some(self)
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.as_slice().read_exact_at(offset, buf)
    }

    fn name(&self) -> &Path {
        Path::new(MEMORY)
    }
}

/// Forwards every method, so references and shared pointers are sources.
macro_rules! forward_source {
    ($($pointer:ty),*) => {$(
        impl<S: Source + ?Sized> Source for $pointer {
            fn len(&self) -> u64 {
                (**self).len()
            }
            fn in_memory(&self) -> Option<&[u8]> {
                (**self).in_memory()
            }
            fn borrow_at(&self, offset: u64, len: u64) -> Option<&[u8]> {
                (**self).borrow_at(offset, len)
            }
            fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
                (**self).read_exact_at(offset, buf)
            }
            fn read_vectored_exact_at(
                &self,
                offset: u64,
                bufs: &mut [io::IoSliceMut<'_>],
            ) -> io::Result<()> {
                (**self).read_vectored_exact_at(offset, bufs)
            }
            fn name(&self) -> &Path {
                (**self).name()
            }
            fn will_read(&self, ranges: &[std::ops::Range<u64>]) {
                (**self).will_read(ranges)
            }
            fn map_at(&self, offset: u64, len: u64) -> Option<MappedRange> {
                (**self).map_at(offset, len)
            }
        }
    )*};
}
forward_source!(&S, Box<S>, Arc<S>);
