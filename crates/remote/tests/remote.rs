//! Remote reading against real servers on 127.0.0.1, started by
//! `bash .ci/servers start` (`.ci/test` does it): nginx (ranges, ETags, and
//! a location that ignores ranges), SeaweedFS's S3 (signed requests),
//! Python's http.server (ignores ranges) and a misbehaving server of our own
//! (tests/python/misbehaving_server.py). Without them every test skips with a
//! note, unless `BINFMT_INTEROP=require`.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::single_range_in_vec_init // will_read takes a list of ranges, here of one
)]

use std::fs;
use std::io::Read;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use binfmt_core::{Source, SourceExt};
use binfmt_remote::{FirstRead, RemoteError, RemoteOptions, RemoteSource, Stats, Warning};
use binfmt_tests::interop::{Servers, servers};
use binfmt_tests::pseudo_random_bytes;

/// A name no other test (or earlier run) uses: the servers keep state per
/// name (the misbehaving server counts requests per file and range).
fn unique(stem: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "{stem}-{}-{}.bin",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Writes `bytes` into the servers' document root (whole, by rename).
fn publish(servers: &Servers, name: &str, bytes: &[u8]) {
    let partial = servers.www.join(format!(".{name}.partial"));
    fs::write(&partial, bytes).unwrap();
    fs::rename(&partial, servers.www.join(name)).unwrap();
}

/// Options for tests: quick retries, so failures that persist end fast.
fn options() -> RemoteOptions {
    RemoteOptions::default().with_retries(2, Duration::from_millis(10), Duration::from_millis(50))
}

fn s3_options(servers: &Servers, secret: &str) -> RemoteOptions {
    options()
        .with_s3_setting("AWS_ENDPOINT_URL", &servers.s3_endpoint)
        .with_s3_setting("AWS_ACCESS_KEY_ID", &servers.s3_access_key_id)
        .with_s3_setting("AWS_SECRET_ACCESS_KEY", secret)
        .with_s3_setting("AWS_REGION", &servers.s3_region)
        .with_s3_setting("AWS_ALLOW_HTTP", "true")
}

/// Requests and bytes since `before`.
fn spent(source: &RemoteSource, before: Stats) -> (u64, u64) {
    let now = source.stats();
    (now.requests - before.requests, now.bytes - before.bytes)
}

/// The error inside a reader's error, as the remote source made it.
fn remote_error(error: &binfmt_core::Error) -> &RemoteError {
    match error {
        binfmt_core::Error::Io { source, .. } => {
            RemoteError::from_io(source).unwrap_or_else(|| panic!("not a remote error: {error}"))
        }
        other => panic!("not an I/O error: {other}"),
    }
}

/// Ranges of every shape over a `len`-byte object: the first and last
/// bytes, small and large, unaligned, overlapping, the whole object.
fn ranges(len: u64) -> Vec<(u64, u64)> {
    let mut ranges = vec![(0, 1), (len - 1, 1), (0, len), (len - 40, 40), (7, 1000)];
    let mut state = 0x1234_5678_u64;
    for _ in 0..40 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let offset = state % len;
        let size = (state >> 32) % 70_000 + 1;
        ranges.push((offset, size.min(len - offset)));
    }
    ranges
}

fn assert_ranges(source: &RemoteSource, data: &[u8]) {
    assert_eq!(source.len(), data.len() as u64);
    for (offset, len) in ranges(data.len() as u64) {
        let got = source.bytes_at(offset, len, "range").unwrap();
        assert!(
            got[..] == data[offset as usize..(offset + len) as usize],
            "{} bytes {offset}+{len}",
            source.url()
        );
    }
}

/// nginx access-log lines about `name`, at least `at_least` of them:
/// (connection, range, if_match).
fn nginx_log(servers: &Servers, name: &str, at_least: u64) -> Vec<(String, String, String)> {
    servers
        .nginx_log(name, at_least as usize)
        .iter()
        .map(|line| {
            let field = |key: &str| {
                line.split(&format!("{key}=\""))
                    .nth(1)
                    .and_then(|rest| rest.split('"').next())
                    .filter(|value| *value != "-")
                    .unwrap_or_default()
                    .replace("\\x22", "\"")
            };
            let connection = line.split(' ').next().unwrap_or_default().to_owned();
            (connection, field("range"), field("if_match"))
        })
        .collect()
}

#[test]
fn nginx_ranges_equal_the_file() {
    let Some(servers) = servers() else { return };
    let name = unique("nginx-ranges");
    let data = pseudo_random_bytes(1, 3_000_000);
    publish(servers, &name, &data);
    let source = RemoteSource::open(&format!("{}/{name}", servers.nginx), &options()).unwrap();
    assert_eq!(source.stats().requests, 1);
    assert!(source.etag().is_some());
    assert_ranges(&source, &data);
    assert_eq!(source.name().to_str(), Some(source.url()));
}

#[test]
fn opening_reads_the_tail_and_learns_the_size() {
    let Some(servers) = servers() else { return };
    let name = unique("suffix");
    let data = pseudo_random_bytes(2, 100_000);
    publish(servers, &name, &data);
    let url = format!("{}/{name}", servers.nginx);
    let source = RemoteSource::open(&url, &options()).unwrap();
    assert_eq!(source.len(), 100_000);
    assert_eq!(source.stats().requests, 1);
    assert_eq!(source.stats().bytes, 40);
    // The footer a reader asks for first costs nothing more.
    let footer = source.bytes_at(100_000 - 40, 40, "footer").unwrap();
    assert_eq!(&footer[..], &data[100_000 - 40..]);
    assert_eq!(source.stats().requests, 1);
    let log = nginx_log(servers, &name, 1);
    assert_eq!(log.len(), 1);
    assert_eq!((log[0].1.as_str(), log[0].2.as_str()), ("bytes=-40", ""));

    // A header-first format opens with the head instead.
    let head = RemoteSource::open(&url, &options().with_first_read(FirstRead::Head(64))).unwrap();
    assert_eq!(head.len(), 100_000);
    assert_eq!(&head.bytes_at(0, 64, "header").unwrap()[..], &data[..64]);
    assert_eq!((head.stats().requests, head.stats().bytes), (1, 64));

    // An object smaller than the tail asked for is read whole by it.
    let tiny = unique("tiny");
    publish(servers, &tiny, b"0123456789");
    let source = RemoteSource::open(&format!("{}/{tiny}", servers.nginx), &options()).unwrap();
    assert_eq!(source.len(), 10);
    assert_eq!(&source.bytes_at(0, 10, "all").unwrap()[..], b"0123456789");
    assert_eq!(source.stats().requests, 1);

    // An empty object: the range is not satisfiable, a HEAD says why.
    let empty = unique("empty");
    publish(servers, &empty, b"");
    let source = RemoteSource::open(&format!("{}/{empty}", servers.nginx), &options()).unwrap();
    assert_eq!(source.len(), 0);
    assert_eq!(source.stats().requests, 2);
}

/// A known sequence of reads costs exactly these requests and bytes, and
/// every request after the first carries If-Match with the pinned ETag.
#[test]
fn requests_and_bytes_are_exact_for_a_known_sequence() {
    let Some(servers) = servers() else { return };
    let name = unique("counts");
    let data = pseudo_random_bytes(3, 1_000_000);
    publish(servers, &name, &data);
    let options = options().with_read_ahead(0);
    let source = RemoteSource::open(&format!("{}/{name}", servers.nginx), &options).unwrap();
    assert_eq!((source.stats().requests, source.stats().bytes), (1, 40));

    let before = source.stats();
    assert_eq!(
        &source.bytes_at(100, 100, "a").unwrap()[..],
        &data[100..200]
    );
    assert_eq!(spent(&source, before), (1, 100));

    let before = source.stats();
    assert_eq!(
        &source.bytes_at(150, 30, "cached").unwrap()[..],
        &data[150..180]
    );
    assert_eq!(spent(&source, before), (0, 0));

    // Around the cached 100..200: exactly the two gaps, fetched together.
    let before = source.stats();
    assert_eq!(&source.bytes_at(0, 300, "b").unwrap()[..], &data[..300]);
    assert_eq!(spent(&source, before), (2, 200));

    // Announced ranges: the two near ones in one request, the far one in
    // another; reading them afterwards costs nothing.
    let before = source.stats();
    source.will_read(&[1000..1100, 1200..1300, 500_000..500_100]);
    assert_eq!(spent(&source, before), (2, 400));
    let before = source.stats();
    for (offset, len) in [(1000, 100), (1200, 100), (1100, 100), (500_000, 100)] {
        let got = source.bytes_at(offset, len, "announced").unwrap();
        assert_eq!(&got[..], &data[offset as usize..(offset + len) as usize]);
    }
    assert_eq!(spent(&source, before), (0, 0));

    let log = nginx_log(servers, &name, source.stats().requests);
    assert_eq!(log.len() as u64, source.stats().requests);
    assert_eq!(log[0].1, "bytes=-40");
    assert_eq!(log[0].2, "");
    let etag = source.etag().unwrap();
    for (_, range, if_match) in &log[1..] {
        assert!(range.starts_with("bytes="), "{range}");
        assert_eq!(if_match, etag);
    }
    let mut asked: Vec<&str> = log[1..]
        .iter()
        .map(|(_, range, _)| range.as_str())
        .collect();
    asked.sort_unstable();
    assert_eq!(
        asked,
        [
            "bytes=0-99",
            "bytes=100-199",
            "bytes=1000-1299",
            "bytes=200-299",
            "bytes=500000-500099"
        ]
    );
}

#[test]
fn sequential_reads_read_ahead() {
    let Some(servers) = servers() else { return };
    let name = unique("sequential");
    let data = pseudo_random_bytes(4, 3_000_000);
    publish(servers, &name, &data);
    let source = RemoteSource::open(&format!("{}/{name}", servers.nginx), &options()).unwrap();
    let mut all = Vec::new();
    let mut reader = source.reader(0, 3_000_000, "stream").unwrap();
    let mut buf = [0; 8192];
    loop {
        let n = reader.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        all.extend_from_slice(&buf[..n]);
    }
    assert!(all == data);
    // The open, the first 8 KiB, then the rest in one read-ahead.
    assert_eq!(source.stats().requests, 3);
    assert_eq!(source.stats().bytes, 40 + 3_000_000 - 40);
}

/// An announced range larger than the memory cache allows: its first half
/// cache's worth now, the rest by read-ahead windows the cache can hold, so
/// every byte is fetched once.
#[test]
fn a_large_announced_range_is_fetched_once_within_the_cache() {
    let Some(servers) = servers() else { return };
    let name = unique("large-hint");
    let data = pseudo_random_bytes(22, 3_000_000);
    publish(servers, &name, &data);
    let options = options().with_memory_cache(1 << 20);
    let source = RemoteSource::open(&format!("{}/{name}", servers.nginx), &options).unwrap();
    source.will_read(&[0..3_000_000]);
    assert_eq!(
        (source.stats().requests, source.stats().bytes),
        (2, 40 + 524_288)
    );
    let mut all = Vec::new();
    let mut reader = source.reader(0, 3_000_000, "stream").unwrap();
    let mut buf = vec![0; 65_536];
    loop {
        let n = reader.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        all.extend_from_slice(&buf[..n]);
    }
    assert!(all == data);
    // 524 288..3 000 000 in five windows of at most 512 KiB (the 40-byte
    // tail read at open was the least recently used and went first).
    assert_eq!(
        (source.stats().requests, source.stats().bytes),
        (7, 3_000_040)
    );
}

#[test]
fn s3_signed_ranges_equal_the_object() {
    let Some(servers) = servers() else { return };
    let key = format!("ranges/{}", unique("s3"));
    let data = pseudo_random_bytes(5, 2_000_000);
    servers.s3_put(&key, &data);
    let url = format!("s3://{}/{key}", servers.s3_bucket);
    let source =
        RemoteSource::open(&url, &s3_options(servers, &servers.s3_secret_access_key)).unwrap();
    assert_eq!((source.stats().requests, source.stats().bytes), (1, 40));
    assert_ranges(&source, &data);
    let before = source.stats();
    source.will_read(&[0..10, 20..30]);
    assert_eq!(spent(&source, before).0, 0, "all cached already");
}

/// The process environment configures S3 (AWS_* variables), as users set
/// it: the test runs itself again with the variables set.
#[test]
fn s3_reads_the_aws_environment() {
    let Some(servers) = servers() else { return };
    const CHILD: &str = "BINFMT_REMOTE_TEST_CHILD_URL";
    if let Ok(url) = std::env::var(CHILD) {
        let source = RemoteSource::open(&url, &RemoteOptions::default()).unwrap();
        assert_eq!(&source.bytes_at(0, 5, "head").unwrap()[..], b"hello");
        return;
    }
    let key = format!("env/{}", unique("s3-env"));
    servers.s3_put(&key, b"hello, environment");
    let url = format!("s3://{}/{key}", servers.s3_bucket);
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "s3_reads_the_aws_environment", "--nocapture"])
        .env(CHILD, &url)
        .env("AWS_ENDPOINT_URL", &servers.s3_endpoint)
        .env("AWS_ACCESS_KEY_ID", &servers.s3_access_key_id)
        .env("AWS_SECRET_ACCESS_KEY", &servers.s3_secret_access_key)
        .env("AWS_REGION", &servers.s3_region)
        .env("AWS_ALLOW_HTTP", "true")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("1 passed"), "{stdout}");
}

/// HTTPS: the server's certificate is checked against the system's trust
/// store, which `SSL_CERT_FILE` extends; the test runs itself again with the
/// test CA there. Without it the connection is refused.
#[test]
fn https_checks_the_certificate() {
    let Some(servers) = servers() else { return };
    const CHILD: &str = "BINFMT_REMOTE_TEST_CHILD_HTTPS";
    if let Ok(url) = std::env::var(CHILD) {
        let source = RemoteSource::open(&url, &options()).unwrap();
        assert_eq!(&source.bytes_at(0, 7, "head").unwrap()[..], b"secured");
        return;
    }
    let name = unique("https");
    publish(servers, &name, b"secured over TLS");
    let url = format!("{}/{name}", servers.nginx_https);
    let error = RemoteSource::open(&url, &options()).unwrap_err();
    assert!(matches!(error, RemoteError::Request { .. }), "{error}");
    assert!(error.to_string().starts_with(&url), "{error}");
    assert!(error.to_string().contains("UnknownIssuer"), "{error}");
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "https_checks_the_certificate", "--nocapture"])
        .env(CHILD, &url)
        .env("SSL_CERT_FILE", &servers.test_ca)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("1 passed"), "{stdout}");
}

#[test]
fn a_replaced_object_is_an_error_never_a_mix() {
    let Some(servers) = servers() else { return };
    // nginx: the ETag is the file's time and size.
    let name = unique("replaced");
    let data = pseudo_random_bytes(6, 200_000);
    publish(servers, &name, &data);
    let source = RemoteSource::open(&format!("{}/{name}", servers.nginx), &options()).unwrap();
    assert_eq!(
        &source.bytes_at(0, 1000, "before").unwrap()[..],
        &data[..1000]
    );
    publish(servers, &name, &pseudo_random_bytes(7, 200_001));
    let error = source.bytes_at(100_000, 1000, "after").unwrap_err();
    assert!(
        matches!(remote_error(&error), RemoteError::Changed { .. }),
        "{error}"
    );
    assert!(error.to_string().contains(&name), "{error}");
    // What was read before the change is still served from the cache.
    assert_eq!(
        &source.bytes_at(0, 1000, "cached").unwrap()[..],
        &data[..1000]
    );

    // S3: the ETag is the content's MD5.
    let key = format!("replaced/{}", unique("s3"));
    servers.s3_put(&key, &data);
    let url = format!("s3://{}/{key}", servers.s3_bucket);
    let source =
        RemoteSource::open(&url, &s3_options(servers, &servers.s3_secret_access_key)).unwrap();
    servers.s3_put(&key, &pseudo_random_bytes(8, 200_000));
    let error = source.bytes_at(0, 1000, "after").unwrap_err();
    assert!(
        matches!(remote_error(&error), RemoteError::Changed { .. }),
        "{error}"
    );
    // Announced ranges of the replaced object are not cached either.
    source.will_read(&[5000..6000]);
    assert!(source.bytes_at(5000, 1000, "announced").is_err());
}

/// Without an ETag, size and modification time are compared instead.
#[test]
fn a_server_without_etags_is_pinned_by_size_and_time() {
    let Some(servers) = servers() else { return };
    let name = unique("noetag");
    let data = pseudo_random_bytes(18, 100_000);
    publish(servers, &name, &data);
    let url = format!("{}/noetag/{name}", servers.nginx);
    let warnings = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&warnings);
    let options = options().on_warning(move |warning| seen.lock().unwrap().push(warning.clone()));
    let source = RemoteSource::open(&url, &options).unwrap();
    assert_eq!(source.etag(), None);
    assert_eq!(
        *warnings.lock().unwrap(),
        vec![Warning::NoStrongEtag { url: url.clone() }]
    );
    assert_eq!(
        &source.bytes_at(10, 1000, "before").unwrap()[..],
        &data[10..1010]
    );
    publish(servers, &name, &pseudo_random_bytes(19, 100_001));
    let error = source.bytes_at(50_000, 1000, "after").unwrap_err();
    assert!(
        matches!(remote_error(&error), RemoteError::Changed { .. }),
        "{error}"
    );
}

#[test]
fn a_wrong_secret_is_refused_without_showing_it() {
    let Some(servers) = servers() else { return };
    let key = format!("secret/{}", unique("s3"));
    servers.s3_put(&key, b"guarded");
    let url = format!("s3://{}/{key}", servers.s3_bucket);
    let secret = "not-the-secret-5f3a9c";
    let error = RemoteSource::open(&url, &s3_options(servers, secret)).unwrap_err();
    assert!(
        matches!(error, RemoteError::Denied { status: 403, .. }),
        "{error}"
    );
    let message = error.to_string();
    assert!(message.starts_with(&url), "{message}");
    assert!(!message.contains(secret), "{message}");
    assert!(!format!("{error:?}").contains(secret));
    assert!(!message.contains('\n'), "{message}");
    assert!(!format!("{:?}", s3_options(servers, secret)).contains(secret));
}

#[test]
fn a_missing_object_is_one_line_naming_the_url() {
    let Some(servers) = servers() else { return };
    let http = format!("{}/{}", servers.nginx, unique("missing"));
    let s3 = format!("s3://{}/missing/{}", servers.s3_bucket, unique("missing"));
    let bucket = format!("s3://{}/", servers.s3_bucket);
    let error = RemoteSource::open(&bucket, &options()).unwrap_err();
    assert!(matches!(error, RemoteError::InvalidUrl { .. }), "{error}");
    for (url, options) in [
        (http, options()),
        (s3, s3_options(servers, &servers.s3_secret_access_key)),
    ] {
        let error = RemoteSource::open(&url, &options).unwrap_err();
        assert!(matches!(error, RemoteError::NotFound { .. }), "{error}");
        assert_eq!(error.to_string(), format!("{url}: not found (HTTP 404)"));
        let core: binfmt_core::Error = error.into();
        assert_eq!(core.to_string(), format!("{url}: not found (HTTP 404)"));
    }
}

#[test]
fn wrong_ranges_and_short_bodies_are_errors() {
    let Some(servers) = servers() else { return };
    let name = unique("wrong");
    let data = pseudo_random_bytes(9, 50_000);
    publish(servers, &name, &data);
    let url = |mode: &str| format!("{}/{mode}/{name}", servers.misbehaving);

    // The first 40 bytes in answer to bytes=-40, labelled as such.
    let error = RemoteSource::open(&url("wrong-suffix"), &options()).unwrap_err();
    assert!(matches!(error, RemoteError::WrongRange { .. }), "{error}");
    assert!(error.to_string().contains("bytes=-40"), "{error}");
    assert!(error.to_string().contains("bytes 0-39/50000"), "{error}");

    // Each range one byte later than asked.
    let source = RemoteSource::open(&url("shifted"), &options()).unwrap();
    let error = source.bytes_at(100, 100, "shifted").unwrap_err();
    assert!(
        matches!(remote_error(&error), RemoteError::WrongRange { .. }),
        "{error}"
    );

    // Half the body, honestly framed.
    let error = RemoteSource::open(&url("short"), &options()).unwrap_err();
    assert!(
        matches!(error, RemoteError::ShortBody { received: 20, .. }),
        "{error}"
    );
}

#[test]
fn a_dropped_connection_resumes_or_fails_never_wrong_bytes() {
    let Some(servers) = servers() else { return };
    let name = unique("dropped");
    let data = pseudo_random_bytes(10, 400_000);
    publish(servers, &name, &data);
    let url = |mode: &str| format!("{}/{mode}/{name}", servers.misbehaving);

    // Cut off once per range: object_store asks for the rest (same ETag).
    let source = RemoteSource::open(&url("drop-once"), &options()).unwrap();
    let before = source.stats();
    let got = source.bytes_at(1000, 300_000, "resumed").unwrap();
    assert!(got[..] == data[1000..301_000]);
    assert_eq!(spent(&source, before).0, 2);

    // Cut off every time: an error once the retries are spent.
    for mode in ["drop-always", "drop-noetag"] {
        match RemoteSource::open(&url(mode), &options()) {
            Err(error) => assert!(
                matches!(error, RemoteError::Request { .. }),
                "{mode}: {error}"
            ),
            Ok(source) => {
                let error = source.bytes_at(0, 300_000, "dropped").unwrap_err();
                let remote = remote_error(&error);
                assert!(
                    matches!(remote, RemoteError::Request { .. }),
                    "{mode}: {error}"
                );
            }
        }
    }
}

#[test]
fn transient_failures_are_retried_and_counted() {
    let Some(servers) = servers() else { return };
    let name = unique("flaky");
    let data = pseudo_random_bytes(11, 10_000);
    publish(servers, &name, &data);
    let url = format!("{}/flaky/{name}", servers.misbehaving);
    // Two 503s, then the answer: three requests.
    let source = RemoteSource::open(&url, &options()).unwrap();
    assert_eq!(source.stats().requests, 3);
    let before = source.stats();
    assert_eq!(&source.bytes_at(0, 100, "head").unwrap()[..], &data[..100]);
    assert_eq!(spent(&source, before).0, 3);
    // With fewer retries than failures, the 503 is the error.
    let name = unique("flaky");
    publish(servers, &name, &data);
    let url = format!("{}/flaky/{name}", servers.misbehaving);
    let few = options().with_retries(1, Duration::from_millis(10), Duration::from_millis(10));
    let error = RemoteSource::open(&url, &few).unwrap_err();
    assert!(matches!(error, RemoteError::Request { .. }), "{error}");
    assert!(error.to_string().contains("503"), "{error}");
}

#[test]
fn servers_that_ignore_ranges_are_read_whole_once_with_a_warning() {
    let Some(servers) = servers() else { return };
    let name = unique("norange");
    let data = pseudo_random_bytes(12, 500_000);
    publish(servers, &name, &data);
    for url in [
        format!("{}/{name}", servers.http_server),
        format!("{}/norange/{name}", servers.nginx),
    ] {
        let warnings = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&warnings);
        let options =
            options().on_warning(move |warning| seen.lock().unwrap().push(warning.clone()));
        let source = RemoteSource::open(&url, &options).unwrap();
        assert!(source.is_whole());
        let stats = source.stats();
        // The ranged request (answered 200, not read), then one whole GET.
        assert_eq!((stats.requests, stats.whole_objects), (2, 1), "{url}");
        assert!(stats.bytes >= 500_000, "{url}");
        assert_eq!(
            *warnings.lock().unwrap(),
            vec![Warning::RangesIgnored {
                url: url.clone(),
                size: 500_000
            }]
        );
        assert_ranges(&source, &data);
        source.will_read(&[0..100]);
        assert_eq!(source.stats().requests, 2, "{url}: served from memory");

        // Larger than the limit: refused, with the sizes.
        let small = options.clone().with_max_whole_object(100_000);
        let error = RemoteSource::open(&url, &small).unwrap_err();
        assert!(
            matches!(
                error,
                RemoteError::WholeObjectTooLarge {
                    size: 500_000,
                    limit: 100_000,
                    ..
                }
            ),
            "{error}"
        );
    }
}

/// The S3 client is held to the same checks: pointed (path-style) at the
/// misbehaving server and at http.server, whose first path component is
/// then the "bucket".
#[test]
fn the_s3_client_checks_answers_too() {
    let Some(servers) = servers() else { return };
    let name = unique("s3-checks");
    let data = pseudo_random_bytes(23, 60_000);
    publish(servers, &name, &data);
    let at = |endpoint: &str| {
        options()
            .with_s3_setting("AWS_ENDPOINT_URL", endpoint)
            .with_s3_setting("AWS_ACCESS_KEY_ID", "unchecked")
            .with_s3_setting("AWS_SECRET_ACCESS_KEY", "unchecked-secret")
            .with_s3_setting("AWS_ALLOW_HTTP", "true")
    };
    let misbehaving = at(&servers.misbehaving);
    let source = RemoteSource::open(&format!("s3://ok/{name}"), &misbehaving).unwrap();
    assert_ranges(&source, &data);
    let error = RemoteSource::open(&format!("s3://wrong-suffix/{name}"), &misbehaving).unwrap_err();
    assert!(matches!(error, RemoteError::WrongRange { .. }), "{error}");
    let error = RemoteSource::open(&format!("s3://short/{name}"), &misbehaving).unwrap_err();
    assert!(matches!(error, RemoteError::ShortBody { .. }), "{error}");

    let bucket = format!("bucket-{}", std::process::id());
    fs::create_dir_all(servers.www.join(&bucket)).unwrap();
    fs::write(servers.www.join(&bucket).join(&name), &data).unwrap();
    let source =
        RemoteSource::open(&format!("s3://{bucket}/{name}"), &at(&servers.http_server)).unwrap();
    assert!(source.is_whole());
    assert_eq!(source.stats().whole_objects, 1);
    assert_ranges(&source, &data);
}

#[test]
fn the_disk_cache_serves_a_second_source_without_requests() {
    let Some(servers) = servers() else { return };
    let cache = tempfile::tempdir().unwrap();
    let name = unique("disk");
    let data = pseudo_random_bytes(13, 300_000);
    publish(servers, &name, &data);
    let url = format!("{}/{name}", servers.nginx);
    let options = options().with_cache_dir(cache.path(), 10 << 20);
    let first = RemoteSource::open(&url, &options).unwrap();
    first.will_read(&[1000..50_000, 200_000..201_000]);
    assert_eq!(
        &first.bytes_at(60_000, 100, "x").unwrap()[..],
        &data[60_000..60_100]
    );

    // A new client (another run): one request to open and check the ETag,
    // then everything read before comes from the disk.
    let second = RemoteSource::open(&url, &options).unwrap();
    assert_eq!(second.stats().requests, 1);
    for (offset, len) in [
        (1000, 49_000),
        (200_000, 1000),
        (60_000, 100),
        (299_960, 40),
    ] {
        let got = second.bytes_at(offset, len, "cached").unwrap();
        assert_eq!(&got[..], &data[offset as usize..(offset + len) as usize]);
    }
    assert_eq!(second.stats().requests, 1);

    // A replaced object has another ETag: nothing stale is served.
    let replaced = pseudo_random_bytes(14, 300_001);
    publish(servers, &name, &replaced);
    let third = RemoteSource::open(&url, &options).unwrap();
    assert_eq!(
        &third.bytes_at(1000, 1000, "new").unwrap()[..],
        &replaced[1000..2000]
    );
    assert_eq!(third.stats().requests, 2);
}

#[test]
fn will_read_fetches_in_parallel_within_the_bound() {
    let Some(servers) = servers() else { return };
    let name = unique("parallel");
    let data = pseudo_random_bytes(15, 4_000_000);
    publish(servers, &name, &data);
    let options = options().with_concurrency(4).with_read_ahead(0);
    let source = RemoteSource::open(&format!("{}/{name}", servers.nginx), &options).unwrap();
    let ranges: Vec<_> = (0..16u64)
        .map(|i| i * 200_000..i * 200_000 + 50_000)
        .collect();
    let before = source.stats();
    source.will_read(&ranges);
    assert_eq!(spent(&source, before), (16, 16 * 50_000));
    let before = source.stats();
    for range in &ranges {
        let got = source.bytes_at(range.start, 50_000, "announced").unwrap();
        assert_eq!(&got[..], &data[range.start as usize..range.end as usize]);
    }
    assert_eq!(spent(&source, before), (0, 0));
    // Several connections at once (the pool keeps one otherwise), never
    // more than the bound.
    let log = nginx_log(servers, &name, source.stats().requests);
    assert_eq!(log.len() as u64, source.stats().requests);
    let mut connections: Vec<&str> = log[1..].iter().map(|(c, _, _)| c.as_str()).collect();
    connections.sort_unstable();
    connections.dedup();
    assert!((2..=4).contains(&connections.len()), "{connections:?}");
}

#[test]
fn threads_share_one_source() {
    let Some(servers) = servers() else { return };
    let name = unique("threads");
    let data = Arc::new(pseudo_random_bytes(16, 2_000_000));
    publish(servers, &name, &data);
    let source = Arc::new(
        RemoteSource::open(
            &format!("{}/{name}", servers.nginx),
            &options().with_memory_cache(256 << 10),
        )
        .unwrap(),
    );
    let threads: Vec<_> = (0..8u64)
        .map(|t| {
            let (source, data) = (Arc::clone(&source), Arc::clone(&data));
            std::thread::spawn(move || {
                for i in 0..20u64 {
                    let offset = (t * 250_000 + i * 12_345) % 1_990_000;
                    let got = source.bytes_at(offset, 10_000, "threaded").unwrap();
                    assert!(got[..] == data[offset as usize..offset as usize + 10_000]);
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
}

/// Called from inside an async runtime (where tokio refuses to block), a
/// source still works, blocking its caller.
#[test]
fn sources_work_inside_an_async_runtime() {
    let Some(servers) = servers() else { return };
    let name = unique("async");
    let data = pseudo_random_bytes(24, 100_000);
    publish(servers, &name, &data);
    let url = format!("{}/{name}", servers.nginx);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let got = runtime.block_on(async {
        let source = RemoteSource::open(&url, &options()).unwrap();
        source.will_read(&[0..10, 50_000..50_010]);
        source.bytes_at(1000, 5000, "inside").unwrap().into_owned()
    });
    assert_eq!(got, data[1000..6000]);
}

#[test]
fn siblings_share_the_client_and_listing_needs_s3() {
    let Some(servers) = servers() else { return };
    let index = unique("index");
    let shard = unique("shard");
    publish(servers, &index, b"the index");
    publish(servers, &shard, &pseudo_random_bytes(17, 10_000));
    let source = RemoteSource::open(&format!("{}/{index}", servers.nginx), &options()).unwrap();
    let sibling = source.sibling(&shard).unwrap();
    assert_eq!(sibling.url(), format!("{}/{shard}", servers.nginx));
    assert_eq!(sibling.len(), 10_000);
    assert_eq!(source.stats().requests, 2, "counted together");
    assert!(source.sibling("../etc/passwd").is_err());
    let error = source.list_siblings().unwrap_err();
    assert!(matches!(error, RemoteError::Unsupported { .. }), "{error}");

    let prefix = format!("listed-{}", unique("dir"));
    for name in ["b.tar", "a.tar", "index.taridx"] {
        servers.s3_put(&format!("{prefix}/{name}"), name.as_bytes());
    }
    servers.s3_put(&format!("{prefix}/sub/deeper.tar"), b"not beside");
    let options = s3_options(servers, &servers.s3_secret_access_key);
    let index = RemoteSource::open(
        &format!("s3://{}/{prefix}/index.taridx", servers.s3_bucket),
        &options,
    )
    .unwrap();
    let listed = index.list_siblings().unwrap();
    let names: Vec<_> = listed.iter().map(|object| object.name.as_str()).collect();
    assert_eq!(names, ["a.tar", "b.tar", "index.taridx"]);
    assert_eq!(
        listed[0].url,
        format!("s3://{}/{prefix}/a.tar", servers.s3_bucket)
    );
    assert_eq!(listed[0].size, 5);
    let a = index.sibling("a.tar").unwrap();
    assert_eq!(&a.bytes_at(0, 5, "all").unwrap()[..], b"a.tar");
    let again =
        binfmt_remote::list_prefix(&format!("s3://{}/{prefix}/", servers.s3_bucket), &options)
            .unwrap();
    assert_eq!(again, listed);
}
