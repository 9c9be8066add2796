//! Where a command's outputs go: a local path, a `file://` URL or an
//! `s3://` URL, each opened as an [`OutputDir`] behind the output gate.
//!
//! ```text
//! data/out.arcx            LocalDir("data") + "out.arcx"
//! file:///srv/out.arcx     LocalDir("/srv") + "out.arcx"
//! s3://bucket/p/out.arcx   RemoteDir("s3://bucket/p") + "out.arcx"   (multipart upload)
//! http(s)://...            refused: HTTP servers take no uploads here
//! ```
//!
//! The gate's inputs are the command's: local files by device and inode,
//! remote objects by URL and by the ETag of the version read
//! ([`gate_inputs`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use binfmt_core::destination::split_location;
use binfmt_core::{Destination, Inputs, LocalDir, OutputDir};

use crate::entries::EntrySource;
use crate::error::{Error, InFile, Result};

/// One output: the directory it goes in and its name there.
#[derive(Debug, Clone)]
pub struct Output {
    /// The directory (local or a remote prefix).
    pub dir: Arc<dyn OutputDir>,
    /// The file's name in it.
    pub name: String,
}

impl Output {
    /// Opens the output at `location` (a path, `file://` or `s3://` URL),
    /// gated by `inputs`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::Write;
    /// let dir = tempfile::tempdir()?;
    /// let location = dir.path().join("out.bin");
    /// let output = binfmt::outputs::Output::open(&location, Default::default(), &Default::default())?;
    /// let mut file = output.create()?;
    /// file.write_all(b"data")?;
    /// file.commit()?;
    /// assert_eq!(std::fs::read(&location)?, b"data");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(
        location: impl AsRef<Path>,
        inputs: Arc<Inputs>,
        remote: &binfmt_remote::RemoteOptions,
    ) -> Result<Self> {
        let location = location.as_ref();
        let text = location.to_str();
        if let Some(url) = text.filter(|text| binfmt_remote::is_remote(text)) {
            // URL parsing drops tabs and newlines silently: an output named
            // with one is refused, never written under another name.
            if url.chars().any(char::is_control) {
                return Err(Error::Unsupported {
                    file: binfmt_core::print::line(binfmt_core::print::redact(url)),
                    why: "an output URL holds a control character: percent-encode it".into(),
                });
            }
            let (dir, name) = split_location(url);
            check_name(url, name)?;
            let dir = remote_dir(dir, inputs, remote)?;
            // Credentials, the bucket and the gate, before any work.
            dir.check(name).in_file(&binfmt_core::print::redact(url))?;
            return Ok(Self {
                dir,
                name: name.to_owned(),
            });
        }
        let path = match text.and_then(|text| text.strip_prefix("file://")) {
            Some(rest) => file_url_path(rest, location)?,
            None => location.to_owned(),
        };
        let name = path
            .file_name()
            .and_then(|name| name.to_str())
            .ok_or_else(|| Error::Unsupported {
                file: path.display().to_string(),
                why: "an output needs a UTF-8 file name".into(),
            })?
            .to_owned();
        let parent = path.parent().unwrap_or(Path::new(""));
        Ok(Self {
            dir: Arc::new(LocalDir::new(parent, inputs)),
            name,
        })
    }

    /// Starts writing it, through the gate.
    pub fn create(&self) -> Result<Box<dyn Destination>> {
        self.dir
            .create(&self.name)
            .in_file(&self.shown().display().to_string())
    }

    /// How it is shown: the path or the URL.
    pub fn shown(&self) -> PathBuf {
        self.dir.show(&self.name)
    }

    /// Whether it goes to object storage.
    pub fn is_remote(&self) -> bool {
        self.dir.local_path().is_none()
    }
}

/// Opens `location` (a path, `file://` or `s3://` URL) as a directory
/// outputs are written in.
pub fn output_dir(
    location: impl AsRef<Path>,
    inputs: Arc<Inputs>,
    remote: &binfmt_remote::RemoteOptions,
) -> Result<Arc<dyn OutputDir>> {
    let location = location.as_ref();
    match location.to_str() {
        Some(url) if binfmt_remote::is_remote(url) => remote_dir(url, inputs, remote),
        Some(url) if url.starts_with("file://") => Ok(Arc::new(LocalDir::new(
            file_url_path(&url["file://".len()..], location)?,
            inputs,
        ))),
        _ => Ok(Arc::new(LocalDir::new(location, inputs))),
    }
}

fn remote_dir(
    url: &str,
    inputs: Arc<Inputs>,
    remote: &binfmt_remote::RemoteOptions,
) -> Result<Arc<dyn OutputDir>> {
    let dir = binfmt_remote::RemoteDir::open(
        url,
        remote,
        inputs,
        binfmt_remote::UploadOptions::default(),
    )
    .map_err(remote_error)?;
    Ok(Arc::new(dir))
}

fn check_name(url: &str, name: &str) -> Result<()> {
    if name.is_empty() || name == "." || name == ".." {
        return Err(Error::Unsupported {
            file: binfmt_core::print::redact(url).into_owned(),
            why: "an output URL names an object: it cannot end in '/'".into(),
        });
    }
    Ok(())
}

/// The path of a `file://` URL: `file:///abs/path` (an empty host or
/// `localhost`), percent-decoded.
fn file_url_path(rest: &str, location: &Path) -> Result<PathBuf> {
    let path = rest.strip_prefix("localhost").unwrap_or(rest);
    let bad = || Error::Unsupported {
        file: location.display().to_string(),
        why: "a file:// URL names a local path: file:///absolute/path".into(),
    };
    if !path.starts_with('/') {
        return Err(bad());
    }
    let bytes = path.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        if byte == b'%' {
            let hex = bytes
                .get(at + 1..at + 3)
                .and_then(|hex| std::str::from_utf8(hex).ok())
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                .ok_or_else(bad)?;
            decoded.push(hex);
            at += 3;
        } else {
            decoded.push(byte);
            at += 1;
        }
    }
    let text = String::from_utf8(decoded).map_err(|_| bad())?;
    if text.contains('\0') {
        return Err(bad());
    }
    Ok(PathBuf::from(text))
}

/// Packs the tree under `dir` into an ARCX archive at `location` (a path,
/// `file://` or `s3://` URL; see [`binfmt_arcx::pack_dir`]).
pub fn pack_arcx_dir(
    dir: impl AsRef<Path>,
    location: impl AsRef<Path>,
    options: binfmt_arcx::PackOptions,
    remote: &binfmt_remote::RemoteOptions,
    progress: impl FnMut(binfmt_arcx::PackProgress),
) -> Result<binfmt_arcx::PackSummary> {
    let location = location.as_ref();
    let shown = location.display().to_string();
    let out = Output::open(location, Arc::default(), remote)?;
    if out.is_remote() {
        let create = || {
            out.dir
                .create(&out.name)
                .map_err(binfmt_arcx::ArcxError::from)
        };
        binfmt_arcx::pack_dir_into(dir, create, &out.shown(), None, options, progress)
    } else {
        binfmt_arcx::pack_dir(dir, out.shown(), options, progress)
    }
    .in_file(&shown)
}

/// Moves the file or object `from` to `to`: both local (an atomic
/// rename), or both in one S3 bucket (a server-side copy, then a delete;
/// objects up to 5 GB).
pub fn rename(from: &str, to: &str, remote: &binfmt_remote::RemoteOptions) -> Result<()> {
    match (bucket_and_key(from), bucket_and_key(to)) {
        (Some((bucket, key)), Some((other, target))) if bucket == other => {
            let root = binfmt_remote::RemoteDir::open(
                &format!("s3://{bucket}"),
                remote,
                Arc::default(),
                binfmt_remote::UploadOptions::default(),
            )
            .map_err(remote_error)?;
            root.rename(key, target).map_err(remote_error)
        }
        (None, None) if !binfmt_remote::is_remote(from) && !binfmt_remote::is_remote(to) => {
            std::fs::rename(from, to).map_err(|error| Error::Core {
                file: from.to_owned(),
                source: binfmt_core::Error::io(from, error),
            })
        }
        _ => Err(Error::Unsupported {
            file: binfmt_core::print::redact(from).into_owned(),
            why: "a rename stays local, or within one S3 bucket".into(),
        }),
    }
}

/// Removes the file or object at `location`; a missing one is not an error.
pub fn remove(location: &str, remote: &binfmt_remote::RemoteOptions) -> Result<()> {
    let out = Output::open(location, Arc::default(), remote)?;
    out.dir
        .remove(&out.name)
        .in_file(&out.shown().display().to_string())
}

/// The names of the files (local) or objects (S3) directly under
/// `location`, sorted.
pub fn list_dir(location: &str, remote: &binfmt_remote::RemoteOptions) -> Result<Vec<String>> {
    let mut names = if binfmt_remote::is_remote(location) {
        binfmt_remote::RemoteDir::open(
            location,
            remote,
            Arc::default(),
            binfmt_remote::UploadOptions::default(),
        )
        .and_then(|dir| dir.list())
        .map_err(remote_error)?
    } else {
        let mut names = Vec::new();
        let entries = std::fs::read_dir(location).map_err(|error| Error::Core {
            file: location.to_owned(),
            source: binfmt_core::Error::io(location, error),
        })?;
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|kind| kind.is_file())
                && let Some(name) = entry.file_name().to_str()
            {
                names.push(name.to_owned());
            }
        }
        names
    };
    names.sort();
    Ok(names)
}

/// `s3://BUCKET/KEY` split, for a key that is not empty.
fn bucket_and_key(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("s3://")?;
    let (bucket, key) = rest.split_once('/')?;
    (!bucket.is_empty() && !key.is_empty()).then_some((bucket, key))
}

fn remote_error(error: binfmt_remote::RemoteError) -> Error {
    let url = error.url();
    Error::Core {
        file: url.clone(),
        source: binfmt_core::Error::io(url, error.into_io()),
    }
}

/// The output gate's inputs for a command reading `source`: its local
/// files, and its remote objects by URL (the object read first also by
/// the ETag of the version read).
pub fn gate_inputs(source: &dyn EntrySource) -> Inputs {
    let files = source.inputs();
    let mut inputs = Inputs::new(&files);
    for file in &files {
        if let Some(url) = file.to_str().filter(|url| binfmt_remote::is_remote(url))
            && let Some(identity) = binfmt_remote::identity(url)
        {
            inputs.add_remote(&identity, None);
        }
    }
    if let Some(remote) = source.origin().remote()
        && let Some(identity) = binfmt_remote::identity(remote.url())
    {
        inputs.add_remote(&identity, remote.etag());
    }
    inputs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_urls_are_local_paths() {
        let at = Path::new("x");
        assert_eq!(
            file_url_path("/tmp/a%20b.arcx", at).unwrap(),
            PathBuf::from("/tmp/a b.arcx")
        );
        assert_eq!(
            file_url_path("localhost/tmp/x", at).unwrap(),
            PathBuf::from("/tmp/x")
        );
        assert!(file_url_path("relative", at).is_err());
        assert!(file_url_path("/a%2", at).is_err());
        assert!(file_url_path("/a%00b", at).is_err());
    }

    #[test]
    fn http_is_no_output() {
        let error = Output::open(
            "http://127.0.0.1:9/x.arcx",
            Arc::default(),
            &binfmt_remote::RemoteOptions::default(),
        )
        .unwrap_err();
        assert!(error.to_string().contains("only s3://"), "{error}");
    }
}
