//! [`ValueReader`]: one map value read as a stream.

use std::borrow::Cow;
use std::sync::Arc;

use crate::raw::error::ParError;

/// A map value read as a stream ([`LazyMap::reader`]); failures are
/// `io::Error`s that [`ParError::from_io`] turns back into the typed error.
#[derive(Debug)]
pub struct ValueReader<'a> {
    pub(super) inner: ValueBytes<'a>,
    pub(super) len: u64,
}

#[derive(Debug)]
pub(super) enum ValueBytes<'a> {
    Source {
        reader: binfmt_core::RangeReader<'a, dyn binfmt_core::Source + 'a>,
        name: &'a std::path::Path,
    },
    Memory {
        bytes: Cow<'a, [u8]>,
        position: usize,
        end: usize,
    },
    Shared {
        bytes: Arc<Cow<'a, [u8]>>,
        position: usize,
        end: usize,
    },
}

impl<'a> ValueReader<'a> {
    pub(super) fn memory_range(bytes: Cow<'a, [u8]>, position: usize, end: usize) -> Self {
        Self {
            len: (end - position) as u64,
            inner: ValueBytes::Memory {
                bytes,
                position,
                end,
            },
        }
    }

    /// The value's size in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the value is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> u64 {
        match &self.inner {
            ValueBytes::Source { reader, .. } => reader.remaining(),
            ValueBytes::Memory { position, end, .. } | ValueBytes::Shared { position, end, .. } => {
                (end - position) as u64
            }
        }
    }
}

impl std::io::Read for ValueReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match &mut self.inner {
            ValueBytes::Source { reader, name } => reader
                .read(buf)
                .map_err(|error| ParError::Core(binfmt_core::Error::io(*name, error)).into_io()),
            ValueBytes::Memory {
                bytes,
                position,
                end,
            } => Ok(copy_out(bytes, position, *end, buf)),
            ValueBytes::Shared {
                bytes,
                position,
                end,
            } => Ok(copy_out(bytes, position, *end, buf)),
        }
    }
}

/// Copies what fits of `bytes[*position..end]` into `buf`.
fn copy_out(bytes: &[u8], position: &mut usize, end: usize, buf: &mut [u8]) -> usize {
    let rest = bytes.get(*position..end).unwrap_or_default();
    let n = rest.len().min(buf.len());
    if let (Some(to), Some(from)) = (buf.get_mut(..n), rest.get(..n)) {
        to.copy_from_slice(from);
    }
    *position += n;
    n
}
