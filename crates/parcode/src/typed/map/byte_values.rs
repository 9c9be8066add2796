//! Maps of byte values: their values streamed ([`ValueReader`]) and
//! their sizes listed without reading them, and prefetching.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;

use serde::de::DeserializeOwned;

use super::bucket::{Bucket, Data, LISTED_PREFIX};
use super::lazy::{InlineValues, LazyMap};
use super::value_reader::{ValueBytes, ValueReader};

use crate::raw::error::{ParError, Result};
use crate::typed::codec::{decode, hash_key};

impl<'a, K> LazyMap<'a, K, Vec<u8>>
where
    K: DeserializeOwned + Hash + Eq + Send,
{
    /// The inline layout's keys and value ranges, read once: the count,
    /// then each key and its value's length prefix, the value skipped.
    /// Checked as the whole map's decoding checks it (the count against
    /// the bytes present, each length against what remains, no key twice,
    /// nothing after the last entry), without allocating any value.
    fn inline_values(&self) -> Result<&InlineValues<'a, K>> {
        if let Some(values) = self.inline_values.get() {
            return Ok(values);
        }
        let payload = self.container.payload()?;
        let offset = self.container.offset();
        let mut ranges = HashMap::new();
        if !(payload.is_empty() || *payload == [0; 4]) {
            let bad = |why: String| ParError::Payload {
                offset,
                what: "inline map",
                why,
            };
            let (count, mut at) = decode::<u64>(&payload, offset, "map length")?;
            // Each entry takes at least two bytes (two length prefixes).
            if count > (payload.len() - at) as u64 / 2 {
                return Err(bad(format!(
                    "{count} entries cannot fit in {} bytes",
                    payload.len() - at
                )));
            }
            for entry in 0..count {
                let rest = payload.get(at..).unwrap_or_default();
                let (key, used) = decode::<K>(rest, offset, "map key")?;
                let rest = rest.get(used..).unwrap_or_default();
                let (len, more) = decode::<u64>(rest, offset, "map value length")?;
                let start = at + used + more;
                let end = usize::try_from(len)
                    .ok()
                    .and_then(|len| start.checked_add(len))
                    .filter(|&end| end <= payload.len())
                    .ok_or_else(|| {
                        bad(format!(
                            "entry {entry}: a {len}-byte value runs past the {}-byte payload",
                            payload.len()
                        ))
                    })?;
                if ranges.insert(key, (start, end)).is_some() {
                    return Err(ParError::DuplicateKey { offset, entry });
                }
                at = end;
            }
            if at != payload.len() {
                return Err(bad(format!("{} bytes after the map", payload.len() - at)));
            }
        }
        let values = InlineValues {
            payload: Arc::new(payload),
            ranges,
        };
        Ok(self.inline_values.get_or_init(|| values))
    }

    /// The byte-vector value under `key` as a stream: from a bucket stored
    /// as is, the bytes come straight from the source in the caller's
    /// buffer (nothing is held whatever the value's size); from an LZ4
    /// bucket, out of the decompressed bucket. The entry's length is
    /// checked before the first byte is returned.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::collections::HashMap;
    /// use std::io::Read;
    /// use binfmt_parcode::{ChunkGraph, Compression, LazyMap, MapLayout, ParFile};
    ///
    /// let files = HashMap::from([("a.txt".to_string(), b"hello".to_vec())]);
    /// let mut graph = ChunkGraph::new();
    /// let root = graph.map(&files, MapLayout::Buckets)?;
    /// let file = ParFile::new(graph.to_bytes(root, Compression::None)?)?;
    /// let lazy: LazyMap<String, Vec<u8>> = LazyMap::new(file.root()?)?;
    /// let mut reader = lazy.reader("a.txt")?.expect("present");
    /// assert_eq!(reader.len(), 5);
    /// let mut text = String::new();
    /// reader.read_to_string(&mut text).map_err(binfmt_parcode::ParError::from_io)?;
    /// assert_eq!(text, "hello");
    /// # Ok::<(), binfmt_parcode::ParError>(())
    /// ```
    pub fn reader<Q>(&self, key: &Q) -> Result<Option<ValueReader<'a>>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        if self.is_inline() {
            // The inline map is one chunk, decompressed once: the value is
            // read where it lies.
            let values = self.inline_values()?;
            return values
                .ranges
                .get(key)
                .map(|&(start, end)| {
                    ValueReader::new(
                        ValueBytes::Shared(Arc::clone(&values.payload)),
                        start as u64,
                        (end - start) as u64,
                    )
                })
                .transpose();
        }
        let hash = hash_key(key);
        let bucket = self.bucket_of(hash, false)?;
        let Some((index, key_len)) = Self::find(&bucket, key, hash)? else {
            return Ok(None);
        };
        bucket.value_reader(index, key_len).map(Some)
    }

    /// Every key with its value's size in bytes, without reading the
    /// values: from a bucket stored as is, each entry's key and length
    /// prefix only (announced to the source together); an LZ4 bucket is
    /// decompressed. Every entry read is checked as [`load`](Self::load)
    /// checks it, and a key stored twice is an error.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::collections::HashMap;
    /// use binfmt_parcode::{ChunkGraph, Compression, LazyMap, MapLayout, ParFile};
    ///
    /// let files = HashMap::from([("a.txt".to_string(), vec![7; 1000])]);
    /// let mut graph = ChunkGraph::new();
    /// let root = graph.map(&files, MapLayout::Buckets)?;
    /// let file = ParFile::new(graph.to_bytes(root, Compression::None)?)?;
    /// let lazy: LazyMap<String, Vec<u8>> = LazyMap::new(file.root()?)?;
    /// assert_eq!(lazy.value_lens()?, vec![("a.txt".to_string(), 1000)]);
    /// # Ok::<(), binfmt_parcode::ParError>(())
    /// ```
    pub fn value_lens(&self) -> Result<Vec<(K, u64)>>
    where
        K: Clone,
    {
        if self.is_inline() {
            return Ok(self
                .inline_values()?
                .ranges
                .iter()
                .map(|(key, &(start, end))| (key.clone(), (end - start) as u64))
                .collect());
        }
        self.container.check_children_disjoint()?;
        let source = self.container.source();
        let mut listed = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for index in 0..self.buckets {
            // Every entry's span: the offset table with the hashes.
            let chunk = self.container.leaf_child(index)?;
            let bucket = Bucket::open(chunk, index, self.buckets, false, true)?;
            if let Data::Stored(chunk) = &bucket.data {
                let prefixes: Vec<_> = (0..bucket.count)
                    .filter_map(|entry| bucket.span(entry).ok())
                    .map(|(start, length)| {
                        let at = chunk.offset() + bucket.data_start + start;
                        at..at + length.min(LISTED_PREFIX)
                    })
                    .collect();
                source.will_read(&prefixes);
            }
            for entry in 0..bucket.count {
                let (key, len) = bucket.key_and_value_len::<K>(entry)?;
                if !seen.insert(key.clone()) {
                    return Err(ParError::DuplicateKey {
                        offset: bucket.at,
                        entry: u64::from(entry),
                    });
                }
                listed.push((key, len));
            }
        }
        Ok(listed)
    }

    /// Tells the source that the values under `keys` will be read next, so
    /// a remote one fetches them together: the buckets' trailers, then
    /// their tables (an LZ4 bucket whole), then the entries with the keys'
    /// hashes, each step one batch of ranges. Does nothing for a source in
    /// memory or an inline map; errors are left for the reads to report.
    pub fn prefetch<'k, Q>(&self, keys: impl IntoIterator<Item = &'k Q>)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized + 'k,
    {
        let source = self.container.source();
        if self.is_inline() || source.in_memory().is_some() {
            return;
        }
        let mut wanted: std::collections::BTreeMap<u32, Vec<u64>> = Default::default();
        for key in keys {
            let hash = hash_key(key);
            let index = (hash % u64::from(self.buckets)) as u32;
            wanted.entry(index).or_default().push(hash);
        }
        let ranges: Vec<_> = wanted
            .keys()
            .filter_map(|&index| self.container.child_range(index))
            .collect();
        let trailers: Vec<_> = ranges
            .iter()
            .map(|range| {
                range.end - (range.end - range.start).min(crate::raw::reader::TAIL_READ)..range.end
            })
            .collect();
        source.will_read(&trailers);
        let chunks: Vec<_> = wanted
            .iter()
            .filter_map(|(&index, hashes)| Some((self.container.child(index).ok()?, index, hashes)))
            .collect();
        let heads: Vec<_> = chunks
            .iter()
            .map(|(chunk, _, _)| {
                let stored = chunk.stored_range();
                if chunk.compression() == crate::raw::compression::Compression::None {
                    stored.start..stored.end.min(stored.start + HEAD_READ)
                } else {
                    stored
                }
            })
            .collect();
        source.will_read(&heads);
        let mut entries = Vec::new();
        for (chunk, index, hashes) in chunks {
            let Ok(bucket) = Bucket::open(chunk, index, self.buckets, false, true) else {
                continue;
            };
            if let Data::Stored(chunk) = &bucket.data {
                for &hash in hashes {
                    for entry in bucket.with_hash(hash) {
                        if let Ok((start, length)) = bucket.span(entry) {
                            let at = chunk.offset() + bucket.data_start + start;
                            entries.push(at..at + length);
                        }
                    }
                }
            }
        }
        source.will_read(&entries);
    }
}

/// Bytes of a bucket stored as is announced at first for a prefetch: its
/// header and the tables of up to about 5,000 entries.
const HEAD_READ: u64 = 64 << 10;
