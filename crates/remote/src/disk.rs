//! The on-disk cache: fetched ranges kept as files for later runs.
//!
//! Layout: `DIR/<key>/<start>-<len>`, where `<key>` is the SHA-256 (hex,
//! first 32 digits) of the object's URL, strong ETag and size, so a replaced
//! object gets a new key and its old ranges are never read again. Each file
//! is a 56-byte header (`binfmtR2`, the range's start and length, the
//! XXH3-128 of the bytes, 16 zero bytes) and the bytes; it is written to a temporary name in
//! the same directory and renamed into place, so a reader sees a whole range
//! or none. Reading a file sets its modification time; when the files add up
//! to more than the limit, the least recently used (oldest modification
//! time) are deleted first.
//!
//! An object whose range files hold most of it is joined into one whole
//! file ([`whole`]), read by `pread` instead of a file per range.
//!
//! Several processes (a DataLoader's workers) may share the directory, each
//! with its own [`DiskCache`]: each counts the directory when it first
//! writes and again whenever it has written a sixteenth of the limit since
//! its last count, so its own writes are the only ones it can miss, and
//! they stay under a sixteenth of the limit (the bound: spec/remote.md,
//! "Caches and memory"). Temporary names are unique (made with `O_EXCL`),
//! so writers of one range never share a temporary file (one a killed
//! writer left is deleted by a count an hour later); a range deleted under
//! a reader is a miss.
//!
//! The directory is not trusted beyond its path: it must be the user's and
//! writable by no one else (see spec/remote.md, "Caches and memory"), and
//! every entry goes through [`binfmt_core::dir`]: opened by a name this
//! module made, never through a symlink, only if it is a regular file,
//! never blocking. A file is used only if its header and checksum say it is
//! this range's bytes (otherwise it is a miss, fetched again, and the file
//! removed); only files with this module's names and header are ever
//! deleted. The checksum finds damage (a torn or truncated file, flipped
//! bits), not forgery: whoever can write the directory can write a
//! matching checksum whatever the hash, which is why the directory must be
//! the user's alone. A cache file of the first layout (`binfmtRC`, a
//! SHA-256) is a miss, removed when read and deleted first by eviction.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use binfmt_core::dir;
use binfmt_core::error::IoResultExt;
use bytes::Bytes;
use sha2::{Digest, Sha256};
use xxhash_rust::xxh3::xxh3_128;

use crate::error::{RemoteError, Result};

mod whole;
use whole::{Origin, Whole};

/// What every cache file starts with.
const MAGIC: &[u8; 8] = b"binfmtR2";
/// What files of the first layout (a SHA-256 of the bytes) start with:
/// never read, deleted like this module's own.
const OLD_MAGIC: &[u8; 8] = b"binfmtRC";
/// Magic, start, length, XXH3-128 of the bytes (little endian), 16 zero
/// bytes (the first layout's size, so its files are counted alike).
const HEADER: u64 = 8 + 8 + 8 + 32;

/// The cache directory and its byte limit, shared by every object of a
/// family.
#[derive(Debug)]
pub(crate) struct DiskCache {
    root: PathBuf,
    limit: u64,
    /// Bytes in the directory as this handle knows them.
    used: Mutex<Usage>,
}

/// What one handle knows of its directory's size.
#[derive(Debug, Default)]
struct Usage {
    /// Bytes at the last count plus this handle's writes since; `None`
    /// before the first count.
    total: Option<u64>,
    /// This handle's writes since the last count: other handles' writes
    /// (other processes) are seen only by counting again.
    unseen: u64,
}

/// A handle counts the directory again once it has written this share of
/// the limit since its last count: the directory exceeds the limit by
/// less than this share per handle writing to it.
const RECOUNT_SHARE: u64 = 16;

/// A temporary file this old was left by a writer that died: writing one
/// range takes far less.
const STALE_TEMPORARY: std::time::Duration = std::time::Duration::from_secs(3600);

/// One object's directory in the cache, and the ranges it holds.
#[derive(Debug)]
pub(crate) struct DiskObject {
    /// The cache directory, checked again before the object's directory
    /// is used: either may have been swapped for a symlink since.
    root: PathBuf,
    dir: PathBuf,
    size: u64,
    ranges: Mutex<BTreeMap<u64, u64>>,
    /// The object's whole file ([`whole`]), once there: read instead of
    /// the ranges.
    whole: Mutex<Option<Arc<Whole>>>,
}

/// The name of one object version's directory: the first 32 hex digits of
/// the SHA-256 of its URL, ETag and size.
pub(crate) fn object_key(url: &str, etag: &str, size: u64) -> String {
    let mut hasher = Sha256::new();
    for part in [
        url.as_bytes(),
        b"\0",
        etag.as_bytes(),
        b"\0",
        &size.to_le_bytes(),
    ] {
        hasher.update(part);
    }
    hasher
        .finalize()
        .iter()
        .take(16)
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A cache file's header for the bytes `data` at `start`.
fn header(start: u64, data: &[u8]) -> [u8; HEADER as usize] {
    let mut header = [0; HEADER as usize];
    let digest = xxh3_128(data).to_le_bytes();
    for (target, part) in header.chunks_mut(8).take(3).zip([
        MAGIC.as_slice(),
        &start.to_le_bytes(),
        &(data.len() as u64).to_le_bytes(),
    ]) {
        target.copy_from_slice(part);
    }
    if let Some(target) = header.get_mut(24..40) {
        target.copy_from_slice(&digest);
    }
    header
}

/// Whether `header` is this module's header for the range `start`, `len`.
fn is_ours(header: &[u8], start: u64, len: u64) -> bool {
    header.get(..8) == Some(MAGIC.as_slice()) && is_for_range(header, start, len)
}

/// Whether `header` is this module's, of this layout or the first, for
/// the range `start`, `len`: what eviction may delete.
fn is_deletable(header: &[u8], start: u64, len: u64) -> bool {
    let magic = header.get(..8);
    (magic == Some(MAGIC.as_slice()) || magic == Some(OLD_MAGIC.as_slice()))
        && is_for_range(header, start, len)
}

/// Whether `header` names the range `start`, `len`.
fn is_for_range(header: &[u8], start: u64, len: u64) -> bool {
    header.get(8..16) == Some(start.to_le_bytes().as_slice())
        && header.get(16..24) == Some(len.to_le_bytes().as_slice())
}

/// Whether `name` is a 32-digit lowercase hex key, as [`DiskCache::object`]
/// makes.
fn is_key(name: &str) -> bool {
    name.len() == 32
        && name
            .bytes()
            .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
}

/// `START-LEN` as [`DiskObject::write_file`] names it (canonical decimal:
/// no sign, no leading zero), or `None`.
fn parse_name(name: &str) -> Option<(u64, u64)> {
    let (start, len) = name.split_once('-')?;
    let number = |text: &str| -> Option<u64> {
        let canonical = !text.is_empty()
            && text.bytes().all(|byte| byte.is_ascii_digit())
            && (text == "0" || !text.starts_with('0'));
        canonical.then(|| text.parse().ok()).flatten()
    };
    Some((number(start)?, number(len)?))
}

/// Whether `name` is a temporary name [`DiskObject::write_file`] writes
/// through (the output gate's `.START-LEN.XXXXXX.tmp`).
fn is_temporary(name: &str) -> bool {
    let Some(inner) = name
        .strip_prefix('.')
        .and_then(|name| name.strip_suffix(".tmp"))
    else {
        return false;
    };
    inner.rsplit_once('.').is_some_and(|(range, random)| {
        (parse_name(range).is_some() || whole::parse_name(range).is_some())
            && random.len() == 6
            && random.bytes().all(|byte| byte.is_ascii_alphanumeric())
    })
}

/// Reads the header of an entry and tells whether it is ours; the file is
/// opened through the untrusted-directory helper.
fn proven(dir: &Path, name: &str, start: u64, len: u64) -> bool {
    let Ok(Some((mut file, file_len))) = dir::open_file(dir, name) else {
        return false;
    };
    let mut head = [0; HEADER as usize];
    file_len == HEADER.saturating_add(len)
        && file.read_exact(&mut head).is_ok()
        && is_deletable(&head, start, len)
}

fn cache_dir_error(path: &Path, error: binfmt_core::Error) -> RemoteError {
    let source = match error {
        binfmt_core::Error::Io { source, .. } => source,
        other => io::Error::other(other.to_string()),
    };
    RemoteError::CacheDir {
        path: path.to_owned(),
        source,
    }
}

impl DiskCache {
    /// Creates `root` if needed (mode 0700); refuses one that is a symlink,
    /// not the user's, or writable by other users.
    pub fn new(root: &Path, limit: u64) -> Result<Self> {
        // Entries are reached through this path: `link/` must be refused as
        // `link` is, not looked up through the symlink.
        let root = &dir::normal(root);
        dir::create_private(root).map_err(|error| cache_dir_error(root, error))?;
        Ok(Self {
            root: root.to_owned(),
            limit,
            used: Mutex::new(Usage::default()),
        })
    }

    /// The cache entry of one version of one object, with the ranges already
    /// there.
    pub fn object(&self, url: &str, etag: &str, size: u64) -> Option<DiskObject> {
        // The directory may have been swapped for a symlink since it was
        // checked: checked again before anything is made in it.
        dir::private(&self.root).ok()?;
        let key = object_key(url, etag, size);
        let dir = dir::subdir(&self.root, &key).ok()?;
        let mut ranges = BTreeMap::new();
        for (name, metadata) in dir::files(&dir).ok()? {
            let Some((start, len)) = parse_name(&name) else {
                continue;
            };
            let fits = start.checked_add(len).is_some_and(|end| end <= size);
            if fits && len > 0 && len <= self.limit && metadata.len() == HEADER.saturating_add(len)
            {
                ranges.insert(start, len);
            }
        }
        // A whole file, when there, is read instead of the ranges; range
        // files that overlap what it holds (written by a process that had
        // not seen the join) are left to eviction, so the ranges beside
        // it never overlap it.
        let whole = Whole::open(&dir, size).map(Arc::new);
        if whole.is_none() && whole::proven(&dir, size) {
            // Ours by its header and length, yet not opened: its header,
            // checksums or runs are damaged.
            let _ = dir::remove_file(&dir, &whole::name(size));
        }
        if let Some(whole) = &whole {
            ranges.retain(|&start, &mut len| {
                whole::split(&(start..start + len), whole.runs())
                    .0
                    .is_empty()
            });
        }
        Some(DiskObject {
            root: self.root.clone(),
            dir,
            size,
            ranges: Mutex::new(ranges),
            whole: Mutex::new(whole),
        })
    }

    /// Bytes written between two counts of the directory by one handle.
    fn recount_every(&self) -> u64 {
        (self.limit / RECOUNT_SHARE).max(1)
    }

    /// Notes `added` new bytes, counting the directory again when this
    /// handle has written [`Self::recount_every`] bytes since its last
    /// count (or never counted); past the limit, deletes the least
    /// recently used files until the directory holds at most 90% of it.
    fn grew(&self, added: u64) {
        let mut used = lock(&self.used);
        used.unseen = used.unseen.saturating_add(added);
        let mut listed = None;
        let total = match used.total {
            Some(total) if used.unseen < self.recount_every() => total.saturating_add(added),
            // Other processes' writes since the last count are in it.
            _ => {
                used.unseen = 0;
                let files = self.files();
                let total = files.iter().map(|file| file.3).sum();
                listed = Some(files);
                total
            }
        };
        used.total = Some(total);
        if total <= self.limit {
            return;
        }
        // Down to 90% of the limit, so that the next writes do not walk the
        // directory again at once.
        let target = self.limit - self.limit / 10;
        let mut files = listed.unwrap_or_else(|| self.files());
        files.sort();
        let mut total: u64 = files.iter().map(|file| file.3).sum();
        for (_, dir, name, len) in files {
            if total <= target {
                break;
            }
            // Only a file whose header says this module wrote it. Another
            // process may delete it first: then it is no longer counted.
            let ours = match (parse_name(&name), whole::parse_name(&name)) {
                (Some((start, range_len)), _) => proven(&dir, &name, start, range_len),
                (None, Some(size)) => whole::proven(&dir, size),
                (None, None) => false,
            };
            if ours {
                let _ = dir::remove_file(&dir, &name);
            }
            // Deleted here, or meanwhile by another process: not counted.
            let gone = std::fs::symlink_metadata(dir.join(&name))
                .is_err_and(|error| error.kind() == io::ErrorKind::NotFound);
            if gone {
                total = total.saturating_sub(len);
            }
        }
        used.total = Some(total);
        used.unseen = 0;
    }

    /// Notes `removed` bytes deleted by this handle.
    fn shrank(&self, removed: u64) {
        let mut used = lock(&self.used);
        if let Some(total) = used.total {
            used.total = Some(total.saturating_sub(removed));
        }
    }

    /// Every cache file: modification time, directory, name, length. Only
    /// entries with this module's names that are regular files of the
    /// user's, in real directories (symlinks are never followed), count.
    /// Temporary files untouched for [`STALE_TEMPORARY`] (their writer was
    /// killed) are deleted on the way.
    fn files(&self) -> Vec<(SystemTime, PathBuf, String, u64)> {
        let mut files = Vec::new();
        let Ok(objects) = dir::subdirs(&self.root) else {
            return files;
        };
        for key in objects.into_iter().filter(|name| is_key(name)) {
            let object = self.root.join(&key);
            let Ok(entries) = dir::files(&object) else {
                continue;
            };
            for (name, metadata) in entries {
                let modified = metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                let expected = match (parse_name(&name), whole::parse_name(&name)) {
                    (Some((_, len)), _) => Some(HEADER.saturating_add(len)),
                    (None, Some(size)) => {
                        Some(metadata.len()).filter(|&len| whole::is_file_len(size, len))
                    }
                    (None, None) => {
                        let stale = modified.elapsed().is_ok_and(|age| age >= STALE_TEMPORARY);
                        if stale && is_temporary(&name) {
                            // A live writer's rename then fails: a lost write.
                            let _ = dir::remove_file(&object, &name);
                        }
                        continue;
                    }
                };
                if Some(metadata.len()) == expected {
                    files.push((modified, object.clone(), name, metadata.len()));
                }
            }
        }
        files
    }
}

impl DiskObject {
    /// Copies into `buf` (which holds the object's bytes from `offset`) what
    /// the cache has of each gap, and returns what is still missing with the
    /// pieces found (for the memory cache).
    pub fn read(
        &self,
        gaps: Vec<Range<u64>>,
        offset: u64,
        buf: &mut [u8],
    ) -> (Vec<Range<u64>>, Vec<(u64, Bytes)>) {
        let mut missing = Vec::new();
        let mut found = Vec::new();
        for gap in self.outside_whole(gaps, offset, buf, &mut found) {
            self.read_ranges(gap, offset, buf, &mut missing, &mut found);
        }
        (missing, found)
    }

    /// Copies into `buf` what the whole file holds of `gaps` (its pieces
    /// into `found`); returns the parts it does not hold. A failed read
    /// or check closes the file and removes it: its parts are then not
    /// held.
    fn outside_whole(
        &self,
        gaps: Vec<Range<u64>>,
        offset: u64,
        buf: &mut [u8],
        found: &mut Vec<(u64, Bytes)>,
    ) -> Vec<Range<u64>> {
        let Some(whole) = self.whole() else {
            return gaps;
        };
        let mut outside = Vec::new();
        let mut failed = false;
        for gap in gaps {
            let (inside, rest) = whole::split(&gap, whole.runs());
            outside.extend(rest);
            let (Some(first), Some(last)) = (inside.first(), inside.last()) else {
                continue;
            };
            // One read of the blocks under every held part of the gap.
            let read = if failed {
                None
            } else {
                whole.read_blocks(&(first.start..last.end))
            };
            let Some((start, blocks)) = read else {
                failed = true;
                outside.extend(inside);
                continue;
            };
            let slice = |piece: &Range<u64>| {
                blocks.slice((piece.start - start) as usize..(piece.end - start) as usize)
            };
            for part in &inside {
                if let Some(target) =
                    buf.get_mut((part.start - offset) as usize..(part.end - offset) as usize)
                {
                    target.copy_from_slice(&slice(part));
                }
            }
            // Every held byte of the blocks read goes to the memory cache:
            // a later read of a neighbour costs no file read.
            let span = start..start + blocks.len() as u64;
            for held in whole::split(&span, whole.runs()).0 {
                found.push((held.start, slice(&held)));
            }
        }
        if failed {
            *lock(&self.whole) = None;
            if whole::proven(&self.dir, self.size) {
                let _ = dir::remove_file(&self.dir, &whole::name(self.size));
            }
            outside.sort_by_key(|part| part.start);
        }
        outside
    }

    /// Copies into `buf` what the range files hold of `gap`.
    fn read_ranges(
        &self,
        gap: Range<u64>,
        offset: u64,
        buf: &mut [u8],
        missing: &mut Vec<Range<u64>>,
        found: &mut Vec<(u64, Bytes)>,
    ) {
        let overlapping: Vec<(u64, u64)> = {
            let ranges = lock(&self.ranges);
            let first = ranges
                .range(..=gap.start)
                .next_back()
                .map_or(gap.start, |(start, _)| *start);
            ranges
                .range(first..gap.end)
                .map(|(start, len)| (*start, *len))
                .filter(|(start, len)| start + len > gap.start)
                .collect()
        };
        let mut at = gap.start;
        for (start, len) in overlapping {
            let from = at.max(start);
            let to = (start + len).min(gap.end);
            if from >= to {
                continue;
            }
            match self.read_file(start, len) {
                Some(bytes) => {
                    if from > at {
                        missing.push(at..from);
                    }
                    let piece = bytes.slice((from - start) as usize..(to - start) as usize);
                    if let Some(target) =
                        buf.get_mut((from - offset) as usize..(to - offset) as usize)
                    {
                        target.copy_from_slice(&piece);
                    }
                    found.push((start, bytes));
                    at = to;
                }
                None => {
                    lock(&self.ranges).remove(&start);
                }
            }
        }
        if at < gap.end {
            missing.push(at..gap.end);
        }
    }

    /// The parts of `gaps` the cache does not hold.
    pub fn missing(&self, gaps: Vec<Range<u64>>) -> Vec<Range<u64>> {
        let gaps = match self.whole() {
            Some(whole) => gaps
                .iter()
                .flat_map(|gap| whole::split(gap, whole.runs()).1)
                .collect(),
            None => gaps,
        };
        let ranges = lock(&self.ranges);
        let mut missing = Vec::new();
        for gap in gaps {
            // The held ranges never overlap, so those meeting the gap are
            // the one starting at or before it and those starting inside:
            // found by the map's order, not by walking every range.
            let first = ranges
                .range(..=gap.start)
                .next_back()
                .map_or(gap.start, |(start, _)| *start);
            let mut at = gap.start;
            for (&start, &len) in ranges.range(first..gap.end) {
                let end = start.saturating_add(len);
                if end <= at {
                    continue;
                }
                if start > at {
                    missing.push(at..start);
                }
                at = end;
                if at >= gap.end {
                    break;
                }
            }
            if at < gap.end {
                missing.push(at..gap.end);
            }
        }
        missing
    }

    /// The range at `start`, if its file is there, whole and checked
    /// against its checksum; its modification time becomes now (it was
    /// just used). A file that fails a check is removed when its header
    /// says it is ours.
    fn read_file(&self, start: u64, len: u64) -> Option<Bytes> {
        let name = format!("{start}-{len}");
        if !self.dirs_ours() {
            return None;
        }
        let (mut file, file_len) = dir::open_file(&self.dir, &name).ok()??;
        let whole = HEADER.checked_add(len)?;
        let size = usize::try_from(whole).ok().filter(|_| file_len == whole);
        // The header and the bytes in one read, when the file has the
        // range's size; only the header of a file of another size.
        let mut bytes =
            binfmt_core::alloc::vec_with_capacity(size.unwrap_or(HEADER as usize), "cache file")
                .ok()?;
        bytes.resize(size.unwrap_or(HEADER as usize), 0);
        let read = file.read_exact(&mut bytes).is_ok();
        let (head, data) = bytes.split_at_checked(HEADER as usize)?;
        let checked = || head.get(24..40) == Some(xxh3_128(data).to_le_bytes().as_slice());
        if read && size.is_some() && is_ours(head, start, len) && checked() {
            let _ = file.set_modified(SystemTime::now());
            return Some(Bytes::from(bytes).slice(HEADER as usize..));
        }
        if read && is_deletable(head, start, len) {
            let _ = dir::remove_file(&self.dir, &name);
        }
        None
    }

    /// Keeps the parts of `bytes` (the object's bytes from `start`) that the
    /// cache does not hold yet. Failures are ignored: the cache only saves
    /// requests.
    pub fn write(&self, cache: &DiskCache, start: u64, bytes: &Bytes) {
        let end = start + bytes.len() as u64;
        if bytes.is_empty() || (bytes.len() as u64).saturating_add(HEADER) > cache.limit {
            return;
        }
        // What the whole file holds is not written again.
        let mut pieces: Vec<Range<u64>> = match self.whole() {
            Some(whole) => whole::split(&(start..end), whole.runs()).1,
            None => std::iter::once(start..end).collect(),
        };
        {
            let ranges = lock(&self.ranges);
            for (&held, &len) in ranges.range(..end) {
                let held = held..held + len;
                pieces = pieces
                    .into_iter()
                    .flat_map(|piece| subtract(piece, &held))
                    .collect();
            }
        }
        let mut added = 0;
        for piece in pieces {
            let from = (piece.start - start) as usize;
            let to = (piece.end - start) as usize;
            let Some(data) = bytes.get(from..to) else {
                continue;
            };
            if self.write_file(piece.start, data).is_ok() {
                lock(&self.ranges).insert(piece.start, data.len() as u64);
                added += (data.len() as u64).saturating_add(HEADER);
            }
        }
        if added > 0 {
            cache.grew(added);
            self.join_when_ready(cache);
        }
    }

    /// Whether the cache directory and the object's directory are still
    /// real directories of the user's that no one else can write (not
    /// swapped for symlinks since they were made).
    fn dirs_ours(&self) -> bool {
        dir::private(&self.root).is_ok() && dir::private(&self.dir).is_ok()
    }

    /// The object's whole file, when open.
    fn whole(&self) -> Option<Arc<Whole>> {
        lock(&self.whole).clone()
    }

    /// Joins the range files (and the whole file, if any) into a new whole
    /// file when the object is at most an eighth of the limit
    /// ([`whole::LIMIT_SHARE`]) and the range files hold enough of it: seven
    /// eighths of it with no whole file yet, a sixteenth more than the
    /// whole file holds otherwise (so an object is rewritten a few times at
    /// most). The joined range files then go. Failures leave everything as
    /// it was.
    fn join_when_ready(&self, cache: &DiskCache) {
        let size = self.size;
        if size == 0 || size > cache.limit / whole::LIMIT_SHARE || !self.dirs_ours() {
            return;
        }
        let current = self.whole();
        let ranges: Vec<(u64, u64)> = {
            let ranges = lock(&self.ranges);
            let held: u64 = ranges.values().sum();
            let enough = match current {
                None => held >= size - size / 8,
                Some(_) => held >= (size / 16).max(1),
            };
            if !enough {
                return;
            }
            ranges.iter().map(|(&start, &len)| (start, len)).collect()
        };
        let mut pieces: Vec<(u64, u64, Origin)> = ranges
            .iter()
            .map(|&(start, len)| (start, len, Origin::Range))
            .collect();
        if let Some(whole) = &current {
            pieces.extend(
                whole
                    .runs()
                    .iter()
                    .map(|&(start, len)| (start, len, Origin::Whole)),
            );
        }
        pieces.sort_by_key(|piece| piece.0);
        let written = whole::join(
            &self.dir,
            size,
            &pieces,
            |start, len, origin| match origin {
                Origin::Range => self.read_file(start, len),
                Origin::Whole => current.as_ref()?.read(&(start..start + len)),
            },
        );
        let Some(written) = written else {
            return;
        };
        cache.grew(written);
        let Some(opened) = Whole::open(&self.dir, size) else {
            return;
        };
        *lock(&self.whole) = Some(Arc::new(opened));
        let mut removed = 0u64;
        for (start, len) in ranges {
            lock(&self.ranges).remove(&start);
            if dir::remove_file(&self.dir, &format!("{start}-{len}")).unwrap_or(false) {
                removed = removed.saturating_add(HEADER.saturating_add(len));
            }
        }
        cache.shrank(removed);
    }

    /// Writes the range's file through the output gate's
    /// [`binfmt_core::AtomicFile`] (a temporary file, then a rename that
    /// replaces whatever has the name, a planted symlink included, never
    /// writing through it), readable by the user alone.
    fn write_file(&self, start: u64, data: &[u8]) -> binfmt_core::Result<()> {
        dir::private(&self.root)?;
        dir::private(&self.dir)?;
        let path = self.dir.join(format!("{start}-{}", data.len()));
        let mut file = binfmt_core::AtomicFile::create_with_mode(&path, 0o600)?;
        file.write_all(&header(start, data)).with_path(&path)?;
        file.write_all(data).with_path(&path)?;
        file.commit()
    }
}

/// `piece` without `hole`: zero, one or two ranges.
fn subtract(piece: Range<u64>, hole: &Range<u64>) -> Vec<Range<u64>> {
    if hole.end <= piece.start || hole.start >= piece.end {
        return vec![piece];
    }
    let mut left = Vec::new();
    if piece.start < hole.start {
        left.push(piece.start..hole.start);
    }
    if hole.end < piece.end {
        left.push(hole.end..piece.end);
    }
    left
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)] // one gap is a list of gaps
mod tests;
