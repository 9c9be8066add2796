//! The untrusted-directory helper: a directory whose entries binfmt names
//! itself (a cache) but whose contents someone else may have touched.
//!
//! The path to the directory is the user's, and trusted like any path the
//! user names; what lies inside it is not. So:
//!
//! - [`private`] accepts the directory only if it is a real directory (not
//!   a symlink), owned by the effective user and writable by nobody else:
//!   no other user can plant, swap or delete entries in it;
//! - [`open_file`] opens an entry by a name binfmt chose, one path
//!   component, with `O_NOFOLLOW` (a symlink is refused, never followed)
//!   and `O_NONBLOCK` (a FIFO cannot hang the open), and keeps it only if
//!   the descriptor is a regular file owned by the user;
//! - [`subdir`] makes or opens a subdirectory, refusing anything but a real
//!   directory of the user's (a planted symlink to elsewhere is refused);
//! - [`remove_file`] deletes an entry only if it is, right then, a regular
//!   file of the user's (`unlink` never follows a symlink in the last
//!   component; the checks keep it from deleting what binfmt did not make).
//!
//! Callers still prove an entry is theirs by its content (a header and a
//! checksum they wrote) before trusting or deleting it.
//!
//! # Examples
//!
//! ```
//! # #[cfg(unix)] {
//! use binfmt_core::dir;
//! let root = tempfile::tempdir().unwrap();
//! let cache = root.path().join("cache");
//! dir::create_private(&cache).unwrap();
//! std::fs::write(cache.join("entry"), b"data").unwrap();
//! let (_, len) = dir::open_file(&cache, "entry").unwrap().unwrap();
//! assert_eq!(len, 4);
//! std::os::unix::fs::symlink("/etc/hostname", cache.join("planted")).unwrap();
//! assert!(dir::open_file(&cache, "planted").is_err()); // never followed
//! assert!(!dir::remove_file(&cache, "planted").unwrap()); // not ours
//! # }
//! ```

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use crate::error::{Error, IoResultExt, Result};
use crate::sys::effective_uid;

fn refused(path: &Path, why: &str) -> Error {
    Error::io(path, io::Error::new(io::ErrorKind::PermissionDenied, why))
}

/// A name that is one plain path component (no separator, not `.`/`..`).
fn component(dir: &Path, name: &str) -> Result<PathBuf> {
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\', '\0']) {
        return Err(refused(
            dir,
            "an entry name must be one plain path component",
        ));
    }
    Ok(dir.join(name))
}

/// `path` without trailing `/` or `.` components (`a/b/`, `a/b/.` are
/// `a/b`), so that the checks below see the last component itself and not
/// what a symlink there points to. Callers keep using the path this
/// returns.
pub fn normal(path: &Path) -> std::path::PathBuf {
    path.components().collect()
}

/// Checks that `path` is a directory of the effective user's that no other
/// user can write to (neither group- nor world-writable), and not a
/// symlink.
#[cfg(unix)]
pub fn private(path: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    // `link/` and `link/.` would be looked up through the symlink.
    let path = &normal(path);
    let metadata = fs::symlink_metadata(path).with_path(path)?;
    if metadata.file_type().is_symlink() {
        return Err(refused(
            path,
            "is a symlink: name the directory it points to",
        ));
    }
    if !metadata.is_dir() {
        return Err(refused(path, "is not a directory"));
    }
    if metadata.uid() != effective_uid() {
        return Err(refused(path, "is owned by another user"));
    }
    if metadata.mode() & 0o022 != 0 {
        return Err(refused(
            path,
            "is writable by other users (group or world): a cache directory is never shared",
        ));
    }
    Ok(())
}

/// Creates `path` (and its parents) if needed, the last one private
/// (mode 0700), then checks it with [`private`].
#[cfg(unix)]
pub fn create_private(path: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if fs::symlink_metadata(path).is_err() {
        if let Some(parent) = path
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
        {
            fs::create_dir_all(parent).with_path(parent)?;
        }
        match fs::DirBuilder::new().mode(0o700).create(path) {
            Ok(()) => {}
            // Made meanwhile by another process: checked below.
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
            Err(error) => return Err(error).with_path(path),
        }
    }
    private(path)
}

/// The subdirectory `name` of `dir`, made (mode 0700) if absent; refused
/// unless it is a real directory (not a symlink) owned by the user.
#[cfg(unix)]
pub fn subdir(dir: &Path, name: &str) -> Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let path = component(dir, name)?;
    match fs::DirBuilder::new().mode(0o700).create(&path) {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
        Err(error) => return Err(error).with_path(&path),
    }
    private(&path)?;
    Ok(path)
}

/// Opens the entry `name` of `dir` for reading: `Ok(None)` when it does
/// not exist; an error when it is a symlink, not a regular file or not the
/// user's. Returns the file and its length. Never blocks, never follows a
/// symlink.
#[cfg(unix)]
pub fn open_file(dir: &Path, name: &str) -> Result<Option<(File, u64)>> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let path = component(dir, name)?;
    let file = match fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(&path)
    {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        // ELOOP: the last component is a symlink.
        Err(error) if error.raw_os_error() == Some(libc::ELOOP) => {
            return Err(refused(&path, "is a symlink"));
        }
        Err(error) => return Err(error).with_path(&path),
    };
    let metadata = crate::input::checked_metadata(&file, &path)?;
    if metadata.uid() != effective_uid() {
        return Err(refused(&path, "is owned by another user"));
    }
    Ok(Some((file, metadata.len())))
}

/// The names of the entries of `dir` that are regular files of the user's
/// (by `lstat`: symlinks and everything else left out), with their
/// metadata.
#[cfg(unix)]
pub fn files(dir: &Path) -> Result<Vec<(String, fs::Metadata)>> {
    owned_entries(dir, fs::FileType::is_file)
}

/// The names of the entries of `dir` that are real directories of the
/// user's (symlinks left out).
#[cfg(unix)]
pub fn subdirs(dir: &Path) -> Result<Vec<String>> {
    Ok(owned_entries(dir, fs::FileType::is_dir)?
        .into_iter()
        .map(|(name, _)| name)
        .collect())
}

/// The entries of `dir` of the user's whose type (by `lstat`: a symlink is
/// never what it points at) passes `keep`, named in UTF-8, with their
/// metadata.
#[cfg(unix)]
fn owned_entries(
    dir: &Path,
    keep: fn(&fs::FileType) -> bool,
) -> Result<Vec<(String, fs::Metadata)>> {
    use std::os::unix::fs::MetadataExt;
    let uid = effective_uid();
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).with_path(dir)?.flatten() {
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        // DirEntry::metadata does not follow symlinks.
        let Ok(metadata) = entry.metadata() else {
            continue;
        };
        if keep(&metadata.file_type()) && metadata.uid() == uid {
            found.push((name, metadata));
        }
    }
    Ok(found)
}

/// Deletes the entry `name` of `dir` if it is a regular file of the
/// user's; `Ok(false)` (nothing deleted) for anything else or nothing.
#[cfg(unix)]
pub fn remove_file(dir: &Path, name: &str) -> Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let path = component(dir, name)?;
    let Ok(metadata) = fs::symlink_metadata(&path) else {
        return Ok(false);
    };
    if !metadata.file_type().is_file() || metadata.uid() != effective_uid() {
        return Ok(false);
    }
    match fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(error) => Err(error).with_path(&path),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn only_private_real_directories_are_accepted() {
        let root = tempfile::tempdir().unwrap();
        let cache = root.path().join("a/cache");
        create_private(&cache).unwrap();
        assert_eq!(
            fs::metadata(&cache).unwrap().permissions().mode() & 0o777,
            0o700
        );
        fs::set_permissions(&cache, fs::Permissions::from_mode(0o1777)).unwrap();
        assert!(private(&cache).is_err());
        fs::set_permissions(&cache, fs::Permissions::from_mode(0o770)).unwrap();
        assert!(private(&cache).is_err());
        fs::set_permissions(&cache, fs::Permissions::from_mode(0o755)).unwrap();
        private(&cache).unwrap();
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&cache, &link).unwrap();
        assert!(private(&link).is_err());
    }

    #[test]
    fn entries_are_never_followed_blocked_on_or_deleted_unless_plain_files() {
        let root = tempfile::tempdir().unwrap();
        let outside = root.path().join("victim");
        fs::write(&outside, b"precious").unwrap();
        let cache = root.path().join("cache");
        create_private(&cache).unwrap();
        std::os::unix::fs::symlink(&outside, cache.join("link")).unwrap();
        assert!(open_file(&cache, "link").is_err());
        assert!(!remove_file(&cache, "link").unwrap());
        let fifo = cache.join("fifo");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        assert!(open_file(&cache, "fifo").is_err()); // at once, not blocked
        assert!(!remove_file(&cache, "fifo").unwrap());
        assert!(open_file(&cache, "absent").unwrap().is_none());
        assert!(open_file(&cache, "../victim").is_err());
        fs::create_dir(root.path().join("elsewhere")).unwrap();
        std::os::unix::fs::symlink(root.path().join("elsewhere"), cache.join("sub")).unwrap();
        assert!(subdir(&cache, "sub").is_err());
        assert!(subdirs(&cache).unwrap().is_empty());
        assert_eq!(files(&cache).unwrap().len(), 0);
        fs::write(cache.join("mine"), b"x").unwrap();
        assert!(remove_file(&cache, "mine").unwrap());
        assert_eq!(fs::read(&outside).unwrap(), b"precious");
    }
}
