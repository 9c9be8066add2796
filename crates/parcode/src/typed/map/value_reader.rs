//! [`ValueReader`]: one map value read as a stream, a [`SourceRange`] of
//! the bytes that hold it, with this crate's errors.
//!
//! ```text
//! bucket stored as is:       chunk source ─ SourceRange [value start, value end) ─▶ read on demand
//! bucket decompressed:       payload (memory) ─ SourceRange [value start, value end)
//! inline map (byte values):  shared payload (memory) ─ SourceRange [value start, value end)
//! ```

use std::borrow::Cow;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;

use binfmt_core::{Source, SourceRange};

use crate::raw::error::{ParError, Result};

/// A map value read as a stream ([`LazyMap::reader`](crate::LazyMap::reader)),
/// positioned with `Seek` inside the value; failures are `io::Error`s that
/// [`ParError::from_io`] turns back into the typed error.
#[derive(Debug)]
pub struct ValueReader<'a> {
    range: SourceRange<ValueBytes<'a>>,
}

/// The bytes a value lies in.
#[derive(Debug)]
pub(super) enum ValueBytes<'a> {
    /// The file, where a bucket is stored as is: read on demand.
    Stored(&'a dyn Source),
    /// A bucket's payload, decompressed (or borrowed from a source in memory).
    Memory(Cow<'a, [u8]>),
    /// An inline map's payload, which its values' readers share.
    Shared(Arc<Cow<'a, [u8]>>),
}

impl ValueBytes<'_> {
    fn bytes(&self) -> Option<&[u8]> {
        match self {
            Self::Stored(source) => source.in_memory(),
            Self::Memory(bytes) => Some(bytes),
            Self::Shared(bytes) => Some(bytes),
        }
    }
}

impl Source for ValueBytes<'_> {
    fn len(&self) -> u64 {
        match self {
            Self::Stored(source) => source.len(),
            Self::Memory(bytes) => bytes.len() as u64,
            Self::Shared(bytes) => bytes.len() as u64,
        }
    }

    fn in_memory(&self) -> Option<&[u8]> {
        self.bytes()
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        match self {
            Self::Stored(source) => source.read_exact_at(offset, buf),
            // Core's bytes-in-memory source does the checked copy.
            Self::Memory(_) | Self::Shared(_) => {
                Source::read_exact_at(self.bytes().unwrap_or_default(), offset, buf)
            }
        }
    }

    fn name(&self) -> &Path {
        match self {
            Self::Stored(source) => source.name(),
            Self::Memory(_) | Self::Shared(_) => Path::new("<PAR4 payload>"),
        }
    }
}

impl<'a> ValueReader<'a> {
    /// The `len` bytes at `start` of `bytes` (checked against them).
    pub(super) fn new(bytes: ValueBytes<'a>, start: u64, len: u64) -> Result<Self> {
        Ok(Self {
            range: SourceRange::new(bytes, start, len, "PAR4 map value")?,
        })
    }

    /// The value's size in bytes.
    pub fn len(&self) -> u64 {
        self.range.len()
    }

    /// Whether the value is empty.
    pub fn is_empty(&self) -> bool {
        self.range.is_empty()
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> u64 {
        self.range.remaining()
    }
}

impl Read for ValueReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.range
            .read_checked(buf)
            .map_err(|error| ParError::Core(error).into_io())
    }
}

impl Seek for ValueReader<'_> {
    /// Moves inside the value (positions relative to its start); a
    /// position outside it is an `InvalidInput` error.
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        self.range.seek(to)
    }
}
