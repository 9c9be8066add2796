//! The input gate: every file a binfmt command reads is opened here.
//!
//! A command reads only regular files. The kind is checked on the open
//! descriptor (`fstat`), never on the path before opening, so a path
//! swapped between a check and the open cannot slip through; the open
//! itself never blocks (`O_NONBLOCK`: a FIFO without a writer would block a
//! plain open) and never makes a terminal the controlling one (`O_NOCTTY`).
//! FIFOs, devices (`/dev/zero` behind a symlink), sockets and directories
//! are refused by name before a byte is read.
//!
//! [`read`] and [`read_to_string`] take a whole small file (a shard list, a
//! DALI `.idx`, a `.npy` header's file) and refuse one larger than the
//! caller's limit instead of growing without bound.
//!
//! # Examples
//!
//! ```
//! # fn main() -> binfmt_core::Result<()> {
//! let dir = tempfile::tempdir().unwrap();
//! let list = dir.path().join("shards.txt");
//! std::fs::write(&list, "a.tar\nb.tar\n").unwrap();
//! let text = binfmt_core::input::read_to_string(&list, 1 << 20, "shard list")?;
//! assert_eq!(text.lines().count(), 2);
//! // A directory is refused by kind, not read.
//! assert!(binfmt_core::input::open(dir.path()).is_err());
//! # Ok(())
//! # }
//! ```

use std::fs::{self, File};
use std::io::Read;
use std::path::Path;

use crate::error::{Error, IoResultExt, Result, What};

/// Opens the regular file at `path` for reading and returns it with its
/// length. Symlinks the user named are followed to what they point at, and
/// that must be a regular file.
pub fn open(path: impl AsRef<Path>) -> Result<(File, u64)> {
    let path = path.as_ref();
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let file = match options.open(path) {
        Ok(file) => file,
        Err(error) => {
            // Some kinds cannot be opened at all (a socket): name the kind
            // rather than the open's error.
            check_regular(path)?;
            return Err(error).with_path(path);
        }
    };
    let len = check_descriptor(&file, path)?;
    Ok((file, len))
}

/// Checks that an open `file` (named `name` in errors) is a regular file
/// and returns its length.
pub fn check_descriptor(file: &File, name: &Path) -> Result<u64> {
    checked_metadata(file, name).map(|metadata| metadata.len())
}

/// [`check_descriptor`]'s check, giving the descriptor's metadata (one
/// `fstat` for callers that check more of it).
pub fn checked_metadata(file: &File, name: &Path) -> Result<std::fs::Metadata> {
    let metadata = file.metadata().with_path(name)?;
    if !metadata.is_file() {
        return Err(Error::NotRegularFile {
            path: name.to_owned(),
            kind: file_kind(&metadata),
        });
    }
    Ok(metadata)
}

/// Reads the whole regular file at `path`, refusing one of more than
/// `limit` bytes (`what` names it in the error). The length found at open
/// only sizes the buffer; reading stops at `limit + 1` bytes whatever the
/// file does meanwhile.
pub fn read(path: impl AsRef<Path>, limit: u64, what: impl Into<What>) -> Result<Vec<u8>> {
    let path = path.as_ref();
    let (file, len) = open(path)?;
    let what = what.into();
    if len > limit {
        return Err(too_large(path, what, len, limit));
    }
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(usize::try_from(len).unwrap_or(0).saturating_add(1))
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::OutOfMemory))
        .with_path(path)?;
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .with_path(path)?;
    let read = bytes.len() as u64;
    if read > limit {
        return Err(too_large(path, what, read, limit));
    }
    Ok(bytes)
}

/// [`read`], as UTF-8 text.
pub fn read_to_string(path: impl AsRef<Path>, limit: u64, what: impl Into<What>) -> Result<String> {
    let path = path.as_ref();
    let what = what.into();
    let bytes = read(path, limit, what.clone())?;
    String::from_utf8(bytes).map_err(|error| {
        Error::corrupt(
            what,
            format!(
                "{}: not UTF-8 text (byte {})",
                path.display(),
                error.utf8_error().valid_up_to()
            ),
        )
    })
}

fn too_large(path: &Path, what: What, value: u64, limit: u64) -> Error {
    Error::LimitExceeded {
        what: format!("{} {what}", path.display()).into(),
        value,
        limit,
    }
}

/// Refuses anything but a regular file (symlinks are followed).
fn check_regular(path: &Path) -> Result<()> {
    let metadata = fs::metadata(path).with_path(path)?;
    if metadata.is_file() {
        return Ok(());
    }
    Err(Error::NotRegularFile {
        path: path.to_owned(),
        kind: file_kind(&metadata),
    })
}

pub(crate) fn file_kind(metadata: &fs::Metadata) -> &'static str {
    let file_type = metadata.file_type();
    if file_type.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "a FIFO";
        }
        if file_type.is_char_device() {
            return "a character device";
        }
        if file_type.is_block_device() {
            return "a block device";
        }
        if file_type.is_socket() {
            return "a socket";
        }
    }
    "not a regular file"
}
