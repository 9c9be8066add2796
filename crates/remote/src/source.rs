//! [`RemoteSource`]: one remote object as a [`binfmt_core::Source`].

use std::collections::VecDeque;
use std::fmt;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::StreamExt;
use object_store::{GetRange, ObjectMeta};

use crate::client::{Failure, Family, Fetched, lock, strong_etag};
use crate::disk::DiskObject;
use crate::error::{RemoteError, Result};
use crate::location::Location;
use crate::options::{FirstRead, RemoteOptions, Stats, Warning};

/// Ranges given to `will_read` that are remembered for read-ahead.
const MAX_HINTS: usize = 1024;

/// The most bytes one request asks for: larger ranges are split (and the
/// pieces fetched concurrently), so no single request runs into the request
/// timeout and memory holds at most `concurrency` pieces beyond the caller's
/// buffer.
const MAX_REQUEST: u64 = 16 << 20;

/// `range` in pieces of at most [`MAX_REQUEST`] bytes.
fn split(range: Range<u64>) -> impl Iterator<Item = Range<u64>> {
    let mut at = range.start;
    std::iter::from_fn(move || {
        (at < range.end).then(|| {
            let end = range.end.min(at.saturating_add(MAX_REQUEST));
            let piece = at..end;
            at = end;
            piece
        })
    })
}

/// Why [`RemoteSource::fetch_each`] stopped.
enum Stopped {
    /// The server ignores ranges: read the whole object instead.
    RangesIgnored,
    Error(RemoteError),
}

/// An object over HTTP(S) or S3, read by range requests.
///
/// Opening makes one request, a range GET of the object's last (or first)
/// bytes ([`RemoteOptions::with_first_read`]), whose answer gives the
/// object's size and ETag; every later request carries `If-Match` with that
/// ETag, and every answer is checked (status 206, `Content-Range` equal to
/// the range asked, body length, ETag, size), so a replaced object is an
/// error, never a mix of two versions. Reads are served from an in-memory
/// cache (and the disk cache, if set) or fetch exactly the missing bytes;
/// sequential reads and reads inside ranges announced by
/// [`binfmt_core::Source::will_read`] read ahead.
///
/// # Examples
///
/// ```no_run
/// use binfmt_core::{Source, SourceExt};
/// use binfmt_remote::{RemoteOptions, RemoteSource};
///
/// let source = RemoteSource::open("https://example.org/data/train.arcx", &RemoteOptions::default())?;
/// let footer = source.bytes_at(source.len() - 40, 40, "footer")?; // served by the opening request
/// let stats = source.stats();
/// eprintln!("requests: {}, bytes: {}", stats.requests, stats.bytes);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct RemoteSource {
    family: Arc<Family>,
    location: Location,
    name: PathBuf,
    /// The object's entries in the memory cache.
    id: u64,
    len: u64,
    /// The version every answer must match.
    pin: ObjectMeta,
    /// The whole object, once its server was found to ignore ranges.
    whole: Mutex<Option<Bytes>>,
    disk: Option<DiskObject>,
    /// Where the last read ended: a read starting there is sequential.
    last_end: AtomicU64,
    hints: Mutex<VecDeque<Range<u64>>>,
}

impl fmt::Debug for RemoteSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteSource")
            .field("url", &self.location.display)
            .field("len", &self.len)
            .field("etag", &self.pin.e_tag)
            .finish_non_exhaustive()
    }
}

/// An object found by [`list_prefix`] or [`RemoteSource::list_siblings`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Listed {
    /// Its URL.
    pub url: String,
    /// Its name within the listed directory.
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
}

/// The objects directly inside the directory `url` names (`s3://bucket/dir/`
/// or `s3://bucket/dir`), in name order. Plain HTTP cannot list: that is a
/// [`RemoteError::Unsupported`] error.
///
/// # Examples
///
/// ```no_run
/// let shards = binfmt_remote::list_prefix("s3://bucket/train/", &Default::default())?;
/// for shard in shards.iter().filter(|object| object.name.ends_with(".tar")) {
///     println!("{} {}", shard.url, shard.size);
/// }
/// # Ok::<(), binfmt_remote::RemoteError>(())
/// ```
pub fn list_prefix(url: &str, options: &RemoteOptions) -> Result<Vec<Listed>> {
    let location = Location::parse(url)?;
    let family = Family::new(&location, options)?;
    list_in(&family, &location, &location.path)
}

fn list_in(
    family: &Family,
    location: &Location,
    prefix: &object_store::path::Path,
) -> Result<Vec<Listed>> {
    let objects = family.block_on(&location.display, family.list(location, prefix))?;
    let mut listed: Vec<Listed> = objects
        .into_iter()
        .map(|meta| Listed {
            url: location.url_of(&meta.location),
            name: meta.location.filename().unwrap_or_default().to_owned(),
            size: meta.size,
        })
        .collect();
    listed.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(listed)
}

/// What the opening request found.
enum Opened {
    Ranged(Fetched),
    Whole(Fetched),
    Empty(ObjectMeta),
}

impl RemoteSource {
    /// Opens the object at `url` (`http://`, `https://` or `s3://bucket/key`)
    /// with one request. S3 takes credentials, region and endpoint from the
    /// AWS environment variables (see the crate docs).
    pub fn open(url: &str, options: &RemoteOptions) -> Result<Self> {
        let location = Location::parse(url)?;
        if location.is_directory() || location.path.as_ref().is_empty() {
            return Err(RemoteError::InvalidUrl {
                url: location.display,
                why: "names a directory, not an object".into(),
            });
        }
        let family = Arc::new(Family::new(&location, options)?);
        Self::open_in(family, location)
    }

    /// Opens another object in the same directory, `name` relative to it
    /// (`train_0001.tar`, `shards/a.tar`), sharing this source's client,
    /// runtime, counters and caches.
    pub fn sibling(&self, name: &str) -> Result<Self> {
        let location = self.location.sibling(name)?;
        if !self.family.holds(&location) {
            return Err(RemoteError::InvalidUrl {
                url: location.display,
                why: "not beside the source it was asked of".into(),
            });
        }
        Self::open_in(Arc::clone(&self.family), location)
    }

    /// The URL of the object `name` beside this one, checked as
    /// [`RemoteSource::sibling`] checks it, without a request.
    pub fn sibling_url(&self, name: &str) -> Result<String> {
        let location = self.location.sibling(name)?;
        if !self.family.holds(&location) {
            return Err(RemoteError::InvalidUrl {
                url: location.display,
                why: "not beside the source it was asked of".into(),
            });
        }
        Ok(location.display)
    }

    /// The objects directly inside this object's directory (S3 only; plain
    /// HTTP cannot list), counted in this source's [`Stats`].
    pub fn list_siblings(&self) -> Result<Vec<Listed>> {
        list_in(&self.family, &self.location, &self.location.directory())
    }

    /// Requests and bytes so far, of this source, its siblings and any
    /// listing made through them.
    pub fn stats(&self) -> Stats {
        self.family.stats()
    }

    /// The URL, as given.
    pub fn url(&self) -> &str {
        &self.location.display
    }

    /// The ETag every request is pinned to, if the server sent one.
    pub fn etag(&self) -> Option<&str> {
        self.pin.e_tag.as_deref()
    }

    /// The options this source (and its family) reads with: a reader
    /// planning what to fetch ahead can size it to the memory cache.
    pub fn options(&self) -> &RemoteOptions {
        &self.family.options
    }

    /// Whether the whole object sits in memory because its server ignores
    /// range requests.
    pub fn is_whole(&self) -> bool {
        lock(&self.whole).is_some()
    }

    fn open_in(family: Arc<Family>, location: Location) -> Result<Self> {
        let url = location.display.clone();
        let (range, asked) = match family.options.first_read {
            FirstRead::Tail(n) => (GetRange::Suffix(n), n),
            FirstRead::Head(n) => (GetRange::Bounded(0..n), n),
        };
        let expect = |len: u64| match family.options.first_read {
            FirstRead::Tail(_) => len.saturating_sub(asked)..len,
            FirstRead::Head(_) => 0..asked.min(len),
        };
        let limit = family.options.max_whole_object;
        let opened = family.block_on(&url, async {
            match family.get(&location, Some(range.clone()), None, 0).await {
                Ok(fetched) => Ok(Opened::Ranged(fetched)),
                Err(Failure::RangesIgnored) => Ok(Opened::Whole(
                    fetch_whole(&family, &location, None, limit).await?,
                )),
                Err(Failure::NotSatisfiable) => {
                    let meta = family.head(&location).await?;
                    if meta.size == 0 {
                        Ok(Opened::Empty(meta))
                    } else {
                        Err(RemoteError::WrongRange {
                            url: url.clone(),
                            requested: range.to_string(),
                            answered: format!(
                                "416 (not satisfiable) for a {}-byte object",
                                meta.size
                            ),
                        })
                    }
                }
                Err(Failure::Error(error)) => Err(error),
            }
        })?;
        let (pin, first, whole) = match opened {
            Opened::Ranged(fetched) => {
                let expected = expect(fetched.meta.size);
                check_answer(&url, &expected, &fetched)?;
                (
                    fetched.meta,
                    Some((fetched.range.start, fetched.bytes)),
                    None,
                )
            }
            Opened::Whole(fetched) => (fetched.meta, None, Some(fetched.bytes)),
            Opened::Empty(meta) => (meta, None, None),
        };
        let disk = match (&family.disk, strong_etag(&pin)) {
            (Some(cache), Some(etag)) if whole.is_none() => cache.object(&url, etag, pin.size),
            _ => None,
        };
        let source = Self {
            id: family.cache_id(&url, &pin),
            name: PathBuf::from(&url),
            len: pin.size,
            pin,
            whole: Mutex::new(whole),
            disk,
            last_end: AtomicU64::new(u64::MAX),
            hints: Mutex::new(VecDeque::new()),
            family,
            location,
        };
        if let Some(bytes) = lock(&source.whole).as_ref() {
            source.family.warn(Warning::RangesIgnored {
                url: url.clone(),
                size: bytes.len() as u64,
            });
        } else if strong_etag(&source.pin).is_none() && source.len > 0 {
            source.family.warn(Warning::NoStrongEtag { url });
        }
        if let Some((start, bytes)) = first {
            source.keep(start, &bytes);
        }
        Ok(source)
    }

    /// Puts fetched bytes in the memory cache and the disk cache.
    fn keep(&self, start: u64, bytes: &Bytes) {
        lock(&self.family.memory).insert(self.id, start, bytes);
        if let (Some(cache), Some(object)) = (&self.family.disk, &self.disk) {
            object.write(cache, start, bytes);
        }
    }

    /// Checks an answer's version against the pinned one.
    fn check_version(&self, meta: &ObjectMeta) -> Result<()> {
        let changed = |what: String| RemoteError::Changed {
            url: self.location.display.clone(),
            what,
        };
        if meta.size != self.pin.size {
            return Err(changed(format!(
                "its size was {} bytes, now {}",
                self.pin.size, meta.size
            )));
        }
        if self.pin.e_tag.is_some() {
            if meta.e_tag != self.pin.e_tag {
                return Err(changed(format!(
                    "ETag {} became {}",
                    self.pin.e_tag.as_deref().unwrap_or_default(),
                    meta.e_tag.as_deref().unwrap_or("(none)")
                )));
            }
        } else if meta.last_modified != self.pin.last_modified {
            return Err(changed(format!(
                "Last-Modified {} became {}",
                self.pin.last_modified, meta.last_modified
            )));
        }
        Ok(())
    }

    /// GET of exactly `range`, pinned and checked.
    async fn fetch(&self, range: Range<u64>) -> Result<Bytes, Failure> {
        let fetched = self
            .family
            .get(
                &self.location,
                Some(GetRange::Bounded(range.clone())),
                Some(&self.pin),
                0,
            )
            .await?;
        self.check_version(&fetched.meta)?;
        check_answer(&self.location.display, &range, &fetched)?;
        Ok(fetched.bytes)
    }

    /// Fetches `ranges` (each split into requests of at most
    /// [`MAX_REQUEST`] bytes) with at most the configured number of requests
    /// in flight, handing each answer to `handle` as it arrives, so memory
    /// holds at most the requests in flight. Stops at the first failure
    /// and returns it.
    fn fetch_each(
        &self,
        ranges: Vec<Range<u64>>,
        mut handle: impl FnMut(u64, Bytes) + Send,
    ) -> Result<(), Stopped> {
        let concurrency = self.family.options.concurrency;
        let requests = ranges.into_iter().flat_map(split);
        let outcome = self
            .family
            .block_on(&self.location.display, async {
                let fetches = requests.map(|range| async move {
                    let result = self.fetch(range.clone()).await;
                    (range, result)
                });
                let mut answers = futures_util::stream::iter(fetches).buffer_unordered(concurrency);
                while let Some((range, result)) = answers.next().await {
                    match result {
                        Ok(bytes) => handle(range.start, bytes),
                        Err(failure) => return Ok(Err((range, failure))),
                    }
                }
                Ok(Ok(()))
            })
            .map_err(Stopped::Error)?;
        match outcome {
            Ok(()) => Ok(()),
            Err((_, Failure::RangesIgnored)) => Err(Stopped::RangesIgnored),
            Err((range, Failure::NotSatisfiable)) => Err(Stopped::Error(RemoteError::Changed {
                url: self.location.display.clone(),
                what: format!(
                    "bytes {}..{} of a {}-byte object are out of range (HTTP 416)",
                    range.start, range.end, self.len
                ),
            })),
            Err((_, Failure::Error(error))) => Err(Stopped::Error(error)),
        }
    }

    /// Switches to the whole object (its server ignores ranges): fetched
    /// once, pinned, within the size limit.
    fn go_whole(&self) -> Result<Bytes> {
        let mut whole = lock(&self.whole);
        if let Some(bytes) = whole.as_ref() {
            return Ok(bytes.clone());
        }
        let limit = self.family.options.max_whole_object;
        let fetched = self.family.block_on(
            &self.location.display,
            fetch_whole(&self.family, &self.location, Some(&self.pin), limit),
        )?;
        self.check_version(&fetched.meta)?;
        self.family.warn(Warning::RangesIgnored {
            url: self.location.display.clone(),
            size: fetched.bytes.len() as u64,
        });
        *whole = Some(fetched.bytes.clone());
        Ok(fetched.bytes)
    }

    /// The whole object, if it is held.
    fn whole(&self) -> Option<Bytes> {
        lock(&self.whole).clone()
    }

    /// What to fetch for the `gaps` of a read of `range`: each gap exactly,
    /// except that the last one reaches ahead when the read is sequential or
    /// inside a range announced by `will_read` (up to the read-ahead size or
    /// half the memory cache, whichever is less, the announced range's end,
    /// and the next cached bytes).
    fn plan(&self, range: &Range<u64>, mut gaps: Vec<Range<u64>>) -> Vec<Range<u64>> {
        let sequential = self.last_end.load(Ordering::Relaxed) == range.start;
        let Some(last) = gaps.last_mut() else {
            return gaps;
        };
        let hint_end = lock(&self.hints)
            .iter()
            .find(|hint| hint.start <= last.start && last.start < hint.end)
            .map(|hint| hint.end);
        let limit = match (hint_end, sequential) {
            (Some(end), _) => end,
            (None, true) => self.len,
            (None, false) => return gaps,
        };
        // A window the memory cache cannot keep would be fetched again by
        // the next read: at most half of it.
        let window = (self.family.options.read_ahead).min(self.family.options.memory_cache / 2);
        let ahead = last.start.saturating_add(window).min(limit).min(self.len);
        if ahead > last.end {
            let (_, beyond) = lock(&self.family.memory).lookup(self.id, last.end..ahead, false);
            if let Some(free) = beyond.first().filter(|free| free.start == last.end) {
                last.end = free.end;
            }
        }
        gaps
    }

    fn read_into(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let end = offset + buf.len() as u64;
        let range = offset..end;
        let (pieces, mut gaps) = lock(&self.family.memory).lookup(self.id, range.clone(), true);
        for (start, bytes) in &pieces {
            copy_into(buf, offset, *start, bytes);
        }
        if let Some(object) = &self.disk
            && !gaps.is_empty()
        {
            let (missing, found) = object.read(gaps, offset, buf);
            let mut memory = lock(&self.family.memory);
            for (start, bytes) in &found {
                memory.insert(self.id, *start, bytes);
            }
            gaps = missing;
        }
        if !gaps.is_empty() {
            let plan = self.plan(&range, gaps);
            let fetched = self.fetch_each(plan, |start, bytes| {
                copy_into(buf, offset, start, &bytes);
                self.keep(start, &bytes);
            });
            match fetched {
                Ok(()) => {}
                Err(Stopped::RangesIgnored) => {
                    let whole = self.go_whole()?;
                    copy_into(buf, offset, 0, &whole);
                }
                Err(Stopped::Error(error)) => return Err(error),
            }
        }
        self.last_end.store(end, Ordering::Relaxed);
        Ok(())
    }

    /// `ranges` clipped to the object, empty ones dropped, sorted, and
    /// those that overlap or touch joined: what a caller asked for.
    fn asked(&self, ranges: impl IntoIterator<Item = Range<u64>>) -> Vec<Range<u64>> {
        let mut ranges: Vec<Range<u64>> = ranges
            .into_iter()
            .map(|range| range.start.min(self.len)..range.end.min(self.len))
            .filter(|range| range.start < range.end)
            .collect();
        ranges.sort_by_key(|range| range.start);
        coalesce(ranges, 0)
    }
}

/// `ranges` (sorted by start) merged into requests: a range that overlaps
/// or touches the request before it joins it; one at most `gap` bytes
/// after it joins it when the request, with the gap, still holds at least
/// as many bytes asked for as bytes merged over. A request is then never
/// more than twice what it was asked for: the payloads between small
/// headers (tar members, map values) are merged over only when they are
/// no larger than the headers around them.
fn coalesce(ranges: impl IntoIterator<Item = Range<u64>>, gap: u64) -> Vec<Range<u64>> {
    // Each request, with the bytes asked for in it and the bytes merged over.
    let mut merged: Vec<(Range<u64>, u64, u64)> = Vec::new();
    for range in ranges {
        match merged.last_mut() {
            Some((last, asked, _)) if range.start <= last.end => {
                *asked += range.end.saturating_sub(last.end);
                last.end = last.end.max(range.end);
            }
            Some((last, asked, over))
                if range.start - last.end <= gap
                    && *over + (range.start - last.end) <= *asked + (range.end - range.start) =>
            {
                *over += range.start - last.end;
                *asked += range.end - range.start;
                last.end = range.end;
            }
            _ => {
                let len = range.end - range.start;
                merged.push((range, len, 0));
            }
        }
    }
    merged.into_iter().map(|(range, _, _)| range).collect()
}

/// GET of the whole object from a server that ignores ranges, checked
/// against the size it announces and `limit`.
async fn fetch_whole(
    family: &Family,
    location: &Location,
    pin: Option<&ObjectMeta>,
    limit: u64,
) -> Result<Fetched> {
    let fetched = match family.get(location, None, pin, limit).await {
        Ok(fetched) => fetched,
        Err(Failure::Error(error)) => return Err(error),
        Err(Failure::RangesIgnored | Failure::NotSatisfiable) => {
            return Err(RemoteError::Request {
                url: location.display.clone(),
                message: "unexpected answer to a GET of the whole object".into(),
            });
        }
    };
    if fetched.bytes.len() as u64 != fetched.meta.size {
        return Err(RemoteError::ShortBody {
            url: location.display.clone(),
            range: 0..fetched.meta.size,
            received: fetched.bytes.len() as u64,
        });
    }
    Ok(fetched)
}

/// The answer must be exactly `expected` (object_store compared the
/// `Content-Range` with the request; this also catches a range clipped at
/// the object's end and a body shorter than announced).
fn check_answer(url: &str, expected: &Range<u64>, fetched: &Fetched) -> Result<()> {
    if fetched.range != *expected {
        return Err(RemoteError::WrongRange {
            url: url.to_owned(),
            requested: format!(
                "bytes={}-{}",
                expected.start,
                expected.end.saturating_sub(1)
            ),
            answered: format!(
                "Content-Range: bytes {}-{}/{}",
                fetched.range.start,
                fetched.range.end.saturating_sub(1),
                fetched.meta.size
            ),
        });
    }
    let received = fetched.bytes.len() as u64;
    if received != expected.end - expected.start {
        return Err(RemoteError::ShortBody {
            url: url.to_owned(),
            range: expected.clone(),
            received,
        });
    }
    Ok(())
}

/// Copies the part of `bytes` (the object's bytes from `start`) that falls
/// in `buf` (the object's bytes from `offset`).
fn copy_into(buf: &mut [u8], offset: u64, start: u64, bytes: &[u8]) {
    let end = offset + buf.len() as u64;
    let from = offset.max(start);
    let to = end.min(start + bytes.len() as u64);
    if from >= to {
        return;
    }
    let source = bytes.get((from - start) as usize..(to - start) as usize);
    let target = buf.get_mut((from - offset) as usize..(to - offset) as usize);
    if let (Some(source), Some(target)) = (source, target) {
        target.copy_from_slice(source);
    }
}

impl binfmt_core::Source for RemoteSource {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|end| *end <= self.len)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "bytes {offset}..+{} are past the end of the {}-byte object",
                        buf.len(),
                        self.len
                    ),
                )
            })?;
        if let Some(whole) = self.whole() {
            copy_into(buf, offset, 0, &whole);
            self.last_end.store(end, Ordering::Relaxed);
            return Ok(());
        }
        self.read_into(offset, buf).map_err(RemoteError::into_io)
    }

    fn name(&self) -> &Path {
        &self.name
    }

    /// Fetches the ranges not cached yet, neighbours at most the coalescing
    /// gap apart by one request when it stays at least half bytes asked
    /// for (see `coalesce`; split at 16 MiB), several requests at once; the
    /// first half of the memory cache's worth is fetched now, the rest is
    /// left to the reads (which read ahead inside these ranges, never past
    /// them). Failures are left for the reads to report.
    fn will_read(&self, ranges: &[Range<u64>]) {
        if self.is_whole() {
            return;
        }
        let gap = self.family.options.coalesce_gap;
        let asked = self.asked(ranges.iter().cloned());
        {
            let mut hints = lock(&self.hints);
            for range in coalesce(asked.iter().cloned(), gap) {
                if hints.len() == MAX_HINTS {
                    hints.pop_front();
                }
                hints.push_back(range);
            }
        }
        let mut missing = Vec::new();
        {
            let mut memory = lock(&self.family.memory);
            for range in &asked {
                missing.extend(memory.lookup(self.id, range.clone(), false).1);
            }
        }
        if let Some(object) = &self.disk {
            missing = object.missing(missing);
        }
        let mut budget = self.family.options.memory_cache / 2;
        let plan: Vec<Range<u64>> = coalesce(missing, gap)
            .into_iter()
            .map_while(|range| {
                let take = (range.end - range.start).min(budget);
                budget -= take;
                (take > 0).then(|| range.start..range.start + take)
            })
            .collect();
        if plan.is_empty() {
            return;
        }
        let fetched = self.fetch_each(plan, |start, bytes| self.keep(start, &bytes));
        if let Err(Stopped::RangesIgnored) = fetched {
            let _ = self.go_whole();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_ranges_are_split_into_bounded_requests() {
        let pieces: Vec<_> = split(10..10 + 2 * MAX_REQUEST + 5).collect();
        assert_eq!(
            pieces,
            [
                10..10 + MAX_REQUEST,
                10 + MAX_REQUEST..10 + 2 * MAX_REQUEST,
                10 + 2 * MAX_REQUEST..15 + 2 * MAX_REQUEST
            ]
        );
        assert_eq!(split(5..5).count(), 0);
    }

    #[test]
    #[allow(clippy::single_range_in_vec_init)] // one merged range, as expected
    fn coalescing_merges_over_gaps_no_larger_than_what_is_asked() {
        // Touching and overlapping ranges are one; a gap past the limit
        // never merges.
        assert_eq!(coalesce([0..10, 10..20, 15..30], 0), [0..30]);
        assert_eq!(coalesce([0..10, 11..20], 0), [0..10, 11..20]);
        assert_eq!(coalesce([0..100, 300..400], 150), [0..100, 300..400]);
        // Tar headers of 512 bytes between 2 KiB payloads stay apart: a
        // merge would be mostly payload.
        let headers = (0..4u64).map(|i| i * 2560..i * 2560 + 512);
        assert_eq!(coalesce(headers.clone(), 64 << 10).len(), 4);
        // Between 512-byte payloads they merge: half of each request asked.
        let small = (0..4u64).map(|i| i * 1024..i * 1024 + 512);
        assert_eq!(coalesce(small, 64 << 10), [0..3584]);
        // Adjacent blocks, and a small gap between large ranges, merge.
        assert_eq!(
            coalesce([0..4096, 4096..8192, 9000..20_000], 64 << 10),
            [0..20_000]
        );
        // The bytes merged over add up over a request: 100 asked, 90 over,
        // then 10 more asked across 30 more over would make 120 over 110.
        assert_eq!(
            coalesce([0..50, 140..190, 220..230], 64 << 10),
            [0..190, 220..230]
        );
    }

    #[test]
    fn copies_only_the_overlap() {
        let mut buf = [0u8; 4];
        copy_into(&mut buf, 10, 8, &[1, 2, 3, 4]);
        assert_eq!(buf, [3, 4, 0, 0]);
        copy_into(&mut buf, 10, 13, &[9, 9, 9]);
        assert_eq!(buf, [3, 4, 0, 9]);
        copy_into(&mut buf, 10, 20, &[7]);
        assert_eq!(buf, [3, 4, 0, 9]);
    }
}
