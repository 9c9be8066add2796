//! Turning entry names from a file into paths under a target directory.
//!
//! Entry names come from the file, so they are untrusted: a tar member, an
//! archive path or a key could name `../../etc/passwd`. [`safe_target`] is
//! the one gate every extractor goes through.

use std::collections::HashSet;
use std::fs;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

use crate::error::{Error, IoResultExt, Result};

/// Makes the directory a command writes files into (and its parents). A
/// path already there that is not a directory is named as what it is, with
/// the way out, rather than as the system's bare "File exists".
pub fn create_dir(dir: impl AsRef<Path>) -> Result<()> {
    let dir = dir.as_ref();
    match fs::create_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(error) => match fs::metadata(dir) {
            Ok(there) if !there.is_dir() => Err(Error::io(
                dir,
                std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    format!(
                        "{} is there, not a directory: the files go into a directory; \
                         give -o a new or existing directory",
                        if there.is_file() {
                            "a file"
                        } else {
                            crate::input::file_kind(&there)
                        }
                    ),
                ),
            )),
            _ => Err(Error::io(dir, error)),
        },
    }
}

/// Where entry `name` goes under `dir`, after refusing absolute paths, `.`
/// and `..` components, empty components, backslashes and NUL bytes, and
/// creating its parent directories without following symlinks.
///
/// The returned path's parent exists and is a real directory inside `dir`;
/// the file itself is the caller's to create (atomically, so that a symlink
/// already at its place is replaced, never followed). An extraction of many
/// entries uses one [`Targets`], which checks each directory once.
pub fn safe_target(dir: impl AsRef<Path>, name: &str) -> Result<PathBuf> {
    Targets::new(dir).target(name)
}

/// The extraction gate for one directory, remembering the directories it
/// has checked or created so each is checked once, not once per entry
/// under it. Shared by threads extracting side by side.
#[derive(Debug)]
pub struct Targets {
    dir: PathBuf,
    known: Mutex<HashSet<String>>,
}

impl Targets {
    /// The gate for entries extracted under `dir`.
    pub fn new(dir: impl AsRef<Path>) -> Self {
        Self {
            dir: dir.as_ref().to_owned(),
            known: Mutex::new(HashSet::new()),
        }
    }

    /// Where entry `name` goes: see [`safe_target`].
    pub fn target(&self, name: &str) -> Result<PathBuf> {
        let refuse = |why| Error::UnsafePath {
            name: name.to_owned(),
            why,
        };
        check_relative_name(name).map_err(refuse)?;
        let ends = name.match_indices('/').map(|(at, _)| at);
        for end in ends {
            let parent = name.get(..end).unwrap_or_default();
            if self.is_known(parent) {
                continue;
            }
            let current = self.dir.join(parent);
            match fs::symlink_metadata(&current) {
                Ok(metadata) if metadata.file_type().is_symlink() => {
                    return Err(refuse("a directory on the way is a symlink"));
                }
                Ok(metadata) if metadata.is_dir() => {}
                Ok(_) => return Err(refuse("a directory on the way is a file")),
                Err(_) => match fs::create_dir(&current) {
                    Ok(()) => {}
                    // Another thread made it first: it must be a directory.
                    Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                        let made = fs::symlink_metadata(&current).with_path(&current)?;
                        if !made.is_dir() {
                            return Err(refuse("a directory on the way is not a directory"));
                        }
                    }
                    Err(error) => return Err(Error::io(&current, error)),
                },
            }
            self.known
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(parent.to_owned());
        }
        Ok(self.dir.join(name))
    }

    fn is_known(&self, parent: &str) -> bool {
        self.known
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(parent)
    }
}

/// Checks that `name` is a relative `/`-separated path that stays inside
/// any directory it is joined to: non-empty, no NUL, no backslash, not
/// absolute, no empty, `.` or `..` component. Returns why it is not.
pub fn check_relative_name(name: &str) -> std::result::Result<(), &'static str> {
    if name.is_empty() {
        return Err("empty name");
    }
    if name.contains('\0') {
        return Err("NUL byte in the name");
    }
    if name.contains('\\') {
        return Err("backslash in the name");
    }
    if name.starts_with('/') {
        return Err("absolute path");
    }
    // Splitting on `/` sees `a//b` and `a/./b`, which `Path::components` folds away.
    for part in name.split('/') {
        match part {
            "" => return Err("empty component"),
            "." => return Err("'.' component"),
            ".." => return Err("'..' component"),
            _ => {}
        }
    }
    // On platforms where other characters separate or root a path.
    if Path::new(name)
        .components()
        .any(|component| !matches!(component, Component::Normal(_)))
    {
        return Err("absolute path");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn refuses_names_outside_the_target() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "../x",
            "/etc/x",
            "a/../../x",
            "a/./b",
            "",
            "a//b",
            "nul\0byte",
            "back\\slash",
            "./x",
            "a/..",
            "trailing/",
        ] {
            assert!(
                matches!(safe_target(dir.path(), name), Err(Error::UnsafePath { .. })),
                "{name:?} was accepted"
            );
        }
        assert_eq!(
            safe_target(dir.path(), "ok/file.txt").unwrap(),
            dir.path().join("ok/file.txt")
        );
        assert!(dir.path().join("ok").is_dir());
    }

    #[cfg(unix)]
    #[test]
    fn never_creates_directories_through_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("sub")).unwrap();
        assert!(matches!(
            safe_target(dir.path(), "sub/deeper/file"),
            Err(Error::UnsafePath { .. })
        ));
        assert!(!outside.path().join("deeper").exists());
        std::fs::write(dir.path().join("plain"), b"").unwrap();
        assert!(matches!(
            safe_target(dir.path(), "plain/file"),
            Err(Error::UnsafePath { .. })
        ));
    }
}
