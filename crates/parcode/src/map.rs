//! `HashMap<K, V>` in the two layouts the reference reads.
//!
//! **Buckets** (the reference's `#[parcode(map)]` layout, and this writer's
//! default): a container whose payload is the bucket count (u32 LE), one
//! child per bucket. A key goes to bucket `hash_key(key) % buckets`, with
//! `buckets = clamp(len / 2000, 1, 1024)` (0 for an empty map):
//!
//! ```text
//! bucket payload: count u32 | 4 zero bytes | count × hash u64 | count × offset u32 | blob
//! blob entry at offset: bincode (K, V)
//! ```
//!
//! **Inline** (what the reference writes for a map saved directly): one
//! chunk without children whose payload is the bincode of the whole map; a
//! payload under 4 bytes is an empty map.
//!
//! Within a bucket this writer orders entries by hash, then by encoded key,
//! so the bytes do not depend on the map's iteration order.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::marker::PhantomData;
use std::sync::OnceLock;

use rayon::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::codec::{decode, encode, hash_key};
use crate::error::{ParError, Result};
use crate::reader::Chunk;
use crate::writer::{ChunkGraph, NodeId};

/// How a map is laid out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MapLayout {
    /// Buckets of entries, for loading one key at a time.
    #[default]
    Buckets,
    /// One chunk with the whole map.
    Inline,
}

/// Entries a bucket aims for, as the reference.
const ITEMS_PER_BUCKET: usize = 2000;
/// At most this many buckets, as the reference.
const MAX_BUCKETS: usize = 1024;
/// Bucket header: count u32 and 4 zero bytes.
const BUCKET_HEADER: usize = 8;

/// One map entry, encoded, with the hash that places it.
#[derive(Debug)]
struct EncodedEntry {
    hash: u64,
    key: Vec<u8>,
    value: Vec<u8>,
}

impl ChunkGraph {
    /// Adds a map in `layout`.
    pub fn map<'m, K, V, I>(&mut self, entries: I, layout: MapLayout) -> Result<NodeId>
    where
        K: Serialize + Hash + Sync + 'm,
        V: Serialize + Sync + 'm,
        I: IntoIterator<Item = (&'m K, &'m V)>,
    {
        let mut encoded: Vec<EncodedEntry> = entries
            .into_iter()
            .map(|(key, value)| {
                Ok(EncodedEntry {
                    hash: hash_key(key),
                    key: encode(key, "map key")?,
                    value: encode(value, "map value")?,
                })
            })
            .collect::<Result<_>>()?;
        encoded.sort_unstable_by(|a, b| (a.hash, &a.key).cmp(&(b.hash, &b.key)));
        match layout {
            MapLayout::Inline => {
                let mut payload = encode(&(encoded.len() as u64), "map length")?;
                for entry in &encoded {
                    payload.extend_from_slice(&entry.key);
                    payload.extend_from_slice(&entry.value);
                }
                self.add(payload, Vec::new())
            }
            MapLayout::Buckets => {
                let buckets = if encoded.is_empty() {
                    0
                } else {
                    (encoded.len() / ITEMS_PER_BUCKET).clamp(1, MAX_BUCKETS)
                };
                let mut members: Vec<Vec<&EncodedEntry>> = vec![Vec::new(); buckets];
                for entry in &encoded {
                    if let Some(bucket) = members.get_mut((entry.hash % buckets as u64) as usize) {
                        bucket.push(entry);
                    }
                }
                let payloads: Vec<Vec<u8>> = members
                    .par_iter()
                    .map(|bucket| bucket_payload(bucket))
                    .collect::<Result<_>>()?;
                let children = payloads
                    .into_iter()
                    .map(|payload| self.add(payload, Vec::new()))
                    .collect::<Result<Vec<_>>>()?;
                self.add((buckets as u32).to_le_bytes().to_vec(), children)
            }
        }
    }
}

fn bucket_payload(entries: &[&EncodedEntry]) -> Result<Vec<u8>> {
    if entries.is_empty() {
        return Ok(Vec::new());
    }
    let too_big = |what: &str| ParError::Encode {
        what: "map bucket",
        why: format!("{what} exceeds u32"),
    };
    let count = u32::try_from(entries.len()).map_err(|_| too_big("entry count"))?;
    let mut payload = Vec::new();
    payload.extend_from_slice(&count.to_le_bytes());
    payload.extend_from_slice(&[0; 4]);
    for entry in entries {
        payload.extend_from_slice(&entry.hash.to_le_bytes());
    }
    let mut position = 0usize;
    for entry in entries {
        let offset = u32::try_from(position).map_err(|_| too_big("bucket data"))?;
        payload.extend_from_slice(&offset.to_le_bytes());
        position += entry.key.len() + entry.value.len();
    }
    for entry in entries {
        payload.extend_from_slice(&entry.key);
        payload.extend_from_slice(&entry.value);
    }
    Ok(payload)
}

/// A `HashMap<K, V>` in a PAR4 file: in the bucket layout `get` loads one
/// bucket; in the inline layout the map is decoded once, on first use.
#[derive(Debug)]
pub struct LazyMap<'a, K, V> {
    container: Chunk<'a>,
    buckets: u32,
    inline: OnceLock<HashMap<K, V>>,
    _entries: PhantomData<fn() -> (K, V)>,
}

impl<'a, K, V> LazyMap<'a, K, V>
where
    K: DeserializeOwned + Hash + Eq + Send,
    V: DeserializeOwned + Clone + Send,
{
    /// Reads the container chunk.
    pub fn new(container: Chunk<'a>) -> Result<Self> {
        let mut buckets = 0;
        if container.child_count() > 0 {
            let payload = container.payload()?;
            let count = payload
                .first_chunk::<4>()
                .map(|bytes| u32::from_le_bytes(*bytes));
            if count != Some(container.child_count()) {
                return Err(ParError::Payload {
                    offset: container.offset(),
                    what: "map container",
                    why: format!(
                        "bucket count {count:?} but {} children",
                        container.child_count()
                    ),
                });
            }
            buckets = container.child_count();
        }
        Ok(Self {
            container,
            buckets,
            inline: OnceLock::new(),
            _entries: PhantomData,
        })
    }

    /// Whether the map is stored in one chunk rather than in buckets.
    pub fn is_inline(&self) -> bool {
        self.buckets == 0
    }

    fn inline_map(&self) -> Result<&HashMap<K, V>> {
        if let Some(map) = self.inline.get() {
            return Ok(map);
        }
        let map = self.decode_inline()?;
        Ok(self.inline.get_or_init(|| map))
    }

    fn decode_inline(&self) -> Result<HashMap<K, V>> {
        let payload = self.container.payload()?;
        if payload.len() < 4 {
            return Ok(HashMap::new());
        }
        Ok(decode(&payload, self.container.offset(), "inline map")?.0)
    }

    /// The value under `key`, loading only its bucket.
    pub fn get<Q>(&self, key: &Q) -> Result<Option<V>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        if self.is_inline() {
            return Ok(self.inline_map()?.get(key).cloned());
        }
        let hash = hash_key(key);
        let bucket = self
            .container
            .child((hash % u64::from(self.buckets)) as u32)?;
        let payload = bucket.payload()?;
        let view = Bucket::parse(&payload, bucket.offset())?;
        for index in 0..view.count {
            if view.hash(index) == hash {
                let (stored, value): (K, V) = view.entry(index)?;
                if stored.borrow() == key {
                    return Ok(Some(value));
                }
            }
        }
        Ok(None)
    }

    /// The number of entries (reads every bucket's header in the bucket layout).
    pub fn len(&self) -> Result<u64> {
        if self.is_inline() {
            return Ok(self.inline_map()?.len() as u64);
        }
        let mut total = 0;
        for bucket in self.container.children() {
            let bucket = bucket?;
            total += u64::from(Bucket::parse(&bucket.payload()?, bucket.offset())?.count);
        }
        Ok(total)
    }

    /// Whether the map has no entries.
    pub fn is_empty(&self) -> Result<bool> {
        self.len().map(|len| len == 0)
    }

    /// Every entry, decoding the buckets in parallel.
    pub fn load(&self) -> Result<HashMap<K, V>> {
        if self.is_inline() {
            return self.decode_inline();
        }
        // The container alone crosses threads: the cached inline map need not be Sync.
        let container = self.container;
        let buckets: Vec<Vec<(K, V)>> = (0..self.buckets)
            .into_par_iter()
            .map(|index| {
                let bucket = container.child(index)?;
                let payload = bucket.payload()?;
                let view = Bucket::parse(&payload, bucket.offset())?;
                (0..view.count).map(|entry| view.entry(entry)).collect()
            })
            .collect::<Result<_>>()?;
        Ok(buckets.into_iter().flatten().collect())
    }
}

/// A bucket payload with its tables checked against its length.
struct Bucket<'p> {
    payload: &'p [u8],
    offset: u64,
    count: u32,
    data_start: usize,
}

impl<'p> Bucket<'p> {
    fn parse(payload: &'p [u8], offset: u64) -> Result<Self> {
        if payload.len() < BUCKET_HEADER {
            // The reference writes an empty bucket as an empty payload.
            return Ok(Self {
                payload,
                offset,
                count: 0,
                data_start: 0,
            });
        }
        let count = payload
            .first_chunk::<4>()
            .map_or(0, |bytes| u32::from_le_bytes(*bytes));
        let data_start = (count as usize)
            .checked_mul(12)
            .and_then(|tables| tables.checked_add(BUCKET_HEADER))
            .filter(|&end| end <= payload.len());
        let data_start = data_start.ok_or_else(|| ParError::Payload {
            offset,
            what: "map bucket",
            why: format!(
                "{count} entries need {} bytes of tables but the payload has {}",
                u64::from(count) * 12 + 8,
                payload.len()
            ),
        })?;
        Ok(Self {
            payload,
            offset,
            count,
            data_start,
        })
    }

    fn hash(&self, index: u32) -> u64 {
        let at = BUCKET_HEADER + index as usize * 8;
        self.payload
            .get(at..)
            .and_then(|rest| rest.first_chunk::<8>())
            .map_or(0, |bytes| u64::from_le_bytes(*bytes))
    }

    fn entry<K: DeserializeOwned, V: DeserializeOwned>(&self, index: u32) -> Result<(K, V)> {
        let at = BUCKET_HEADER + self.count as usize * 8 + index as usize * 4;
        let relative = self
            .payload
            .get(at..)
            .and_then(|rest| rest.first_chunk::<4>())
            .map_or(0, |bytes| u32::from_le_bytes(*bytes));
        let data = self
            .data_start
            .checked_add(relative as usize)
            .and_then(|start| self.payload.get(start..))
            .ok_or_else(|| ParError::Payload {
                offset: self.offset,
                what: "map bucket",
                why: format!("entry {index} at {relative} is past the end of the data"),
            })?;
        Ok(decode(data, self.offset, "map entry")?.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compression::Compression;
    use crate::reader::ParFile;

    fn sample(len: usize) -> HashMap<String, Vec<u8>> {
        (0..len)
            .map(|i| (format!("key{i}"), vec![i as u8; i % 7]))
            .collect()
    }

    #[test]
    fn both_layouts_round_trip() {
        for layout in [MapLayout::Buckets, MapLayout::Inline] {
            for len in [0, 1, 5, 4100] {
                let map = sample(len);
                let mut graph = ChunkGraph::new();
                let root = graph.map(&map, layout).unwrap();
                let file = ParFile::new(graph.to_bytes(root, Compression::Lz4).unwrap()).unwrap();
                let lazy: LazyMap<String, Vec<u8>> = LazyMap::new(file.root().unwrap()).unwrap();
                assert_eq!(lazy.len().unwrap(), len as u64, "{layout:?} {len}");
                assert_eq!(lazy.load().unwrap(), map);
                if len > 3 {
                    assert_eq!(lazy.get("key3").unwrap(), Some(vec![3; 3]));
                }
                assert_eq!(lazy.get("absent").unwrap(), None);
            }
        }
    }

    #[test]
    fn bytes_do_not_depend_on_iteration_order() {
        let map = sample(3000);
        let reversed: Vec<(&String, &Vec<u8>)> = {
            let mut entries: Vec<_> = map.iter().collect();
            entries.reverse();
            entries
        };
        let mut first = ChunkGraph::new();
        let a = first.map(&map, MapLayout::Buckets).unwrap();
        let mut second = ChunkGraph::new();
        let b = second.map(reversed, MapLayout::Buckets).unwrap();
        assert_eq!(
            first.to_bytes(a, Compression::None).unwrap(),
            second.to_bytes(b, Compression::None).unwrap()
        );
    }

    #[test]
    fn a_bucket_claiming_too_many_entries_is_refused() {
        let mut payload = u32::MAX.to_le_bytes().to_vec();
        payload.extend_from_slice(&[0; 20]);
        assert!(Bucket::parse(&payload, 0).is_err());
    }
}
