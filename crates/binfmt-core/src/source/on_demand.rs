//! [`MapOnDemand`]: a regular file read by offset until a large range asks
//! for a map.

use std::io;
use std::path::Path;
use std::sync::OnceLock;

use memmap2::Mmap;

use super::file::{FileSource, MAP_FROM};
use super::positional::Source;
use crate::error::Result;
use crate::sys::map_read_only;

/// A regular file read by offset (`pread`) for small ranges and mapped,
/// whole and once, on the first range of at least
/// [`MapOnDemand::MAP_FROM`] bytes; from then on every range is borrowed
/// from the map.
///
/// Opening and a few small reads (a format's header, a table, one entry)
/// cost a `pread` each and no map: no `mmap`, page faults or `munmap`, which
/// dominate a point access through a map. Large ranges (a whole shard, a
/// bulk load) are borrowed from the map without a copy, as from
/// [`ByteSource`](super::ByteSource). When mapping fails, every range is read.
///
/// # Examples
///
/// ```
/// use std::borrow::Cow;
/// use binfmt_core::{MapOnDemand, SourceExt};
///
/// let mut file = tempfile::NamedTempFile::new()?;
/// std::io::Write::write_all(&mut file, &vec![7u8; 1 << 20])?;
/// let source = MapOnDemand::open(file.path())?;
/// let head = source.bytes_at(0, 16, "header")?;
/// assert!(matches!(head, Cow::Owned(_)) && !source.is_mapped()); // read
/// let big = source.bytes_at(0, MapOnDemand::MAP_FROM, "payload")?;
/// assert!(matches!(big, Cow::Borrowed(_)) && source.is_mapped()); // mapped
/// let head = source.bytes_at(0, 16, "header")?;
/// assert!(matches!(head, Cow::Borrowed(_))); // borrowed from then on
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct MapOnDemand {
    file: FileSource,
    map: OnceLock<Option<Mmap>>,
}

impl MapOnDemand {
    /// Ranges of at least this many bytes are borrowed from a map (made on
    /// the first such range); shorter ones are read until then.
    pub const MAP_FROM: u64 = MAP_FROM;

    /// Opens the regular file at `path`; anything else is refused. Nothing
    /// is mapped yet.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Ok(Self {
            file: FileSource::open(path)?,
            map: OnceLock::new(),
        })
    }

    /// The path the file was opened from.
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// Whether the file has been mapped.
    pub fn is_mapped(&self) -> bool {
        self.map.get().is_some_and(Option::is_some)
    }

    fn map(&self) -> Option<&Mmap> {
        self.map
            .get_or_init(|| {
                (self.file.len() > 0)
                    .then(|| map_read_only(self.file.file(), self.file.len()).ok())
                    .flatten()
            })
            .as_ref()
    }
}

impl Source for MapOnDemand {
    fn len(&self) -> u64 {
        self.file.len()
    }

    fn borrow_at(&self, offset: u64, len: u64) -> Option<&[u8]> {
        let map = match self.map.get() {
            Some(map) => map.as_ref()?,
            None if len >= Self::MAP_FROM => self.map()?,
            None => return None,
        };
        let start = usize::try_from(offset).ok()?;
        map.get(start..start.checked_add(usize::try_from(len).ok()?)?)
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        match self.map.get().and_then(Option::as_ref) {
            Some(map) => map.as_ref().read_exact_at(offset, buf),
            None => self.file.read_exact_at(offset, buf),
        }
    }

    fn read_vectored_exact_at(
        &self,
        offset: u64,
        bufs: &mut [io::IoSliceMut<'_>],
    ) -> io::Result<()> {
        match self.map.get().and_then(Option::as_ref) {
            Some(map) => map.as_ref().read_vectored_exact_at(offset, bufs),
            None => self.file.read_vectored_exact_at(offset, bufs),
        }
    }

    fn name(&self) -> &Path {
        self.file.name()
    }
}
