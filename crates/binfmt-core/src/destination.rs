//! Where outputs go: a local directory or an object-store prefix, behind one
//! pair of traits, so every writer writes to either through the same gate.
//!
//! A [`Destination`] is one output being written: all of it appears at its
//! location on [`Destination::commit`], or none of it (dropped without a
//! commit, on an error or a panic, it leaves nothing: a local temporary file
//! is deleted, a multipart upload aborted). [`AtomicFile`] is the local one;
//! `binfmt-remote` provides the S3 one.
//!
//! An [`OutputDir`] creates destinations by name under one root, each
//! through the output gate of the command's [`Inputs`] (never over an input,
//! by device and inode locally, by URL or ETag remotely). [`LocalDir`] is
//! the local one.
//!
//! Seeking: a local destination seeks anywhere; a remote one only within
//! what it still holds (its first part until commit, and the part being
//! filled), which is what every writer needs (ARCX writes its header last,
//! at offset 0).

use std::fmt::Debug;
use std::io::{Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::atomic::{AtomicFile, Inputs};
use crate::error::{Error, Result};

/// One output being written, that appears whole on commit or not at all.
pub trait Destination: Write + Seek + Send + Debug {
    /// Makes the output appear at its location, whole.
    fn commit(self: Box<Self>) -> Result<()>;

    /// Where it appears (a path or a URL without credentials), for messages.
    fn location(&self) -> String;
}

impl Destination for AtomicFile {
    fn commit(self: Box<Self>) -> Result<()> {
        AtomicFile::commit(*self)
    }

    fn location(&self) -> String {
        self.destination().display().to_string()
    }
}

/// A place outputs are created in by name: a local directory or a remote
/// prefix.
pub trait OutputDir: Send + Sync + Debug {
    /// Starts writing `name` (a file name, `/`-separated below the root),
    /// through the output gate.
    fn create(&self, name: &str) -> Result<Box<dyn Destination>>;

    /// The output gate's check alone: whether `name` may be written (it is
    /// no input), before any work is done. [`OutputDir::create`] checks
    /// again.
    fn check(&self, name: &str) -> Result<()>;

    /// Removes `name` when it is there (an output this command wrote and
    /// takes back, or a stale sidecar); a missing one is not an error.
    fn remove(&self, name: &str) -> Result<()>;

    /// Whether `name` is there now.
    fn exists(&self, name: &str) -> Result<bool>;

    /// How `name` under this root is shown and reported: the joined path,
    /// or the URL.
    fn show(&self, name: &str) -> PathBuf;

    /// The local directory, when this is one (writers that need a local
    /// path, an SQLite database, spool there directly).
    fn local_path(&self) -> Option<&Path> {
        None
    }
}

/// A local directory as an [`OutputDir`]: [`AtomicFile`]s through
/// [`Inputs::create`].
///
/// # Examples
///
/// ```
/// use std::io::Write;
/// use std::sync::Arc;
/// use binfmt_core::destination::{LocalDir, OutputDir};
/// let dir = tempfile::tempdir()?;
/// let out = LocalDir::new(dir.path(), Arc::default());
/// let mut file = out.create("a.bin")?;
/// file.write_all(b"data")?;
/// file.commit()?;
/// assert_eq!(std::fs::read(dir.path().join("a.bin"))?, b"data");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct LocalDir {
    root: PathBuf,
    inputs: Arc<Inputs>,
}

impl LocalDir {
    /// Outputs under `root` (created when the first output is), none over
    /// one of `inputs`.
    pub fn new(root: impl AsRef<Path>, inputs: Arc<Inputs>) -> Self {
        Self {
            root: root.as_ref().to_owned(),
            inputs,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        if self.root.as_os_str().is_empty() {
            PathBuf::from(name)
        } else {
            self.root.join(name)
        }
    }
}

impl OutputDir for LocalDir {
    fn create(&self, name: &str) -> Result<Box<dyn Destination>> {
        let path = self.path(name);
        if let Some(parent) = path.parent()
            && !parent.as_os_str().is_empty()
        {
            std::fs::create_dir_all(parent).map_err(|error| Error::io(parent, error))?;
        }
        Ok(Box::new(self.inputs.create(&path)?))
    }

    fn check(&self, name: &str) -> Result<()> {
        self.inputs.check(self.path(name))
    }

    fn remove(&self, name: &str) -> Result<()> {
        let path = self.path(name);
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => Err(Error::io(
                &path,
                std::io::Error::other("a directory is there, where a file was expected"),
            )),
            Ok(_) => std::fs::remove_file(&path).map_err(|error| Error::io(&path, error)),
            Err(_) => Ok(()),
        }
    }

    fn exists(&self, name: &str) -> Result<bool> {
        Ok(std::fs::symlink_metadata(self.path(name)).is_ok())
    }

    fn show(&self, name: &str) -> PathBuf {
        self.path(name)
    }

    fn local_path(&self) -> Option<&Path> {
        Some(&self.root)
    }
}

/// Splits an output location into its directory and file name: `a/b.arcx`
/// into `a` and `b.arcx` (`""` for a bare name), for opening the directory
/// as an [`OutputDir`].
pub fn split_location(location: &str) -> (&str, &str) {
    match location.rfind('/') {
        Some(0) => ("/", &location[1..]),
        Some(slash) => (&location[..slash], &location[slash + 1..]),
        None => ("", location),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_destination_dropped_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let out = LocalDir::new(dir.path(), Arc::default());
        let mut file = out.create("sub/a.bin").unwrap();
        file.write_all(b"partial").unwrap();
        drop(file);
        assert!(!out.exists("sub/a.bin").unwrap());
        assert_eq!(
            std::fs::read_dir(dir.path().join("sub")).unwrap().count(),
            0
        );
    }

    #[test]
    fn the_gate_refuses_an_input() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.bin");
        std::fs::write(&input, b"keep").unwrap();
        let out = LocalDir::new(dir.path(), Arc::new(Inputs::new(&[&input])));
        assert!(matches!(
            out.create("in.bin"),
            Err(Error::OutputIsInput { .. })
        ));
        assert_eq!(std::fs::read(&input).unwrap(), b"keep");
        out.remove("missing").unwrap();
        out.remove("in.bin").unwrap();
        assert!(!out.exists("in.bin").unwrap());
    }

    #[test]
    fn locations_split_at_the_last_slash() {
        assert_eq!(split_location("a/b/c.arcx"), ("a/b", "c.arcx"));
        assert_eq!(split_location("c.arcx"), ("", "c.arcx"));
        assert_eq!(split_location("/c.arcx"), ("/", "c.arcx"));
    }
}
