//! Reading the chunk tree through any [`Source`]: [`ParFile::new`] reads the
//! global header and the root chunk's trailer in one read (constant work
//! whatever the file's size); [`Chunk`] navigates to children on demand.
//!
//! ```text
//! ... │ child a │ child b │ ... │ parent: payload │ refs (a, b) │ count │ meta │
//!       ▲─────────┴───────────────────────────────────┘
//!       children lie wholly before their parent, pairwise disjoint
//! ```
//!
//! A chunk's trailer (meta byte, child count, child table) is read with one
//! request: the last [`TAIL_READ`] bytes of the chunk (64 for a bucket or a
//! shard reached for one entry or item, which usually has no children), or
//! the whole chunk when it is shorter; a child table longer than that takes a second request for
//! the rest, and for the payload too when that is at most [`TAIL_READ`]
//! bytes. A child whose end its parent's request already brought (children
//! are written right before their parent; opening reads the root's end with
//! the header) is parsed from those bytes. The payload is read when asked
//! for, reusing whatever part of it the requests brought. From a source in memory (a map, a `Vec`)
//! nothing is copied: trailers and uncompressed payloads are borrowed.
//!
//! A chunk's child count is checked when the chunk is parsed (no more
//! children than its bytes and [`Limits::max_children`] allow); each child,
//! when reached, must lie wholly before its parent (the bottom-up invariant,
//! which also makes cycles impossible); operations that use every child
//! first check that no two share a byte ([`Chunk::check_children_disjoint`]).
//! Nesting is bounded by [`Limits::max_depth`].
//!
//! Operations that read a whole subtree ([`ParFile::verify`], loads of
//! nested values, inspection) walk it with a record of the bytes already
//! reached: a chunk that shares bytes with one reached before is an error
//! ([`ParError::ChunkReachedTwice`]). A PAR4 file is a tree (both writers
//! give every chunk one parent), so this refuses only hand-made graphs with
//! shared nodes, which could otherwise make a walk's work exponential in the
//! depth. With it, a walk reads each byte of the file at most once.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::{Deref, Range};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use binfmt_core::layout::Record;
use binfmt_core::{ByteSource, Error as CoreError, MapOnDemand, Source, SourceExt};

use crate::raw::compression::Compression;
use crate::raw::error::{ParError, Result};
use crate::raw::format::{
    CHILD_REF_SIZE, ChildRef, GLOBAL_HEADER_SIZE, GlobalHeader, MAGIC, MetaByte, VERSION,
};

/// Bytes read from the end of a chunk to find its trailer: the meta byte,
/// the child count, and up to 255 child references in one request.
pub const TAIL_READ: u64 = 4096;

/// Bytes read from the end of a chunk that usually has no children (a
/// map's bucket, a `Vec`'s shard, reached for one entry or item): its meta
/// byte needs one; a child table longer than the rest takes a second read.
pub(crate) const LEAF_TAIL_READ: u64 = 64;

/// Bounds a reader enforces against hostile files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// How deep chunks may nest below the root (default 64; the reference
    /// writes 2 levels for a `Vec`, one more per nested struct field).
    pub max_depth: usize,
    /// How many children one chunk may have (default 2^20; the reference
    /// writes at most 1,024 buckets for a map and one child per shard of
    /// about 128 KiB for a `Vec`, so 2^20 children is a 128 GiB vector).
    /// The chunk's length bounds the count too: each child takes 16 bytes.
    pub max_children: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_depth: 64,
            max_children: 1 << 20,
        }
    }
}

impl Limits {
    /// These limits with another nesting depth.
    #[must_use]
    pub fn with_max_depth(mut self, max_depth: usize) -> Self {
        self.max_depth = max_depth;
        self
    }

    /// These limits with another child count.
    #[must_use]
    pub fn with_max_children(mut self, max_children: u32) -> Self {
        self.max_children = max_children;
        self
    }
}

/// Bytes a chunk holds on to: borrowed from a source in memory, or a range
/// of bytes read once and shared between clones (and with children whose
/// trailers the read brought too).
#[derive(Debug, Clone)]
pub(crate) enum Held<'a> {
    Borrowed(&'a [u8]),
    Shared(Arc<[u8]>, Range<usize>),
}

impl Deref for Held<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Self::Borrowed(bytes) => bytes,
            Self::Shared(bytes, range) => bytes.get(range.clone()).unwrap_or_default(),
        }
    }
}

impl<'a> Held<'a> {
    fn from_cow(bytes: Cow<'a, [u8]>) -> Self {
        match bytes {
            Cow::Borrowed(bytes) => Self::Borrowed(bytes),
            Cow::Owned(bytes) => Self::shared(bytes.into()),
        }
    }

    fn shared(bytes: Arc<[u8]>) -> Self {
        let len = <[u8]>::len(&bytes);
        Self::Shared(bytes, 0..len)
    }

    /// `range` (relative to these bytes) as a `Cow`: borrowed when these
    /// bytes are.
    fn cow(&self, range: Range<usize>) -> Cow<'a, [u8]> {
        match self {
            Self::Borrowed(bytes) => Cow::Borrowed(bytes.get(range).unwrap_or_default()),
            Self::Shared(..) => Cow::Owned(self.get(range).unwrap_or_default().to_vec()),
        }
    }

    /// `range` (relative to these bytes, which the caller checked hold it)
    /// without a copy.
    fn slice(&self, range: Range<usize>) -> Self {
        match self {
            Self::Borrowed(bytes) => Self::Borrowed(bytes.get(range).unwrap_or_default()),
            Self::Shared(bytes, within) => Self::Shared(
                Arc::clone(bytes),
                within.start + range.start..within.start + range.end,
            ),
        }
    }
}

/// A PAR4 file whose global header and root chunk have been checked.
///
/// # Examples
///
/// ```
/// use binfmt_parcode::{ChunkGraph, Compression, ParFile};
///
/// let mut graph = ChunkGraph::new();
/// let leaf = graph.add(b"leaf".to_vec(), vec![])?;
/// let root = graph.add(b"root".to_vec(), vec![leaf])?;
/// let file = ParFile::new(graph.to_bytes(root, Compression::None)?)?;
/// let root = file.root()?;
/// assert_eq!(&*root.payload()?, b"root");
/// assert_eq!(&*root.child(0)?.payload()?, b"leaf");
/// assert_eq!(file.verify()?.chunks, 2);
/// # Ok::<(), binfmt_parcode::ParError>(())
/// ```
#[derive(Debug)]
pub struct ParFile<S: Source = ByteSource> {
    source: S,
    root_offset: u64,
    root_length: u64,
    /// The bytes read at open before the global header (the root chunk's
    /// trailer, and the end of the chunks before it), kept when the source
    /// is not in memory so that `root()` reads nothing, nor does reaching a
    /// child whose trailer they hold.
    root_tail: Option<(u64, Arc<[u8]>)>,
    limits: Limits,
}

impl ParFile<MapOnDemand> {
    /// Opens `path` (only regular files are accepted): small reads (the
    /// header, trailers, a bucket's tables, one entry) by `pread`, large
    /// ones (a shard, a whole bucket) from a map made on the first of them
    /// ([`MapOnDemand`]).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::new(MapOnDemand::open(path)?)
    }
}

impl<S: Source> ParFile<S> {
    /// Checks the file in `source` with the default [`Limits`].
    pub fn new(source: S) -> Result<Self> {
        Self::with_limits(source, Limits::default())
    }

    /// Checks the file in `source`: reads the global header and the root
    /// chunk's trailer, in one read.
    pub fn with_limits(source: S, limits: Limits) -> Result<Self> {
        let len = source.len();
        let header_at =
            len.checked_sub(GLOBAL_HEADER_SIZE as u64)
                .ok_or_else(|| CoreError::Truncated {
                    what: "PAR4 global header".into(),
                    offset: 0,
                    needed: GLOBAL_HEADER_SIZE as u64,
                    available: len,
                })?;
        // The root chunk ends where the header starts: one read brings the
        // header and the root's trailer.
        let read_from = header_at.saturating_sub(TAIL_READ);
        let tail = source.bytes_at(read_from, len - read_from, "PAR4 global header")?;
        let header_bytes = tail
            .get(tail.len() - GLOBAL_HEADER_SIZE..)
            .unwrap_or_default();
        let header = GlobalHeader::read_at(header_bytes, 0)?;
        if header.magic != MAGIC {
            return Err(CoreError::bad_magic(
                "PAR4 global header",
                header_at,
                &MAGIC,
                &header.magic,
            )
            .into());
        }
        if header.version.get() != VERSION {
            return Err(CoreError::UnsupportedVersion {
                what: "PAR4".into(),
                found: header.version.get().to_string(),
                supported: "this reader reads version 4".into(),
            }
            .into());
        }
        let (root_offset, root_length) = (header.root_offset.get(), header.root_length.get());
        // Both writers put the root chunk right before the header; PAR4 has
        // no checksum, so this is the one cross-check of the root fields.
        if root_offset > header_at || root_length != header_at - root_offset {
            return Err(ParError::RootOutOfBounds {
                offset: root_offset,
                length: root_length,
                limit: header_at,
            });
        }
        let root_tail = match tail {
            Cow::Borrowed(_) => None,
            Cow::Owned(mut bytes) => {
                // Everything but the header: the root's bytes, and the end
                // of the chunk before it (usually its last child, written
                // right before it) when the root is shorter than the read.
                bytes.truncate(bytes.len() - GLOBAL_HEADER_SIZE);
                Some((read_from, Arc::from(bytes)))
            }
        };
        let mut file = Self {
            source,
            root_offset,
            root_length,
            root_tail,
            limits,
        };
        // A child table longer than the first read was read whole: keep
        // that, so `root()` does not read it again.
        let widened = match file.root()? {
            Chunk {
                tail: Held::Shared(bytes, range),
                tail_start,
                ..
            } if file.root_tail.as_ref().map(|(start, _)| *start) != Some(tail_start)
                && range == (0..<[u8]>::len(&bytes)) =>
            {
                Some((tail_start, bytes))
            }
            _ => None,
        };
        if widened.is_some() {
            file.root_tail = widened;
        }
        Ok(file)
    }

    /// The size of the file.
    pub fn file_size(&self) -> u64 {
        self.source.len()
    }

    /// The source the file is read from.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// The limits this file is read with.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The root chunk (parsed from the bytes read at open: no read).
    pub fn root(&self) -> Result<Chunk<'_>> {
        let tail = self
            .root_tail
            .as_ref()
            .map(|(start, bytes)| (*start, Held::shared(Arc::clone(bytes))));
        Chunk::parse(
            &self.source,
            self.root_offset,
            self.root_length,
            0,
            self.limits,
            tail,
            TAIL_READ,
        )
    }
}

/// The bytes reached so far by a walk over a subtree, as disjoint ranges
/// (start → end).
#[derive(Debug, Default)]
pub(crate) struct Walk {
    reached: Mutex<BTreeMap<u64, u64>>,
}

impl Walk {
    /// Records the chunk at `offset .. offset + length`; an error if it
    /// shares a byte with a chunk recorded before.
    fn enter(&self, offset: u64, length: u64) -> Result<()> {
        let end = offset.saturating_add(length);
        let mut reached = self.reached.lock().unwrap_or_else(PoisonError::into_inner);
        let before = reached
            .range(..=offset)
            .next_back()
            .filter(|&(_, &other_end)| other_end > offset);
        let after = reached
            .range(offset..)
            .next()
            .filter(|&(&start, _)| start < end);
        if let Some((&other, _)) = before.or(after) {
            return Err(ParError::ChunkReachedTwice {
                offset,
                length,
                other,
            });
        }
        reached.insert(offset, end);
        Ok(())
    }
}

/// One chunk, with its trailer checked.
#[derive(Debug, Clone)]
pub struct Chunk<'a> {
    source: &'a dyn Source,
    offset: u64,
    length: u64,
    meta: MetaByte,
    compression: Compression,
    child_count: u32,
    payload_end: u64,
    depth: usize,
    limits: Limits,
    /// Bytes `tail_start .. offset + length` of the file: at least the
    /// child table, count and meta byte (for the root, maybe bytes before
    /// it too).
    tail_start: u64,
    tail: Held<'a>,
    /// The walk this chunk was reached in, if any: its children are
    /// recorded in it.
    walk: Option<Arc<Walk>>,
}

impl<'a> Chunk<'a> {
    /// Reads and checks the trailer of the chunk at `offset .. offset +
    /// length`; `tail` is what the caller already read of the chunk's end
    /// (where it starts in the file, and the bytes up to the chunk's end).
    fn parse(
        source: &'a dyn Source,
        offset: u64,
        length: u64,
        depth: usize,
        limits: Limits,
        tail: Option<(u64, Held<'a>)>,
        tail_read: u64,
    ) -> Result<Self> {
        if depth > limits.max_depth {
            return Err(ParError::TooDeep {
                offset,
                limit: limits.max_depth,
            });
        }
        let too_short = |needed| ParError::ChunkTooShort {
            offset,
            length,
            needed,
        };
        if length == 0 {
            return Err(too_short(1));
        }
        let end = binfmt_core::range::end_of(offset, length, "PAR4 chunk")?;
        let (mut tail_start, mut held) = match tail {
            Some(tail) => tail,
            None => {
                let start = end - length.min(tail_read);
                let bytes = source.bytes_at(start, end - start, "PAR4 chunk trailer")?;
                (start, Held::from_cow(bytes))
            }
        };
        let meta = MetaByte::from_byte(*held.last().ok_or_else(|| too_short(1))?);
        if meta.reserved_bits() != 0 {
            return Err(ParError::ReservedBits {
                offset,
                meta: meta.as_u8(),
            });
        }
        let compression = Compression::from_id(meta.compression_method(), offset)?;
        let (child_count, payload_end) = if meta.is_chunkable() {
            if length < 5 {
                return Err(too_short(5));
            }
            let count_at = held.len().saturating_sub(5);
            let count = held
                .get(count_at..count_at + 4)
                .and_then(|bytes| bytes.first_chunk::<4>())
                .map(|bytes| u32::from_le_bytes(*bytes))
                .ok_or_else(|| too_short(5))?;
            let table = u64::from(count) * CHILD_REF_SIZE;
            if table + 5 > length {
                return Err(ParError::TooManyChildren {
                    offset,
                    count,
                    needed: table + 5,
                    length,
                });
            }
            if count > limits.max_children {
                return Err(ParError::ChildLimit {
                    offset,
                    count,
                    limit: limits.max_children,
                });
            }
            let payload_end = end - 5 - table;
            if payload_end < tail_start {
                // A table longer than the first read: read it whole, with
                // the payload when that is short (a container's, which its
                // reader reads next).
                let from = if payload_end - offset <= TAIL_READ {
                    offset
                } else {
                    payload_end
                };
                let bytes = source.bytes_at(from, end - from, "PAR4 child table")?;
                (tail_start, held) = (from, Held::from_cow(bytes));
            }
            (count, payload_end)
        } else {
            (0, end - 1)
        };
        let chunk = Self {
            source,
            offset,
            length,
            meta,
            compression,
            child_count,
            payload_end,
            depth,
            limits,
            tail_start,
            tail: held,
            walk: None,
        };
        Ok(chunk)
    }

    /// Child `index`'s reference, unchecked.
    fn child_ref(&self, index: u32) -> (u64, u64) {
        let at = (self.payload_end - self.tail_start) as usize + index as usize * 16;
        self.tail
            .get(at..at + 16)
            .and_then(|bytes| ChildRef::read_at(bytes, 0).ok())
            .map_or((0, 0), |child| (child.offset.get(), child.length.get()))
    }

    /// Checks that no two children share a byte (the same chunk listed
    /// twice included): operations that use every child call it, so that
    /// K chunks cannot carry K² edges to one another and a container's
    /// shards or a map's buckets are distinct chunks. Opening and reaching
    /// one child do not need it (one path has no aliasing to amplify), and
    /// walks find overlaps themselves.
    pub fn check_children_disjoint(&self) -> Result<()> {
        let mut sorted = true;
        let mut previous_end = 0;
        for index in 0..self.child_count {
            let (offset, length) = self.child_ref(index);
            sorted &= index == 0 || offset >= previous_end;
            previous_end = offset.saturating_add(length);
        }
        if sorted {
            return Ok(());
        }
        // Children out of file order (the reference's parallel writer
        // writes them as they complete): sort, then compare neighbours.
        let mut spans: Vec<(u64, u64, u32)> = (0..self.child_count)
            .map(|index| {
                let (offset, length) = self.child_ref(index);
                (offset, offset.saturating_add(length), index)
            })
            .collect();
        spans.sort_unstable();
        for pair in spans.windows(2) {
            if let [(_, first_end, first), (second_start, _, second)] = *pair
                && second_start < first_end
            {
                return Err(ParError::ChildrenOverlap {
                    parent: self.offset,
                    first,
                    second,
                    at: second_start,
                });
            }
        }
        Ok(())
    }

    /// This chunk as the start of a walk over its subtree: every chunk
    /// reached from it through [`Chunk::child`] is recorded, and one that
    /// shares bytes with a chunk recorded before is an error.
    pub fn walking(&self) -> Result<Self> {
        let walk = Arc::new(Walk::default());
        walk.enter(self.offset, self.length)?;
        Ok(Self {
            walk: Some(walk),
            ..self.clone()
        })
    }

    /// This chunk outside any walk: for reads that look at chunks without
    /// walking them (a walk's later visit of them is not a second one).
    pub(crate) fn unwalked(&self) -> Self {
        Self {
            walk: None,
            ..self.clone()
        }
    }

    /// Whether this chunk belongs to a walk ([`Chunk::walking`]).
    pub fn is_walking(&self) -> bool {
        self.walk.is_some()
    }

    /// Where the chunk starts.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The chunk's length, trailer included.
    pub fn length(&self) -> u64 {
        self.length
    }

    /// The meta byte.
    pub fn meta(&self) -> MetaByte {
        self.meta
    }

    /// How the payload is stored.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// The number of children.
    pub fn child_count(&self) -> u32 {
        self.child_count
    }

    /// How many levels below the root this chunk is.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// The limits the chunk was read with.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The source the chunk is read from.
    pub fn source(&self) -> &'a dyn Source {
        self.source
    }

    /// The size of the payload as stored (compressed or not), as the
    /// reference's `ChunkNode::payload_len`.
    pub fn payload_len(&self) -> u64 {
        self.payload_end - self.offset
    }

    /// Where the stored payload lies in the file.
    pub fn stored_range(&self) -> Range<u64> {
        self.offset..self.payload_end
    }

    /// The payload as stored (compressed or not): borrowed from a source in
    /// memory, read otherwise (reusing the bytes read with the trailer).
    pub fn stored_payload(&self) -> Result<Cow<'a, [u8]>> {
        self.stored_bytes(0, self.payload_len())
    }

    /// `len` bytes of the stored payload from `start` (relative to the
    /// payload), which the caller has checked lie inside it.
    pub(crate) fn stored_bytes(&self, start: u64, len: u64) -> Result<Cow<'a, [u8]>> {
        let from = self.offset + start;
        let to = from + len;
        if from >= self.tail_start {
            let at = (from - self.tail_start) as usize;
            return Ok(self.tail.cow(at..at + len as usize));
        }
        if to <= self.tail_start {
            return Ok(self.source.bytes_at(from, len, "PAR4 payload")?);
        }
        // From a source that lends the range (memory, a map), borrow it
        // whatever the trailer read covered.
        if let Some(bytes) = self.source.borrow_at(from, len) {
            return Ok(Cow::Borrowed(bytes));
        }
        // Partly read with the trailer: read the rest in place, then append.
        let head = (self.tail_start - from) as usize;
        let mut bytes = Vec::with_capacity(len as usize);
        bytes.resize(head, 0);
        self.source.fill_at(from, &mut bytes, "PAR4 payload")?;
        bytes.extend_from_slice(
            self.tail
                .get(..(to - self.tail_start) as usize)
                .unwrap_or_default(),
        );
        Ok(Cow::Owned(bytes))
    }

    /// The payload's size once decompressed: the stored size, or the LZ4
    /// size prefix (a 4-byte read), checked against the 255× bound.
    pub fn decompressed_len(&self) -> Result<u64> {
        match self.compression {
            Compression::None => Ok(self.payload_len()),
            Compression::Lz4 => {
                if self.payload_len() < 4 {
                    return Err(ParError::Lz4 {
                        offset: self.offset,
                        why: format!(
                            "{} bytes, too short for the size prefix",
                            self.payload_len()
                        ),
                    });
                }
                let prefix = self.stored_bytes(0, 4)?;
                let claim = prefix
                    .first_chunk::<4>()
                    .map_or(0, |bytes| u64::from(u32::from_le_bytes(*bytes)));
                Compression::check_lz4_claim(claim, self.payload_len() - 4, self.offset)?;
                Ok(claim)
            }
        }
    }

    /// The payload, decompressed: borrowed from a source in memory when
    /// stored as is.
    pub fn payload(&self) -> Result<Cow<'a, [u8]>> {
        match self.compression {
            Compression::None => self.stored_payload(),
            compression => {
                let stored = self.stored_payload()?;
                Ok(Cow::Owned(
                    compression.decompress(&stored, self.offset)?.into_owned(),
                ))
            }
        }
    }

    /// The payload's first bytes that can hold a shard's item count (a
    /// varint, at most 9 bytes) and items `0..=item` of at most
    /// `max_item_len` bytes each (all of it when shorter), decompressed:
    /// from a payload stored as is outside memory, only those bytes are
    /// read, and without mapping the file (for one item of a long shard, a
    /// map with its page faults and unmapping costs more than the copy). A
    /// compressed payload is decompressed whole.
    pub(crate) fn item_prefix(&self, max_item_len: usize, item: usize) -> Result<Cow<'a, [u8]>> {
        let len = (max_item_len as u64)
            .saturating_mul(item as u64 + 1)
            .saturating_add(9)
            .min(self.payload_len());
        if self.compression != Compression::None {
            return self.payload();
        }
        if len < MapOnDemand::MAP_FROM || self.source.in_memory().is_some() {
            return self.stored_bytes(0, len);
        }
        Ok(Cow::Owned(binfmt_core::source::read_vec_at(
            self.source,
            self.offset,
            len,
            "PAR4 payload",
        )?))
    }

    /// Where child `index` says it lies (checked when the child is reached).
    pub fn child_range(&self, index: u32) -> Option<Range<u64>> {
        (index < self.child_count).then(|| {
            let (offset, length) = self.child_ref(index);
            offset..offset.saturating_add(length)
        })
    }

    /// Where every child lies, for a source's read-ahead hint.
    pub(crate) fn child_ranges(&self) -> Vec<Range<u64>> {
        (0..self.child_count)
            .filter_map(|index| self.child_range(index))
            .collect()
    }

    /// Child `index`, its trailer read and checked. In a walk, a child that
    /// shares bytes with a chunk reached before is an error.
    pub fn child(&self, index: u32) -> Result<Chunk<'a>> {
        self.child_reading(index, TAIL_READ)
    }

    /// Child `index` when it usually has no children (a bucket or a shard
    /// reached for one entry or item): [`Chunk::child`] with a first read
    /// of [`LEAF_TAIL_READ`] bytes for its trailer.
    pub(crate) fn leaf_child(&self, index: u32) -> Result<Chunk<'a>> {
        self.child_reading(index, LEAF_TAIL_READ)
    }

    fn child_reading(&self, index: u32, tail_read: u64) -> Result<Chunk<'a>> {
        let Some(range) = self.child_range(index) else {
            return Err(ParError::IndexOutOfRange {
                index: u64::from(index),
                len: u64::from(self.child_count),
            });
        };
        // Wholly before this chunk (which also rules out cycles) and at
        // least a byte long.
        let (offset, length) = (range.start, range.end.wrapping_sub(range.start));
        if offset > self.offset || length > self.offset - offset {
            return Err(ParError::ChildNotBeforeParent {
                parent: self.offset,
                index,
                offset,
                length,
            });
        }
        if length == 0 {
            return Err(ParError::ChunkTooShort {
                offset,
                length,
                needed: 1,
            });
        }
        if let Some(walk) = &self.walk {
            walk.enter(range.start, range.end - range.start)?;
        }
        // The child's end read with this chunk's trailer (a child written
        // right before its parent): reused when it holds the child's count
        // and meta byte; the parse reads whatever more it needs.
        let near = (self.tail_start < range.end)
            .then(|| {
                let start = self.tail_start.max(range.start);
                let held = self.tail.slice(
                    (start - self.tail_start) as usize..(range.end - self.tail_start) as usize,
                );
                (start, held)
            })
            .filter(|(_, held)| held.len() as u64 >= length.min(5));
        let mut child = Chunk::parse(
            self.source,
            range.start,
            range.end - range.start,
            self.depth + 1,
            self.limits,
            near,
            tail_read,
        )?;
        child.walk = self.walk.clone();
        Ok(child)
    }

    /// Every child, in order, each read and checked.
    pub fn children(&self) -> Result<Vec<Chunk<'a>>> {
        (0..self.child_count)
            .map(|index| self.child(index))
            .collect()
    }
}
