//! Where a file's bytes come from: a local path read by offset, or an
//! `http://`, `https://` or `s3://` URL read by range requests.
//!
//! [`open_source`] reaches the bytes; the [`Origin`] it returns beside them
//! is what every entry source keeps of the location: the name messages use
//! and, for a remote object, its request counters ([`Origin::stats`]).

use std::path::Path;
use std::sync::Arc;

use binfmt_core::{FileSource, Source};

use crate::error::{InFile, Result};

/// How [`crate::open_with`] reaches files, and what the caller will ask of
/// them.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct OpenOptions {
    /// For `http://`, `https://` and `s3://` locations: caches, retries,
    /// S3 settings (`spec/remote.md`).
    pub remote: binfmt_remote::RemoteOptions,
    /// The one entry the caller will read, when it reads one: an ARCX
    /// archive then finds it without decoding the rest of its manifest
    /// ([`binfmt_arcx::Archive::open_one`]), fails to open when it is not
    /// there, and lists, reads and verifies that entry alone.
    pub only: Option<String>,
    /// The caller only lists or counts the entries
    /// ([`crate::EntrySource::each_entry`]): an ARCX archive then walks its
    /// manifest without building its tables
    /// ([`binfmt_arcx::Listing`]), opening the whole archive only if
    /// something else is asked of it.
    pub listing: bool,
}

impl OpenOptions {
    /// These options for reading the entry called `name` alone.
    pub fn only(mut self, name: impl Into<String>) -> Self {
        self.only = Some(name.into());
        self
    }

    /// These options for listing or counting the entries alone.
    pub fn listing(mut self) -> Self {
        self.listing = true;
        self
    }

    /// These options reaching remote locations with `remote`.
    pub fn remote(mut self, remote: binfmt_remote::RemoteOptions) -> Self {
        self.remote = remote;
        self
    }
}

/// What a file is called in messages, and the remote object it is when it
/// is remote.
#[derive(Debug, Clone)]
pub struct Origin {
    file: String,
    remote: Option<Arc<binfmt_remote::RemoteSource>>,
}

impl Origin {
    /// A local file (or a stream) called `file` in messages.
    pub fn local(file: impl Into<String>) -> Self {
        Self {
            file: file.into(),
            remote: None,
        }
    }

    /// The remote object `remote`, called `file` in messages.
    pub fn remote_object(
        file: impl Into<String>,
        remote: Arc<binfmt_remote::RemoteSource>,
    ) -> Self {
        Self {
            file: file.into(),
            remote: Some(remote),
        }
    }

    /// What the location is called in messages: its path or URL.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The remote object, for its request counters and its siblings.
    pub fn remote(&self) -> Option<&Arc<binfmt_remote::RemoteSource>> {
        self.remote.as_ref()
    }

    /// Whether the bytes are read by range requests.
    pub fn is_remote(&self) -> bool {
        self.remote.is_some()
    }

    /// What reading the location has cost so far, when it is remote
    /// (requests, bytes received); `None` for a local file.
    pub fn stats(&self) -> Option<binfmt_remote::Stats> {
        self.remote.as_ref().map(|remote| remote.stats())
    }
}

/// A file's bytes, local or remote, ready for a format's reader.
#[derive(Debug)]
pub struct Opened {
    /// The bytes: a local file read by offset, or a remote object.
    pub source: Box<dyn Source>,
    /// Where they come from.
    pub origin: Origin,
}

impl Opened {
    /// What the location is called in messages: its path or URL.
    pub fn file(&self) -> &str {
        self.origin.file()
    }

    /// What reading the location has cost so far, when it is remote.
    pub fn stats(&self) -> Option<binfmt_remote::Stats> {
        self.origin.stats()
    }
}

/// Whether `location` is a URL binfmt reads remotely (`http://`,
/// `https://`, `s3://`).
pub fn is_remote(location: impl AsRef<Path>) -> bool {
    location
        .as_ref()
        .to_str()
        .is_some_and(binfmt_remote::is_remote)
}

/// Opens the bytes at `location`: a local regular file (read by offset,
/// never mapped, so a file truncated underneath fails a read with an error
/// instead of ending the process with SIGBUS), or an `http://`, `https://`
/// or `s3://` URL read by range requests.
pub fn open_source(location: impl AsRef<Path>, options: &OpenOptions) -> Result<Opened> {
    let location = location.as_ref();
    let file = location.display().to_string();
    if let Some(url) = location.to_str().filter(|s| binfmt_remote::is_remote(s)) {
        let remote = Arc::new(
            binfmt_remote::RemoteSource::open(url, &options.remote)
                .map_err(binfmt_core::Error::from)
                .in_file(&file)?,
        );
        return Ok(Opened {
            source: Box::new(Arc::clone(&remote)),
            origin: Origin::remote_object(file, remote),
        });
    }
    Ok(Opened {
        source: Box::new(FileSource::open(location).in_file(&file)?),
        origin: Origin::local(file),
    })
}
