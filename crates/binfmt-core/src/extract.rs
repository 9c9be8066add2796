//! Turning entry names from a file into paths under a target directory.
//!
//! Entry names come from the file, so they are untrusted: a tar member, an
//! archive path or a key could name `../../etc/passwd`. [`safe_target`] is
//! the one gate every extractor goes through.

use std::fs;
use std::path::{Component, Path, PathBuf};

use crate::error::{Error, IoResultExt, Result};

/// Where entry `name` goes under `dir`, after refusing absolute paths, `.`
/// and `..` components, empty components, backslashes and NUL bytes, and
/// creating its parent directories without following symlinks.
///
/// The returned path's parent exists and is a real directory inside `dir`;
/// the file itself is the caller's to create (atomically, so that a symlink
/// already at its place is replaced, never followed).
pub fn safe_target(dir: impl AsRef<Path>, name: &str) -> Result<PathBuf> {
    let dir = dir.as_ref();
    let refuse = |why| Error::UnsafePath {
        name: name.to_owned(),
        why,
    };
    check_relative_name(name).map_err(refuse)?;
    let mut current = dir.to_path_buf();
    let parts: Vec<&str> = name.split('/').collect();
    for part in parts.iter().take(parts.len().saturating_sub(1)) {
        current.push(part);
        match fs::symlink_metadata(&current) {
            Ok(metadata) if metadata.file_type().is_symlink() => {
                return Err(refuse("a directory on the way is a symlink"));
            }
            Ok(metadata) if metadata.is_dir() => {}
            Ok(_) => return Err(refuse("a directory on the way is a file")),
            Err(_) => fs::create_dir(&current).with_path(&current)?,
        }
    }
    Ok(dir.join(name))
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
