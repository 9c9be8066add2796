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

use std::collections::HashMap;
use std::future::Future;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpResponse,
    HttpResponseBody, HttpService, ReqwestConnector,
};
use object_store::http::HttpBuilder;
use object_store::multipart::MultipartStore;
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
use crate::options::{Counters, RemoteOptions, Stats, Warning};

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
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

/// The most requests one operation may make: object_store follows a
/// listing's continuation tokens for as long as the server gives them, so a
/// server that always answers "truncated" would be asked forever (1,000
/// pages are a million keys).
const MAX_REQUESTS_PER_OPERATION: usize = 1_000;

/// The most bytes of an error response's body read (object_store reads it
/// whole into a message).
const ERROR_BODY_LIMIT: u64 = 1 << 20;

/// The most bytes of a listing page read (S3 pages hold 1,000 keys, well
/// under 1 MiB).
const LIST_BODY_LIMIT: u64 = 16 << 20;

/// object_store's reqwest client, counting, and bounding what it reads: a
/// response body past its limit is an error, never memory
/// ([`body_limit`]).
#[derive(Debug)]
struct Counting {
    inner: HttpClient,
    counters: Arc<Counters>,
    /// The largest whole object fetched (`RemoteOptions::max_whole_object`).
    whole_limit: u64,
}

/// The most body bytes a response may bring: a ranged answer its range,
/// an error or a listing page a small bound, a whole object the limit for
/// whole objects. object_store reads error and listing bodies whole, so a
/// server sending one without end would otherwise fill memory.
fn body_limit(status: u16, range: Option<&str>, listing: bool, whole_limit: u64) -> u64 {
    let range_len = range
        .and_then(|range| range.strip_prefix("bytes="))
        .and_then(|range| range.split_once('-'))
        .and_then(|(start, end)| Some((start.parse::<u64>().ok()?, end.parse::<u64>().ok()?)))
        .and_then(|(start, end)| end.checked_sub(start)?.checked_add(1));
    match (status, range_len) {
        (300.., _) => ERROR_BODY_LIMIT,
        (206, Some(len)) => len,
        _ if listing => LIST_BODY_LIMIT,
        _ => whole_limit,
    }
}

/// What an answer of the instance metadata service becomes in object_store:
/// a header value (the IMDSv2 token), part of a URL (a role name), or
/// credentials that become header values. object_store unwraps each (a
/// newline in a token, a space in a role name panicked it), so they are
/// checked here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MetadataAnswer {
    Token,
    RoleName,
    Credentials,
}

fn metadata_answer(path: &str) -> Option<MetadataAnswer> {
    const CREDENTIALS: &str = "/latest/meta-data/iam/security-credentials";
    if path == "/latest/api/token" {
        Some(MetadataAnswer::Token)
    } else if path == CREDENTIALS || path == "/latest/meta-data/iam/security-credentials/" {
        Some(MetadataAnswer::RoleName)
    } else if path.starts_with(CREDENTIALS) {
        Some(MetadataAnswer::Credentials)
    } else {
        None
    }
}

/// The most bytes an instance metadata answer may have.
const METADATA_BODY_LIMIT: usize = 64 << 10;

/// Reads a metadata answer whole (at most [`METADATA_BODY_LIMIT`] bytes)
/// and hands it on only if object_store can use it without panicking: a
/// token of printable ASCII, a role name of IAM's characters, credentials
/// JSON of printable ASCII with no escapes (AWS's never need one; an
/// escaped newline would become a header's newline).
async fn checked_metadata(
    response: HttpResponse,
    kind: MetadataAnswer,
) -> Result<HttpResponse, HttpError> {
    let invalid = |why: &str| {
        HttpError::new(
            HttpErrorKind::Decode,
            std::io::Error::other(format!(
                "the instance metadata service answered with {why}: not used"
            )),
        )
    };
    let (parts, body) = response.into_parts();
    let bytes =
        http_body_util::BodyExt::collect(http_body_util::Limited::new(body, METADATA_BODY_LIMIT))
            .await
            .map_err(|_| invalid("more than 64 KiB"))?
            .to_bytes();
    let text = bytes.trim_ascii();
    let printable = |byte: &u8| (0x20..=0x7e).contains(byte);
    let valid = match kind {
        MetadataAnswer::Token => !text.is_empty() && text.iter().all(printable),
        MetadataAnswer::RoleName => {
            !text.is_empty()
                && text
                    .iter()
                    .all(|&byte| byte.is_ascii_alphanumeric() || b"+=,.@_-\n".contains(&byte))
        }
        MetadataAnswer::Credentials => text.iter().all(|&byte| {
            (printable(&byte) && byte != b'\\') || matches!(byte, b'\n' | b'\r' | b'\t')
        }),
    };
    if !valid {
        return Err(invalid(match kind {
            MetadataAnswer::Token => "a token that is not header text",
            MetadataAnswer::RoleName => "a role name IAM does not allow",
            MetadataAnswer::Credentials => "credentials that are not header text",
        }));
    }
    Ok(HttpResponse::from_parts(
        parts,
        HttpResponseBody::from(bytes),
    ))
}

/// A body past its limit.
#[derive(Debug, thiserror::Error)]
#[error("the response body is longer than the {0} bytes this request may bring")]
struct BodyTooLong(u64);

#[async_trait::async_trait]
impl HttpService for Counting {
    async fn call(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
        let requests = EXCHANGES
            .try_with(|exchanges| lock(exchanges).len())
            .unwrap_or(0);
        if requests >= MAX_REQUESTS_PER_OPERATION {
            return Err(HttpError::new(
                HttpErrorKind::Decode,
                std::io::Error::other(format!(
                    "more than {MAX_REQUESTS_PER_OPERATION} requests for one operation (a listing that never ends?)"
                )),
            ));
        }
        self.counters.requests.fetch_add(1, Ordering::Relaxed);
        let range = header(request.headers().get("range"));
        let listing = request
            .uri()
            .query()
            .is_some_and(|query| query.contains("list-type="));
        let metadata = metadata_answer(request.uri().path());
        let writing = matches!(request.method().as_str(), "POST" | "PUT" | "DELETE");
        let response = self.inner.execute(request).await?;
        if let Some(kind) = metadata
            && response.status().is_success()
        {
            return checked_metadata(response, kind).await;
        }
        let limit = if writing {
            // An upload's answers (an upload id, a part's ETag, a
            // completion) are small: never the whole-object limit.
            ERROR_BODY_LIMIT
        } else {
            body_limit(
                response.status().as_u16(),
                range.as_deref(),
                listing,
                self.whole_limit,
            )
        };
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
        let body = http_body_util::BodyExt::map_err(
            http_body_util::Limited::new(body, usize::try_from(limit).unwrap_or(usize::MAX)),
            move |_| HttpError::new(HttpErrorKind::Decode, BodyTooLong(limit)),
        );
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
    whole_limit: u64,
}

impl HttpConnector for CountingConnector {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        // reqwest is built without a TLS provider of its own: ring's,
        // for the whole process, unless one is installed already.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let inner = ReqwestConnector::default().connect(options)?;
        Ok(HttpClient::new(Counting {
            inner,
            counters: Arc::clone(&self.counters),
            whole_limit: self.whole_limit,
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
    /// The same store's multipart API (S3 only), for uploads whose first
    /// part is sent last.
    multipart: Option<Arc<object_store::aws::AmazonS3>>,
    scheme: Scheme,
    base: String,
    counters: Arc<Counters>,
    pub memory: Mutex<MemoryCache>,
    pub disk: Option<DiskCache>,
    pub options: RemoteOptions,
    next_id: AtomicU64,
    /// The memory-cache id of each version opened (URL, strong ETag,
    /// size): an object opened again (a shard reopened by a later pass)
    /// finds what was fetched of it.
    versions: Mutex<HashMap<(String, String, u64), u64>>,
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
            // A body may exceed the object by what a server adds around it
            // (multipart framing is not asked for): one byte past is enough
            // to tell a longer body from an exact one.
            whole_limit: options.max_whole_object.saturating_add(1),
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
        let mut multipart = None;
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
                let store = Arc::new(store);
                multipart = Some(Arc::clone(&store));
                store
            }
        };
        let disk = match &options.cache_dir {
            Some((dir, limit)) => Some(DiskCache::new(dir, *limit)?),
            None => None,
        };
        Ok(Self {
            runtime: Driver(Some(runtime)),
            store,
            multipart,
            scheme: location.scheme,
            base: location.base.clone(),
            counters,
            memory: Mutex::new(MemoryCache::new(options.memory_cache)),
            disk,
            options: options.clone(),
            next_id: AtomicU64::new(0),
            versions: Mutex::new(HashMap::new()),
        })
    }

    /// Whether `location` can share this family's client.
    pub fn holds(&self, location: &Location) -> bool {
        self.scheme == location.scheme && self.base == location.base
    }

    /// The id of an object's entries in the memory cache: the one it had
    /// when this version (URL, strong ETag and size) was opened before, a
    /// new one otherwise (an object without a strong ETag always gets a new
    /// one: nothing tells its versions apart).
    pub fn cache_id(&self, url: &str, meta: &ObjectMeta) -> u64 {
        let fresh = || self.next_id.fetch_add(1, Ordering::Relaxed);
        match strong_etag(meta) {
            Some(etag) => *lock(&self.versions)
                .entry((url.to_owned(), etag.to_owned(), meta.size))
                .or_insert_with(fresh),
            None => fresh(),
        }
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

    /// Runs one operation of `store` (retries included, at most
    /// [`MAX_REQUESTS_PER_OPERATION`] requests), its failure told apart by
    /// what the server answered. `what` names it in a message.
    pub async fn operation<T>(
        &self,
        location: &Location,
        what: &str,
        future: impl Future<Output = object_store::Result<T>>,
    ) -> Result<T> {
        let exchanges = Arc::new(Mutex::new(Vec::new()));
        let outcome = EXCHANGES.scope(Arc::clone(&exchanges), future).await;
        outcome.map_err(|error| {
            match classify(location, self.scheme, error, &lock(&exchanges), None) {
                Failure::Error(error) => error,
                Failure::RangesIgnored | Failure::NotSatisfiable => RemoteError::Request {
                    url: location.display.clone(),
                    message: format!("{what} failed"),
                },
            }
        })
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    /// The store's multipart API, or why there is none (plain HTTP).
    pub fn multipart(&self, location: &Location) -> Result<Arc<dyn MultipartStore>> {
        self.multipart
            .as_ref()
            .map(|store| Arc::clone(store) as Arc<dyn MultipartStore>)
            .ok_or_else(|| RemoteError::Unsupported {
                url: location.display.clone(),
                what: "plain HTTP cannot be written to: write to s3:// or a local path".into(),
            })
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
            message: unreachable(&other).unwrap_or_else(|| describe(&other)),
        },
    })
}

/// What a person can do about a server that could not be reached: the
/// transport's failure in one line with the next step, instead of the HTTP
/// client's retry report. `None` when the failure is something else.
fn unreachable(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    const REFUSED: &str = "cannot connect (connection refused): is the server running, and are the host and port right?";
    const TIMED_OUT: &str = "cannot connect (timed out): check the host, the port and the network";
    const NO_HOST: &str = "cannot connect: the host name does not resolve; check the URL";
    let mut text = String::new();
    for layer in binfmt_core::carry::chain(error) {
        match layer
            .downcast_ref::<std::io::Error>()
            .map(std::io::Error::kind)
        {
            Some(std::io::ErrorKind::ConnectionRefused) => return Some(REFUSED.to_owned()),
            Some(std::io::ErrorKind::TimedOut) => return Some(TIMED_OUT.to_owned()),
            _ => {}
        }
        text.push_str(&layer.to_string().to_lowercase());
        text.push(' ');
    }
    // The HTTP client reports some transport failures as text only.
    if text.contains("connection refused") {
        Some(REFUSED.to_owned())
    } else if text.contains("dns error") || text.contains("failed to lookup address") {
        Some(NO_HOST.to_owned())
    } else {
        None
    }
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

    /// Found from outside: an error or listing body without end was read
    /// whole (1.9 GB, then an abort). Each response now brings at most
    /// what its request may.
    #[test]
    fn a_body_is_bounded_by_what_its_request_may_bring() {
        let whole = 256 << 20;
        assert_eq!(body_limit(206, Some("bytes=100-199"), false, whole), 100);
        assert_eq!(
            body_limit(404, Some("bytes=0-9"), false, whole),
            ERROR_BODY_LIMIT
        );
        assert_eq!(body_limit(500, None, true, whole), ERROR_BODY_LIMIT);
        assert_eq!(body_limit(200, None, true, whole), LIST_BODY_LIMIT);
        // A server ignoring the range sends the whole object: its limit.
        assert_eq!(body_limit(200, Some("bytes=0-9"), false, whole), whole);
        assert_eq!(body_limit(206, Some("bytes=9-0"), false, whole), whole);
    }

    /// Found from outside: a fake metadata service's role name with a
    /// space, or a token with a newline, panicked object_store. Its
    /// answers are recognised by path and checked before it sees them.
    #[test]
    fn metadata_answers_are_recognised_by_path() {
        use MetadataAnswer::*;
        assert_eq!(metadata_answer("/latest/api/token"), Some(Token));
        assert_eq!(
            metadata_answer("/latest/meta-data/iam/security-credentials/"),
            Some(RoleName)
        );
        assert_eq!(
            metadata_answer("/latest/meta-data/iam/security-credentials/my-role"),
            Some(Credentials)
        );
        assert_eq!(metadata_answer("/bucket/latest/api/token"), None);
        assert_eq!(metadata_answer("/latest/meta-data/placement/region"), None);
    }
}
