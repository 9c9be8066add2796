//! Reading binfmt containers straight from HTTP(S) and S3.
//!
//! [`RemoteSource`] is a [`binfmt_core::Source`] over an `http://`,
//! `https://` or `s3://bucket/key` URL, so every reader in the workspace
//! reads remote objects the way it reads files: by `(offset, length)`, each
//! range a request (or a cache hit). It is built on the Arrow project's
//! `object_store` (its HTTP and S3 stores: no hand-written HTTP or request
//! signing), driven from synchronous code by a current-thread tokio runtime
//! that a source shares with its [siblings](RemoteSource::sibling).
//!
//! - **One request to open**: a range GET of the object's last 40 bytes
//!   (where ARCX and PAR4 keep their footer, and what sniffing reads) gives
//!   the size and ETag too ([`FirstRead`]).
//! - **Only the needed ranges**: reads fetch exactly the bytes not cached;
//!   [`binfmt_core::Source::will_read`] fetches announced ranges together,
//!   near ones merged into one request, several requests at once.
//! - **Never a wrong byte**: every answer must be a 206 whose
//!   `Content-Range` is the range asked and whose body is that long, from
//!   the version pinned at open (`If-Match` with its ETag on every request;
//!   the ETag, size and time compared on every answer). A server that ignores
//!   ranges is detected, and the object is fetched whole once, within
//!   [`RemoteOptions::max_whole_object`], with a [`Warning`].
//! - **Retries** of transient failures (5xx, 429, 408, timeouts, resets) with
//!   exponential backoff, a bounded number of times
//!   ([`RemoteOptions::with_retries`]); a body cut off midway is resumed
//!   (pinned to the same ETag) or fails.
//! - **Caches**: in memory, bounded in bytes, least recently used first out;
//!   optionally on disk ([`RemoteOptions::with_cache_dir`]), keyed by URL and
//!   ETag, written atomically, bounded in bytes.
//! - **Costs**: [`RemoteSource::stats`] counts every HTTP request (HEAD and
//!   retries included) and every response-body byte.
//!
//! S3 reads the standard AWS environment: `AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION` (default
//! `us-east-1`), `AWS_ENDPOINT_URL` (an S3-compatible server, addressed
//! path-style: `ENDPOINT/BUCKET/KEY`) and `AWS_ALLOW_HTTP=true` for a
//! plain-http endpoint; requests are SigV4-signed.
//!
//! # Examples
//!
//! ```no_run
//! use binfmt_core::{Source, SourceExt};
//! use binfmt_remote::{RemoteOptions, RemoteSource};
//!
//! let options = RemoteOptions::default().on_warning(|warning| eprintln!("warning: {warning}"));
//! let index = RemoteSource::open("s3://datasets/train/index.taridx", &options)?;
//! let shard = index.sibling("train_0000.tar")?; // same client, caches and counters
//! shard.will_read(&[0..512, 1024..4096]);        // one request for both
//! let header = shard.bytes_at(0, 512, "tar header")?;
//! let stats = index.stats();
//! eprintln!("requests: {}, bytes: {}", stats.requests, stats.bytes);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod cache;
mod client;
mod disk;
mod env;
mod error;
mod location;
mod options;
mod source;
mod upload;

pub use error::{RemoteError, Result};
pub use location::is_remote;
pub use options::{FirstRead, RemoteOptions, Stats, Tally, Warning};
pub use source::{Listed, RemoteSource, list_prefix};
pub use upload::{
    MIN_PART_SIZE, RemoteDir, Upload, UploadOptions, abort_uploads, before_first_output, identity,
};

/// Entry points for the fuzz targets of `fuzz/` (`remote_url`,
/// `remote_cache`): not part of the API, and may change at any time.
#[doc(hidden)]
pub mod __fuzz {
    use std::path::Path;

    /// Parses `url` as a remote location; whether it was accepted.
    pub fn parse_url(url: &str) -> bool {
        crate::location::Location::parse(url).is_ok()
    }

    /// The URL, ETag and directory name (under a cache's root) of the
    /// object [`cache_round`] reads, so a target can fill it first.
    pub fn cache_object(size: u64) -> (&'static str, &'static str, String) {
        let (url, etag) = ("https://fuzz.invalid/object", "\"etag\"");
        (url, etag, crate::disk::object_key(url, etag, size))
    }

    /// Opens the disk cache at `root` (limit `limit` bytes) for one object
    /// of `size` bytes, reads `gaps` through it into a buffer, then writes
    /// `write` (bytes at an offset) and grows it past its limit: whatever
    /// the directory holds, this must neither panic nor block. Returns the
    /// pieces read.
    pub fn cache_round(
        root: &Path,
        limit: u64,
        size: u64,
        gaps: Vec<std::ops::Range<u64>>,
        write: (u64, Vec<u8>),
    ) -> Vec<(u64, Vec<u8>)> {
        let Ok(cache) = crate::disk::DiskCache::new(root, limit) else {
            return Vec::new();
        };
        let (url, etag, _) = cache_object(size);
        let Some(object) = cache.object(url, etag, size) else {
            return Vec::new();
        };
        let Some(span) = gaps.iter().map(|gap| gap.end).max() else {
            return Vec::new();
        };
        let Ok(len) = usize::try_from(span.min(1 << 20)) else {
            return Vec::new();
        };
        let gaps = gaps
            .into_iter()
            .filter(|gap| gap.start < gap.end && gap.end <= len as u64)
            .collect();
        let mut buf = vec![0; len];
        let (_, found) = object.read(gaps, 0, &mut buf);
        object.write(&cache, write.0, &bytes::Bytes::from(write.1));
        found
            .into_iter()
            .map(|(start, bytes)| (start, bytes.to_vec()))
            .collect()
    }
}
