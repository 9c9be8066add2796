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
//! umask 022); replacing an existing regular file keeps its permission bits;
//! [`AtomicFile::mode`] sets them. Only permission bits are ever set: no
//! writer creates a setuid, setgid or sticky file, and a symlink at the
//! destination is replaced, never followed (its target's mode is not
//! copied either).
//!
//! The temporary file is `.NAME.XXXXXX.tmp` beside the destination, or
//! `.binfmt.XXXXXX.tmp` when that would not fit in a 255-byte file name, so
//! every destination whose own name fits can be written.

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
    modified: Option<std::time::SystemTime>,
}

/// The longest file name most file systems take.
const NAME_MAX: usize = 255;

impl AtomicFile {
    /// Starts writing the file that will replace `destination`.
    ///
    /// What is at `destination` must be a regular file, a symlink (which is
    /// replaced, not followed) or nothing: a FIFO, a device, a socket or a
    /// directory named as an output is refused before anything is written,
    /// never replaced by a regular file (`-o /dev/null` as root would
    /// otherwise replace the device node).
    pub fn create(destination: impl AsRef<Path>) -> Result<Self> {
        let destination = destination.as_ref();
        let existing = fs::symlink_metadata(destination).ok();
        if let Some(metadata) = &existing
            && !metadata.is_file()
            && !metadata.file_type().is_symlink()
        {
            return Err(Error::io(
                destination,
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "{} is there: binfmt writes outputs as regular files and never replaces one that is not",
                        crate::input::file_kind(metadata)
                    ),
                ),
            ));
        }
        Self::create_as(destination, mode_for(existing.as_ref()))
    }

    /// Starts writing a file that will have the permission bits `mode`
    /// (as [`AtomicFile::mode`] sets them) at `destination`: the same as
    /// [`AtomicFile::create`] then [`AtomicFile::mode`], without looking
    /// at what is at `destination` now (one `lstat` less per file, for an
    /// extraction that restores every file's mode).
    pub fn create_with_mode(destination: impl AsRef<Path>, mode: u32) -> Result<Self> {
        Self::create_as(destination.as_ref(), mode & 0o777)?.mode(mode)
    }

    /// [`AtomicFile::create`] with the temporary file created with the
    /// permission bits `mode` (under the umask, on Unix).
    fn create_as(destination: &Path, mode: u32) -> Result<Self> {
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
        // ".", the name, ".", 6 random characters, ".tmp".
        if name.len() + 12 <= NAME_MAX {
            prefix.push(name);
        } else {
            prefix.push("binfmt");
        }
        prefix.push(".");
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".tmp");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(fs::Permissions::from_mode(mode));
        }
        #[cfg(not(unix))]
        let _ = mode;
        let temp = builder.tempfile_in(directory).with_path(destination)?;
        Ok(Self {
            // Small enough that large writes (a block, a shard) bypass the buffer
            // instead of being copied through it.
            writer: BufWriter::with_capacity(64 << 10, temp),
            destination: destination.to_owned(),
            durable: false,
            modified: None,
        })
    }

    /// Sets the file's permission bits (masked to `0o777`: never setuid,
    /// setgid or sticky).
    pub fn mode(self, mode: u32) -> Result<Self> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            self.writer
                .get_ref()
                .as_file()
                .set_permissions(fs::Permissions::from_mode(mode & 0o777))
                .with_path(&self.destination)?;
        }
        #[cfg(not(unix))]
        let _ = mode;
        Ok(self)
    }

    /// Sets the modification time the file will have once committed.
    pub fn modified(mut self, time: std::time::SystemTime) -> Self {
        self.modified = Some(time);
        self
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
        if let Some(time) = self.modified {
            temp.as_file().set_modified(time).with_path(&destination)?;
        }
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

/// The permission bits of the regular file being replaced, or 0644 for a
/// new one (or when a symlink or anything else is in the way: its target's
/// mode must not leak into the new file).
/// The mode a new file gets: an existing regular file's permission bits,
/// 0644 otherwise.
fn mode_for(existing: Option<&fs::Metadata>) -> u32 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        existing
            .filter(|metadata| metadata.is_file())
            .map_or(0o644, |metadata| metadata.permissions().mode() & 0o777)
    }
    #[cfg(not(unix))]
    {
        let _ = existing;
        0o644
    }
}

/// Whether `a` and `b` name the same existing file (device and inode), so
/// a command can refuse to write its output over one of its inputs.
pub fn same_file(a: impl AsRef<Path>, b: impl AsRef<Path>) -> bool {
    let (a, b) = (a.as_ref(), b.as_ref());
    match (fs::metadata(a), fs::metadata(b)) {
        #[cfg(unix)]
        (Ok(a), Ok(b)) => {
            use std::os::unix::fs::MetadataExt;
            a.dev() == b.dev() && a.ino() == b.ino()
        }
        #[cfg(not(unix))]
        (Ok(_), Ok(_)) => a.canonicalize().ok() == b.canonicalize().ok(),
        _ => false,
    }
}

/// The files a command reads, by identity (device and inode, symlinks
/// followed), so that each output can be refused in O(1) when it is one of
/// them (a fold of 10,000 shards extracts 10,000 files).
#[derive(Debug, Default)]
pub struct Inputs {
    by_identity: std::collections::HashMap<(u64, u64), std::path::PathBuf>,
    /// Remote inputs: the URL (as the remote crate normalises it) and the
    /// ETag of the version read, when the server gave one.
    remote: Vec<(String, Option<String>)>,
}

impl Inputs {
    /// The identities of the `paths` that exist (a remote URL or a missing
    /// file has none, and never matches).
    pub fn new<P: AsRef<Path>>(paths: &[P]) -> Self {
        let by_identity = paths
            .iter()
            .filter_map(|path| Some((identity(path.as_ref())?, path.as_ref().to_path_buf())))
            .collect();
        Self {
            by_identity,
            remote: Vec::new(),
        }
    }

    /// Adds a remote input: its `url` (normalised, without credentials) and
    /// the ETag of the version read.
    pub fn add_remote(&mut self, url: &str, etag: Option<&str>) {
        self.remote.push((url.to_owned(), etag.map(str::to_owned)));
    }

    /// The remote input an output at `url` would replace: the same URL, or
    /// an object whose ETag (`etag`, what is at `url` now) is an input's.
    pub fn remote_named_by(&self, url: &str, etag: Option<&str>) -> Option<&str> {
        self.remote
            .iter()
            .find(|(input, input_etag)| {
                input == url || (etag.is_some() && input_etag.as_deref() == etag)
            })
            .map(|(input, _)| input.as_str())
    }

    /// Adds `path` to the inputs (when it exists).
    pub fn add(&mut self, path: impl AsRef<Path>) {
        let path = path.as_ref();
        if let Some(id) = identity(path) {
            self.by_identity
                .entry(id)
                .or_insert_with(|| path.to_owned());
        }
    }

    /// The input that `output` names, if any.
    pub fn named_by(&self, output: &Path) -> Option<&Path> {
        self.by_identity
            .get(&identity(output)?)
            .map(std::path::PathBuf::as_path)
    }

    /// The output gate's check: refuses an `output` that names one of the
    /// inputs (by device and inode, so through a hard link or a symlink
    /// too) with [`Error::OutputIsInput`].
    pub fn check(&self, output: impl AsRef<Path>) -> Result<()> {
        let output = output.as_ref();
        match self.named_by(output) {
            Some(input) => Err(Error::OutputIsInput {
                output: output.to_owned(),
                input: input.to_owned(),
            }),
            None => Ok(()),
        }
    }

    /// The output gate: [`Inputs::check`], then [`AtomicFile::create`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::Write;
    /// use binfmt_core::Inputs;
    /// let dir = tempfile::tempdir().unwrap();
    /// let input = dir.path().join("in.bin");
    /// std::fs::write(&input, b"data").unwrap();
    /// let inputs = Inputs::new(&[&input]);
    /// assert!(inputs.create(&input).is_err(), "never over an input");
    /// let mut out = inputs.create(dir.path().join("out.bin")).unwrap();
    /// out.write_all(b"new").unwrap();
    /// out.commit().unwrap();
    /// ```
    pub fn create(&self, output: impl AsRef<Path>) -> Result<AtomicFile> {
        let output = output.as_ref();
        self.check(output)?;
        AtomicFile::create(output)
    }
}

/// A file's device and inode (on other systems, a hash of its canonical
/// path), symlinks followed.
fn identity(path: &Path) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let metadata = fs::metadata(path).ok()?;
        Some((metadata.dev(), metadata.ino()))
    }
    #[cfg(not(unix))]
    {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        path.canonicalize().ok()?.hash(&mut hasher);
        Some((0, hasher.finish()))
    }
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

    #[cfg(unix)]
    #[test]
    fn a_fifo_or_directory_named_as_an_output_is_refused_not_replaced() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let error = AtomicFile::create(&fifo).unwrap_err();
        assert!(error.to_string().contains("a FIFO is there"), "{error}");
        assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
        let error = AtomicFile::create(dir.path()).unwrap_err();
        assert!(
            error.to_string().contains("a directory is there"),
            "{error}"
        );
        // A symlink is replaced, never followed (as before).
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        let mut out = AtomicFile::create(&link).unwrap();
        out.write_all(b"x").unwrap();
        out.commit().unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().is_file());
        assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
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

    #[cfg(unix)]
    #[test]
    fn special_bits_are_never_set_and_symlink_targets_never_copied() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let setuid = dir.path().join("setuid-target");
        fs::write(&setuid, b"x").unwrap();
        fs::set_permissions(&setuid, fs::Permissions::from_mode(0o4755)).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&setuid, &link).unwrap();
        let mut file = AtomicFile::create(&link).unwrap();
        file.write_all(b"archive bytes").unwrap();
        file.commit().unwrap();
        let written = fs::symlink_metadata(&link).unwrap();
        assert!(written.is_file(), "the symlink was replaced");
        assert_eq!(written.permissions().mode() & 0o7777, 0o644);
        assert_eq!(
            fs::metadata(&setuid).unwrap().permissions().mode() & 0o7777,
            0o4755
        );
        assert_eq!(fs::read(&setuid).unwrap(), b"x");

        let explicit = dir.path().join("explicit");
        AtomicFile::create(&explicit)
            .unwrap()
            .mode(0o6755)
            .unwrap()
            .commit()
            .unwrap();
        assert_eq!(
            fs::metadata(&explicit).unwrap().permissions().mode() & 0o7777,
            0o755
        );
        // The mode given at creation, whatever is in the way: a file of
        // another mode, or a symlink to a setuid file (never followed).
        fs::write(&explicit, b"old").unwrap();
        fs::set_permissions(&explicit, fs::Permissions::from_mode(0o600)).unwrap();
        let given = dir.path().join("given-link");
        std::os::unix::fs::symlink(&setuid, &given).unwrap();
        for path in [&explicit, &given] {
            let mut file = AtomicFile::create_with_mode(path, 0o4751).unwrap();
            file.write_all(b"new").unwrap();
            file.commit().unwrap();
            let written = fs::symlink_metadata(path).unwrap();
            assert!(written.is_file());
            assert_eq!(written.permissions().mode() & 0o7777, 0o751);
            assert_eq!(fs::read(path).unwrap(), b"new");
        }
        assert_eq!(fs::read(&setuid).unwrap(), b"x");
        // Replacing a setuid file keeps only its permission bits.
        AtomicFile::create(&setuid).unwrap().commit().unwrap();
        assert_eq!(
            fs::metadata(&setuid).unwrap().permissions().mode() & 0o7777,
            0o755
        );
    }

    #[test]
    fn every_name_that_fits_can_be_written() {
        let dir = tempfile::tempdir().unwrap();
        for len in [1, 200, 243, 244, 250, 255] {
            let path = dir.path().join("n".repeat(len));
            let mut file = AtomicFile::create(&path).unwrap();
            file.write_all(b"long").unwrap();
            file.commit().unwrap();
            assert_eq!(fs::read(&path).unwrap(), b"long", "{len}");
        }
    }

    #[test]
    fn modification_times_are_set_before_the_rename() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dated");
        let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
        AtomicFile::create(&path)
            .unwrap()
            .modified(time)
            .commit()
            .unwrap();
        assert_eq!(fs::metadata(&path).unwrap().modified().unwrap(), time);
    }

    #[test]
    fn same_file_compares_identity() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        fs::write(&a, b"1").unwrap();
        let alias = dir.path().join(".").join("a");
        assert!(same_file(&a, &alias));
        let b = dir.path().join("b");
        fs::write(&b, b"1").unwrap();
        assert!(!same_file(&a, &b));
        assert!(!same_file(&a, dir.path().join("missing")));
    }

    #[test]
    fn missing_directory_fails_with_the_destination_path() {
        let error = AtomicFile::create("/nonexistent/binfmt/dir/out.bin").unwrap_err();
        assert!(matches!(&error, Error::Io { path, .. } if path.ends_with("out.bin")));
    }
}
