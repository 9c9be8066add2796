//! Atomic file output: all of the new file, or none of it.
//!
//! [`AtomicFile`] writes to a temporary file in the destination's directory
//! (so the final rename never crosses a file system), flushes it on
//! [`AtomicFile::commit`], then renames it over the destination. Dropping it
//! without committing, on an error or a panic, deletes the temporary file and
//! leaves the destination as it was.
//!
//! Readers never see a partial file. Surviving a power loss right after the
//! rename additionally needs the data on disk first: [`AtomicFile::durable`]
//! makes commit `fsync` the file before renaming (off by default, as in tar,
//! zip and most tools, because it can cost more than the write itself).
//!
//! A new file gets mode 0644 on Unix (what most tools produce under the usual
//! umask 022); replacing an existing file keeps that file's mode.

use std::fs;
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::error::{Error, IoResultExt, Result};

/// A file being written that appears at its destination only on commit.
#[derive(Debug)]
pub struct AtomicFile {
    writer: BufWriter<NamedTempFile>,
    destination: PathBuf,
    durable: bool,
}

impl AtomicFile {
    /// Starts writing the file that will replace `destination`.
    pub fn create(destination: impl AsRef<Path>) -> Result<Self> {
        let destination = destination.as_ref();
        let directory = match destination.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        let name = destination.file_name().ok_or_else(|| {
            Error::io(
                destination,
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "the destination has no file name",
                ),
            )
        })?;
        let mut prefix = std::ffi::OsString::from(".");
        prefix.push(name);
        prefix.push(".");
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".tmp");
        #[cfg(unix)]
        builder.permissions(unix_permissions_for(destination));
        let temp = builder.tempfile_in(directory).with_path(destination)?;
        Ok(Self {
            // Small enough that large writes (a block, a shard) bypass the buffer
            // instead of being copied through it.
            writer: BufWriter::with_capacity(64 << 10, temp),
            destination: destination.to_owned(),
            durable: false,
        })
    }

    /// Whether commit syncs the file to disk before renaming it.
    pub fn durable(mut self, durable: bool) -> Self {
        self.durable = durable;
        self
    }

    /// The path the file will have once committed.
    pub fn destination(&self) -> &Path {
        &self.destination
    }

    /// The temporary file's path, for writers that open the file by path
    /// themselves (an SQLite database); they must be done with it before
    /// [`AtomicFile::commit`].
    pub fn temp_path(&self) -> &Path {
        self.writer.get_ref().path()
    }

    /// Flushes (and, when durable, syncs) the file and renames it into place.
    pub fn commit(self) -> Result<()> {
        let destination = self.destination;
        let temp = self
            .writer
            .into_inner()
            .map_err(|error| Error::io(&destination, error.into_error()))?;
        if self.durable {
            temp.as_file().sync_all().with_path(&destination)?;
        }
        temp.persist(&destination)
            .map_err(|error| Error::io(&destination, error.error))?;
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.writer.write_all(buf)
    }

    /// Large vectored writes go straight to the file as one `writev`
    /// (`BufWriter` would split them: it cannot tell that the temporary
    /// file supports vectored writes); small ones are buffered.
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        let total: usize = bufs.iter().map(|buf| buf.len()).sum();
        if total < self.writer.capacity() {
            return self.writer.write_vectored(bufs);
        }
        self.writer.flush()?;
        self.writer.get_mut().as_file_mut().write_vectored(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer.flush()
    }
}

impl Seek for AtomicFile {
    fn seek(&mut self, position: SeekFrom) -> io::Result<u64> {
        self.writer.seek(position)
    }
}

/// The mode of the file being replaced, or 0644 for a new one.
#[cfg(unix)]
fn unix_permissions_for(destination: &Path) -> fs::Permissions {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(destination)
        .map(|metadata| metadata.permissions())
        .unwrap_or_else(|_| fs::Permissions::from_mode(0o644))
}

/// Whether `a` and `b` name the same file: the same device and inode when
/// both exist (a hard link or a symlink to the file counts), the same path
/// otherwise. Commands use it to refuse writing an output over an input.
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (file_id(a), file_id(b)) {
        (Some(a), Some(b)) => a == b,
        _ => a == b,
    }
}

#[cfg(unix)]
fn file_id(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn file_id(path: &Path) -> Option<(u64, u64)> {
    let _ = path;
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn commit_puts_the_whole_file_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.bin");
        let mut file = AtomicFile::create(&path).unwrap();
        file.write_all(b"complete").unwrap();
        assert!(!path.exists(), "nothing appears before commit");
        file.commit().unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"complete");
        assert_eq!(entries(dir.path()), ["out.bin"]);
    }

    #[test]
    fn dropping_without_commit_leaves_the_old_file_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.bin");
        fs::write(&path, b"old").unwrap();
        {
            let mut file = AtomicFile::create(&path).unwrap();
            file.write_all(b"half of the new").unwrap();
        }
        assert_eq!(fs::read(&path).unwrap(), b"old");
        assert_eq!(entries(dir.path()), ["out.bin"]);
    }

    #[test]
    fn durable_commit_syncs_and_renames() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("synced");
        let mut file = AtomicFile::create(&path).unwrap().durable(true);
        file.write_all(b"on disk").unwrap();
        file.commit().unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"on disk");
    }

    #[test]
    fn vectored_writes_keep_their_order_around_buffered_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mixed");
        let mut file = AtomicFile::create(&path).unwrap();
        let big = vec![7u8; 200 << 10];
        file.write_all(b"head").unwrap();
        crate::io::write_all_vectored(
            &mut file,
            &mut [io::IoSlice::new(&big), io::IoSlice::new(b"tail")],
        )
        .unwrap();
        crate::io::write_all_vectored(
            &mut file,
            &mut [io::IoSlice::new(b"a"), io::IoSlice::new(b"b")],
        )
        .unwrap();
        file.commit().unwrap();
        let written = fs::read(&path).unwrap();
        assert_eq!(written.len(), 4 + big.len() + 4 + 2);
        assert_eq!(&written[..4], b"head");
        assert_eq!(&written[written.len() - 6..], b"tailab");
    }

    #[test]
    fn seek_back_to_patch_a_header() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("patched");
        let mut file = AtomicFile::create(&path).unwrap();
        file.write_all(&[0; 4]).unwrap();
        file.write_all(b"body").unwrap();
        file.seek(SeekFrom::Start(0)).unwrap();
        file.write_all(b"HEAD").unwrap();
        file.commit().unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"HEADbody");
    }

    #[cfg(unix)]
    #[test]
    fn new_files_are_0644_and_replacements_keep_their_mode() {
        use std::fs::Permissions;
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let fresh = dir.path().join("fresh");
        AtomicFile::create(&fresh).unwrap().commit().unwrap();
        assert_eq!(
            fs::metadata(&fresh).unwrap().permissions().mode() & 0o777,
            0o644
        );

        let existing = dir.path().join("existing");
        fs::write(&existing, b"x").unwrap();
        fs::set_permissions(&existing, Permissions::from_mode(0o600)).unwrap();
        AtomicFile::create(&existing).unwrap().commit().unwrap();
        assert_eq!(
            fs::metadata(&existing).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }

    #[test]
    fn missing_directory_fails_with_the_destination_path() {
        let error = AtomicFile::create("/nonexistent/binfmt/dir/out.bin").unwrap_err();
        assert!(matches!(&error, Error::Io { path, .. } if path.ends_with("out.bin")));
    }
}
