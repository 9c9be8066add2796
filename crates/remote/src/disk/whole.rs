//! Whole-object cache files: once the cache holds most of an object (a
//! shard read through once), its range files are joined into one file, so
//! that a later run reads the object as it reads a local file: one open
//! per object, then one `pread` per read, where range files cost an open,
//! an `fstat`, a read, a time stamp and a close per range.
//!
//! Layout of `DIR/KEY/whole-SIZE` (little endian):
//!
//! ```text
//!        0   8  magic "binfmtRW"
//!        8   8  0
//!       16   8  SIZE, the object's size
//!       24   8  BLOCK, the checksum block size (16,384)
//!       32   8  RUNS, the number of held runs
//!       40  16  the XXH3-128 (u128) of bytes 0..40, the block checksums and
//!               the runs: what says which bytes are held is checked too
//!       56  SIZE  the object's bytes at their offsets (zero where not held)
//!  56+SIZE  16 × ceil(SIZE / BLOCK)  the XXH3-128 (u128) of each block
//!      ...  16 × RUNS  the held runs: start, length (u64 each), sorted,
//!           neither overlapping nor touching, inside 0..SIZE
//! ```
//!
//! A reader never reads the whole object (a tar's end-of-archive blocks, a
//! member's padding), so the file says which bytes it holds; reads outside
//! them are misses. The checksums and runs follow the bytes so that joining
//! streams: each piece is read (and checked) once and written at once, each
//! block's checksum computed on the way. Every read checks the blocks it
//! touches, so a damaged block is a miss (the file is then removed and the
//! object read from its ranges or the server again), never wrong bytes;
//! a damaged header, checksum table or run list is found when the file is
//! opened (a run moved by one flipped bit would otherwise pass zeros the
//! cache never held off as bytes).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::SystemTime;

use binfmt_core::dir;
use bytes::Bytes;
use xxhash_rust::xxh3::{Xxh3, xxh3_128};

/// What every whole-object file starts with.
const MAGIC: &[u8; 8] = b"binfmtRW";
/// The header's size (a range file's too, by choice, not by dependence).
const HEADER: u64 = 56;
/// Bytes per checksum.
pub(crate) const BLOCK: u64 = 16 * 1024;
/// Bytes per block checksum, and per held run.
const ENTRY: u64 = 16;
/// Joined only when at most this share of the cache's limit.
pub(crate) const LIMIT_SHARE: u64 = 8;
/// Whole runs are copied into a new file this many bytes at a time.
const COPY_CHUNK: u64 = 1 << 20;

/// The name of the whole file of an object of `size` bytes.
pub(crate) fn name(size: u64) -> String {
    format!("whole-{size}")
}

/// The object size a whole file's name gives (canonical decimal), or
/// `None`.
pub(crate) fn parse_name(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("whole-")?;
    let canonical = !digits.is_empty()
        && digits.bytes().all(|byte| byte.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    canonical.then(|| digits.parse().ok()).flatten()
}

/// Whether `len` can be the length of a whole file of an object of `size`
/// bytes (any number of runs): how eviction counts it without opening it.
pub(crate) fn is_file_len(size: u64, len: u64) -> bool {
    file_len(size, 0).is_some_and(|least| len >= least && (len - least) % ENTRY == 0)
}

/// The length of the whole file of an object of `size` bytes holding
/// `runs` runs.
pub(crate) fn file_len(size: u64, runs: u64) -> Option<u64> {
    HEADER
        .checked_add(size)?
        .checked_add(size.div_ceil(BLOCK).checked_mul(ENTRY)?)?
        .checked_add(runs.checked_mul(ENTRY)?)
}

/// The header of the whole file of an object of `size` bytes holding
/// `runs` runs.
fn header(size: u64, runs: u64) -> [u8; HEADER as usize] {
    let mut header = [0; HEADER as usize];
    for (target, part) in header.chunks_mut(8).zip([
        MAGIC.as_slice(),
        &0u64.to_le_bytes(),
        &size.to_le_bytes(),
        &BLOCK.to_le_bytes(),
        &runs.to_le_bytes(),
    ]) {
        target.copy_from_slice(part);
    }
    header
}

/// The number of runs `head` gives when it is the header of a whole file
/// of an object of `size` bytes (its checksum not checked: that needs the
/// file's tail, see [`meta_digest`]).
fn runs_in(head: &[u8], size: u64) -> Option<u64> {
    let runs = u64::from_le_bytes(head.get(32..40)?.try_into().ok()?);
    (head.get(..40) == header(size, runs).get(..40)).then_some(runs)
}

/// The checksum at bytes 40..56 of a whole file: of its first 40 bytes,
/// its block checksums and its runs.
fn meta_digest(head: &[u8], tail: &[u8]) -> [u8; 16] {
    let mut hasher = Xxh3::new();
    hasher.update(head.get(..40).unwrap_or_default());
    hasher.update(tail);
    hasher.digest128().to_le_bytes()
}

/// An open whole file: its block checksums and held runs read.
#[derive(Debug)]
pub(crate) struct Whole {
    file: File,
    size: u64,
    table: Vec<u8>,
    runs: Vec<(u64, u64)>,
}

impl Whole {
    /// Opens the whole file of an object of `size` bytes in `dir`, when it
    /// is there, of the length its header says and with valid runs; sets
    /// its modification time (it is being used). `None` otherwise.
    pub(crate) fn open(dir: &Path, size: u64) -> Option<Self> {
        let (file, len) = dir::open_file(dir, &name(size)).ok()??;
        let mut head = [0; HEADER as usize];
        file.read_exact_at(&mut head, 0).ok()?;
        let runs = runs_in(&head, size)?;
        // The counts are checked against the file's length before anything
        // is allocated by them.
        if Some(len) != file_len(size, runs) {
            return None;
        }
        let table_len = size.div_ceil(BLOCK) * ENTRY;
        let tail_len = usize::try_from(table_len + runs * ENTRY).ok()?;
        let mut tail = binfmt_core::alloc::vec_with_capacity(tail_len, "cache file tail").ok()?;
        tail.resize(tail_len, 0);
        file.read_exact_at(&mut tail, HEADER + size).ok()?;
        if head.get(40..56) != Some(meta_digest(&head, &tail).as_slice()) {
            return None;
        }
        let runs_bytes = tail.split_off(usize::try_from(table_len).ok()?);
        let mut held: Vec<(u64, u64)> = Vec::with_capacity(runs_bytes.len() / 16);
        for entry in runs_bytes.chunks_exact(ENTRY as usize) {
            let (start, len) = entry.split_at(8);
            let start = u64::from_le_bytes(start.try_into().ok()?);
            let len = u64::from_le_bytes(len.try_into().ok()?);
            let after_last = held.last().is_none_or(|&(at, n)| start > at + n);
            let end = start.checked_add(len)?;
            if len == 0 || end > size || !after_last {
                return None;
            }
            held.push((start, len));
        }
        let _ = file.set_modified(SystemTime::now());
        Some(Self {
            file,
            size,
            table: tail,
            runs: held,
        })
    }

    /// The runs of bytes the file holds: sorted, apart.
    pub(crate) fn runs(&self) -> &[(u64, u64)] {
        &self.runs
    }

    /// The blocks `part` touches, read in one `pread` and each checked
    /// against its checksum: their first byte's offset and their bytes
    /// (zeros where not held: callers keep only the runs' parts). `None`
    /// when the read fails or a block's checksum differs.
    pub(crate) fn read_blocks(&self, part: &Range<u64>) -> Option<(u64, Bytes)> {
        if part.start >= part.end || part.end > self.size {
            return None;
        }
        let first = part.start / BLOCK;
        let start = first * BLOCK;
        let end = part
            .end
            .div_ceil(BLOCK)
            .saturating_mul(BLOCK)
            .min(self.size);
        let len = usize::try_from(end - start).ok()?;
        let mut bytes = binfmt_core::alloc::vec_with_capacity(len, "cache blocks").ok()?;
        bytes.resize(len, 0);
        self.file.read_exact_at(&mut bytes, HEADER + start).ok()?;
        for (index, block) in bytes.chunks(BLOCK as usize).enumerate() {
            let at = usize::try_from((first + index as u64) * ENTRY).ok()?;
            let stored = self.table.get(at..at.checked_add(ENTRY as usize)?)?;
            if stored != xxh3_128(block).to_le_bytes().as_slice() {
                return None;
            }
        }
        Some((start, Bytes::from(bytes)))
    }

    /// The bytes of `part` (inside one held run), from [`Whole::read_blocks`].
    pub(crate) fn read(&self, part: &Range<u64>) -> Option<Bytes> {
        let (start, bytes) = self.read_blocks(part)?;
        let from = usize::try_from(part.start - start).ok()?;
        let to = usize::try_from(part.end - start).ok()?;
        (from <= to && to <= bytes.len()).then(|| bytes.slice(from..to))
    }
}

/// Where a piece of a new whole file comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// A range file.
    Range,
    /// The whole file open now.
    Whole,
}

/// Writes the whole file of an object of `size` bytes in `dir` from
/// `pieces` (`(start, len, from)`, sorted, apart), each read by
/// `read_piece` (which checks it; `None` when it is gone or damaged, which
/// abandons the join); bytes between pieces are written as zeros and not
/// held. Through the output gate's [`binfmt_core::AtomicFile`]: the file
/// appears whole or not at all. Returns the file's length.
pub(crate) fn join(
    dir: &Path,
    size: u64,
    pieces: &[(u64, u64, Origin)],
    mut read_piece: impl FnMut(u64, u64, Origin) -> Option<Bytes>,
) -> Option<u64> {
    let mut runs: Vec<(u64, u64)> = Vec::new();
    let mut at = 0;
    for &(start, len, _) in pieces {
        let end = start.checked_add(len)?;
        if start < at || len == 0 || end > size {
            return None;
        }
        match runs.last_mut() {
            Some((run, n)) if *run + *n == start => *n += len,
            _ => runs.push((start, len)),
        }
        at = end;
    }
    let path = dir.join(name(size));
    let mut file = binfmt_core::AtomicFile::create_with_mode(&path, 0o600).ok()?;
    let mut out = Hashed::new(&mut file);
    out.file.write_all(&header(size, runs.len() as u64)).ok()?;
    let mut at = 0;
    for &(start, len, from) in pieces {
        out.zeros(start - at).ok()?;
        // A whole file's run is copied a chunk at a time.
        let chunk = if from == Origin::Whole {
            COPY_CHUNK
        } else {
            len
        };
        let mut done = 0;
        while done < len {
            let take = chunk.min(len - done);
            let bytes = read_piece(start + done, take, from)?;
            if bytes.len() as u64 != take {
                return None;
            }
            out.write(&bytes).ok()?;
            done += take;
        }
        at = start + len;
    }
    out.zeros(size - at).ok()?;
    let mut tail = out.finish();
    for (start, len) in &runs {
        tail.extend(start.to_le_bytes());
        tail.extend(len.to_le_bytes());
    }
    file.write_all(&tail).ok()?;
    let digest = meta_digest(&header(size, runs.len() as u64), &tail);
    file.seek(SeekFrom::Start(40)).ok()?;
    file.write_all(&digest).ok()?;
    file.commit().ok()?;
    file_len(size, runs.len() as u64)
}

/// The object's bytes written to a file, each block's checksum computed
/// on the way.
struct Hashed<'a> {
    file: &'a mut binfmt_core::AtomicFile,
    hasher: Xxh3,
    filled: u64,
    table: Vec<u8>,
}

impl<'a> Hashed<'a> {
    fn new(file: &'a mut binfmt_core::AtomicFile) -> Self {
        Self {
            file,
            hasher: Xxh3::new(),
            filled: 0,
            table: Vec::new(),
        }
    }

    fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.file.write_all(bytes)?;
        let mut rest = bytes;
        while !rest.is_empty() {
            let take = usize::try_from(BLOCK - self.filled)
                .unwrap_or(usize::MAX)
                .min(rest.len());
            let (part, tail) = rest.split_at(take);
            self.hasher.update(part);
            self.filled += take as u64;
            if self.filled == BLOCK {
                self.table.extend(self.hasher.digest128().to_le_bytes());
                self.hasher.reset();
                self.filled = 0;
            }
            rest = tail;
        }
        Ok(())
    }

    fn zeros(&mut self, mut count: u64) -> io::Result<()> {
        let zeros = [0u8; 4096];
        while count > 0 {
            let take = count.min(zeros.len() as u64) as usize;
            self.write(zeros.get(..take).unwrap_or_default())?;
            count -= take as u64;
        }
        Ok(())
    }

    /// The block checksums, the last (partial) block's included.
    fn finish(mut self) -> Vec<u8> {
        if self.filled > 0 {
            self.table.extend(self.hasher.digest128().to_le_bytes());
        }
        self.table
    }
}

/// Whether the entry `whole-SIZE` of `dir` is a whole file of ours (its
/// header and length): what eviction and a failed read may delete.
pub(crate) fn proven(dir: &Path, size: u64) -> bool {
    let Ok(Some((mut file, len))) = dir::open_file(dir, &name(size)) else {
        return false;
    };
    let mut head = [0; HEADER as usize];
    file.read_exact(&mut head).is_ok()
        && runs_in(&head, size).is_some_and(|runs| Some(len) == file_len(size, runs))
}

/// `gap` split into the parts inside `runs` (sorted, apart) and the parts
/// outside.
pub(crate) fn split(gap: &Range<u64>, runs: &[(u64, u64)]) -> (Vec<Range<u64>>, Vec<Range<u64>>) {
    let (mut inside, mut outside) = (Vec::new(), Vec::new());
    // The first run that ends after the gap's start.
    let first = runs.partition_point(|&(start, len)| start + len <= gap.start);
    let mut at = gap.start;
    for &(start, len) in runs.get(first..).unwrap_or_default() {
        if start >= gap.end {
            break;
        }
        if start > at {
            outside.push(at..start);
        }
        let end = (start + len).min(gap.end);
        let from = at.max(start);
        if from < end {
            inside.push(from..end);
        }
        at = end;
    }
    if at < gap.end {
        outside.push(at..gap.end);
    }
    (inside, outside)
}
