//! Writing a `HashMap<String, Vec<u8>>` whose values are streamed from
//! readers: the bucket layout `parcode` 0.6.1 loads, without ever holding
//! a large value.
//!
//! ```text
//! │ bucket 0 │ bucket 1 │ ... │ container: bucket count u32 │ refs │ count │ meta │ header │
//! bucket: count | 0000 | hashes | offsets | key₀ varint(len₀) value₀ | key₁ ...
//!                                              └ copied from the reader, never held
//! ```
//!
//! Keys and sizes are given first ([`BlobMapWriter::add`]): they fix the
//! buckets and every offset before a value byte is read. Each bucket is then
//! written in turn, its values read in order through the caller's `open`.
//! A bucket whose payload exceeds [`STREAM_ABOVE`] is streamed and stored
//! uncompressed even when LZ4 is asked for (an LZ4 block needs its whole
//! input); smaller buckets are built in memory and compressed as asked.
//! The meta byte is per chunk, so readers (this crate's and the
//! reference's) handle the mix. The bytes are those [`ChunkGraph::map`]
//! writes for the same map, as long as no bucket is streamed.
//!
//! [`ChunkGraph::map`]: crate::ChunkGraph::map

#![forbid(unsafe_code)]

use std::io::{self, Read, Write};
use std::path::Path;

use crate::raw::compression::Compression;
use crate::raw::error::{ParError, Result};
use crate::raw::format::ChildRef;
use crate::raw::writer::{ChunkWriter, output_error, write_destination_with, write_file_with};
use crate::typed::codec::{encode, hash_key};
use crate::typed::map::{bucket_count, bucket_tables, entry_order, repeated_key};

/// Buckets with larger payloads are streamed, uncompressed.
pub const STREAM_ABOVE: u64 = 16 << 20;

/// Bytes copied from a value's reader at a time.
const COPY_BUFFER: usize = 256 << 10;

/// A `HashMap<String, Vec<u8>>` written in the bucket layout, each value
/// copied from a reader when its bucket is written.
///
/// # Examples
///
/// ```
/// use std::io::Read;
/// use binfmt_parcode::{BlobMapWriter, Compression, LazyMap, ParFile};
///
/// let values = [("a.txt", b"alpha".to_vec()), ("b.txt", vec![0; 100_000])];
/// let mut map = BlobMapWriter::new();
/// for (name, bytes) in &values {
///     map.add(*name, bytes.len() as u64);
/// }
/// let bytes = map.write_to(Vec::new(), Compression::Lz4, |name| {
///     let (_, value) = values.iter().find(|(n, _)| *n == name).expect("added");
///     Ok(value.as_slice())
/// })?;
/// let file = ParFile::new(bytes)?;
/// let lazy: LazyMap<String, Vec<u8>> = LazyMap::new(file.root()?)?;
/// assert_eq!(lazy.get("a.txt")?, Some(b"alpha".to_vec()));
/// # Ok::<(), binfmt_parcode::ParError>(())
/// ```
#[derive(Debug, Default)]
pub struct BlobMapWriter {
    entries: Vec<Entry>,
}

#[derive(Debug)]
struct Entry {
    key: String,
    size: u64,
}

/// An entry placed: its index in `entries`, hash, encoded key and encoded
/// size (key, length varint, value).
struct Placed {
    entry: usize,
    hash: u64,
    key: Vec<u8>,
    length: Vec<u8>,
    span: u64,
}

impl BlobMapWriter {
    /// A map with no entries yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an entry whose value, `size` bytes, the writer will read when
    /// its bucket is written. A key added twice is refused when writing.
    pub fn add(&mut self, key: impl Into<String>, size: u64) {
        self.entries.push(Entry {
            key: key.into(),
            size,
        });
    }

    /// The number of entries added.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no entry was added.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The keys in the order [`write_to`](Self::write_to) reads their
    /// values (bucket by bucket); a repeated key is an error.
    pub fn write_order(&self) -> Result<Vec<&str>> {
        Ok(self
            .place()?
            .iter()
            .flatten()
            .filter_map(|placed| self.entries.get(placed.entry))
            .map(|entry| entry.key.as_str())
            .collect())
    }

    /// Writes the map to `out`, the container and small buckets compressed
    /// with `compression`; `open(key)` gives each value's bytes, which must
    /// be exactly the size added. Returns `out`.
    pub fn write_to<W: Write, R: Read>(
        &self,
        out: W,
        compression: Compression,
        mut open: impl FnMut(&str) -> io::Result<R>,
    ) -> Result<W> {
        let buckets = self.place()?;
        let mut writer = ChunkWriter::new(out);
        let mut refs = Vec::with_capacity(buckets.len());
        let mut buffer = vec![0; COPY_BUFFER];
        for bucket in &buckets {
            refs.push(self.write_bucket(
                &mut writer,
                bucket,
                compression,
                &mut open,
                &mut buffer,
            )?);
        }
        let count = u32::try_from(buckets.len()).unwrap_or(u32::MAX);
        let count = count.to_le_bytes();
        let container = compression.compress(&count)?;
        let root = writer.chunk(&container, &refs, compression)?;
        writer.finish(root)
    }

    /// Writes the map to `path` atomically; returns the file's size.
    pub fn write_file<R: Read>(
        &self,
        path: impl AsRef<Path>,
        compression: Compression,
        open: impl FnMut(&str) -> io::Result<R>,
    ) -> Result<u64> {
        write_file_with(path.as_ref(), |file| self.write_to(file, compression, open))
    }

    /// [`BlobMapWriter::write_file`] to any destination (a local file, an
    /// S3 upload), committed on success.
    pub fn write_destination<R: Read>(
        &self,
        out: Box<dyn binfmt_core::Destination>,
        compression: Compression,
        open: impl FnMut(&str) -> io::Result<R>,
    ) -> Result<u64> {
        write_destination_with(out, |file| self.write_to(file, compression, open))
    }

    /// The entries of each bucket, in the writers' order; a repeated key is
    /// an error.
    fn place(&self) -> Result<Vec<Vec<Placed>>> {
        let buckets = bucket_count(self.entries.len());
        let mut placed: Vec<Vec<Placed>> = (0..buckets).map(|_| Vec::new()).collect();
        for (entry, Entry { key, size }) in self.entries.iter().enumerate() {
            let hash = hash_key(key.as_str());
            let key = encode(key.as_str(), "map key")?;
            let length = encode(size, "map value length")?;
            let span = (key.len() as u64 + length.len() as u64)
                .checked_add(*size)
                .ok_or_else(|| ParError::Encode {
                    what: "map entry",
                    why: format!("a {size}-byte value overflows the bucket size"),
                })?;
            if let Some(bucket) = placed.get_mut((hash % buckets as u64) as usize) {
                bucket.push(Placed {
                    entry,
                    hash,
                    key,
                    length,
                    span,
                });
            }
        }
        for bucket in &mut placed {
            bucket.sort_unstable_by(|a, b| entry_order((a.hash, &a.key), (b.hash, &b.key)));
            if let Some(pair) = bucket
                .windows(2)
                .find(|pair| matches!(pair, [a, b] if a.hash == b.hash && a.key == b.key))
            {
                return Err(repeated_key(pair.first().map_or(&[][..], |p| &p.key)));
            }
        }
        Ok(placed)
    }

    fn write_bucket<W: Write, R: Read>(
        &self,
        writer: &mut ChunkWriter<W>,
        bucket: &[Placed],
        compression: Compression,
        open: &mut impl FnMut(&str) -> io::Result<R>,
        buffer: &mut [u8],
    ) -> Result<ChildRef> {
        let spans: Vec<(u64, u64)> = bucket.iter().map(|p| (p.hash, p.span)).collect();
        let tables = bucket_tables(&spans)?;
        let payload_len = bucket
            .iter()
            .try_fold(tables.len() as u64, |total, p| total.checked_add(p.span))
            .ok_or_else(|| ParError::Encode {
                what: "map bucket",
                why: "its size overflows 64 bits".into(),
            })?;
        if payload_len <= STREAM_ABOVE {
            let mut payload = tables;
            for placed in bucket {
                payload.extend_from_slice(&placed.key);
                payload.extend_from_slice(&placed.length);
                self.copy_value(placed, open, buffer, &mut payload)?;
            }
            let stored = compression.compress(&payload)?;
            return writer.chunk(&stored, &[], compression);
        }
        let start = writer.offset();
        let out = writer.output();
        out.write_all(&tables).map_err(output_error)?;
        for placed in bucket {
            out.write_all(&placed.key).map_err(output_error)?;
            out.write_all(&placed.length).map_err(output_error)?;
            self.copy_value(placed, open, buffer, &mut *out)?;
        }
        writer.end_chunk(start, payload_len, &[], Compression::None)
    }

    /// Copies exactly the value's declared size from its reader to `out`
    /// through `buffer`.
    fn copy_value<R: Read>(
        &self,
        placed: &Placed,
        open: &mut impl FnMut(&str) -> io::Result<R>,
        buffer: &mut [u8],
        out: &mut impl Write,
    ) -> Result<()> {
        let Some(Entry { key, size }) = self.entries.get(placed.entry) else {
            return Ok(());
        };
        let reading = |source| ParError::ValueRead {
            key: key.clone(),
            source,
        };
        // One byte past the declared size tells a longer value apart.
        let mut reader = open(key).map_err(reading)?.take(size.saturating_add(1));
        let mut produced = 0u64;
        loop {
            let n = match reader.read(buffer) {
                Ok(0) => break,
                Ok(n) => n,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(reading(error)),
            };
            produced += n as u64;
            if produced > *size {
                break;
            }
            out.write_all(buffer.get(..n).unwrap_or_default())
                .map_err(output_error)?;
        }
        if produced != *size {
            return Err(ParError::ValueLength {
                key: key.clone(),
                declared: *size,
                produced,
            });
        }
        Ok(())
    }
}
