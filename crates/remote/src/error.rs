//! What remote reading can fail with.
//!
//! Every [`RemoteError`] names the URL it is about and fits on one line; none
//! ever contains a credential (URLs with a user or password are refused
//! before any request, and S3 secrets only ever go into request signatures).
//! Readers see failures of [`binfmt_core::Source::read_exact_at`] as
//! `io::Error`s: [`RemoteError::from_io`] recovers the remote error from one,
//! and `From<RemoteError> for binfmt_core::Error` gives the workspace's error.

use std::fmt;
use std::io;
use std::ops::Range;
use std::path::PathBuf;

/// `Result` with [`RemoteError`].
pub type Result<T, E = RemoteError> = std::result::Result<T, E>;

/// A failure of remote reading. Each variant names the URL.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RemoteError {
    /// The URL cannot be read by this crate.
    #[error("{url}: {why}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        why: String,
    },

    /// No object at this URL (HTTP 404).
    #[error("{url}: not found (HTTP 404)")]
    NotFound {
        /// The URL.
        url: String,
    },

    /// The server refused the credentials or the request (HTTP 401 or 403).
    #[error("{url}: access denied (HTTP {status}){hint}")]
    Denied {
        /// The URL.
        url: String,
        /// 401 or 403.
        status: u16,
        /// What to check, e.g. which environment variables supply credentials.
        hint: &'static str,
    },

    /// The object changed between two requests of one source: its ETag,
    /// size or modification time differs from the first response (or the
    /// server answered `If-Match` with 412).
    #[error("{url}: the object changed while it was being read ({what})")]
    Changed {
        /// The URL.
        url: String,
        /// What differs.
        what: String,
    },

    /// The server answered a range request with other bytes than asked.
    #[error("{url}: asked for {requested}, the server answered {answered}")]
    WrongRange {
        /// The URL.
        url: String,
        /// The range asked for, as sent (`bytes=0-39`, `bytes=-40`).
        requested: String,
        /// What came back (the `Content-Range`, or its absence).
        answered: String,
    },

    /// A response body ended before the range it announced.
    #[error("{url}: short response for bytes {}..{}: {received} of {} bytes arrived", range.start, range.end, range.end - range.start)]
    ShortBody {
        /// The URL.
        url: String,
        /// The range asked for.
        range: Range<u64>,
        /// The bytes that arrived.
        received: u64,
    },

    /// The server ignores range requests and the whole object is larger than
    /// [`crate::RemoteOptions::max_whole_object`] allows fetching.
    #[error(
        "{url}: the server ignores range requests, and the whole object ({size} bytes) exceeds the {limit}-byte limit for fetching it whole"
    )]
    WholeObjectTooLarge {
        /// The URL.
        url: String,
        /// The object's size.
        size: u64,
        /// The limit.
        limit: u64,
    },

    /// The operation needs something the URL's scheme cannot do (listing
    /// over plain HTTP).
    #[error("{url}: {what}")]
    Unsupported {
        /// The URL.
        url: String,
        /// What cannot be done, and why.
        what: String,
    },

    /// Any other failure of a request: a timeout, a refused connection, a
    /// server error that persisted through the retries.
    #[error("{url}: {message}")]
    Request {
        /// The URL.
        url: String,
        /// What failed, on one line.
        message: String,
    },

    /// The client could not be set up (bad configuration in the
    /// environment, a runtime that cannot start, a call from inside an
    /// async runtime).
    #[error("{url}: {message}")]
    Setup {
        /// The URL.
        url: String,
        /// What failed.
        message: String,
    },

    /// An output would replace one of the command's inputs (the same
    /// object by URL, or by ETag).
    #[error("{url}: is {input}, an input: binfmt never writes its output over what it reads")]
    OutputIsInput {
        /// The output's URL.
        url: String,
        /// The input it is.
        input: String,
    },

    /// The on-disk cache directory cannot be used.
    #[error("cache directory {}: {source}", path.display())]
    CacheDir {
        /// The directory.
        path: PathBuf,
        /// What failed.
        source: io::Error,
    },
}

impl RemoteError {
    /// The URL the error is about (the cache directory for
    /// [`RemoteError::CacheDir`]).
    pub fn url(&self) -> String {
        match self {
            Self::InvalidUrl { url, .. }
            | Self::NotFound { url }
            | Self::Denied { url, .. }
            | Self::Changed { url, .. }
            | Self::WrongRange { url, .. }
            | Self::ShortBody { url, .. }
            | Self::WholeObjectTooLarge { url, .. }
            | Self::Unsupported { url, .. }
            | Self::Request { url, .. }
            | Self::Setup { url, .. }
            | Self::OutputIsInput { url, .. } => url.clone(),
            Self::CacheDir { path, .. } => path.display().to_string(),
        }
    }

    /// The message without the URL in front, for wrappers that name the
    /// URL themselves.
    pub fn detail(&self) -> String {
        let message = self.to_string();
        let url = self.url();
        match message.strip_prefix(url.as_str()) {
            Some(rest) => rest.trim_start_matches(": ").to_owned(),
            None => message,
        }
    }

    /// The `io::ErrorKind` this failure reads as.
    pub fn io_kind(&self) -> io::ErrorKind {
        match self {
            Self::NotFound { .. } => io::ErrorKind::NotFound,
            Self::Denied { .. } => io::ErrorKind::PermissionDenied,
            Self::ShortBody { .. } => io::ErrorKind::UnexpectedEof,
            Self::InvalidUrl { .. } => io::ErrorKind::InvalidInput,
            Self::Unsupported { .. } => io::ErrorKind::Unsupported,
            Self::OutputIsInput { .. } => io::ErrorKind::AlreadyExists,
            _ => io::ErrorKind::Other,
        }
    }

    /// This error as an `io::Error` (what [`binfmt_core::Source`] methods
    /// return). Its message leaves out the URL, which the reader's
    /// [`binfmt_core::Error::Io`] puts in front; [`RemoteError::from_io`]
    /// gets the error back.
    pub fn into_io(self) -> io::Error {
        binfmt_core::carry::into_io_as(self.io_kind(), InIo(self))
    }

    /// The remote error inside an `io::Error` made by
    /// [`RemoteError::into_io`], if it carries one ([`binfmt_core::carry`]).
    pub fn from_io(error: &io::Error) -> Option<&RemoteError> {
        binfmt_core::carry::find::<InIo>(error).map(|inner| &inner.0)
    }
}

/// A [`RemoteError`] travelling inside an `io::Error`: shown without its
/// URL, which the surrounding error names.
#[derive(Debug)]
struct InIo(RemoteError);

impl fmt::Display for InIo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.detail())
    }
}

impl std::error::Error for InIo {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

impl From<RemoteError> for binfmt_core::Error {
    /// An [`binfmt_core::Error::Io`] naming the URL, carrying the remote
    /// error (recoverable with [`RemoteError::from_io`]).
    fn from(error: RemoteError) -> Self {
        let url = error.url();
        binfmt_core::Error::io(url, error.into_io())
    }
}

impl From<RemoteError> for io::Error {
    fn from(error: RemoteError) -> Self {
        error.into_io()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_name_the_url_once_and_keep_the_cause() {
        let error = RemoteError::NotFound {
            url: "http://127.0.0.1:1/a.arcx".into(),
        };
        assert_eq!(
            error.to_string(),
            "http://127.0.0.1:1/a.arcx: not found (HTTP 404)"
        );
        let core: binfmt_core::Error = error.into();
        assert_eq!(
            core.to_string(),
            "http://127.0.0.1:1/a.arcx: not found (HTTP 404)"
        );
        let binfmt_core::Error::Io { source, .. } = &core else {
            unreachable!("an Io error: {core:?}")
        };
        assert_eq!(source.kind(), io::ErrorKind::NotFound);
        assert!(matches!(
            RemoteError::from_io(source),
            Some(RemoteError::NotFound { .. })
        ));
        assert!(RemoteError::from_io(&io::Error::other("plain")).is_none());
    }

    #[test]
    fn short_bodies_say_how_much_arrived() {
        let error = RemoteError::ShortBody {
            url: "s3://b/k".into(),
            range: 100..200,
            received: 40,
        };
        assert_eq!(
            error.to_string(),
            "s3://b/k: short response for bytes 100..200: 40 of 100 bytes arrived"
        );
        assert_eq!(
            error.detail(),
            "short response for bytes 100..200: 40 of 100 bytes arrived"
        );
    }
}
