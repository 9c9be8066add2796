//! How a remote source behaves: caches, read-ahead, concurrency, retries,
//! limits; and what it reports back ([`Stats`], [`Warning`]).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

/// What receives warnings.
pub(crate) type WarningHandler = Arc<dyn Fn(&Warning) + Send + Sync>;

/// What [`crate::RemoteSource::open`] reads to learn the object's size and
/// version. The answer to a range request carries both (in `Content-Range`
/// and `ETag`), so opening costs one request whose bytes are useful anyway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FirstRead {
    /// The last `n` bytes (a suffix range, `bytes=-n`): formats located by
    /// a footer or trailer (ARCX, PAR4) and sniffing start there.
    Tail(u64),
    /// The first `n` bytes (`bytes=0-(n-1)`): formats located by a header
    /// (KAST, tar).
    Head(u64),
}

/// Options of a remote source; [`RemoteOptions::default`] suits most uses.
///
/// ```
/// use binfmt_remote::{FirstRead, RemoteOptions};
///
/// let options = RemoteOptions::default()
///     .with_memory_cache(16 << 20)
///     .with_first_read(FirstRead::Head(64))
///     .with_cache_dir("/tmp/binfmt-cache", 1 << 30);
/// assert_eq!(options.memory_cache(), 16 << 20);
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct RemoteOptions {
    pub(crate) first_read: FirstRead,
    pub(crate) memory_cache: u64,
    pub(crate) read_ahead: u64,
    pub(crate) coalesce_gap: u64,
    pub(crate) concurrency: usize,
    pub(crate) max_whole_object: u64,
    pub(crate) cache_dir: Option<(PathBuf, u64)>,
    pub(crate) retries: usize,
    pub(crate) backoff: (Duration, Duration),
    pub(crate) retry_timeout: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) timeout: Duration,
    pub(crate) on_warning: Option<WarningHandler>,
    pub(crate) tally: Option<Tally>,
    pub(crate) s3_settings: Vec<(String, String)>,
}

impl Default for RemoteOptions {
    /// The documented defaults (spec/remote.md): the last 40 bytes read at
    /// open (the ARCX footer, the sniffing tail, which also holds the PAR4
    /// trailer), a 64 MiB memory cache, 4 MiB read-ahead, ranges less than
    /// 64 KiB apart merged, 8 requests in flight, at most 256 MiB fetched
    /// whole from a server that ignores ranges, no disk cache; 4 retries
    /// with backoff from 100 ms doubling up to 2 s and at most 30 s in all;
    /// 5 s to connect, 120 s per request.
    fn default() -> Self {
        Self {
            first_read: FirstRead::Tail(40),
            memory_cache: 64 * MIB,
            read_ahead: 4 * MIB,
            coalesce_gap: 64 * KIB,
            concurrency: 8,
            max_whole_object: 256 * MIB,
            cache_dir: None,
            retries: 4,
            backoff: (Duration::from_millis(100), Duration::from_secs(2)),
            retry_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            timeout: Duration::from_secs(120),
            on_warning: None,
            tally: None,
            s3_settings: Vec::new(),
        }
    }
}

impl fmt::Debug for RemoteOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteOptions")
            .field("first_read", &self.first_read)
            .field("memory_cache", &self.memory_cache)
            .field("read_ahead", &self.read_ahead)
            .field("coalesce_gap", &self.coalesce_gap)
            .field("concurrency", &self.concurrency)
            .field("max_whole_object", &self.max_whole_object)
            .field("cache_dir", &self.cache_dir)
            .field("retries", &self.retries)
            .field("backoff", &self.backoff)
            .field("retry_timeout", &self.retry_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("timeout", &self.timeout)
            .field("on_warning", &self.on_warning.is_some())
            .field("tally", &self.tally)
            .field(
                "s3_settings",
                &self
                    .s3_settings
                    .iter()
                    .map(|(name, _)| name)
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl RemoteOptions {
    /// What opening reads (default: [`FirstRead::Tail`] of 40 bytes). A
    /// size of 0 is read as 1: a range cannot be empty.
    pub fn with_first_read(mut self, first_read: FirstRead) -> Self {
        self.first_read = match first_read {
            FirstRead::Tail(n) => FirstRead::Tail(n.max(1)),
            FirstRead::Head(n) => FirstRead::Head(n.max(1)),
        };
        self
    }

    /// What opening reads.
    pub fn first_read(&self) -> FirstRead {
        self.first_read
    }

    /// The byte limit of the in-memory cache shared by a source and its
    /// siblings (least recently used ranges go first; default 64 MiB).
    pub fn with_memory_cache(mut self, bytes: u64) -> Self {
        self.memory_cache = bytes;
        self
    }

    /// The byte limit of the in-memory cache.
    pub fn memory_cache(&self) -> u64 {
        self.memory_cache
    }

    /// How far past a missed read one request reaches when the read is
    /// sequential or inside a range given to `will_read` (default 4 MiB).
    /// Other reads fetch exactly the missing bytes.
    pub fn with_read_ahead(mut self, bytes: u64) -> Self {
        self.read_ahead = bytes;
        self
    }

    /// Ranges given to `will_read` less than this far apart are fetched by
    /// one request (default 64 KiB).
    pub fn with_coalesce_gap(mut self, bytes: u64) -> Self {
        self.coalesce_gap = bytes;
        self
    }

    /// The most requests one `will_read` keeps in flight (default 8, at
    /// least 1).
    pub fn with_concurrency(mut self, requests: usize) -> Self {
        self.concurrency = requests.max(1);
        self
    }

    /// The largest object fetched whole, into memory, from a server that
    /// ignores range requests (default 256 MiB; 0 refuses such servers).
    pub fn with_max_whole_object(mut self, bytes: u64) -> Self {
        self.max_whole_object = bytes;
        self
    }

    /// The largest object fetched whole from a server that ignores ranges.
    pub fn max_whole_object(&self) -> u64 {
        self.max_whole_object
    }

    /// Keeps fetched ranges in `dir` too, at most `limit` bytes in all
    /// (least recently used files go first), for later runs. Entries are
    /// keyed by URL, ETag and size, so a replaced object is never served
    /// from the cache; objects without a strong ETag are not cached on disk.
    /// `dir` must be the user's and writable by no one else (it is made
    /// with mode 0700 when absent); its entries are checked against a
    /// checksum on every read, and never followed through a symlink.
    pub fn with_cache_dir(mut self, dir: impl AsRef<Path>, limit: u64) -> Self {
        self.cache_dir = Some((dir.as_ref().to_owned(), limit));
        self
    }

    /// The disk cache directory and its byte limit, if any.
    pub fn cache_dir(&self) -> Option<(&Path, u64)> {
        self.cache_dir
            .as_ref()
            .map(|(dir, limit)| (dir.as_path(), *limit))
    }

    /// Retries of a request that failed transiently (5xx, 429, 408, a
    /// timeout, a reset connection; default 4, so at most 5 attempts),
    /// with exponential backoff from `first` doubling up to `max`
    /// (default 100 ms and 2 s), and no new attempt after `total`
    /// (default 30 s).
    pub fn with_retries(mut self, retries: usize, first: Duration, max: Duration) -> Self {
        self.retries = retries;
        self.backoff = (first, max.max(first));
        self
    }

    /// Stops retrying once this long has passed since the first attempt
    /// (default 30 s).
    pub fn with_retry_timeout(mut self, total: Duration) -> Self {
        self.retry_timeout = total;
        self
    }

    /// The time allowed to connect (default 5 s) and for one whole request,
    /// body included (default 120 s).
    pub fn with_timeouts(mut self, connect: Duration, request: Duration) -> Self {
        self.connect_timeout = connect;
        self.timeout = request;
        self
    }

    /// Sets an S3 setting by the name of its AWS environment variable
    /// (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
    /// `AWS_REGION`, `AWS_ALLOW_HTTP`, ...), taking precedence over the
    /// process environment, for programs that hold settings of their own.
    /// An unknown name fails the opening of an `s3://` URL. Values are never
    /// shown (`Debug` prints the names only).
    pub fn with_s3_setting(mut self, name: &str, value: &str) -> Self {
        self.s3_settings.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Calls `handler` for every [`Warning`] (a command-line tool prints
    /// them). [`Stats`] counts them either way.
    pub fn on_warning(mut self, handler: impl Fn(&Warning) + Send + Sync + 'static) -> Self {
        self.on_warning = Some(Arc::new(handler));
        self
    }

    /// Counts the requests of every source opened with these options in
    /// `tally`, whatever their server: a program reading several URLs
    /// reports its whole cost from one place. Each source's
    /// [`crate::RemoteSource::stats`] then shows the tally's totals.
    pub fn with_tally(mut self, tally: Tally) -> Self {
        self.tally = Some(tally);
        self
    }

    /// The tally sources count into, if one was given.
    pub fn tally(&self) -> Option<&Tally> {
        self.tally.as_ref()
    }
}

/// Counters that sources opened with the same [`RemoteOptions::with_tally`]
/// share; a clone counts into the same totals.
///
/// ```
/// use binfmt_remote::{RemoteOptions, Tally};
///
/// let tally = Tally::default();
/// let options = RemoteOptions::default().with_tally(tally.clone());
/// // ... open sources with `options`, read ...
/// assert_eq!(tally.stats().requests, 0);
/// ```
#[derive(Debug, Clone, Default)]
pub struct Tally(pub(crate) Arc<Counters>);

impl Tally {
    /// Requests and bytes so far, over every source counting here.
    pub fn stats(&self) -> Stats {
        self.0.stats()
    }
}

/// Requests, body bytes and whole-object fetches of one family.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) requests: AtomicU64,
    pub(crate) bytes: AtomicU64,
    pub(crate) whole_objects: AtomicU64,
}

impl Counters {
    /// The counts so far.
    pub(crate) fn stats(&self) -> Stats {
        Stats {
            requests: self.requests.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            whole_objects: self.whole_objects.load(Ordering::Relaxed),
        }
    }
}

/// What a source and its siblings have cost so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// HTTP requests sent: every attempt, retries and HEAD included.
    pub requests: u64,
    /// Response-body bytes received.
    pub bytes: u64,
    /// Objects fetched whole because their server ignores range requests
    /// (each also reported as a [`Warning::RangesIgnored`]).
    pub whole_objects: u64,
}

/// Something the user should know about, though reading goes on.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Warning {
    /// The server ignores range requests: the whole object was fetched
    /// once, and every read is served from memory.
    RangesIgnored {
        /// The URL.
        url: String,
        /// The bytes fetched.
        size: u64,
    },
    /// The server sends no strong ETag: a replaced object is detected by
    /// its size and modification time only, and the disk cache is not used.
    NoStrongEtag {
        /// The URL.
        url: String,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::RangesIgnored { url, size } => write!(
                f,
                "{url}: the server ignores range requests; fetched the whole object ({size} bytes) once"
            ),
            Self::NoStrongEtag { url } => write!(
                f,
                "{url}: the server sends no strong ETag; changes are detected by size and modification time only"
            ),
        }
    }
}
