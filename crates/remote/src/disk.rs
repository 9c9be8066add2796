//! The on-disk cache: fetched ranges kept as files for later runs.
//!
//! Layout: `DIR/<key>/<start>-<len>`, where `<key>` is the SHA-256 (hex,
//! first 32 digits) of the object's URL, strong ETag and size, so a replaced
//! object gets a new key and its old ranges are never read again. Each file
//! is written to a temporary name in the same directory and renamed into
//! place, so a reader sees a whole range or none. Reading a file sets its
//! modification time; when the files add up to more than the limit, the
//! least recently used (oldest modification time) are deleted first.
//! A file whose length disagrees with its name is ignored and deleted.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use bytes::Bytes;
use sha2::{Digest, Sha256};

use crate::error::{RemoteError, Result};

/// The cache directory and its byte limit, shared by every object of a
/// family.
#[derive(Debug)]
pub(crate) struct DiskCache {
    root: PathBuf,
    limit: u64,
    /// Bytes in the directory: counted on the first write, then kept up to
    /// date by this process.
    used: Mutex<Option<u64>>,
}

/// One object's directory in the cache, and the ranges it holds.
#[derive(Debug)]
pub(crate) struct DiskObject {
    dir: PathBuf,
    ranges: Mutex<BTreeMap<u64, u64>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl DiskCache {
    /// Creates `root` if needed.
    pub fn new(root: &Path, limit: u64) -> Result<Self> {
        fs::create_dir_all(root).map_err(|source| RemoteError::CacheDir {
            path: root.to_owned(),
            source,
        })?;
        Ok(Self {
            root: root.to_owned(),
            limit,
            used: Mutex::new(None),
        })
    }

    /// The cache entry of one version of one object, with the ranges already
    /// there.
    pub fn object(&self, url: &str, etag: &str, size: u64) -> Option<DiskObject> {
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
        let key: String = hasher
            .finalize()
            .iter()
            .take(16)
            .map(|byte| format!("{byte:02x}"))
            .collect();
        let dir = self.root.join(key);
        fs::create_dir_all(&dir).ok()?;
        let mut ranges = BTreeMap::new();
        for entry in fs::read_dir(&dir).ok()?.flatten() {
            let name = entry.file_name();
            let Some((start, len)) = name.to_str().and_then(parse_name) else {
                continue;
            };
            if start.checked_add(len).is_some_and(|end| end <= size) && len > 0 {
                ranges.insert(start, len);
            }
        }
        Some(DiskObject {
            dir,
            ranges: Mutex::new(ranges),
        })
    }

    /// Notes `added` new bytes; past the limit, deletes the least recently
    /// used files until the directory holds at most 90% of it.
    fn grew(&self, added: u64) {
        let mut used = lock(&self.used);
        let total = match *used {
            Some(total) => total + added,
            None => self.files().iter().map(|file| file.2).sum(),
        };
        *used = Some(total);
        if total <= self.limit {
            return;
        }
        // Down to 90% of the limit, so that the next writes do not walk the
        // directory again at once.
        let target = self.limit - self.limit / 10;
        let mut files = self.files();
        files.sort();
        let mut total: u64 = files.iter().map(|file| file.2).sum();
        for (_, path, len) in files {
            if total <= target {
                break;
            }
            if fs::remove_file(&path).is_ok() {
                total -= len;
            }
        }
        *used = Some(total);
    }

    /// Every file in the cache: modification time, path, length.
    fn files(&self) -> Vec<(SystemTime, PathBuf, u64)> {
        let mut files = Vec::new();
        let Ok(objects) = fs::read_dir(&self.root) else {
            return files;
        };
        for object in objects.flatten() {
            let Ok(entries) = fs::read_dir(object.path()) else {
                continue;
            };
            for entry in entries.flatten() {
                let Ok(metadata) = entry.metadata() else {
                    continue;
                };
                if metadata.is_file() {
                    let modified = metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                    files.push((modified, entry.path(), metadata.len()));
                }
            }
        }
        files
    }
}

fn parse_name(name: &str) -> Option<(u64, u64)> {
    let (start, len) = name.split_once('-')?;
    Some((start.parse().ok()?, len.parse().ok()?))
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
        let mut missing = gaps;
        for (&start, &len) in ranges.iter() {
            let held = start..start + len;
            missing = missing
                .into_iter()
                .flat_map(|gap| subtract(gap, &held))
                .collect();
        }
        missing
    }

    /// The whole file of the range at `start`, if it is there and whole;
    /// its modification time becomes now (it was just used).
    fn read_file(&self, start: u64, len: u64) -> Option<Bytes> {
        let path = self.dir.join(format!("{start}-{len}"));
        let mut file = File::open(&path).ok()?;
        let metadata = file.metadata().ok()?;
        if metadata.len() != len {
            let _ = fs::remove_file(&path);
            return None;
        }
        let mut bytes = vec![0; usize::try_from(len).ok()?];
        file.read_exact(&mut bytes).ok()?;
        let _ = file.set_modified(SystemTime::now());
        Some(bytes.into())
    }

    /// Keeps the parts of `bytes` (the object's bytes from `start`) that the
    /// cache does not hold yet. Failures are ignored: the cache only saves
    /// requests.
    pub fn write(&self, cache: &DiskCache, start: u64, bytes: &Bytes) {
        let end = start + bytes.len() as u64;
        if bytes.is_empty() || bytes.len() as u64 > cache.limit {
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
                added += data.len() as u64;
            }
        }
        if added > 0 {
            cache.grew(added);
        }
    }

    fn write_file(&self, start: u64, data: &[u8]) -> io::Result<()> {
        let mut file = tempfile::Builder::new()
            .prefix(".partial-")
            .tempfile_in(&self.dir)?;
        file.write_all(data)?;
        file.persist(self.dir.join(format!("{start}-{}", data.len())))
            .map_err(|error| error.error)?;
        Ok(())
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

    #[test]
    fn ranges_come_back_from_a_fresh_handle_and_the_limit_holds() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(dir.path(), 250).unwrap();
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
        let sizes: u64 = cache.files().iter().map(|file| file.2).sum();
        assert!(sizes <= 250, "{sizes}");
    }

    #[test]
    fn a_damaged_file_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(dir.path(), 1 << 20).unwrap();
        let object = cache.object("s3://b/k", "\"e\"", 100).unwrap();
        object.write(&cache, 0, &Bytes::from_static(&[7; 10]));
        fs::write(object.dir.join("0-10"), [7; 4]).unwrap();
        let (missing, found) = object.read(vec![0..10], 0, &mut [0; 10]);
        assert_eq!(missing, vec![0..10]);
        assert!(found.is_empty());
    }
}
