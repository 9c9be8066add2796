//! Where the bytes come from: a whole-file view, or positional reads.
//!
//! [`ByteSource`] is the whole file as one `&[u8]`: memory-mapped when the
//! file is a regular file, read into memory otherwise (pipes, stdin, special
//! files, and files the operating system will not map). Readers parse it in
//! place and hand out slices of it.
//!
//! [`PositionalFile`] reads byte ranges on demand (`pread`), for tools that
//! touch a few bytes of many files, such as format sniffing, and for callers
//! that do not want a map.

use std::fs::File;
use std::io::Read;
use std::ops::Deref;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::error::{IoResultExt, Result, What};
use crate::range::{check_range, to_usize};

/// A read-only view of a whole file.
#[derive(Debug)]
pub struct ByteSource {
    bytes: Bytes,
    path: Option<PathBuf>,
}

#[derive(Debug)]
enum Bytes {
    Mapped(Mmap),
    Owned(Vec<u8>),
}

impl ByteSource {
    /// Opens `path`: maps it when it is a non-empty regular file, reads it
    /// into memory otherwise or when mapping fails.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let mut file = File::open(path).with_path(path)?;
        let metadata = file.metadata().with_path(path)?;
        if metadata.is_file()
            && metadata.len() > 0
            && let Ok(map) = map_read_only(&file)
        {
            return Ok(Self {
                bytes: Bytes::Mapped(map),
                path: Some(path.to_owned()),
            });
        }
        Self::read_from(&mut file, path)
    }

    /// Reads `path` into memory without mapping it.
    pub fn read(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let mut file = File::open(path).with_path(path)?;
        Self::read_from(&mut file, path)
    }

    /// Reads a stream to its end, for non-seekable input such as stdin;
    /// `name` is used in error messages.
    pub fn read_from(reader: &mut impl Read, name: impl AsRef<Path>) -> Result<Self> {
        let name = name.as_ref();
        let mut bytes = Vec::new();
        reader.read_to_end(&mut bytes).with_path(name)?;
        Ok(Self {
            bytes: Bytes::Owned(bytes),
            path: Some(name.to_owned()),
        })
    }

    /// Bytes already in memory.
    pub fn from_vec(bytes: Vec<u8>) -> Self {
        Self {
            bytes: Bytes::Owned(bytes),
            path: None,
        }
    }

    /// The path or name the bytes came from, if any.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
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

#[allow(unsafe_code)]
fn map_read_only(file: &File) -> std::io::Result<Mmap> {
    // SAFETY: the map is read-only and private to this process; it stays
    // valid for as long as `Mmap` lives. Another process truncating or
    // rewriting the file while it is mapped can change or remove bytes under
    // us (SIGBUS on access past a truncation), the standing caveat of every
    // mmap-based reader; callers for whom that matters use `ByteSource::read`.
    unsafe { Mmap::map(file) }
}

/// A file read by offset, without a map and without a shared cursor.
#[derive(Debug)]
pub struct PositionalFile {
    file: File,
    path: PathBuf,
    len: u64,
}

impl PositionalFile {
    /// Opens `path` for positional reads.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let file = File::open(path).with_path(path)?;
        let len = file.metadata().with_path(path)?.len();
        Ok(Self {
            file,
            path: path.to_owned(),
            len,
        })
    }

    /// The file's size when it was opened.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the file was empty when it was opened.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The path the file was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Fills `buf` from `offset`; the range must lie inside the file.
    pub fn read_exact_at(&self, offset: u64, buf: &mut [u8], what: impl Into<What>) -> Result<()> {
        check_range(offset, buf.len() as u64, self.len, what)?;
        read_exact_at(&self.file, buf, offset).with_path(&self.path)
    }

    /// The `len` bytes at `offset`, checked against the file size before
    /// anything is allocated.
    pub fn read_vec_at(&self, offset: u64, len: u64, what: impl Into<What>) -> Result<Vec<u8>> {
        let what = what.into();
        check_range(offset, len, self.len, what.clone())?;
        let mut buf = vec![0; to_usize(len, what.clone())?];
        self.read_exact_at(offset, &mut buf, what)?;
        Ok(buf)
    }

    /// The underlying file.
    pub fn file(&self) -> &File {
        &self.file
    }
}

#[cfg(unix)]
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(windows)]
fn read_exact_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, offset) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use std::io::Write;

    fn temp_file(contents: &[u8]) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(contents).unwrap();
        file.flush().unwrap();
        file
    }

    #[test]
    fn regular_files_are_mapped() {
        let file = temp_file(b"hello, map");
        let source = ByteSource::open(file.path()).unwrap();
        assert!(source.is_mapped());
        assert_eq!(&*source, b"hello, map");
        assert_eq!(source.path(), Some(file.path()));
    }

    #[test]
    fn empty_files_and_forced_reads_are_owned() {
        let empty = temp_file(b"");
        let source = ByteSource::open(empty.path()).unwrap();
        assert!(!source.is_mapped());
        assert!(source.is_empty());

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
        assert_eq!(source.path(), Some(Path::new("<stdin>")));
        assert_eq!(ByteSource::from_vec(vec![1, 2]).as_bytes(), &[1, 2]);
    }

    #[test]
    fn missing_file_names_its_path() {
        let error = ByteSource::open("/nonexistent/binfmt/x.kas").unwrap_err();
        assert!(
            matches!(&error, Error::Io { path, .. } if path == Path::new("/nonexistent/binfmt/x.kas"))
        );
        assert!(PositionalFile::open("/nonexistent/binfmt/x.kas").is_err());
    }

    #[test]
    fn positional_reads() {
        let file = temp_file(b"0123456789");
        let positional = PositionalFile::open(file.path()).unwrap();
        assert_eq!(positional.len(), 10);
        let mut buf = [0; 3];
        positional.read_exact_at(7, &mut buf, "tail").unwrap();
        assert_eq!(&buf, b"789");
        assert_eq!(positional.read_vec_at(0, 2, "head").unwrap(), b"01");
    }

    #[test]
    fn positional_reads_outside_the_file_fail_before_allocating() {
        let file = temp_file(b"0123456789");
        let positional = PositionalFile::open(file.path()).unwrap();
        let mut buf = [0; 4];
        assert!(matches!(
            positional.read_exact_at(8, &mut buf, "footer"),
            Err(Error::OutOfBounds {
                offset: 8,
                len: 4,
                file_size: 10,
                ..
            })
        ));
        assert!(matches!(
            positional.read_vec_at(0, 1 << 60, "manifest"),
            Err(Error::OutOfBounds { .. })
        ));
        assert!(matches!(
            positional.read_vec_at(u64::MAX, 2, "manifest"),
            Err(Error::Overflow { .. })
        ));
    }
}
