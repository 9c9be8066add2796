//! Cross-crate and interop tests of the binfmt workspace; the tests live in
//! `tests/tests/`, this library holds what they share.

#![deny(missing_docs)]
// Test support: a panic here is a failed test, not a crash on user input.
#![allow(clippy::panic)]

use std::path::{Path, PathBuf};

/// The repository root.
pub fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new("."))
}

/// A file under `fixtures/`.
pub fn fixture(relative: &str) -> PathBuf {
    workspace_root().join("fixtures").join(relative)
}

/// How the interop tests find the reference tools.
pub mod interop {
    use std::path::PathBuf;

    /// Whether a missing reference tool fails the test (`BINFMT_INTEROP=require`,
    /// set by `.ci/test`) rather than skipping it with a note.
    fn required() -> bool {
        std::env::var("BINFMT_INTEROP").is_ok_and(|value| value == "require")
    }

    /// Reports a missing tool: a failure when interop is required, a note on
    /// stderr otherwise. Returns `None` so callers can `let Some(..) = .. else { return }`.
    fn missing<T>(what: &str) -> Option<T> {
        let message =
            format!("{what} not found: run `bash .ci/setup-interop` (or `bash .ci/test`)");
        assert!(!required(), "{message}");
        eprintln!("skipping interop test: {message}");
        None
    }

    /// Where `.ci/setup-interop` installs: under the build directory.
    fn installed(relative: &str) -> PathBuf {
        target_dir().join("interop").join(relative)
    }

    /// The build directory: `$CARGO_TARGET_DIR` or `target/`.
    fn target_dir() -> PathBuf {
        std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| super::workspace_root().join("target"))
    }

    /// The Python interpreter with the reference packages:
    /// `$BINFMT_PYTHON`, or the venv `.ci/setup-interop` makes.
    pub fn python() -> Option<PathBuf> {
        let path = std::env::var_os("BINFMT_PYTHON")
            .map(PathBuf::from)
            .unwrap_or_else(|| installed("venv/bin/python"));
        if path.exists() {
            Some(path)
        } else {
            missing("Python with kastore")
        }
    }

    /// The `arcx` 0.3.0 binary: `$BINFMT_ARCX`, or the one
    /// `.ci/setup-interop` installs.
    pub fn arcx() -> Option<PathBuf> {
        let path = std::env::var_os("BINFMT_ARCX")
            .map(PathBuf::from)
            .unwrap_or_else(|| installed("cargo/bin/arcx"));
        if path.exists() {
            Some(path)
        } else {
            missing("the arcx 0.3.0 tool")
        }
    }

    /// A script under `tests/python/`.
    pub fn python_script(name: &str) -> PathBuf {
        super::workspace_root().join("tests/python").join(name)
    }

    /// The servers `bash .ci/servers start` runs on 127.0.0.1, as it wrote
    /// them to `target/servers.env` (or `$BINFMT_SERVERS_ENV`).
    #[derive(Debug, Clone)]
    pub struct Servers {
        /// The document root nginx, `http.server` and the misbehaving server
        /// serve: tests write the files they read there.
        pub www: PathBuf,
        /// nginx: `{nginx}/NAME` with ranges and ETags, `{nginx}/norange/NAME`
        /// ignoring ranges, `{nginx}/noetag/NAME` without ETags.
        pub nginx: String,
        /// nginx's access log: `$connection METHOD URI STATUS BYTES
        /// range="..." if_match="..."` per request.
        pub nginx_access_log: PathBuf,
        /// nginx over HTTPS (`https://127.0.0.1:PORT`, same locations).
        pub nginx_https: String,
        /// The CA (PEM) that signed nginx's certificate.
        pub test_ca: PathBuf,
        /// Python's `http.server`, which ignores ranges.
        pub http_server: String,
        /// tests/python/misbehaving_server.py: `{misbehaving}/MODE/NAME`.
        pub misbehaving: String,
        /// SeaweedFS's S3 endpoint (`http://127.0.0.1:PORT`).
        pub s3_endpoint: String,
        /// The bucket the tests use (created at start).
        pub s3_bucket: String,
        /// The one identity's access key.
        pub s3_access_key_id: String,
        /// Its secret.
        pub s3_secret_access_key: String,
        /// The region to sign for.
        pub s3_region: String,
    }

    impl Servers {
        /// nginx's access-log lines about `NAME` (`... /NAME ...`), once at
        /// least `at_least` are there and none has arrived for 100 ms: nginx
        /// writes a line after it has answered, so the client can be done
        /// first. Gives up waiting after 5 s.
        pub fn nginx_log(&self, name: &str, at_least: usize) -> Vec<String> {
            let needle = format!("/{name} ");
            let read = || -> Vec<String> {
                std::fs::read_to_string(&self.nginx_access_log)
                    .unwrap_or_default()
                    .lines()
                    .filter(|line| line.contains(&needle))
                    .map(str::to_owned)
                    .collect()
            };
            let started = std::time::Instant::now();
            let mut lines = read();
            loop {
                std::thread::sleep(std::time::Duration::from_millis(100));
                let again = read();
                let settled = again.len() == lines.len() && again.len() >= at_least;
                lines = again;
                if settled || started.elapsed() > std::time::Duration::from_secs(5) {
                    return lines;
                }
            }
        }
    }

    impl Servers {
        /// The response-body bytes of nginx access-log lines (the fifth
        /// field of the `ranges` log format), summed.
        pub fn nginx_body_bytes(lines: &[String]) -> u64 {
            lines
                .iter()
                .filter_map(|line| line.split(' ').nth(4)?.parse::<u64>().ok())
                .sum()
        }

        /// Puts an object into the test bucket, signed with the good key.
        pub fn s3_put(&self, key: &str, bytes: &[u8]) {
            use object_store::ObjectStoreExt;
            let (store, runtime) = self.s3_client();
            runtime
                .block_on(store.put(&object_store::path::Path::from(key), bytes.to_vec().into()))
                .unwrap_or_else(|error| panic!("putting {key}: {error}"));
        }

        /// A client of the test bucket and a runtime to drive it.
        fn s3_client(&self) -> (object_store::aws::AmazonS3, tokio::runtime::Runtime) {
            // object_store's client is built without a TLS provider of its
            // own, as binfmt's (`binfmt_remote`) installs ring's.
            let _ = rustls::crypto::ring::default_provider().install_default();
            let store = object_store::aws::AmazonS3Builder::new()
                .with_endpoint(&self.s3_endpoint)
                .with_bucket_name(&self.s3_bucket)
                .with_access_key_id(&self.s3_access_key_id)
                .with_secret_access_key(&self.s3_secret_access_key)
                .with_region(&self.s3_region)
                .with_allow_http(true)
                .build()
                .unwrap_or_else(|error| panic!("S3 client: {error}"));
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap_or_else(|error| panic!("tokio: {error}"));
            (store, runtime)
        }

        /// The object at `key` in the test bucket, or `None` when there is
        /// none.
        pub fn s3_get(&self, key: &str) -> Option<Vec<u8>> {
            use object_store::ObjectStoreExt;
            let (store, runtime) = self.s3_client();
            runtime.block_on(async {
                match store.get(&object_store::path::Path::from(key)).await {
                    Ok(result) => Some(result.bytes().await.ok()?.to_vec()),
                    Err(object_store::Error::NotFound { .. }) => None,
                    Err(error) => panic!("getting {key}: {error}"),
                }
            })
        }

        /// The keys of the multipart uploads in progress under `prefix`
        /// (S3's ListMultipartUploads, signed by curl, which signs a query
        /// of one parameter only; the keys are filtered here).
        pub fn s3_uploads_in_progress(&self, prefix: &str) -> Vec<String> {
            let output = std::process::Command::new("curl")
                .args([
                    "-fsS",
                    "--aws-sigv4",
                    &format!("aws:amz:{}:s3", self.s3_region),
                    "--user",
                    &format!("{}:{}", self.s3_access_key_id, self.s3_secret_access_key),
                    &format!("{}/{}/?uploads=", self.s3_endpoint, self.s3_bucket),
                ])
                .output()
                .unwrap_or_else(|error| panic!("curl: {error}"));
            assert!(output.status.success(), "listing uploads: {output:?}");
            let text = String::from_utf8_lossy(&output.stdout);
            text.split("<Key>")
                .skip(1)
                .filter_map(|rest| rest.split_once("</Key>").map(|(key, _)| key.to_owned()))
                .filter(|key| key.starts_with(prefix))
                .collect()
        }

        /// The standard AWS variables a process needs to read `s3://` URLs
        /// of the test bucket, signing with `secret`.
        pub fn s3_env(&self, secret: &str) -> Vec<(&'static str, String)> {
            vec![
                ("AWS_ENDPOINT_URL", self.s3_endpoint.clone()),
                ("AWS_ACCESS_KEY_ID", self.s3_access_key_id.clone()),
                ("AWS_SECRET_ACCESS_KEY", secret.to_owned()),
                ("AWS_REGION", self.s3_region.clone()),
                ("AWS_ALLOW_HTTP", "true".to_owned()),
            ]
        }
    }

    /// The running test servers, or `None` with a note when
    /// `target/servers.env` is absent (a failure under
    /// `BINFMT_INTEROP=require`).
    pub fn servers() -> Option<&'static Servers> {
        static SERVERS: std::sync::OnceLock<Option<Servers>> = std::sync::OnceLock::new();
        let servers = SERVERS.get_or_init(|| {
            let path = std::env::var_os("BINFMT_SERVERS_ENV")
                .map(PathBuf::from)
                .unwrap_or_else(|| target_dir().join("servers.env"));
            let text = std::fs::read_to_string(&path).ok()?;
            let vars: std::collections::HashMap<&str, &str> = text
                .lines()
                .filter_map(|line| line.split_once('='))
                .collect();
            let var = |name: &str| -> Option<String> { vars.get(name).map(|v| (*v).to_owned()) };
            Some(Servers {
                www: PathBuf::from(var("BINFMT_SERVERS_WWW")?),
                nginx: var("BINFMT_NGINX_URL")?,
                nginx_access_log: PathBuf::from(var("BINFMT_NGINX_ACCESS_LOG")?),
                nginx_https: var("BINFMT_NGINX_HTTPS_URL")?,
                test_ca: PathBuf::from(var("BINFMT_TEST_CA")?),
                http_server: var("BINFMT_HTTP_SERVER_URL")?,
                misbehaving: var("BINFMT_MISBEHAVING_URL")?,
                s3_endpoint: var("BINFMT_S3_ENDPOINT")?,
                s3_bucket: var("BINFMT_S3_BUCKET")?,
                s3_access_key_id: var("BINFMT_S3_ACCESS_KEY_ID")?,
                s3_secret_access_key: var("BINFMT_S3_SECRET_ACCESS_KEY")?,
                s3_region: var("BINFMT_S3_REGION")?,
            })
        });
        match servers {
            Some(servers) => Some(servers),
            None => missing_servers(),
        }
    }

    fn missing_servers<T>() -> Option<T> {
        let message = "the test servers (target/servers.env) are not running: run `bash .ci/servers start` (or `bash .ci/test`)";
        assert!(!required(), "{message}");
        eprintln!("skipping remote test: {message}");
        None
    }
}

/// `len` bytes from a fixed xorshift generator: the same data on every run
/// for a given `seed`, with no structure a format could mistake for its own.
pub fn pseudo_random_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 32) as u8
        })
        .collect()
}

/// Byte-exact writers of hostile files, one per format: every field from a
/// value the test chooses, checksums right, so one meaning changes at a time.
pub mod build {
    pub mod arcx;
    pub mod kast;
    pub mod taridx;
}

/// Measuring the memory a piece of code allocates.
///
/// A test binary that wants measurements installs the meter as its
/// allocator:
///
/// ```ignore
/// #[global_allocator]
/// static METER: binfmt_tests::memory::Meter = binfmt_tests::memory::Meter;
/// ```
///
/// then starts each test with `let _alone = memory::serial();` (the counters
/// are process-wide, so tests of that binary must not run side by side) and
/// wraps each measured operation in [`memory::measure`], which reports the
/// peak of live heap bytes above the level at its start, and the largest
/// single allocation.
pub mod memory {
    // The meter forwards to the system allocator.
    #![allow(unsafe_code)]

    use std::alloc::{GlobalAlloc, Layout, System};
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts live heap bytes, their peak, and the largest allocation.
    #[derive(Debug)]
    pub struct Meter;

    static LIVE: AtomicUsize = AtomicUsize::new(0);
    static PEAK: AtomicUsize = AtomicUsize::new(0);
    static LARGEST: AtomicUsize = AtomicUsize::new(0);
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

    fn grew(size: usize) {
        let live = LIVE.fetch_add(size, Ordering::Relaxed) + size;
        PEAK.fetch_max(live, Ordering::Relaxed);
        LARGEST.fetch_max(size, Ordering::Relaxed);
    }

    // SAFETY: every call is forwarded unchanged to `System`, which upholds
    // the `GlobalAlloc` contract; the additions are relaxed atomic counters.
    unsafe impl GlobalAlloc for Meter {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            grew(layout.size());
            // SAFETY: the caller's layout is passed through as received.
            unsafe { System.alloc(layout) }
        }

        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            grew(layout.size());
            // SAFETY: as for `alloc`.
            unsafe { System.alloc_zeroed(layout) }
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            // SAFETY: `ptr` came from `System` with this layout.
            unsafe { System.dealloc(ptr, layout) }
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            grew(new_size);
            // SAFETY: `ptr` came from `System` with `layout`.
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }

    /// What [`measure`] saw.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Usage {
        /// The highest number of live heap bytes above the level at the start.
        pub peak: usize,
        /// The largest single allocation.
        pub largest: usize,
    }

    /// Holds every other test that calls it until dropped: measurements
    /// count the whole process.
    pub fn serial() -> std::sync::MutexGuard<'static, ()> {
        ONE_AT_A_TIME
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs `f` and reports its heap usage (zero unless [`Meter`] is the
    /// allocator); hold [`serial`] around it.
    pub fn measure<T>(f: impl FnOnce() -> T) -> (T, Usage) {
        let base = LIVE.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        LARGEST.store(0, Ordering::Relaxed);
        let value = f();
        let usage = Usage {
            peak: PEAK.load(Ordering::Relaxed).saturating_sub(base),
            largest: LARGEST.load(Ordering::Relaxed),
        };
        (value, usage)
    }
}

/// A `Read + Seek` over bytes in memory that counts what readers ask of it,
/// to assert how many bytes an operation reads through a non-mapped source.
pub mod counting {
    use std::io::{Cursor, Read, Seek, SeekFrom};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// Bytes read and positioned reads made so far.
    #[derive(Debug, Default)]
    pub struct Stats {
        bytes: AtomicU64,
        reads: AtomicU64,
    }

    impl Stats {
        /// Bytes read so far.
        pub fn bytes(&self) -> u64 {
            self.bytes.load(Ordering::Relaxed)
        }

        /// Seeks to a position (one per positioned read) so far.
        pub fn reads(&self) -> u64 {
            self.reads.load(Ordering::Relaxed)
        }

        /// Bytes and reads since the last call, then starts counting afresh.
        pub fn take(&self) -> (u64, u64) {
            (
                self.bytes.swap(0, Ordering::Relaxed),
                self.reads.swap(0, Ordering::Relaxed),
            )
        }
    }

    /// `bytes` as a counted `Read + Seek`.
    #[derive(Debug)]
    pub struct Counted {
        inner: Cursor<Vec<u8>>,
        stats: Arc<Stats>,
    }

    impl Counted {
        /// The reader and the counters it updates.
        pub fn new(bytes: Vec<u8>) -> (Self, Arc<Stats>) {
            let stats = Arc::new(Stats::default());
            (
                Self {
                    inner: Cursor::new(bytes),
                    stats: Arc::clone(&stats),
                },
                stats,
            )
        }
    }

    impl Read for Counted {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.inner.read(buf)?;
            self.stats.bytes.fetch_add(n as u64, Ordering::Relaxed);
            Ok(n)
        }
    }

    impl Seek for Counted {
        fn seek(&mut self, position: SeekFrom) -> std::io::Result<u64> {
            if matches!(position, SeekFrom::Start(_)) {
                self.stats.reads.fetch_add(1, Ordering::Relaxed);
            }
            self.inner.seek(position)
        }
    }
}

/// Running a command-line program in tests.
pub mod cli {
    use std::path::Path;
    use std::process::{Command, Output, Stdio};

    /// Runs `program` with `args`, capturing stdout and stderr.
    pub fn run(program: &str, args: &[&str]) -> Output {
        Command::new(program)
            .args(args)
            .output()
            .unwrap_or_else(|error| panic!("{program}: {error}"))
    }

    /// Runs `program` with `args`, feeding `stdin` to it.
    pub fn run_with_stdin(program: &str, args: &[&str], stdin: &[u8]) -> Output {
        use std::io::Write;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|error| panic!("{program}: {error}"));
        if let Some(mut input) = child.stdin.take() {
            input
                .write_all(stdin)
                .unwrap_or_else(|error| panic!("writing stdin: {error}"));
        }
        child
            .wait_with_output()
            .unwrap_or_else(|error| panic!("{program}: {error}"))
    }

    /// Output bytes as text (invalid UTF-8 replaced).
    pub fn text(bytes: &[u8]) -> String {
        String::from_utf8_lossy(bytes).into_owned()
    }

    /// A path as `&str`, for argument lists.
    pub fn arg(path: &Path) -> &str {
        path.to_str()
            .unwrap_or_else(|| panic!("{} is not UTF-8", path.display()))
    }
}

/// Writes `files` (relative path, bytes) under `dir`, creating directories,
/// and returns them as a map.
pub fn write_tree(
    dir: &Path,
    files: impl IntoIterator<Item = (String, Vec<u8>)>,
) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut written = std::collections::BTreeMap::new();
    for (path, bytes) in files {
        let full = dir.join(&path);
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent)
                .unwrap_or_else(|error| panic!("{}: {error}", parent.display()));
        }
        std::fs::write(&full, &bytes).unwrap_or_else(|error| panic!("{}: {error}", full.display()));
        written.insert(path, bytes);
    }
    written
}

/// PAR4 files built byte by byte, independently of `binfmt_parcode`'s
/// writer, so tests can state one meaning at a time: a valid tree, then the
/// same tree with one reference, offset, hash or size claim changed.
///
/// ```ignore
/// let mut file = binfmt_tests::par4::Builder::new();
/// let leaf = file.chunk(b"leaf", &[], 0);
/// let root = file.chunk(b"root", &[leaf, leaf], 0); // one child listed twice
/// let bytes = file.finish(root);
/// ```
pub mod par4 {
    /// Where a chunk lies: (offset, length).
    pub type ChunkRef = (u64, u64);

    /// Compression id 0: stored as is.
    pub const NONE: u8 = 0;
    /// Compression id 1: LZ4 with a u32 size prefix.
    pub const LZ4: u8 = 1;

    /// Chunks appended one after another, then the global header.
    #[derive(Debug, Default)]
    pub struct Builder {
        bytes: Vec<u8>,
    }

    impl Builder {
        /// An empty file.
        pub fn new() -> Self {
            Self::default()
        }

        /// Where the next chunk starts.
        pub fn offset(&self) -> u64 {
            self.bytes.len() as u64
        }

        /// Appends a chunk: `stored` (the payload as stored), the child
        /// table, the count and the meta byte with compression `id`.
        pub fn chunk(&mut self, stored: &[u8], children: &[ChunkRef], id: u8) -> ChunkRef {
            let start = self.offset();
            self.bytes.extend_from_slice(stored);
            for (offset, length) in children {
                self.bytes.extend_from_slice(&offset.to_le_bytes());
                self.bytes.extend_from_slice(&length.to_le_bytes());
            }
            if !children.is_empty() {
                self.bytes
                    .extend_from_slice(&(children.len() as u32).to_le_bytes());
            }
            self.bytes.push(u8::from(!children.is_empty()) | (id << 1));
            (start, self.offset() - start)
        }

        /// Appends a chunk whose payload is compressed with LZ4.
        pub fn lz4_chunk(&mut self, payload: &[u8], children: &[ChunkRef]) -> ChunkRef {
            self.chunk(&lz4(payload), children, LZ4)
        }

        /// Appends the global header naming `root` and returns the file.
        pub fn finish(self, root: ChunkRef) -> Vec<u8> {
            self.finish_with(root, *b"PAR4", 4)
        }

        /// [`Builder::finish`] with any magic and version.
        pub fn finish_with(
            mut self,
            (offset, length): ChunkRef,
            magic: [u8; 4],
            version: u16,
        ) -> Vec<u8> {
            self.bytes.extend_from_slice(&magic);
            self.bytes.extend_from_slice(&version.to_le_bytes());
            self.bytes.extend_from_slice(&offset.to_le_bytes());
            self.bytes.extend_from_slice(&length.to_le_bytes());
            self.bytes.extend_from_slice(&0u32.to_le_bytes());
            self.bytes
        }
    }

    /// `payload` as the reference stores LZ4: u32 LE size, one LZ4 block.
    pub fn lz4(payload: &[u8]) -> Vec<u8> {
        lz4_flex::compress_prepend_size(payload)
    }

    /// An LZ4 block with its size prefix replaced by `claim`.
    pub fn lz4_claiming(payload: &[u8], claim: u32) -> Vec<u8> {
        let mut stored = lz4(payload);
        stored.splice(..4, claim.to_le_bytes());
        stored
    }

    /// bincode 2's standard varint.
    pub fn varint(value: u64) -> Vec<u8> {
        match value {
            0..=250 => vec![value as u8],
            251..=0xffff => [&[251][..], &(value as u16).to_le_bytes()].concat(),
            0x1_0000..=0xffff_ffff => [&[252][..], &(value as u32).to_le_bytes()].concat(),
            _ => [&[253][..], &value.to_le_bytes()].concat(),
        }
    }

    /// bincode of a `str` / `String`.
    pub fn string(text: &str) -> Vec<u8> {
        [varint(text.len() as u64), text.as_bytes().to_vec()].concat()
    }

    /// bincode of a `Vec<u8>` / `&[u8]`.
    pub fn bytes(value: &[u8]) -> Vec<u8> {
        [varint(value.len() as u64), value.to_vec()].concat()
    }

    /// The reference's hash of a `String` key: xxHash64 (seed 0) of its
    /// bytes and a 0xff terminator, as `str`'s `Hash` feeds them.
    pub fn string_hash(key: &str) -> u64 {
        let mut fed = key.as_bytes().to_vec();
        fed.push(0xff);
        xxhash_rust::xxh64::xxh64(&fed, 0)
    }

    /// A `Vec` container's payload: the item count, then the shard runs
    /// `(items per shard, shards)`.
    pub fn vec_container(items: u64, runs: &[(u32, u32)]) -> Vec<u8> {
        let mut payload = items.to_le_bytes().to_vec();
        payload.extend(varint(runs.len() as u64));
        for (count, repeat) in runs {
            payload.extend(varint(u64::from(*count)));
            payload.extend(varint(u64::from(*repeat)));
        }
        payload
    }

    /// A shard of `u64` items.
    pub fn u64_shard(items: &[u64]) -> Vec<u8> {
        let mut payload = varint(items.len() as u64);
        for item in items {
            payload.extend(varint(*item));
        }
        payload
    }

    /// One bucket entry as stored: its hash and bytes.
    #[derive(Debug, Clone)]
    pub struct Entry {
        /// The hash in the bucket's table.
        pub hash: u64,
        /// The entry's bytes in the blob (bincode key, then value).
        pub bytes: Vec<u8>,
    }

    impl Entry {
        /// A `String` key with a `Vec<u8>` value, hashed as the reference does.
        pub fn blob(key: &str, value: &[u8]) -> Self {
            Self {
                hash: string_hash(key),
                bytes: [string(key), bytes(value)].concat(),
            }
        }
    }

    /// A bucket payload holding `entries` in order, each at the offset
    /// where the previous one ends.
    pub fn bucket(entries: &[Entry]) -> Vec<u8> {
        let mut offsets = Vec::new();
        let mut at = 0u32;
        for entry in entries {
            offsets.push(at);
            at += entry.bytes.len() as u32;
        }
        bucket_with_offsets(entries, &offsets)
    }

    /// A bucket payload with the offsets given.
    pub fn bucket_with_offsets(entries: &[Entry], offsets: &[u32]) -> Vec<u8> {
        if entries.is_empty() {
            return Vec::new();
        }
        let mut payload = (entries.len() as u32).to_le_bytes().to_vec();
        payload.extend_from_slice(&[0; 4]);
        for entry in entries {
            payload.extend_from_slice(&entry.hash.to_le_bytes());
        }
        for offset in offsets {
            payload.extend_from_slice(&offset.to_le_bytes());
        }
        for entry in entries {
            payload.extend_from_slice(&entry.bytes);
        }
        payload
    }

    /// A map in the bucket layout: `buckets[i]` holds the entries of bucket
    /// `i`, each chunk stored with compression `id`.
    pub fn bucket_map(buckets: &[Vec<Entry>], id: u8) -> Vec<u8> {
        let mut file = Builder::new();
        let store = |payload: Vec<u8>| if id == LZ4 { lz4(&payload) } else { payload };
        let refs: Vec<ChunkRef> = buckets
            .iter()
            .map(|entries| file.chunk(&store(bucket(entries)), &[], id))
            .collect();
        let root = file.chunk(
            &store((refs.len() as u32).to_le_bytes().to_vec()),
            &refs,
            id,
        );
        file.finish(root)
    }

    /// A chain of `levels` diamonds: each level's node has two children that
    /// both point at the next level's node, so a walk that followed every
    /// edge would take 2^levels steps.
    pub fn diamonds(levels: usize) -> Vec<u8> {
        let mut file = Builder::new();
        let mut below = file.chunk(&u64_shard(&[1]), &[], NONE);
        for _ in 0..levels {
            let left = file.chunk(b"", &[below], NONE);
            let right = file.chunk(b"", &[below], NONE);
            below = file.chunk(b"", &[left, right], NONE);
        }
        file.finish(below)
    }

    /// Derived structs the drop-in readers are exercised with (a fixture,
    /// the sweeps and the fuzz targets): a vector of structs with chunkable
    /// fields, a `#[parcode(map)]` map of struct values, a nested struct.
    pub mod shapes {
        use std::collections::HashMap;

        use binfmt_parcode::ParcodeObject;
        use serde::{Deserialize, Serialize};

        /// An item with plain and chunkable fields.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ParcodeObject)]
        pub struct Item {
            /// Plain.
            pub id: u32,
            /// Plain.
            pub tags: Vec<u16>,
            /// A chunk of its own.
            #[parcode(chunkable)]
            pub name: String,
        }

        /// The root.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ParcodeObject)]
        pub struct Shelf {
            /// Plain.
            pub label: String,
            /// Shards whose children are the items' names.
            #[parcode(chunkable)]
            pub items: Vec<Item>,
            /// Buckets whose children are the values' names.
            #[parcode(map)]
            pub index: HashMap<String, Item>,
            /// A nested struct.
            #[parcode(chunkable)]
            pub first: Item,
        }

        /// A shelf of `n` items, each also in the index.
        pub fn shelf(n: u32) -> Shelf {
            let item = |id: u32| Item {
                id,
                tags: (0..id % 4).map(|t| t as u16).collect(),
                name: format!("item {id}"),
            };
            Shelf {
                label: "shelf".into(),
                items: (0..n).map(item).collect(),
                index: (0..n).map(|id| (format!("k{id}"), item(id))).collect(),
                first: item(0),
            }
        }
    }

    /// The entries of a `HashMap<String, Vec<u8>>` spread over `buckets`
    /// buckets as the reference spreads them.
    pub fn spread(entries: &[(&str, &[u8])], buckets: usize) -> Vec<Vec<Entry>> {
        let mut spread = vec![Vec::new(); buckets];
        for (key, value) in entries {
            let entry = Entry::blob(key, value);
            if let Some(bucket) = spread.get_mut((entry.hash % buckets as u64) as usize) {
                bucket.push(entry);
            }
        }
        spread
    }
}
