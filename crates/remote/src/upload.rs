//! Writing to S3: every writer's output as one object that appears only
//! when complete.
//!
//! An [`Upload`] is a [`Destination`]: what is written goes out as an S3
//! multipart upload, part by part, while the writer goes on, so memory is a
//! few parts whatever the output's size:
//!
//! ```text
//! bytes  [0, P)        [P, 2P)   [2P, 3P) ...  [kP, len)
//! part   0 (held)      1         2             k (last, any size)
//!        sent last     sent as soon as full, by a worker thread,
//!                      at most `concurrency` at once
//! ```
//!
//! - The first part (`P` = the part size, 8 MiB by default) is held until
//!   commit, so a writer can seek back into it and write there (ARCX writes
//!   its header last, at offset 0); S3 takes parts in any order. Seeking
//!   back into a part already sent is an error, never a silent corruption.
//! - An output that ends within two parts is sent as one `PUT` at commit:
//!   no multipart upload is ever started for it.
//! - The object appears only when the upload is completed, in
//!   [`Destination::commit`]. An upload dropped without a commit (an error,
//!   a panic, an exception in Python) is aborted, so it leaves neither an
//!   object nor an incomplete upload. A process killed by a signal it can
//!   catch aborts its uploads through [`abort_uploads`] (the CLI does); one
//!   killed by `SIGKILL` leaves an incomplete upload, never an object, for
//!   the bucket's `AbortIncompleteMultipartUpload` lifecycle rule.
//! - A part that fails transiently is retried by object_store's retry
//!   policy, with the same settings as reads ([`RemoteOptions`]).
//! - Before anything is written, the destination is asked for (`HEAD`):
//!   wrong credentials fail there, in one line, and an object whose ETag is
//!   one of the command's inputs' is refused (the output gate).

use std::io::{self, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use binfmt_core::destination::{Destination, OutputDir};
use binfmt_core::{Error, Inputs};
use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::future::Either;
use futures_util::stream::FuturesUnordered;
use object_store::multipart::{MultipartStore, PartId};
use object_store::path::Path as StorePath;
use object_store::{ObjectStoreExt, PutPayload};

use crate::client::{Family, lock};
use crate::error::{RemoteError, Result};
use crate::location::{Location, Scheme};
use crate::options::RemoteOptions;

/// S3's smallest part (but the last).
pub const MIN_PART_SIZE: usize = 5 << 20;

/// The part size by default.
const DEFAULT_PART_SIZE: usize = 8 << 20;

/// Parts sent at once by default.
const DEFAULT_CONCURRENCY: usize = 2;

/// How uploads are cut and sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UploadOptions {
    part_size: usize,
    concurrency: usize,
}

impl Default for UploadOptions {
    fn default() -> Self {
        Self {
            part_size: DEFAULT_PART_SIZE,
            concurrency: DEFAULT_CONCURRENCY,
        }
    }
}

impl UploadOptions {
    /// Parts of `bytes` (at least [`MIN_PART_SIZE`], S3's floor).
    pub fn part_size(mut self, bytes: usize) -> Self {
        self.part_size = bytes.max(MIN_PART_SIZE);
        self
    }

    /// At most `parts` parts in flight at once (at least 1).
    pub fn concurrency(mut self, parts: usize) -> Self {
        self.concurrency = parts.max(1);
        self
    }

    /// The most bytes an upload holds in memory: the held first part, the
    /// part being filled, the one queued and those in flight.
    pub fn memory_bound(&self) -> usize {
        self.part_size.saturating_mul(self.concurrency + 3)
    }
}

/// The multipart uploads in progress in this process, for
/// [`abort_uploads`].
static IN_PROGRESS: Mutex<Vec<InProgress>> = Mutex::new(Vec::new());

#[derive(Clone)]
struct InProgress {
    store: Arc<dyn MultipartStore>,
    path: StorePath,
    id: String,
}

/// What [`before_first_output`] set: run once, when the first
/// [`RemoteDir`] opens.
static ON_FIRST_OUTPUT: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();
static FIRST_OUTPUT: std::sync::Once = std::sync::Once::new();

/// Sets `hook` to run once, when this process first opens a [`RemoteDir`]
/// (before any request): a program that aborts its uploads on a signal
/// ([`abort_uploads`]) installs its handler there, so that commands that
/// write nothing to S3 do not start a signal thread. Returns false (and
/// sets nothing) if a hook was already set.
pub fn before_first_output(hook: fn()) -> bool {
    ON_FIRST_OUTPUT.set(hook).is_ok()
}

/// Set by [`abort_uploads`]: no upload starts, completes or is put whole
/// from then on.
static STOPPING: AtomicBool = AtomicBool::new(false);

/// Requests in flight that would leave something behind if the process
/// exited during them (starting an upload, a whole-object PUT, completing
/// an upload): [`abort_uploads`] waits for them.
static BUSY: AtomicUsize = AtomicUsize::new(0);

/// Counts one request in [`BUSY`] while it lives.
struct Busy;

impl Busy {
    fn start() -> Self {
        BUSY.fetch_add(1, Ordering::SeqCst);
        Self
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        BUSY.fetch_sub(1, Ordering::SeqCst);
    }
}

fn stopping() -> bool {
    STOPPING.load(Ordering::SeqCst)
}

fn stopped(location: &Location) -> RemoteError {
    RemoteError::Request {
        url: location.display.clone(),
        message: "stopped by a signal: the upload was aborted".into(),
    }
}

/// Aborts every multipart upload this process has in progress, for a
/// signal handler that is about to exit: what they wrote never appears,
/// and no incomplete upload is left behind. From the first call on, no
/// upload starts or completes and no whole object is put (a writer still
/// running gets an error); requests already in flight that could leave
/// something (an upload being started, a whole object being put, an upload
/// being completed) are waited for, and what they left is removed. Waits
/// at most about 15 seconds in all. Returns how many uploads were aborted.
pub fn abort_uploads() -> usize {
    STOPPING.store(true, Ordering::SeqCst);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while BUSY.load(Ordering::SeqCst) > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let uploads = std::mem::take(&mut *lock(&IN_PROGRESS));
    if uploads.is_empty() {
        return 0;
    }
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return 0;
    };
    runtime.block_on(async {
        let aborts = uploads.iter().map(|upload| async {
            upload
                .store
                .abort_multipart(&upload.path, &upload.id)
                .await
                .is_ok()
        });
        tokio::time::timeout(
            Duration::from_secs(5),
            futures_util::future::join_all(aborts),
        )
        .await
        .map_or(0, |done| done.into_iter().filter(|ok| *ok).count())
    })
}

fn forget(id: &str) {
    lock(&IN_PROGRESS).retain(|upload| upload.id != id);
}

/// What the writer hands the worker.
enum Message {
    Part(usize, Bytes),
    /// Every part was handed over: complete the upload.
    Complete,
}

/// The thread that sends parts while the writer goes on.
#[derive(Debug)]
struct Worker {
    sender: tokio::sync::mpsc::Sender<Message>,
    thread: std::thread::JoinHandle<Result<()>>,
}

/// One object being written to S3 (see the module docs).
#[derive(Debug)]
pub struct Upload {
    family: Arc<Family>,
    location: Location,
    options: UploadOptions,
    /// Bytes `[0, head.len())`, held until commit.
    head: Vec<u8>,
    /// Bytes `[tail_start, tail_start + tail.len())`.
    tail: Vec<u8>,
    tail_start: u64,
    /// Parts handed to the worker so far (the head is part 0).
    parts_sent: usize,
    position: u64,
    len: u64,
    worker: Option<Worker>,
    /// A write failed: the output is incomplete and is never committed.
    broken: bool,
}

fn io_error(error: RemoteError) -> io::Error {
    error.into_io()
}

impl Upload {
    fn new(family: Arc<Family>, location: Location, options: UploadOptions) -> Self {
        Self {
            family,
            location,
            options,
            head: Vec::new(),
            tail: Vec::new(),
            tail_start: options.part_size as u64,
            parts_sent: 0,
            position: 0,
            len: 0,
            worker: None,
            broken: false,
        }
    }

    /// The URL it goes to.
    pub fn url(&self) -> &str {
        &self.location.display
    }

    /// Writes as much of `data` at the current position as fits the region
    /// it falls in; returns how much.
    fn write_here(&mut self, data: &[u8]) -> io::Result<usize> {
        let part = self.options.part_size as u64;
        if self.position < part {
            let at = usize::try_from(self.position).map_err(io::Error::other)?;
            let n = data.len().min(self.options.part_size - at);
            overwrite(&mut self.head, at, data.get(..n).unwrap_or_default());
            self.advance(n);
            return Ok(n);
        }
        if self.position < self.tail_start {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!(
                    "{}: cannot write at byte {}: that part was already uploaded",
                    self.location.display, self.position
                ),
            ));
        }
        let at = usize::try_from(self.position - self.tail_start).map_err(io::Error::other)?;
        let n = data.len().min(self.options.part_size - at);
        overwrite(&mut self.tail, at, data.get(..n).unwrap_or_default());
        self.advance(n);
        if self.tail.len() == self.options.part_size && self.position == self.len {
            self.send_tail()?;
        }
        Ok(n)
    }

    fn advance(&mut self, n: usize) {
        self.position += n as u64;
        self.len = self.len.max(self.position);
    }

    /// Hands the full tail to the worker (started on the first).
    fn send_tail(&mut self) -> io::Result<()> {
        let part = Bytes::from(std::mem::take(&mut self.tail));
        self.tail_start += part.len() as u64;
        self.parts_sent += 1;
        let index = self.parts_sent;
        if self.worker.is_none() {
            self.worker = Some(self.start_worker().map_err(io_error)?);
        }
        self.hand(Message::Part(index, part))
    }

    fn hand(&mut self, message: Message) -> io::Result<()> {
        let Some(worker) = &self.worker else {
            return Ok(());
        };
        if worker.sender.blocking_send(message).is_ok() {
            return Ok(());
        }
        // The worker stopped: its error says why.
        let error = match self.worker.take().map(|worker| worker.thread.join()) {
            Some(Ok(Err(error))) => error,
            _ => RemoteError::Request {
                url: self.location.display.clone(),
                message: "the upload stopped".into(),
            },
        };
        Err(io_error(error))
    }

    fn start_worker(&self) -> Result<Worker> {
        let multipart = self.family.multipart(&self.location)?;
        let (sender, receiver) = tokio::sync::mpsc::channel(1);
        let family = Arc::clone(&self.family);
        let location = self.location.clone();
        let concurrency = self.options.concurrency;
        let thread = std::thread::Builder::new()
            .name("binfmt-upload".into())
            .spawn(move || {
                let url = location.display.clone();
                family.block_on(
                    &url,
                    send_parts(&family, &location, multipart, receiver, concurrency),
                )
            })
            .map_err(|error| RemoteError::Setup {
                url: self.location.display.clone(),
                message: format!("cannot start the upload thread: {error}"),
            })?;
        Ok(Worker { sender, thread })
    }

    fn finish(mut self: Box<Self>) -> Result<()> {
        if self.broken {
            return Err(RemoteError::Request {
                url: self.location.display.clone(),
                message: "a write failed: the upload was abandoned".into(),
            });
        }
        if self.worker.is_none() {
            // Within two parts: one PUT.
            let mut whole = std::mem::take(&mut self.head);
            whole.extend_from_slice(&self.tail);
            let payload = PutPayload::from(whole);
            let family = Arc::clone(&self.family);
            let location = self.location.clone();
            let _busy = Busy::start();
            if stopping() {
                return Err(stopped(&location));
            }
            return family.block_on(&location.display, async {
                family
                    .operation(
                        &location,
                        "the upload",
                        family.store().put(&location.path, payload),
                    )
                    .await?;
                if stopping() {
                    // Put while a signal stopped the process: taken back.
                    let _ = family.store().delete(&location.path).await;
                    return Err(stopped(&location));
                }
                Ok(())
            });
        }
        let head = Bytes::from(std::mem::take(&mut self.head));
        let last = Bytes::from(std::mem::take(&mut self.tail));
        let mut failed = self.hand(Message::Part(0, head)).err();
        if failed.is_none() && !last.is_empty() {
            self.parts_sent += 1;
            let index = self.parts_sent;
            failed = self.hand(Message::Part(index, last)).err();
        }
        if failed.is_none() {
            failed = self.hand(Message::Complete).err();
        }
        let worker = self.worker.take();
        let joined = worker.map(|worker| {
            drop(worker.sender);
            worker.thread.join()
        });
        match (failed, joined) {
            (_, Some(Ok(Err(error)))) => Err(error),
            (Some(error), _) => Err(RemoteError::Request {
                url: self.location.display.clone(),
                message: RemoteError::from_io(&error)
                    .map_or_else(|| error.to_string(), RemoteError::detail),
            }),
            (None, Some(Ok(Ok(())))) => Ok(()),
            (None, _) => Err(RemoteError::Request {
                url: self.location.display.clone(),
                message: "the upload thread failed".into(),
            }),
        }
    }
}

/// Writes `data` into `buffer` at `at` (never past its end by more than
/// `data`: positions are never sparse).
fn overwrite(buffer: &mut Vec<u8>, at: usize, data: &[u8]) {
    let end = at + data.len();
    if end > buffer.len() {
        buffer.resize(end, 0);
    }
    if let Some(slot) = buffer.get_mut(at..end) {
        slot.copy_from_slice(data);
    }
}

/// The worker: starts the upload, sends each part handed to it (at most
/// `concurrency` at once), then completes the upload, or aborts it when
/// anything fails or the writer goes away without completing.
async fn send_parts(
    family: &Family,
    location: &Location,
    multipart: Arc<dyn MultipartStore>,
    mut receiver: tokio::sync::mpsc::Receiver<Message>,
    concurrency: usize,
) -> Result<()> {
    let path = &location.path;
    let busy = Busy::start();
    if stopping() {
        return Err(stopped(location));
    }
    let id = family
        .operation(
            location,
            "starting the upload",
            multipart.create_multipart(path),
        )
        .await?;
    // Registered before `busy` ends, so a signal handler waiting for it
    // finds the upload and aborts it.
    lock(&IN_PROGRESS).push(InProgress {
        store: Arc::clone(&multipart),
        path: path.clone(),
        id: id.clone(),
    });
    drop(busy);
    if stopping() {
        return Err(stopped(location));
    }
    let sent = async {
        let mut done: Vec<(usize, PartId)> = Vec::new();
        let mut in_flight = FuturesUnordered::new();
        let mut complete = false;
        let mut open = true;
        let put = |index: usize, bytes: Bytes| {
            let multipart = Arc::clone(&multipart);
            let id = id.clone();
            async move {
                let part = family
                    .operation(
                        location,
                        &format!("uploading part {}", index + 1),
                        multipart.put_part(path, &id, index, PutPayload::from(bytes)),
                    )
                    .await?;
                Ok::<_, RemoteError>((index, part))
            }
        };
        while open || !in_flight.is_empty() {
            let message = if open && in_flight.len() < concurrency {
                if in_flight.is_empty() {
                    Some(receiver.recv().await)
                } else {
                    match futures_util::future::select(pin!(receiver.recv()), in_flight.next())
                        .await
                    {
                        Either::Left((message, _)) => Some(message),
                        Either::Right((finished, _)) => {
                            if let Some(finished) = finished {
                                done.push(finished?);
                            }
                            None
                        }
                    }
                }
            } else {
                if let Some(finished) = in_flight.next().await {
                    done.push(finished?);
                }
                None
            };
            match message {
                Some(Some(Message::Part(index, bytes))) => in_flight.push(put(index, bytes)),
                Some(Some(Message::Complete)) => {
                    complete = true;
                    open = false;
                }
                Some(None) => open = false,
                None => {}
            }
        }
        Ok::<_, RemoteError>((complete, done))
    }
    .await;
    let outcome = match sent {
        Ok((true, mut done)) => {
            done.sort_by_key(|(index, _)| *index);
            let contiguous = done.iter().enumerate().all(|(at, (index, _))| at == *index);
            let _busy = Busy::start();
            if stopping() {
                Err(stopped(location))
            } else if contiguous {
                let parts = done.into_iter().map(|(_, part)| part).collect();
                let completed = family
                    .operation(
                        location,
                        "completing the upload",
                        multipart.complete_multipart(path, &id, parts),
                    )
                    .await;
                if completed.is_ok() && stopping() {
                    // Completed while a signal stopped the process: taken back.
                    let _ = family.store().delete(path).await;
                    return Err(stopped(location));
                }
                completed.map(drop)
            } else {
                Err(RemoteError::Request {
                    url: location.display.clone(),
                    message: "the upload's parts are not contiguous".into(),
                })
            }
        }
        Ok((false, _)) => Err(RemoteError::Request {
            url: location.display.clone(),
            message: "the writer stopped before the end: the upload was aborted".into(),
        }),
        Err(error) => Err(error),
    };
    if outcome.is_err() {
        let _ = family
            .operation(
                location,
                "aborting the upload",
                multipart.abort_multipart(path, &id),
            )
            .await;
    }
    forget(&id);
    outcome
}

impl Write for Upload {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if data.is_empty() {
            return Ok(0);
        }
        let written = self.write_here(data);
        if written.is_err() {
            self.broken = true;
        }
        written
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Seek for Upload {
    /// Any position up to the end; writing there works only within what is
    /// still held (see the module docs).
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(at) => Some(at),
            SeekFrom::End(delta) => self.len.checked_add_signed(delta),
            SeekFrom::Current(delta) => self.position.checked_add_signed(delta),
        };
        match target {
            Some(at) if at <= self.len => {
                self.position = at;
                Ok(at)
            }
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{}: cannot seek past the end of an upload",
                    self.location.display
                ),
            )),
        }
    }
}

impl Destination for Upload {
    fn commit(self: Box<Self>) -> binfmt_core::Result<()> {
        let url = self.location.display.clone();
        self.finish()
            .map_err(|error| Error::io(&url, error.into_io()))
    }

    fn location(&self) -> String {
        self.location.display.clone()
    }
}

impl Drop for Upload {
    /// Not committed: the worker sees its channel close without
    /// `Complete` and aborts the upload; this waits for it, so the abort
    /// is done when the writer is gone.
    fn drop(&mut self) {
        if let Some(worker) = self.worker.take() {
            drop(worker.sender);
            let _ = worker.thread.join();
        }
    }
}

/// A prefix of an S3 bucket as an [`OutputDir`]: every output an
/// [`Upload`], each checked by the output gate first.
#[derive(Debug)]
pub struct RemoteDir {
    family: Arc<Family>,
    /// The prefix, as a directory location (its URL ends in `/`).
    root: Location,
    inputs: Arc<Inputs>,
    options: UploadOptions,
}

impl RemoteDir {
    /// Outputs under `url` (`s3://bucket/prefix`, with or without a final
    /// `/`), none over an input in `inputs`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::io::Write;
    /// use binfmt_core::OutputDir;
    /// use binfmt_remote::{RemoteDir, RemoteOptions, UploadOptions};
    /// let out = RemoteDir::open("s3://bucket/prefix", &RemoteOptions::default(),
    ///     Default::default(), UploadOptions::default())?;
    /// let mut object = out.create("hello.txt")?;
    /// object.write_all(b"hello")?;
    /// object.commit()?; // s3://bucket/prefix/hello.txt appears now
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(
        url: &str,
        options: &RemoteOptions,
        inputs: Arc<Inputs>,
        upload: UploadOptions,
    ) -> Result<Self> {
        FIRST_OUTPUT.call_once(|| {
            if let Some(hook) = ON_FIRST_OUTPUT.get() {
                hook();
            }
        });
        let root = Location::parse(&format!("{}/", url.trim_end_matches('/')))?;
        if root.scheme != Scheme::S3 {
            return Err(RemoteError::Unsupported {
                url: root.display.clone(),
                what: "only s3:// can be written to (HTTP servers take no uploads here): write to \
                       s3:// or a local path"
                    .into(),
            });
        }
        let family = Arc::new(Family::new(&root, options)?);
        Ok(Self {
            family,
            root,
            inputs,
            options: upload,
        })
    }

    fn child(&self, name: &str) -> Result<Location> {
        self.root.sibling(name)
    }

    /// Starts the upload of `name`: asks for what is there first (failing
    /// here, before any work, on wrong credentials), refusing it when it is
    /// an input.
    pub fn upload(&self, name: &str) -> Result<Upload> {
        let location = self.child(name)?;
        self.gate(&location)?;
        Ok(Upload::new(
            Arc::clone(&self.family),
            location,
            self.options,
        ))
    }

    /// The output gate: asks for what is at `location` (wrong credentials
    /// fail here), refusing an input by URL or by ETag.
    fn gate(&self, location: &Location) -> Result<()> {
        let existing = self.head(location)?;
        let etag = existing.as_ref().and_then(|meta| meta.e_tag.as_deref());
        match self.inputs.remote_named_by(&identity_of(location), etag) {
            Some(input) => Err(RemoteError::OutputIsInput {
                url: location.display.clone(),
                input: input.to_owned(),
            }),
            None => Ok(()),
        }
    }

    fn head(&self, location: &Location) -> Result<Option<object_store::ObjectMeta>> {
        let family = &self.family;
        match family.block_on(&location.display, family.head(location)) {
            Ok(meta) => Ok(Some(meta)),
            Err(RemoteError::NotFound { .. }) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Moves `from` to `to` under this prefix (S3 copies on the server,
    /// then deletes: objects up to 5 GB).
    pub fn rename(&self, from: &str, to: &str) -> Result<()> {
        let (source, target) = (self.child(from)?, self.child(to)?);
        let family = &self.family;
        family.block_on(&target.display, async {
            family
                .operation(
                    &target,
                    "copying",
                    family.store().copy(&source.path, &target.path),
                )
                .await?;
            family
                .operation(&source, "deleting", family.store().delete(&source.path))
                .await
        })
    }

    /// The names of the objects directly under this prefix.
    pub fn list(&self) -> Result<Vec<String>> {
        let family = &self.family;
        let prefix = self.root.directory();
        let objects = family.block_on(&self.root.display, family.list(&self.root, &prefix))?;
        // Objects under the prefix only: some servers list a "directory"
        // marker named as the prefix itself.
        let under = format!("{prefix}/");
        Ok(objects
            .into_iter()
            .filter(|meta| meta.location.as_ref().starts_with(&under))
            .filter_map(|meta| meta.location.filename().map(str::to_owned))
            .filter(|name| !name.is_empty())
            .collect())
    }
}

/// How an object is named for the output gate: scheme, bucket (or host)
/// and key, whatever spelling the URL had.
pub(crate) fn identity_of(location: &Location) -> String {
    let scheme = match location.scheme {
        Scheme::S3 => "s3",
        Scheme::Http => "http",
    };
    format!("{scheme}://{}/{}", location.base, location.path)
}

/// How the object at `url` is named for the output gate
/// ([`Inputs::add_remote`]); `None` for a URL that does not parse.
pub fn identity(url: &str) -> Option<String> {
    Location::parse(url)
        .ok()
        .map(|location| identity_of(&location))
}

impl OutputDir for RemoteDir {
    fn create(&self, name: &str) -> binfmt_core::Result<Box<dyn Destination>> {
        match self.upload(name) {
            Ok(upload) => Ok(Box::new(upload)),
            Err(error) => Err(core_error(error)),
        }
    }

    fn check(&self, name: &str) -> binfmt_core::Result<()> {
        self.child(name)
            .and_then(|location| self.gate(&location))
            .map_err(core_error)
    }

    fn remove(&self, name: &str) -> binfmt_core::Result<()> {
        let location = self.child(name).map_err(core_error)?;
        let family = &self.family;
        let removed = family.block_on(&location.display, async {
            family
                .operation(&location, "deleting", family.store().delete(&location.path))
                .await
        });
        match removed {
            Ok(()) | Err(RemoteError::NotFound { .. }) => Ok(()),
            Err(error) => Err(Error::io(error.url(), error.into_io())),
        }
    }

    fn exists(&self, name: &str) -> binfmt_core::Result<bool> {
        let location = self
            .child(name)
            .map_err(|error| Error::io(error.url(), error.into_io()))?;
        self.head(&location)
            .map(|meta| meta.is_some())
            .map_err(|error| Error::io(error.url(), error.into_io()))
    }

    fn show(&self, name: &str) -> PathBuf {
        PathBuf::from(self.child(name).map_or_else(
            |_| format!("{}{name}", self.root.display),
            |child| child.display,
        ))
    }
}

/// A remote error as the output gate's error (an input named) or an I/O
/// error naming the URL.
fn core_error(error: RemoteError) -> Error {
    match error {
        RemoteError::OutputIsInput { url, input } => Error::OutputIsInput {
            output: url.into(),
            input: input.into(),
        },
        error => Error::io(error.url(), error.into_io()),
    }
}
