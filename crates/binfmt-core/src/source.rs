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
//! | [`FileSource`] | `pread` on a regular file; with [`FileSource::map_regions`], a read-only map for each large region a reader holds whole ([`SourceExt::region_at`]) | no |
//! | [`MapOnDemand`] | `pread` for small ranges; a map of the file, made on the first large range | ranges of at least [`MapOnDemand::MAP_FROM`] bytes, and every range once mapped |
//! | [`SeekSource`] | any `Read + Seek`, behind a lock | no |
//!
//! A source that can lend some ranges but not all says so per range with
//! [`Source::borrow_at`].
//!
//! [`SourceExt`] adds the checked helpers readers use: [`SourceExt::bytes_at`]
//! (borrowed or copied, the range checked against the source's size before
//! anything is allocated), [`SourceExt::region_at`] for a large range a reader
//! holds whole (borrowed, mapped or copied), [`SourceExt::record_at`] for fixed layouts, and
//! [`SourceExt::reader`], a [`RangeReader`] that streams a range through
//! `std::io::Read` in the caller's buffer, for entries too large to hold.
//!
//! Files that are not regular (FIFOs, devices, sockets) are refused by
//! [`FileSource::open`] and [`ByteSource::open`] before they are opened for
//! reading: a FIFO would block the open, a device such as `/dev/zero` would
//! never end.
//!
//! ```
//! use binfmt_core::source::{Source, SourceExt};
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

use std::borrow::Cow;
use std::fmt;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use memmap2::{Mmap, MmapOptions};

use crate::error::{Error, IoResultExt, Result, What};
use crate::layout::Record;
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
    /// against [`Source::len`] first ([`SourceExt`] does).
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
    /// [`Source::len`] first ([`SourceExt::region_at`] does).
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
        let what = what.into();
        check_range(offset, len, self.len(), what.clone())?;
        Ok(RangeReader {
            source: self,
            position: offset,
            end: offset + len,
        })
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

/// A range of a [`Source`] as `std::io::Read`, from [`SourceExt::reader`].
#[derive(Debug)]
pub struct RangeReader<'a, S: ?Sized> {
    source: &'a S,
    position: u64,
    end: u64,
}

impl<S: Source + ?Sized> RangeReader<'_, S> {
    /// Bytes not yet read.
    pub fn remaining(&self) -> u64 {
        self.end - self.position
    }
}

impl<S: Source + ?Sized> Read for RangeReader<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
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
const MAP_FROM: u64 = 64 << 10;

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
    /// reader holds whole ([`SourceExt::region_at`]: an ARCX manifest)
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
const READ_STEP: usize = 16 << 20;

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Cursor, Write};

    /// 99 bytes that claim to be 64 GiB, like a lying server.
    #[derive(Debug)]
    struct Claiming(Vec<u8>);

    impl Source for Claiming {
        fn len(&self) -> u64 {
            64 << 30
        }
        fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
            let start = usize::try_from(offset).map_err(io::Error::other)?;
            let bytes = self
                .0
                .get(start..start + buf.len())
                .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
            buf.copy_from_slice(bytes);
            Ok(())
        }
        fn name(&self) -> &Path {
            Path::new("claiming")
        }
    }

    #[test]
    fn a_claimed_size_never_allocates_before_the_bytes_arrive() {
        let source = Claiming(vec![7; 99]);
        // Not an abort: the reservation fails, or the first step beyond
        // the real bytes does.
        assert!(source.bytes_at(0, 64 << 30, "region").is_err());
        assert!(read_vec_at(&source, 16, 32 << 30, "region").is_err());
        assert_eq!(&source.bytes_at(10, 20, "ok").unwrap()[..], &[7; 20]);
        assert_eq!(read_vec_at(&source, 0, 99, "ok").unwrap(), vec![7; 99]);
        let bytes: Vec<u8> = (0..(READ_STEP * 2 + 5)).map(|i| i as u8).collect();
        let source = Claiming(bytes.clone());
        assert_eq!(
            read_vec_at(&source, 3, bytes.len() as u64 - 3, "steps").unwrap(),
            &bytes[3..]
        );
    }

    fn temp_file(contents: &[u8]) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(contents).unwrap();
        file.flush().unwrap();
        file
    }

    #[test]
    fn open_files_are_mapped_whatever_their_position() {
        let file = temp_file(b"hello, map");
        let mut opened = File::open(file.path()).unwrap();
        opened.seek(SeekFrom::Start(3)).unwrap();
        let source = ByteSource::from_file(opened.try_clone().unwrap(), "handed over").unwrap();
        assert!(source.is_mapped());
        assert_eq!(&*source, b"hello, map");
        assert_eq!(source.path(), Path::new("handed over"));
        assert_eq!(opened.stream_position().unwrap(), 3);
        let dir = tempfile::tempdir().unwrap();
        let directory = File::open(dir.path()).unwrap();
        assert!(matches!(
            ByteSource::from_file(directory, "dir"),
            Err(Error::NotRegularFile {
                kind: "a directory",
                ..
            })
        ));
    }

    #[test]
    fn regular_files_are_mapped() {
        let file = temp_file(b"hello, map");
        let source = ByteSource::open(file.path()).unwrap();
        assert!(source.is_mapped());
        assert_eq!(&*source, b"hello, map");
        assert_eq!(source.path(), file.path());
        assert_eq!(source.in_memory(), Some(&b"hello, map"[..]));
    }

    #[test]
    fn large_regions_of_a_file_are_mapped_when_asked() {
        let bytes: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let file = temp_file(&bytes);
        let read = FileSource::open(file.path()).unwrap();
        let mapping = FileSource::open(file.path()).unwrap().map_regions(true);
        // Unaligned offsets, a region below 64 KiB, the whole file.
        for (offset, len) in [(4097, 100_000), (10, 1000), (0, 300_000), (299_999, 1)] {
            let end = offset as usize + len as usize;
            let (by_read, by_map) = (
                read.region_at(offset, len, "region").unwrap(),
                mapping.region_at(offset, len, "region").unwrap(),
            );
            assert!(matches!(by_read, Region::Owned(_)));
            assert_eq!(matches!(by_map, Region::Mapped(_)), len >= MAP_FROM);
            assert_eq!(&*by_read, &bytes[offset as usize..end]);
            assert_eq!(&*by_map, &bytes[offset as usize..end]);
        }
        assert!(mapping.region_at(200_000, 100_001, "past the end").is_err());
        assert!(matches!(
            bytes.region_at(5, 100_000, "in memory").unwrap(),
            Region::Borrowed(_)
        ));
    }

    #[test]
    fn empty_files_and_forced_reads_are_owned() {
        let empty = temp_file(b"");
        let source = ByteSource::open(empty.path()).unwrap();
        assert!(!source.is_mapped());
        assert!(Source::is_empty(&source));

        let file = temp_file(b"copied");
        let source = ByteSource::read(file.path()).unwrap();
        assert!(!source.is_mapped());
        assert_eq!(source.as_bytes(), b"copied");
    }

    #[test]
    fn streams_are_read_to_the_end() {
        let mut stream: &[u8] = b"from a pipe";
        let source = ByteSource::read_from(&mut stream, "<stdin>").unwrap();
        assert_eq!(&*source, b"from a pipe");
        assert_eq!(source.path(), Path::new("<stdin>"));
        assert_eq!(ByteSource::from_vec(vec![1, 2], "x").as_bytes(), &[1, 2]);
    }

    #[test]
    fn missing_file_names_its_path() {
        let error = ByteSource::open("/nonexistent/binfmt/x.kas").unwrap_err();
        assert!(
            matches!(&error, Error::Io { path, .. } if path == Path::new("/nonexistent/binfmt/x.kas"))
        );
        assert!(FileSource::open("/nonexistent/binfmt/x.kas").is_err());
    }

    /// Every kind of source gives the same bytes, borrowed only from memory.
    #[test]
    fn every_source_reads_the_same_ranges() {
        let content = b"0123456789".to_vec();
        let file = temp_file(&content);
        let sources: Vec<Box<dyn Source>> = vec![
            Box::new(content.clone()),
            Box::new(ByteSource::open(file.path()).unwrap()),
            Box::new(FileSource::open(file.path()).unwrap()),
            Box::new(SeekSource::new(Cursor::new(content.clone()), "cursor").unwrap()),
        ];
        for source in &sources {
            assert_eq!(source.len(), 10);
            let tail = source.bytes_at(7, 3, "tail").unwrap();
            assert_eq!(&*tail, b"789");
            assert_eq!(
                matches!(tail, Cow::Borrowed(_)),
                source.in_memory().is_some()
            );
            assert_eq!(source.array_at::<2>(0, "head").unwrap(), *b"01");
            let mut all = Vec::new();
            source
                .reader(2, 6, "middle")
                .unwrap()
                .read_to_end(&mut all)
                .unwrap();
            assert_eq!(all, b"234567");
            assert_eq!(read_vec_at(&**source, 0, 2, "head").unwrap(), b"01");
        }
    }

    #[test]
    fn ranges_outside_the_source_fail_before_allocating() {
        let file = temp_file(b"0123456789");
        let source = FileSource::open(file.path()).unwrap();
        let mut buf = [0; 4];
        assert!(matches!(
            source.fill_at(8, &mut buf, "footer"),
            Err(Error::OutOfBounds {
                offset: 8,
                len: 4,
                file_size: 10,
                ..
            })
        ));
        assert!(matches!(
            source.bytes_at(0, 1 << 60, "manifest"),
            Err(Error::OutOfBounds { .. })
        ));
        assert!(matches!(
            source.bytes_at(u64::MAX, 2, "manifest"),
            Err(Error::Overflow { .. })
        ));
        assert!(source.reader(9, 2, "payload").is_err());
    }

    #[test]
    fn records_are_read_at_their_offset() {
        use crate::layout::U32;
        #[derive(
            Debug,
            crate::layout::FromBytes,
            crate::layout::IntoBytes,
            crate::layout::KnownLayout,
            crate::layout::Immutable,
            crate::layout::Unaligned,
        )]
        #[repr(C)]
        struct Pair {
            a: U32,
            b: U32,
        }
        crate::fixed_layout!(Pair, 8, "pair");
        let mut bytes = vec![0xff; 3];
        bytes.extend_from_slice(&1u32.to_le_bytes());
        bytes.extend_from_slice(&2u32.to_le_bytes());
        let source = SeekSource::new(Cursor::new(bytes), "pairs").unwrap();
        let pair: Pair = source.record_at(3).unwrap();
        assert_eq!((pair.a.get(), pair.b.get()), (1, 2));
        assert!(matches!(
            source.record_at::<Pair>(4),
            Err(Error::OutOfBounds { offset: 4, .. })
        ));
    }

    #[cfg(unix)]
    #[test]
    fn non_regular_files_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        for error in [
            FileSource::open(&fifo).unwrap_err(),
            ByteSource::open(&fifo).unwrap_err(),
        ] {
            assert!(
                matches!(&error, Error::NotRegularFile { kind: "a FIFO", .. }),
                "{error}"
            );
        }
        let link = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        assert!(matches!(
            FileSource::open(&link),
            Err(Error::NotRegularFile {
                kind: "a character device",
                ..
            })
        ));
        assert!(matches!(
            ByteSource::open(dir.path()),
            Err(Error::NotRegularFile {
                kind: "a directory",
                ..
            })
        ));
        // A socket cannot be opened at all: its kind is still named.
        let socket = dir.path().join("socket");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        assert!(matches!(
            MapOnDemand::open(&socket),
            Err(Error::NotRegularFile {
                kind: "a socket",
                ..
            })
        ));
    }
}
