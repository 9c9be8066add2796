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
use std::sync::Mutex;
use std::time::SystemTime;

use binfmt_core::dir;
use binfmt_core::error::IoResultExt;
use bytes::Bytes;
use sha2::{Digest, Sha256};
use xxhash_rust::xxh3::xxh3_128;

use crate::error::{RemoteError, Result};

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
    dir: PathBuf,
    ranges: Mutex<BTreeMap<u64, u64>>,
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
        parse_name(range).is_some()
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
        Some(DiskObject {
            dir,
            ranges: Mutex::new(ranges),
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
            let Some((start, range_len)) = parse_name(&name) else {
                continue;
            };
            if proven(&dir, &name, start, range_len) {
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
                let Some((_, len)) = parse_name(&name) else {
                    let stale = modified.elapsed().is_ok_and(|age| age >= STALE_TEMPORARY);
                    if stale && is_temporary(&name) {
                        // A live writer's rename then fails: a lost write.
                        let _ = dir::remove_file(&object, &name);
                    }
                    continue;
                };
                if metadata.len() == HEADER.saturating_add(len) {
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
        for gap in gaps {
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
        (missing, found)
    }

    /// The parts of `gaps` the cache does not hold.
    pub fn missing(&self, gaps: Vec<Range<u64>>) -> Vec<Range<u64>> {
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
        let mut pieces: Vec<Range<u64>> = std::iter::once(start..end).collect();
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
        }
    }

    /// Writes the range's file through the output gate's
    /// [`binfmt_core::AtomicFile`] (a temporary file, then a rename that
    /// replaces whatever has the name, a planted symlink included, never
    /// writing through it), readable by the user alone.
    fn write_file(&self, start: u64, data: &[u8]) -> binfmt_core::Result<()> {
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
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn ranges_come_back_from_a_fresh_handle_and_the_limit_holds() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(&dir.path().join("c"), 400).unwrap();
        let object = cache.object("http://h/x", "\"e1\"", 1000).unwrap();
        let data: Bytes = (0..1000u32).map(|i| i as u8).collect::<Vec<u8>>().into();
        object.write(&cache, 100, &data.slice(100..200));
        object.write(&cache, 150, &data.slice(150..250)); // only 200..250 is new
        let again = cache.object("http://h/x", "\"e1\"", 1000).unwrap();
        let mut buf = vec![0; 200];
        let (missing, found) = again.read(vec![50..250], 50, &mut buf);
        assert_eq!(missing, vec![50..100]);
        assert_eq!(found.len(), 2);
        assert_eq!(&buf[50..200], &data[100..250]);

        // Another ETag is another object: nothing cached.
        let other = cache.object("http://h/x", "\"e2\"", 1000).unwrap();
        let (missing, _) = other.read(vec![100..200], 100, &mut [0; 100]);
        assert_eq!(missing, vec![100..200]);

        // Past the limit the least recently used range goes.
        object.write(&cache, 500, &data.slice(500..600));
        let sizes: u64 = cache.files().iter().map(|file| file.3).sum();
        assert!(sizes <= 400, "{sizes}");
    }

    /// The cache's one object directory and its only file.
    fn only_file(cache: &DiskCache) -> (PathBuf, String) {
        let files = cache.files();
        assert_eq!(files.len(), 1, "{files:?}");
        (files[0].1.clone(), files[0].2.clone())
    }

    #[test]
    fn a_changed_byte_is_a_miss_and_the_entry_goes() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(&dir.path().join("c"), 1 << 20).unwrap();
        let object = cache.object("http://h/x", "\"e\"", 100).unwrap();
        object.write(&cache, 10, &Bytes::from_static(b"0123456789"));
        let (object_dir, name) = only_file(&cache);
        let path = object_dir.join(&name);
        let mut bytes = fs::read(&path).unwrap();
        *bytes.last_mut().unwrap() ^= 1;
        fs::write(&path, bytes).unwrap();
        let again = cache.object("http://h/x", "\"e\"", 100).unwrap();
        let mut buf = [0; 10];
        let (missing, found) = again.read(vec![10..20], 10, &mut buf);
        assert_eq!(missing, vec![10..20]);
        assert!(found.is_empty());
        assert!(!path.exists(), "the bad entry is removed");
    }

    /// A file of the first layout (`binfmtRC`, the SHA-256 of its bytes),
    /// whole and right by that layout: a miss, removed when read, and
    /// deleted by eviction like this layout's files.
    #[test]
    fn a_file_of_the_first_layout_is_a_miss_and_goes() {
        let first_layout = |start: u64, data: &[u8]| {
            let mut bytes = b"binfmtRC".to_vec();
            bytes.extend(start.to_le_bytes());
            bytes.extend((data.len() as u64).to_le_bytes());
            bytes.extend(Sha256::digest(data));
            bytes.extend(data);
            bytes
        };
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(&dir.path().join("c"), 300).unwrap();
        let object = cache.object("http://h/x", "\"e\"", 1000).unwrap();
        object.write(&cache, 10, &Bytes::from_static(b"0123456789"));
        let (object_dir, name) = only_file(&cache);
        let path = object_dir.join(&name);
        fs::write(&path, first_layout(10, b"0123456789")).unwrap();
        let again = cache.object("http://h/x", "\"e\"", 1000).unwrap();
        let (missing, found) = again.read(vec![10..20], 10, &mut [0; 10]);
        assert_eq!(missing, vec![10..20]);
        assert!(found.is_empty());
        assert!(!path.exists(), "the old file is removed when read");

        // Eviction: an old file planted as the oldest goes first.
        fs::write(object_dir.join("0-100"), first_layout(0, &[7; 100])).unwrap();
        let old = fs::File::options()
            .write(true)
            .open(object_dir.join("0-100"))
            .unwrap();
        old.set_modified(SystemTime::UNIX_EPOCH).unwrap();
        again.write(&cache, 200, &Bytes::from(vec![1u8; 150]));
        assert!(!object_dir.join("0-100").exists(), "evicted first");
        assert!(object_dir.join("200-150").exists());
    }

    #[test]
    fn a_fifo_in_place_of_an_entry_is_a_miss_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(&dir.path().join("c"), 1 << 20).unwrap();
        let object = cache.object("http://h/x", "\"e\"", 100).unwrap();
        object.write(&cache, 0, &Bytes::from_static(b"abc"));
        let (object_dir, name) = only_file(&cache);
        let path = object_dir.join(&name);
        fs::remove_file(&path).unwrap();
        let status = std::process::Command::new("mkfifo").arg(&path).status();
        assert!(status.unwrap().success());
        let (missing, _) = object.read(vec![0..3], 0, &mut [0; 3]);
        assert_eq!(missing, vec![0..3]);
        assert!(path.exists(), "not ours: left alone");
    }

    /// `missing` finds the held ranges by the map's order; the same as
    /// subtracting every held range from every gap.
    #[test]
    fn missing_is_every_held_range_subtracted() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |bound: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % bound
        };
        for _ in 0..500 {
            let mut ranges = BTreeMap::new();
            let mut at = next(5);
            for _ in 0..next(12) {
                let len = 1 + next(6);
                ranges.insert(at, len);
                at += len + next(4);
            }
            let object = DiskObject {
                dir: PathBuf::new(),
                ranges: Mutex::new(ranges.clone()),
            };
            let gaps: Vec<Range<u64>> = (0..next(4))
                .map(|_| {
                    let start = next(60);
                    start..start + 1 + next(20)
                })
                .collect();
            let mut naive = gaps.clone();
            for (&start, &len) in &ranges {
                let held = start..start + len;
                naive = naive
                    .into_iter()
                    .flat_map(|gap| subtract(gap, &held))
                    .collect();
            }
            assert_eq!(object.missing(gaps.clone()), naive, "{ranges:?} {gaps:?}");
        }
    }

    #[test]
    fn eviction_never_follows_a_planted_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::create_dir(&victim).unwrap();
        // Named like cache entries, in a directory named like a key.
        fs::write(victim.join("0-10"), [1; 66]).unwrap();
        let root = dir.path().join("c");
        let cache = DiskCache::new(&root, 300).unwrap();
        std::os::unix::fs::symlink(&victim, root.join("0".repeat(32))).unwrap();
        std::os::unix::fs::symlink(victim.join("0-10"), root.join("1".repeat(32))).unwrap();
        let object = cache.object("http://h/x", "\"e\"", 1000).unwrap();
        // Names that would overflow: ignored, never a panic.
        let huge = format!("{0}-{0}", u64::MAX);
        fs::write(object.dir.join(&huge), b"x").unwrap();
        fs::write(object.dir.join(format!("0-{}", u64::MAX - 10)), b"x").unwrap();
        assert!(cache.object("http://h/x", "\"e\"", u64::MAX).is_some());
        for start in 0..10 {
            object.write(&cache, start * 50, &Bytes::from(vec![2; 50]));
        }
        assert_eq!(fs::read(victim.join("0-10")).unwrap(), [1; 66]);
        assert!(cache.files().iter().map(|file| file.3).sum::<u64>() <= 300);
        // A symlink to elsewhere in place of an object's directory is
        // refused, not written through.
        let key_of_other = cache.object("http://h/y", "\"e\"", 1000).unwrap().dir;
        fs::remove_dir_all(&key_of_other).unwrap();
        std::os::unix::fs::symlink(&victim, &key_of_other).unwrap();
        assert!(cache.object("http://h/y", "\"e\"", 1000).is_none());
    }

    #[test]
    fn a_directory_others_can_write_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("c");
        fs::create_dir(&root).unwrap();
        fs::set_permissions(&root, fs::Permissions::from_mode(0o1777)).unwrap();
        let error = DiskCache::new(&root, 100).unwrap_err();
        assert!(
            error.to_string().contains("writable by other users"),
            "{error}"
        );
        let link = dir.path().join("link");
        fs::set_permissions(&root, fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::symlink(&root, &link).unwrap();
        assert!(DiskCache::new(&link, 100).is_err());
        // Found from outside: `link/` and `link/.` were looked up through
        // the symlink and accepted.
        for spelled in [
            format!("{}/", link.display()),
            format!("{}/.", link.display()),
        ] {
            let error = DiskCache::new(Path::new(&spelled), 100).unwrap_err();
            assert!(error.to_string().contains("symlink"), "{spelled}: {error}");
        }
        // A file is "not a directory", said once.
        let file = dir.path().join("file");
        fs::write(&file, b"x").unwrap();
        let error = DiskCache::new(&file, 100).unwrap_err().to_string();
        assert!(
            error.contains("is not a directory") && error.matches("not a").count() == 1,
            "{error}"
        );
    }

    #[test]
    fn a_damaged_file_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(&dir.path().join("c"), 1 << 20).unwrap();
        let object = cache.object("s3://b/k", "\"e\"", 100).unwrap();
        object.write(&cache, 0, &Bytes::from_static(&[7; 10]));
        fs::write(object.dir.join("0-10"), [7; 4]).unwrap();
        assert_eq!(parse_name("00-10"), None);
        assert_eq!(parse_name("+1-10"), None);
        let (missing, found) = object.read(vec![0..10], 0, &mut [0; 10]);
        assert_eq!(missing, vec![0..10]);
        assert!(found.is_empty());
    }

    /// The bytes of every cache file under `root`.
    fn on_disk(cache: &DiskCache) -> u64 {
        cache.files().iter().map(|file| file.3).sum()
    }

    #[test]
    fn handles_sharing_a_directory_keep_it_within_the_bound() {
        // Four handles are four worker processes: each sees the others'
        // writes only by counting the directory again.
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("c");
        let limit = 16_000;
        let handles: Vec<DiskCache> = (0..4)
            .map(|_| DiskCache::new(&root, limit).unwrap())
            .collect();
        let objects: Vec<DiskObject> = handles
            .iter()
            .map(|cache| cache.object("http://h/x", "\"e\"", 1 << 20).unwrap())
            .collect();
        let bound = limit + 4 * (limit / RECOUNT_SHARE);
        let mut most = 0;
        for step in 0..400u64 {
            let which = (step % 4) as usize;
            let piece = Bytes::from(vec![step as u8; 200]);
            objects[which].write(&handles[which], step * 200, &piece);
            most = most.max(on_disk(&handles[0]));
        }
        assert!(most <= bound, "{most} > {bound}");
        // 400 ranges of 256 bytes were written: far past the limit.
        assert!(most > limit / 2, "{most}");
    }

    #[test]
    fn writers_of_one_range_never_share_a_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("c");
        let data: Bytes = (0..4096u32)
            .map(|i| (i * 7) as u8)
            .collect::<Vec<u8>>()
            .into();
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    let cache = DiskCache::new(&root, 1 << 20).unwrap();
                    for _ in 0..20 {
                        // A fresh handle knows nothing: it writes the range.
                        let object = cache.object("http://h/x", "\"e\"", 8192).unwrap();
                        lock(&object.ranges).clear();
                        object.write(&cache, 100, &data);
                    }
                });
            }
        });
        let cache = DiskCache::new(&root, 1 << 20).unwrap();
        let (object_dir, name) = only_file(&cache);
        assert_eq!(name, "100-4096");
        let leftovers: Vec<_> = fs::read_dir(&object_dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .filter(|entry| entry != "100-4096")
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        let object = cache.object("http://h/x", "\"e\"", 8192).unwrap();
        let mut buf = vec![0; 4096];
        let (missing, _) = object.read(vec![100..4196], 100, &mut buf);
        assert!(missing.is_empty());
        assert_eq!(buf, data);
        // Two temporary files for one destination have two names.
        let first = binfmt_core::AtomicFile::create(object_dir.join("0-1")).unwrap();
        let second = binfmt_core::AtomicFile::create(object_dir.join("0-1")).unwrap();
        assert_ne!(first.temp_path(), second.temp_path());
    }

    #[test]
    fn temporary_files_of_dead_writers_go_when_the_directory_is_counted() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(&dir.path().join("c"), 1 << 20).unwrap();
        let object = cache.object("http://h/x", "\"e\"", 100).unwrap();
        let old = SystemTime::now() - STALE_TEMPORARY - std::time::Duration::from_secs(1);
        let names = [
            ".0-10.a1B2c3.tmp",
            ".0-10.a1B2c4.tmp",
            ".notours.a1B2c3.tmp",
            "0-10.tmp",
        ];
        for name in names {
            fs::write(object.dir.join(name), b"partial").unwrap();
        }
        // Old: the first and the third; only the first is a cache name.
        for name in [names[0], names[2], names[3]] {
            let file = fs::File::options()
                .write(true)
                .open(object.dir.join(name))
                .unwrap();
            file.set_modified(old).unwrap();
        }
        assert!(is_temporary(names[0]) && is_temporary(names[1]));
        assert!(!is_temporary(names[2]) && !is_temporary(names[3]));
        assert!(cache.files().is_empty());
        assert!(
            !object.dir.join(names[0]).exists(),
            "a dead writer's file goes"
        );
        for name in &names[1..] {
            assert!(object.dir.join(name).exists(), "{name} stays");
        }
    }

    #[test]
    fn a_range_deleted_under_a_reader_is_a_miss_then_fetched_again() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("c");
        let writer = DiskCache::new(&root, 1 << 20).unwrap();
        let object = writer.object("http://h/x", "\"e\"", 100).unwrap();
        object.write(&writer, 0, &Bytes::from_static(b"0123456789"));
        // Another process lists the range, then it is evicted.
        let reader = DiskCache::new(&root, 1 << 20).unwrap();
        let listed = reader.object("http://h/x", "\"e\"", 100).unwrap();
        assert!(listed.missing(vec![0..10]).is_empty());
        let (object_dir, name) = only_file(&writer);
        fs::remove_file(object_dir.join(name)).unwrap();
        let mut buf = [0; 10];
        let (missing, found) = listed.read(vec![2..8], 2, &mut buf[2..8]);
        assert_eq!(missing, vec![2..8]);
        assert!(found.is_empty());
        assert_eq!(listed.missing(vec![0..10]), vec![0..10]);
        // The fetched bytes go back in, and are read.
        listed.write(&reader, 0, &Bytes::from_static(b"0123456789"));
        let (missing, _) = listed.read(vec![0..10], 0, &mut buf);
        assert!(missing.is_empty());
        assert_eq!(&buf, b"0123456789");
    }
}
