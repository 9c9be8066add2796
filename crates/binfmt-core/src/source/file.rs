//! [`FileSource`]: a regular file read by offset (`pread`), its large
//! regions mapped on request.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use super::positional::{MappedRange, Source};
use crate::error::Result;
use crate::sys::map_range;

/// The smallest range a source maps rather than reads ([`MapOnDemand`](super::MapOnDemand),
/// [`FileSource::map_regions`]): copying 64 KiB costs about what mapping,
/// faulting in and unmapping it does.
pub(super) const MAP_FROM: u64 = 64 << 10;

/// A regular file read by offset (`pread`), without a map and without a
/// shared cursor: memory holds only what a reader asks for. With
/// [`FileSource::map_regions`], a large range a reader holds whole is mapped
/// for as long as the reader holds it instead.
#[derive(Debug)]
pub struct FileSource {
    file: File,
    path: PathBuf,
    len: u64,
    map_regions: bool,
}

impl FileSource {
    /// Opens the regular file at `path`; anything else is refused.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let (file, len) = crate::input::open(path)?;
        Ok(Self {
            file,
            path: path.to_owned(),
            len,
            map_regions: false,
        })
    }

    /// A file already open and checked (regular, `len` bytes), read by
    /// offset, nothing mapped.
    pub(super) fn from_open(file: File, path: PathBuf, len: u64) -> Self {
        Self {
            file,
            path,
            len,
            map_regions: false,
        }
    }

    /// Maps (read-only, populated) each range of at least 64 KiB that a
    /// reader holds whole ([`SourceExt::region_at`](super::SourceExt::region_at): an ARCX manifest)
    /// instead of reading it into fresh memory, which saves the copy, the
    /// page faults on the buffer and its unmapping. The caveat of every map
    /// holds while the range is held: another process truncating the file
    /// then can end this one with `SIGBUS`; leave it off when that matters.
    pub fn map_regions(mut self, map: bool) -> Self {
        self.map_regions = map;
        self
    }

    /// The path the file was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The underlying file.
    pub fn file(&self) -> &File {
        &self.file
    }
}

impl Source for FileSource {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        // Callers checked the range against the size at open: an early end
        // means the file shrank since (spec/limits.md).
        read_exact_at(&self.file, buf, offset).map_err(|error| {
            if error.kind() == io::ErrorKind::UnexpectedEof {
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the file ends early: it is shorter than when it was opened (changed underneath)",
                )
            } else {
                error
            }
        })
    }

    #[cfg(unix)]
    fn read_vectored_exact_at(
        &self,
        offset: u64,
        bufs: &mut [io::IoSliceMut<'_>],
    ) -> io::Result<()> {
        let mut offset = offset;
        let mut bufs = bufs;
        io::IoSliceMut::advance_slices(&mut bufs, 0);
        while !bufs.is_empty() {
            match crate::sys::preadv(&self.file, bufs, offset) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the file ends early: it is shorter than when it was opened (changed underneath)",
                    ));
                }
                Ok(read) => {
                    offset = offset.saturating_add(read as u64);
                    io::IoSliceMut::advance_slices(&mut bufs, read);
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    fn name(&self) -> &Path {
        &self.path
    }

    fn map_at(&self, offset: u64, len: u64) -> Option<MappedRange> {
        if !self.map_regions || len < MAP_FROM {
            return None;
        }
        map_range(&self.file, offset, len, true)
            .ok()
            .map(MappedRange)
    }
}

#[cfg(unix)]
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(windows)]
fn read_exact_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, offset) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
