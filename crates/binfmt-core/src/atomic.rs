//! Atomic file output: all of the new file, or none of it.
//!
//! [`AtomicFile`] writes to a temporary file in the destination's directory
//! (so the final rename never crosses a file system), flushes and syncs it on
//! [`AtomicFile::commit`], then renames it over the destination. Dropping it
//! without committing, on an error or a panic, deletes the temporary file and
//! leaves the destination as it was.
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
            writer: BufWriter::with_capacity(1 << 20, temp),
            destination: destination.to_owned(),
        })
    }

    /// The path the file will have once committed.
    pub fn destination(&self) -> &Path {
        &self.destination
    }

    /// Flushes, syncs to disk and renames the file into place.
    pub fn commit(self) -> Result<()> {
        let destination = self.destination;
        let temp = self
            .writer
            .into_inner()
            .map_err(|error| Error::io(&destination, error.into_error()))?;
        temp.as_file().sync_all().with_path(&destination)?;
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
