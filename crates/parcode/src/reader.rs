//! Reading the chunk tree: [`ParFile::open`] maps the file and checks the
//! global header and the root chunk's trailer (constant work whatever the
//! file's size); [`Chunk`] navigates to children on demand.
//!
//! Every child reference is checked before it is followed: it must lie
//! wholly before its parent (the bottom-up invariant, which also makes
//! cycles impossible), be long enough for its own trailer, and declare no
//! more children than its bytes can hold. Nesting is bounded by
//! [`Limits::max_depth`].

use std::borrow::Cow;
use std::collections::HashSet;
use std::path::Path;

use binfmt_core::ByteSource;
use binfmt_core::layout::Record;

use crate::compression::Compression;
use crate::error::{ParError, Result};
use crate::format::{
    CHILD_REF_SIZE, ChildRef, GLOBAL_HEADER_SIZE, GlobalHeader, MAGIC, MetaByte, VERSION,
};

/// Bounds a reader enforces against hostile files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// A PAR4 file whose global header and root chunk have been checked.
#[derive(Debug)]
pub struct ParFile<S = ByteSource> {
    source: S,
    root_offset: u64,
    root_length: u64,
    limits: Limits,
}

impl ParFile<ByteSource> {
    /// Opens `path`, memory-mapped when possible.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::new(ByteSource::open(path)?)
    }
}

impl<S: AsRef<[u8]>> ParFile<S> {
    /// Checks the file held in `source` with the default [`Limits`].
    pub fn new(source: S) -> Result<Self> {
        Self::with_limits(source, Limits::default())
    }

    /// Checks the file held in `source`.
    pub fn with_limits(source: S, limits: Limits) -> Result<Self> {
        let bytes = source.as_ref();
        let len = bytes.len() as u64;
        let header_start = len
            .checked_sub(GLOBAL_HEADER_SIZE as u64)
            .ok_or(ParError::TooShort { len })?;
        let header =
            GlobalHeader::ref_at(bytes, header_start).map_err(|_| ParError::TooShort { len })?;
        if header.magic != MAGIC {
            return Err(ParError::BadMagic {
                found: header.magic,
            });
        }
        if header.version.get() != VERSION {
            return Err(ParError::UnsupportedVersion {
                found: header.version.get(),
            });
        }
        let (root_offset, root_length) = (header.root_offset.get(), header.root_length.get());
        // Both writers put the root chunk right before the header; PAR4 has
        // no checksum, so this is the one cross-check of the root fields.
        if root_offset > header_start || root_length != header_start - root_offset {
            return Err(ParError::RootOutOfBounds {
                offset: root_offset,
                length: root_length,
                limit: header_start,
            });
        }
        let file = Self {
            source,
            root_offset,
            root_length,
            limits,
        };
        file.root()?;
        Ok(file)
    }

    /// The size of the file.
    pub fn file_size(&self) -> u64 {
        self.source.as_ref().len() as u64
    }

    /// The root chunk.
    pub fn root(&self) -> Result<Chunk<'_>> {
        Chunk::parse(
            self.source.as_ref(),
            self.root_offset,
            self.root_length,
            0,
            self.limits,
        )
    }

    /// Walks every chunk once and decompresses every payload.
    pub fn verify(&self) -> Result<VerifySummary> {
        let mut summary = VerifySummary::default();
        let mut seen = HashSet::new();
        let mut stack = vec![self.root()?];
        while let Some(chunk) = stack.pop() {
            if !seen.insert((chunk.offset, chunk.length)) {
                continue;
            }
            summary.chunks += 1;
            summary.payload_bytes += chunk.payload()?.len() as u64;
            for child in chunk.children() {
                stack.push(child?);
            }
        }
        Ok(summary)
    }
}

/// What [`ParFile::verify`] walked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VerifySummary {
    /// Distinct chunks.
    pub chunks: u64,
    /// Their payload bytes after decompression.
    pub payload_bytes: u64,
}

/// One chunk, with its trailer checked.
#[derive(Debug, Clone, Copy)]
pub struct Chunk<'a> {
    bytes: &'a [u8],
    offset: u64,
    length: u64,
    meta: MetaByte,
    compression: Compression,
    child_count: u32,
    payload_end: u64,
    depth: usize,
    limits: Limits,
}

impl<'a> Chunk<'a> {
    /// Checks the trailer of the chunk at `offset .. offset + length`, which
    /// the caller has placed inside `bytes`.
    fn parse(
        bytes: &'a [u8],
        offset: u64,
        length: u64,
        depth: usize,
        limits: Limits,
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
        let end = offset + length;
        let meta = MetaByte(*bytes.get(end as usize - 1).ok_or_else(|| too_short(1))?);
        if meta.reserved_bits() != 0 {
            return Err(ParError::ReservedBits {
                offset,
                meta: meta.0,
            });
        }
        let compression = Compression::from_id(meta.compression_id(), offset)?;
        let (child_count, payload_end) = if meta.has_children() {
            if length < 5 {
                return Err(too_short(5));
            }
            let count_at = end - 5;
            let count_bytes = bytes
                .get(count_at as usize..end as usize - 1)
                .and_then(|b| b.first_chunk::<4>())
                .ok_or_else(|| too_short(5))?;
            let count = u32::from_le_bytes(*count_bytes);
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
            (count, count_at - table)
        } else {
            (0, end - 1)
        };
        Ok(Self {
            bytes,
            offset,
            length,
            meta,
            compression,
            child_count,
            payload_end,
            depth,
            limits,
        })
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

    /// The payload as stored (compressed or not), a slice of the file.
    pub fn stored_payload(&self) -> &'a [u8] {
        self.bytes
            .get(self.offset as usize..self.payload_end as usize)
            .unwrap_or_default()
    }

    /// The payload's size once decompressed, read from the LZ4 size prefix
    /// without decompressing.
    pub fn payload_len(&self) -> Result<u64> {
        let stored = self.stored_payload();
        match self.compression {
            Compression::None => Ok(stored.len() as u64),
            Compression::Lz4 => stored
                .first_chunk::<4>()
                .map(|size| u64::from(u32::from_le_bytes(*size)))
                .ok_or_else(|| ParError::Lz4 {
                    offset: self.offset,
                    why: "too short for the size prefix".into(),
                }),
        }
    }

    /// The payload, decompressed: a slice of the file when stored as is.
    pub fn payload(&self) -> Result<Cow<'a, [u8]>> {
        self.compression
            .decompress(self.stored_payload(), self.offset)
    }

    /// Child `index`, checked: it must end before this chunk starts.
    pub fn child(&self, index: u32) -> Result<Chunk<'a>> {
        if index >= self.child_count {
            return Err(ParError::IndexOutOfRange {
                index: u64::from(index),
                len: u64::from(self.child_count),
            });
        }
        let at = self.payload_end + u64::from(index) * CHILD_REF_SIZE;
        let child = ChildRef::read_at(self.bytes, at)?;
        let (offset, length) = (child.offset.get(), child.length.get());
        if offset > self.offset || length > self.offset - offset {
            return Err(ParError::ChildNotBeforeParent {
                parent: self.offset,
                index,
                offset,
                length,
            });
        }
        Chunk::parse(self.bytes, offset, length, self.depth + 1, self.limits)
    }

    /// Every child, in order.
    pub fn children(&self) -> impl ExactSizeIterator<Item = Result<Chunk<'a>>> + '_ {
        (0..self.child_count).map(|index| self.child(index))
    }
}
