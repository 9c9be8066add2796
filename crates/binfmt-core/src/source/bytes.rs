//! [`ByteSource`]: a whole file in memory, mapped or read.

use std::fs::File;
use std::io::{self, Read};
use std::ops::Deref;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use super::ext::read_vec_at;
use super::file::FileSource;
use super::positional::Source;
use crate::error::{IoResultExt, Result};
use crate::sys::map_read_only;

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
        let source = FileSource::from_open(file, name.to_owned(), len);
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
