//! The client shared by a source and its siblings: the object_store store
//! (HTTP or S3), the runtime that drives it, the counters every request goes
//! through, and the caches.
//!
//! Requests go through [`Counting`], an `HttpService` wrapped around
//! object_store's reqwest client: it sees every attempt (retries included),
//! counts response-body bytes as they are consumed, and notes what each
//! exchange asked and got (the `Range` sent, the status, the
//! `Content-Range`), so failures can be told apart by what the server did
//! rather than by error text.

use std::future::Future;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpRequest, HttpResponse, HttpResponseBody, HttpService,
    ReqwestConnector,
};
use object_store::http::HttpBuilder;
use object_store::path::Path as StorePath;
use object_store::{
    BackoffConfig, ClientConfigKey, ClientOptions, GetOptions, GetRange, ObjectMeta, ObjectStore,
    ObjectStoreExt, RetryConfig,
};
use tokio::runtime::Runtime;

use crate::cache::MemoryCache;
use crate::disk::DiskCache;
use crate::error::{RemoteError, Result};
use crate::location::{Location, Scheme};
use crate::options::{RemoteOptions, Stats, Warning};

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Requests, body bytes and whole-object fetches of one family.
#[derive(Debug, Default)]
pub struct Counters {
    requests: AtomicU64,
    bytes: AtomicU64,
    whole_objects: AtomicU64,
}

impl Counters {
    pub fn stats(&self) -> Stats {
        Stats {
            requests: self.requests.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            whole_objects: self.whole_objects.load(Ordering::Relaxed),
        }
    }
}

/// One request and what came back, as [`Counting`] saw it.
#[derive(Debug, Clone)]
pub(crate) struct Exchange {
    /// The `Range` header sent.
    pub range: Option<String>,
    pub status: u16,
    /// The `Content-Range` header received.
    pub content_range: Option<String>,
}

tokio::task_local! {
    /// Where [`Counting`] notes the exchanges of the operation in progress.
    static EXCHANGES: Arc<Mutex<Vec<Exchange>>>;
}

/// object_store's reqwest client, counting.
#[derive(Debug)]
struct Counting {
    inner: HttpClient,
    counters: Arc<Counters>,
}

#[async_trait::async_trait]
impl HttpService for Counting {
    async fn call(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
        self.counters.requests.fetch_add(1, Ordering::Relaxed);
        let range = header(request.headers().get("range"));
        let response = self.inner.execute(request).await?;
        let exchange = Exchange {
            range,
            status: response.status().as_u16(),
            content_range: header(response.headers().get("content-range")),
        };
        // Outside an operation of ours (none today) there is nowhere to note.
        let _ = EXCHANGES.try_with(|exchanges| lock(exchanges).push(exchange));
        let (parts, body) = response.into_parts();
        let counters = Arc::clone(&self.counters);
        let body = http_body_util::BodyExt::map_frame(body, move |frame| {
            if let Some(data) = frame.data_ref() {
                counters
                    .bytes
                    .fetch_add(data.len() as u64, Ordering::Relaxed);
            }
            frame
        });
        Ok(HttpResponse::from_parts(parts, HttpResponseBody::new(body)))
    }
}

fn header(value: Option<&object_store::HeaderValue>) -> Option<String> {
    value
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
}

/// Builds [`Counting`] clients with object_store's own connector.
#[derive(Debug)]
struct CountingConnector {
    counters: Arc<Counters>,
}

impl HttpConnector for CountingConnector {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let inner = ReqwestConnector::default().connect(options)?;
        Ok(HttpClient::new(Counting {
            inner,
            counters: Arc::clone(&self.counters),
        }))
    }
}

/// Why a fetch did not give bytes.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The server answered a range request with the whole object (200).
    RangesIgnored,
    /// The server answered 416: the range starts past the end.
    NotSatisfiable,
    /// Anything else: final.
    Error(RemoteError),
}

impl From<RemoteError> for Failure {
    fn from(error: RemoteError) -> Self {
        Self::Error(error)
    }
}

/// What a successful GET gave.
#[derive(Debug)]
pub(crate) struct Fetched {
    pub meta: ObjectMeta,
    /// The range the server says it sent (`Content-Range`), checked by
    /// object_store against the one asked for.
    pub range: Range<u64>,
    pub bytes: Bytes,
}

/// The runtime, which can be dropped anywhere: inside another runtime's
/// context (where dropping a runtime would block, which tokio refuses) it is
/// shut down in the background.
#[derive(Debug)]
struct Driver(Option<Runtime>);

impl Driver {
    fn block_on<T>(&self, url: &str, future: impl Future<Output = Result<T>>) -> Result<T> {
        match &self.0 {
            Some(runtime) => runtime.block_on(future),
            None => Err(RemoteError::Setup {
                url: url.to_owned(),
                message: "the I/O runtime is shut down".into(),
            }),
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take()
            && tokio::runtime::Handle::try_current().is_ok()
        {
            runtime.shutdown_background();
        }
    }
}

/// The store, runtime, counters and caches a source shares with its
/// siblings.
#[derive(Debug)]
pub(crate) struct Family {
    runtime: Driver,
    store: Arc<dyn ObjectStore>,
    scheme: Scheme,
    base: String,
    counters: Arc<Counters>,
    pub memory: Mutex<MemoryCache>,
    pub disk: Option<DiskCache>,
    pub options: RemoteOptions,
    next_id: AtomicU64,
}

impl Family {
    /// A new client for objects like `location`.
    pub fn new(location: &Location, options: &RemoteOptions) -> Result<Self> {
        let setup = |message: String| RemoteError::Setup {
            url: location.display.clone(),
            message,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|error| setup(format!("cannot start the I/O runtime: {error}")))?;
        let counters = options
            .tally
            .as_ref()
            .map_or_else(Arc::default, |tally| Arc::clone(&tally.0));
        let connector = CountingConnector {
            counters: Arc::clone(&counters),
        };
        let retry = RetryConfig {
            backoff: BackoffConfig {
                init_backoff: options.backoff.0,
                max_backoff: options.backoff.1,
                base: 2.0,
            },
            max_retries: options.retries,
            retry_timeout: options.retry_timeout,
        };
        // The TLS stack reads SSL_CERT_FILE whole, blocking: it goes
        // through the input gate first (plain http loads no trust store).
        if !location.base.starts_with("http://") {
            crate::env::check_tls(std::env::vars_os()).map_err(setup)?;
        }
        let store: Arc<dyn ObjectStore> = match location.scheme {
            Scheme::Http => Arc::new(
                HttpBuilder::new()
                    .with_url(location.base.clone())
                    .with_client_options(
                        ClientOptions::new()
                            .with_allow_http(true)
                            // Loading the system's trust store costs more
                            // than a whole small read; plain http needs none.
                            .with_no_system_certificates(location.base.starts_with("http://"))
                            .with_connect_timeout(options.connect_timeout)
                            .with_timeout(options.timeout),
                    )
                    .with_retry(retry)
                    .with_http_connector(connector)
                    .build()
                    .map_err(|error| setup(describe(&error)))?,
            ),
            Scheme::S3 => {
                // object_store panics on a value it cannot put in a
                // request: every setting is checked first.
                crate::env::check_s3(std::env::vars_os(), &options.s3_settings).map_err(setup)?;
                let mut builder = AmazonS3Builder::from_env();
                for (name, value) in &options.s3_settings {
                    let key: AmazonS3ConfigKey = name
                        .to_ascii_lowercase()
                        .parse()
                        .map_err(|_| setup(format!("unknown S3 setting {name}")))?;
                    builder = builder.with_config(key, value);
                }
                let mut builder = builder
                    .with_bucket_name(location.base.clone())
                    .with_retry(retry)
                    .with_http_connector(connector);
                // A plain-http endpoint (a local server) needs no trust store.
                let system_certificates =
                    AmazonS3ConfigKey::Client(ClientConfigKey::NoSystemCertificates);
                let plain_http = builder
                    .get_config_value(&AmazonS3ConfigKey::Endpoint)
                    .is_some_and(|endpoint| endpoint.starts_with("http://"));
                if plain_http {
                    builder = builder.with_config(system_certificates, "true");
                }
                // Timeouts from the environment (AWS_TIMEOUT, ...) win.
                for (key, value) in [
                    (ClientConfigKey::ConnectTimeout, options.connect_timeout),
                    (ClientConfigKey::Timeout, options.timeout),
                ] {
                    let key = AmazonS3ConfigKey::Client(key);
                    if builder.get_config_value(&key).is_none() {
                        builder = builder.with_config(key, format!("{}ms", value.as_millis()));
                    }
                }
                let store = builder.build().map_err(|error| {
                    setup(crate::env::explain_build_error(
                        &describe(&error),
                        std::env::vars_os(),
                        &options.s3_settings,
                    ))
                })?;
                Arc::new(store)
            }
        };
        let disk = match &options.cache_dir {
            Some((dir, limit)) => Some(DiskCache::new(dir, *limit)?),
            None => None,
        };
        Ok(Self {
            runtime: Driver(Some(runtime)),
            store,
            scheme: location.scheme,
            base: location.base.clone(),
            counters,
            memory: Mutex::new(MemoryCache::new(options.memory_cache)),
            disk,
            options: options.clone(),
            next_id: AtomicU64::new(0),
        })
    }

    /// Whether `location` can share this family's client.
    pub fn holds(&self, location: &Location) -> bool {
        self.scheme == location.scheme && self.base == location.base
    }

    /// A new id for an object's entries in the memory cache.
    pub fn new_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    pub fn stats(&self) -> Stats {
        self.counters.stats()
    }

    pub fn warn(&self, warning: Warning) {
        if matches!(warning, Warning::RangesIgnored { .. }) {
            self.counters.whole_objects.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(handler) = &self.options.on_warning {
            handler(&warning);
        }
    }

    /// Runs `future` to its end on this family's runtime. Inside another
    /// runtime's context (where tokio refuses to block), it runs on a thread
    /// of its own while the caller waits: a synchronous source blocks its
    /// caller either way.
    pub fn block_on<T: Send>(
        &self,
        url: &str,
        future: impl Future<Output = Result<T>> + Send,
    ) -> Result<T> {
        if tokio::runtime::Handle::try_current().is_err() {
            return self.runtime.block_on(url, future);
        }
        std::thread::scope(|scope| scope.spawn(|| self.runtime.block_on(url, future)).join())
            .unwrap_or_else(|_| {
                Err(RemoteError::Setup {
                    url: url.to_owned(),
                    message: "the I/O thread failed".into(),
                })
            })
    }

    /// GET of `range` (the whole object for `None`), pinned to `pin`'s
    /// ETag by `If-Match` when it has a strong one. The body is collected;
    /// for a whole object, only when the size announced fits `limit`.
    pub async fn get(
        &self,
        location: &Location,
        range: Option<GetRange>,
        pin: Option<&ObjectMeta>,
        limit: u64,
    ) -> Result<Fetched, Failure> {
        let exchanges = Arc::new(Mutex::new(Vec::new()));
        let options = GetOptions {
            range: range.clone(),
            if_match: pin.and_then(strong_etag).map(str::to_owned),
            ..GetOptions::default()
        };
        let whole = range.is_none();
        let outcome = EXCHANGES
            .scope(Arc::clone(&exchanges), async {
                let result = self.store.get_opts(&location.path, options).await?;
                if whole && result.meta.size > limit {
                    return Ok(Err(result.meta.size));
                }
                let meta = result.meta.clone();
                let got = result.range.clone();
                let bytes = result.bytes().await?;
                Ok::<_, object_store::Error>(Ok(Fetched {
                    meta,
                    range: got,
                    bytes,
                }))
            })
            .await;
        let exchanges = lock(&exchanges).clone();
        match outcome {
            Ok(Ok(fetched)) => Ok(fetched),
            Ok(Err(size)) => Err(Failure::Error(RemoteError::WholeObjectTooLarge {
                url: location.display.clone(),
                size,
                limit,
            })),
            Err(error) => Err(classify(location, self.scheme, error, &exchanges, pin)),
        }
    }

    /// HEAD: the object's size and version.
    pub async fn head(&self, location: &Location) -> Result<ObjectMeta> {
        let exchanges = Arc::new(Mutex::new(Vec::new()));
        let outcome = EXCHANGES
            .scope(Arc::clone(&exchanges), self.store.head(&location.path))
            .await;
        outcome.map_err(|error| {
            match classify(location, self.scheme, error, &lock(&exchanges), None) {
                Failure::Error(error) => error,
                Failure::RangesIgnored | Failure::NotSatisfiable => RemoteError::Request {
                    url: location.display.clone(),
                    message: "HEAD failed".into(),
                },
            }
        })
    }

    /// The objects directly under `prefix` (S3 only).
    pub async fn list(&self, location: &Location, prefix: &StorePath) -> Result<Vec<ObjectMeta>> {
        if self.scheme == Scheme::Http {
            return Err(RemoteError::Unsupported {
                url: location.display.clone(),
                what: "plain HTTP cannot list objects: name each object (or use s3://)".into(),
            });
        }
        let exchanges = Arc::new(Mutex::new(Vec::new()));
        let outcome = EXCHANGES
            .scope(
                Arc::clone(&exchanges),
                self.store.list_with_delimiter(Some(prefix)),
            )
            .await;
        match outcome {
            Ok(listing) => Ok(listing.objects),
            Err(error) => Err(
                match classify(location, self.scheme, error, &lock(&exchanges), None) {
                    Failure::Error(error) => error,
                    Failure::RangesIgnored | Failure::NotSatisfiable => RemoteError::Request {
                        url: location.display.clone(),
                        message: "listing failed".into(),
                    },
                },
            ),
        }
    }
}

/// The ETag when it is strong (a weak one never matches `If-Match`).
pub(crate) fn strong_etag(meta: &ObjectMeta) -> Option<&str> {
    meta.e_tag.as_deref().filter(|etag| !etag.starts_with("W/"))
}

/// An error's message with its root cause (what reqwest or rustls said,
/// such as an unknown certificate issuer, which object_store's own message
/// leaves out), on one line.
pub(crate) fn describe(error: &(dyn std::error::Error + 'static)) -> String {
    let mut message = error.to_string();
    let mut root = None;
    let mut cause = error.source();
    while let Some(inner) = cause {
        root = Some(inner);
        cause = inner.source();
    }
    if let Some(root) = root.map(ToString::to_string)
        && !message.contains(&root)
    {
        message = format!("{message}: {root}");
    }
    // A library user printing the error is safe too: no userinfo, no
    // secret variable's value.
    one_line(&binfmt_core::print::redact(&message))
}

/// Collapses whitespace and caps the length: messages are one line.
pub(crate) fn one_line(text: &str) -> String {
    const MAX: usize = 300;
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", line.get(..cut).unwrap_or_default()),
        None => line,
    }
}

/// Turns an object_store error into what happened, from the exchanges the
/// server had with us first and the error kind second.
fn classify(
    location: &Location,
    scheme: Scheme,
    error: object_store::Error,
    exchanges: &[Exchange],
    pin: Option<&ObjectMeta>,
) -> Failure {
    let url = location.display.clone();
    if let Some(last) = exchanges.last() {
        if let Some(range) = &last.range {
            if last.status == 200 {
                return Failure::RangesIgnored;
            }
            if last.status == 416 {
                return Failure::NotSatisfiable;
            }
            if last.status == 206 && !matches_range(range, last.content_range.as_deref()) {
                return Failure::Error(RemoteError::WrongRange {
                    url,
                    requested: range.clone(),
                    answered: last.content_range.as_ref().map_or_else(
                        || "no Content-Range".to_owned(),
                        |value| format!("Content-Range: {value}"),
                    ),
                });
            }
        }
        if matches!(last.status, 401 | 403) {
            return Failure::Error(denied(url, scheme, last.status));
        }
        if last.status == 404 {
            return Failure::Error(RemoteError::NotFound { url });
        }
        if last.status == 412 {
            return Failure::Error(changed_412(url, pin));
        }
    }
    Failure::Error(match error {
        object_store::Error::NotFound { .. } => RemoteError::NotFound { url },
        object_store::Error::PermissionDenied { .. } => denied(url, scheme, 403),
        object_store::Error::Unauthenticated { .. } => denied(url, scheme, 401),
        object_store::Error::Precondition { .. } => changed_412(url, pin),
        other => RemoteError::Request {
            url,
            message: describe(&other),
        },
    })
}

fn denied(url: String, scheme: Scheme, status: u16) -> RemoteError {
    RemoteError::Denied {
        url,
        status,
        hint: match scheme {
            Scheme::S3 => {
                ": check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN, AWS_REGION)"
            }
            Scheme::Http => "",
        },
    }
}

fn changed_412(url: String, pin: Option<&ObjectMeta>) -> RemoteError {
    let etag = pin.and_then(|meta| meta.e_tag.as_deref()).unwrap_or("?");
    RemoteError::Changed {
        url,
        what: format!("its ETag is no longer {etag}: HTTP 412 to If-Match"),
    }
}

/// Whether a `Content-Range` answers a `Range` header exactly (for a
/// suffix, the last bytes of the size it states).
fn matches_range(range: &str, content_range: Option<&str>) -> bool {
    let Some((first, last, size)) = content_range.and_then(parse_content_range) else {
        return false;
    };
    let Some(spec) = range.strip_prefix("bytes=") else {
        return false;
    };
    let Some((from, to)) = spec.split_once('-') else {
        return false;
    };
    let expected = match (from.parse::<u64>(), to.parse::<u64>()) {
        (Ok(from), Ok(to)) => Some((from, to.min(size.saturating_sub(1)))),
        (Ok(from), Err(_)) if to.is_empty() => Some((from, size.saturating_sub(1))),
        (Err(_), Ok(suffix)) if from.is_empty() => {
            Some((size.saturating_sub(suffix), size.saturating_sub(1)))
        }
        _ => None,
    };
    expected == Some((first, last))
}

/// `bytes FIRST-LAST/SIZE`.
fn parse_content_range(value: &str) -> Option<(u64, u64, u64)> {
    let rest = value.trim().strip_prefix("bytes ")?;
    let (range, size) = rest.split_once('/')?;
    let (first, last) = range.split_once('-')?;
    Some((first.parse().ok()?, last.parse().ok()?, size.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_ranges_must_answer_the_range_asked() {
        assert!(matches_range("bytes=0-9", Some("bytes 0-9/100")));
        assert!(matches_range("bytes=90-200", Some("bytes 90-99/100")));
        assert!(matches_range("bytes=-40", Some("bytes 60-99/100")));
        assert!(matches_range("bytes=-40", Some("bytes 0-9/10")));
        assert!(matches_range("bytes=50-", Some("bytes 50-99/100")));
        assert!(!matches_range("bytes=-40", Some("bytes 0-39/100")));
        assert!(!matches_range("bytes=0-9", Some("bytes 1-10/100")));
        assert!(!matches_range("bytes=0-9", None));
        assert!(!matches_range("bytes=0-9", Some("bytes */100")));
    }

    #[test]
    fn messages_end_with_the_root_cause() {
        let root = std::io::Error::other("invalid peer certificate: UnknownIssuer");
        let error = object_store::Error::Generic {
            store: "HTTP",
            source: Box::new(root),
        };
        assert_eq!(
            describe(&error),
            "Generic HTTP error: invalid peer certificate: UnknownIssuer"
        );
    }

    #[test]
    fn messages_are_one_bounded_line() {
        assert_eq!(one_line("a\n  b\tc"), "a b c");
        assert!(one_line(&"x ".repeat(1000)).chars().count() <= 301);
    }
}
