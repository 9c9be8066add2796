//! Where readers get bytes: one positional source.
//!
//! Every reader in the workspace asks for "the `len` bytes at `offset`" and
//! nothing else, through [`Source`]. A source whose bytes already sit in
//! memory (a map, a `Vec`) says so with [`Source::in_memory`], and readers
//! borrow from it: zero-copy stays zero-copy. Any other source (a file read
//! by `pread`, any `Read + Seek`, a remote object) copies the range into a
//! buffer, so opening a file reads only the few bytes a format locates
//! itself with, and nothing needs a map or the whole file in memory.
//!
//! | source | bytes come from | borrowable |
//! |---|---|---|
//! | `[u8]`, `Vec<u8>` | memory | yes |
//! | [`ByteSource`] | a read-only map of a regular file, or a buffer | yes |
//! | [`FileSource`] | `pread` on a regular file; with [`FileSource::map_regions`], a read-only map for each large region a reader holds whole ([`SourceExt::region_at`](crate::SourceExt::region_at)) | no |
//! | [`MapOnDemand`] | `pread` for small ranges; a map of the file, made on the first large range | ranges of at least [`MapOnDemand::MAP_FROM`] bytes, and every range once mapped |
//! | [`SeekSource`] | any `Read + Seek`, behind a lock | no |
//!
//! A source that can lend some ranges but not all says so per range with
//! [`Source::borrow_at`].
//!
//! [`SourceExt`](crate::SourceExt) (in [`crate::source_ext`]) adds the
//! checked helpers readers use: `bytes_at` (borrowed or copied, the range
//! checked against the source's size before anything is allocated),
//! `region_at` for a large range a reader holds whole (borrowed, mapped or
//! copied), `record_at` for fixed layouts, and `reader`, a
//! [`RangeReader`](crate::RangeReader) that streams a range through
//! `std::io::Read` in the caller's buffer, for entries too large to hold.
//!
//! Files that are not regular (FIFOs, devices, sockets) are refused by
//! [`FileSource::open`] and [`ByteSource::open`] before they are opened for
//! reading: a FIFO would block the open, a device such as `/dev/zero` would
//! never end.
//!
//! ```
//! use binfmt_core::source::Source;
//! use binfmt_core::source_ext::SourceExt;
//!
//! let bytes = b"header|payload".to_vec();
//! let head = bytes.bytes_at(0, 6, "header")?;            // borrowed: Vec is in memory
//! assert_eq!(&*head, b"header");
//! let mut payload = String::new();
//! std::io::Read::read_to_string(&mut bytes.reader(7, 7, "payload")?, &mut payload)?;
//! assert_eq!(payload, "payload");
//! assert!(bytes.bytes_at(10, 8, "past the end").is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use memmap2::{Mmap, MmapOptions};

use crate::error::{IoResultExt, Result, What};
use crate::range::{check_range, to_usize};

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
    /// against [`Source::len`] first ([`SourceExt`](crate::SourceExt) does).
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()>;

    /// What the source is called in error messages: its path or URL.
    fn name(&self) -> &Path;

    /// A hint that these ranges will be read soon; a source that pays per
    /// request (a remote object) may fetch them together. The default does
    /// nothing.
    fn will_read(&self, ranges: &[std::ops::Range<u64>]) {
        let _ = ranges;
    }

    /// The `len` bytes at `offset` as a read-only map, when the source maps
    /// ranges (a [`FileSource`] with [`FileSource::map_regions`]); `None`
    /// otherwise, and the caller reads them. Callers check the range against
    /// [`Source::len`] first ([`SourceExt::region_at`](crate::SourceExt::region_at) does).
    fn map_at(&self, offset: u64, len: u64) -> Option<MappedRange> {
        let _ = (offset, len);
        None
    }
}

/// A range of a file mapped read-only ([`Source::map_at`]).
#[derive(Debug)]
pub struct MappedRange(Mmap);

impl Deref for MappedRange {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}

/// A range a reader holds whole ([`SourceExt::region_at`](crate::SourceExt::region_at)): borrowed from a
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

/// A whole file in memory: mapped when it is a non-empty regular file, read
/// into a buffer otherwise.
#[derive(Debug)]
pub struct ByteSource {
    bytes: Bytes,
    path: PathBuf,
}

#[derive(Debug)]
enum Bytes {
    Mapped(Mmap),
    Owned(Vec<u8>),
}

impl ByteSource {
    /// Maps the regular file at `path` (reads it when mapping fails or the
    /// file is empty). Anything but a regular file is refused. Another
    /// process truncating the file while it is mapped can end this one
    /// with `SIGBUS`; [`FileSource`] reads by offset instead, and a file cut
    /// short is then an error (spec/limits.md).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let (mut file, len) = crate::input::open(path)?;
        match Self::try_map(&file, len, path) {
            Some(mapped) => Ok(mapped),
            None => Self::read_from(&mut file, path),
        }
    }

    /// Maps a file that is already open (a descriptor handed over by a
    /// caller), whatever its position; `name` is used in error messages.
    /// Anything but a regular file is refused. The position is left alone,
    /// also when mapping fails and the file is read instead (by offset).
    pub fn from_file(file: File, name: impl AsRef<Path>) -> Result<Self> {
        let name = name.as_ref();
        let len = crate::input::check_descriptor(&file, name)?;
        if let Some(mapped) = Self::try_map(&file, len, name) {
            return Ok(mapped);
        }
        let source = FileSource {
            file,
            path: name.to_owned(),
            len,
            map_regions: false,
        };
        Ok(Self::from_vec(read_vec_at(&source, 0, len, "file")?, name))
    }

    /// The map of a non-empty regular file, if mapping works.
    fn try_map(file: &File, len: u64, path: &Path) -> Option<Self> {
        if len == 0 {
            return None;
        }
        let map = map_read_only(file, len).ok()?;
        Some(Self {
            bytes: Bytes::Mapped(map),
            path: path.to_owned(),
        })
    }

    /// Reads the regular file at `path` into memory without mapping it.
    pub fn read(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let (mut file, len) = crate::input::open(path)?;
        // Room for the whole file at once (as `fs::read` does): growing by
        // doubling would copy what was read so far at each step. The size
        // only sizes the buffer; reading still stops at the file's end.
        let mut bytes = Vec::new();
        bytes
            .try_reserve_exact(usize::try_from(len).unwrap_or(0).saturating_add(1))
            .map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))
            .with_path(path)?;
        file.read_to_end(&mut bytes).with_path(path)?;
        Ok(Self {
            bytes: Bytes::Owned(bytes),
            path: path.to_owned(),
        })
    }

    /// Reads a stream to its end; `name` is used in error messages. Memory
    /// grows with the bytes the stream produces.
    pub fn read_from(reader: &mut impl Read, name: impl AsRef<Path>) -> Result<Self> {
        let name = name.as_ref();
        let mut bytes = Vec::new();
        reader.read_to_end(&mut bytes).with_path(name)?;
        Ok(Self {
            bytes: Bytes::Owned(bytes),
            path: name.to_owned(),
        })
    }

    /// Bytes already in memory, called `name` in error messages.
    pub fn from_vec(bytes: Vec<u8>, name: impl AsRef<Path>) -> Self {
        Self {
            bytes: Bytes::Owned(bytes),
            path: name.as_ref().to_owned(),
        }
    }

    /// The path or name the bytes came from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the bytes are a memory map rather than a copy.
    pub fn is_mapped(&self) -> bool {
        matches!(self.bytes, Bytes::Mapped(_))
    }

    /// The whole file.
    pub fn as_bytes(&self) -> &[u8] {
        match &self.bytes {
            Bytes::Mapped(map) => map,
            Bytes::Owned(bytes) => bytes,
        }
    }
}

impl Deref for ByteSource {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl AsRef<[u8]> for ByteSource {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl Source for ByteSource {
    fn len(&self) -> u64 {
        self.as_bytes().len() as u64
    }

    fn in_memory(&self) -> Option<&[u8]> {
        Some(self.as_bytes())
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.as_bytes().read_exact_at(offset, buf)
    }

    fn name(&self) -> &Path {
        &self.path
    }
}

/// Maps the first `len` bytes of `file` (its size, which the caller took
/// from the open descriptor: the map does not ask again).
fn map_read_only(file: &File, len: u64) -> io::Result<Mmap> {
    map_range(file, 0, len, false)
}

/// Maps the `len` bytes of `file` at `offset`, read-only; `populate` faults
/// them all in at once (for a range about to be read whole).
#[allow(unsafe_code)]
fn map_range(file: &File, offset: u64, len: u64, populate: bool) -> io::Result<Mmap> {
    let len = usize::try_from(len).map_err(io::Error::other)?;
    let mut options = MmapOptions::new();
    options.offset(offset).len(len);
    if populate {
        options.populate();
    }
    // SAFETY: the map is read-only and private to this process; it stays
    // valid for as long as `Mmap` lives. Another process truncating or
    // rewriting the file while it is mapped can change or remove bytes under
    // us (SIGBUS on access past a truncation), the standing caveat of every
    // mmap-based reader; callers for whom that matters use `FileSource`
    // without `map_regions`.
    unsafe { options.map(file) }
}

/// The smallest range a source maps rather than reads ([`MapOnDemand`],
/// [`FileSource::map_regions`]): copying 64 KiB costs about what mapping,
/// faulting in and unmapping it does.
pub(crate) const MAP_FROM: u64 = 64 << 10;

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

    /// Maps (read-only, populated) each range of at least 64 KiB that a
    /// reader holds whole ([`SourceExt::region_at`](crate::SourceExt::region_at): an ARCX manifest)
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

/// A regular file read by offset (`pread`) for small ranges and mapped,
/// whole and once, on the first range of at least
/// [`MapOnDemand::MAP_FROM`] bytes; from then on every range is borrowed
/// from the map.
///
/// Opening and a few small reads (a format's header, a table, one entry)
/// cost a `pread` each and no map: no `mmap`, page faults or `munmap`, which
/// dominate a point access through a map. Large ranges (a whole shard, a
/// bulk load) are borrowed from the map without a copy, as from
/// [`ByteSource`]. When mapping fails, every range is read.
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
                (self.file.len > 0)
                    .then(|| map_read_only(&self.file.file, self.file.len).ok())
                    .flatten()
            })
            .as_ref()
    }
}

impl Source for MapOnDemand {
    fn len(&self) -> u64 {
        self.file.len
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

    fn name(&self) -> &Path {
        self.file.name()
    }
}

/// Any `Read + Seek` as a source: each read seeks, then reads, under a lock.
#[derive(Debug)]
pub struct SeekSource<R> {
    inner: Mutex<R>,
    len: u64,
    name: PathBuf,
}

impl<R: Read + Seek + Send + fmt::Debug> SeekSource<R> {
    /// Wraps `inner`, whose size is found by seeking to its end; `name` is
    /// used in error messages.
    pub fn new(mut inner: R, name: impl AsRef<Path>) -> Result<Self> {
        let name = name.as_ref().to_owned();
        let len = inner.seek(SeekFrom::End(0)).with_path(&name)?;
        Ok(Self {
            inner: Mutex::new(inner),
            len,
            name,
        })
    }

    /// The reader back.
    pub fn into_inner(self) -> R {
        self.inner
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl<R: Read + Seek + Send + fmt::Debug> Source for SeekSource<R> {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let mut inner = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        inner.seek(SeekFrom::Start(offset))?;
        inner.read_exact(buf)
    }

    fn name(&self) -> &Path {
        &self.name
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
pub(crate) const READ_STEP: usize = 16 << 20;

/// The `len` bytes at `offset` of `source` in a fresh buffer, for a region
/// already checked against the source's size. That size may be a claim
/// (a server's `Content-Range` total): the buffer's room is reserved
/// fallibly ([`Error::OutOfMemory`](crate::Error::OutOfMemory), never an abort) and filled one step at
/// a time, so memory is committed only as bytes arrive, and a region the
/// source cannot deliver fails at its first missing step.
pub(crate) fn read_fresh<S: Source + ?Sized>(
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
