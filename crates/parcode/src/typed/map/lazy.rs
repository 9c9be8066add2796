//! [`LazyMap`]: a map read on demand, and its checks of what entries mean.

use std::borrow::{Borrow, Cow};
use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};

use rayon::prelude::*;
use serde::de::{DeserializeOwned, DeserializeSeed, Deserializer, Error as _, MapAccess, Visitor};

use super::bucket::Bucket;

use crate::raw::error::{ParError, Result};
use crate::raw::reader::Chunk;
use crate::typed::codec::{decode_seed, hash_key};

/// A `HashMap<K, V>` in a PAR4 file: in the bucket layout `get` loads one
/// bucket; in the inline layout the map is decoded once, on first use.
///
/// # Examples
///
/// ```
/// use std::collections::HashMap;
/// use binfmt_parcode::{ChunkGraph, Compression, LazyMap, MapLayout, ParFile};
///
/// let ages: HashMap<String, u32> = (0..5000).map(|i| (format!("user{i}"), i % 90)).collect();
/// let mut graph = ChunkGraph::new();
/// let root = graph.map(&ages, MapLayout::Buckets)?;
/// let file = ParFile::new(graph.to_bytes(root, Compression::Lz4)?)?;
/// let lazy: LazyMap<String, u32> = LazyMap::new(file.root()?)?;
/// assert_eq!(lazy.get("user4321")?, Some(4321 % 90));  // one bucket decoded
/// assert_eq!(lazy.get("nobody")?, None);
/// assert_eq!(lazy.load()?, ages);
/// # Ok::<(), binfmt_parcode::ParError>(())
/// ```
#[derive(Debug)]
pub struct LazyMap<'a, K, V> {
    pub(super) container: Chunk<'a>,
    pub(super) buckets: u32,
    inline: OnceLock<HashMap<K, V>>,
    /// Byte-vector values of the inline layout: where each lies in the
    /// payload, which readers share (values are never copied out).
    pub(super) inline_values: OnceLock<InlineValues<'a, K>>,
    _entries: PhantomData<fn() -> (K, V)>,
}

/// The inline payload and each key's value range in it.
#[derive(Debug)]
pub(super) struct InlineValues<'a, K> {
    pub(super) payload: Arc<Cow<'a, [u8]>>,
    pub(super) ranges: HashMap<K, (usize, usize)>,
}

impl<'a, K, V> LazyMap<'a, K, V>
where
    K: DeserializeOwned + Hash + Eq + Send,
    V: DeserializeOwned + Send,
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
            inline_values: OnceLock::new(),
            _entries: PhantomData,
        })
    }

    /// Whether the map is stored in one chunk rather than in buckets.
    pub fn is_inline(&self) -> bool {
        self.buckets == 0
    }

    /// The number of buckets (0 in the inline layout).
    pub fn bucket_count(&self) -> u32 {
        self.buckets
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
        let offset = self.container.offset();
        if payload.is_empty() || *payload == [0; 4] {
            return Ok(HashMap::new());
        }
        let repeat = Cell::new(None);
        let decoded = decode_seed(
            UniqueMap {
                repeat: &repeat,
                bytes: payload.len(),
                _entries: PhantomData,
            },
            &payload,
            offset,
            "inline map",
        );
        if let Some(entry) = repeat.get() {
            return Err(ParError::DuplicateKey { offset, entry });
        }
        let (map, used) = decoded?;
        if used != payload.len() {
            return Err(ParError::Payload {
                offset,
                what: "inline map",
                why: format!("{} bytes after the map", payload.len() - used),
            });
        }
        Ok(map)
    }

    /// Bucket `index`; `whole` (for loads) reads and decompresses the whole
    /// payload, otherwise only what is asked for is read (when the payload is
    /// stored as is outside memory). Entries are checked as they are read
    /// ([`Bucket::span`]): a load reads, and checks, every one.
    pub(super) fn bucket(&self, index: u32, whole: bool) -> Result<Bucket<'a>> {
        let chunk = if whole {
            self.container.child(index)?
        } else {
            self.container.leaf_child(index)?
        };
        Bucket::open(chunk, index, self.buckets, whole, whole)
    }

    /// The bucket that holds `hash`.
    pub(super) fn bucket_of(&self, hash: u64, whole: bool) -> Result<Bucket<'a>> {
        self.bucket((hash % u64::from(self.buckets)) as u32, whole)
    }

    /// The index of the entry holding `key` in `bucket`, with its decoded
    /// key's length: every entry with the key's hash is decoded, so a key
    /// stored twice is an error rather than a silent pick.
    pub(super) fn find<Q>(bucket: &Bucket<'a>, key: &Q, hash: u64) -> Result<Option<(u32, u64)>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let mut found = None;
        for index in bucket.with_hash(hash) {
            let (stored, used) = bucket.key::<K>(index)?;
            if stored.borrow() == key {
                if found.is_some() {
                    return Err(ParError::DuplicateKey {
                        offset: bucket.at,
                        entry: u64::from(index),
                    });
                }
                found = Some((index, used));
            }
        }
        Ok(found)
    }

    /// The entry holding `key` in `bucket` and its value: every entry with
    /// the key's hash is decoded whole (usually one), so a key stored twice
    /// is an error rather than a silent pick.
    pub(super) fn find_value<Q>(bucket: &Bucket<'a>, key: &Q, hash: u64) -> Result<Option<(u32, V)>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let mut found = None;
        for index in bucket.with_hash(hash) {
            let (stored, value) = bucket.entry::<K, V>(index)?;
            if stored.borrow() == key {
                if found.is_some() {
                    return Err(ParError::DuplicateKey {
                        offset: bucket.at,
                        entry: u64::from(index),
                    });
                }
                found = Some((index, value));
            }
        }
        Ok(found)
    }

    /// The value under `key`, loading only its bucket.
    pub fn get<Q>(&self, key: &Q) -> Result<Option<V>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
        V: Clone,
    {
        if self.is_inline() {
            return Ok(self.inline_map()?.get(key).cloned());
        }
        let hash = hash_key(key);
        let bucket = self.bucket_of(hash, false)?;
        Ok(Self::find_value(&bucket, key, hash)?.map(|(_, value)| value))
    }

    /// The value under `key`, without keeping a decoded inline map (so `V`
    /// need not be `Clone`): an inline map is decoded for the call.
    pub(crate) fn take<Q>(&self, key: &Q) -> Result<Option<V>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        Ok(self.find_entry(key)?.map(|(_, value)| value))
    }

    /// The value under `key`, with where it is: its bucket chunk and index
    /// there, or `None` in the inline layout.
    #[allow(clippy::type_complexity)]
    pub(crate) fn find_entry<Q>(&self, key: &Q) -> Result<Option<(Option<(Chunk<'a>, u32)>, V)>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        if self.is_inline() {
            return Ok(self.decode_inline()?.remove(key).map(|value| (None, value)));
        }
        let hash = hash_key(key);
        let index = (hash % u64::from(self.buckets)) as u32;
        let chunk = self.container.leaf_child(index)?;
        let bucket = Bucket::open(chunk.clone(), index, self.buckets, false, false)?;
        Ok(Self::find_value(&bucket, key, hash)?
            .map(|(entry, value)| (Some((chunk, entry)), value)))
    }

    /// Whether the map holds `key` (decodes keys only).
    pub fn contains_key<Q>(&self, key: &Q) -> Result<bool>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        if self.is_inline() {
            return Ok(self.inline_map()?.contains_key(key));
        }
        let hash = hash_key(key);
        let bucket = self.bucket_of(hash, false)?;
        Ok(Self::find(&bucket, key, hash)?.is_some())
    }

    /// The number of entries (reads every bucket's header in the bucket
    /// layout, decompressing LZ4 buckets).
    pub fn len(&self) -> Result<u64> {
        if self.is_inline() {
            return Ok(self.inline_map()?.len() as u64);
        }
        self.container.check_children_disjoint()?;
        // The container alone crosses threads: the cached inline map need not be Sync.
        let (container, buckets) = (&self.container, self.buckets);
        (0..buckets)
            .into_par_iter()
            .map(|index| {
                let bucket = Bucket::open(container.child(index)?, index, buckets, false, false)?;
                Ok(u64::from(bucket.count))
            })
            .try_reduce(|| 0, |a, b| Ok(a + b))
    }

    /// Whether the map has no entries.
    pub fn is_empty(&self) -> Result<bool> {
        self.len().map(|len| len == 0)
    }

    /// Every entry, decoding the buckets in parallel. Memory: the result,
    /// plus the decoded entries of all buckets once more while they are
    /// gathered into it, plus one bucket payload per thread.
    pub fn load(&self) -> Result<HashMap<K, V>> {
        if self.is_inline() {
            return self.decode_inline();
        }
        self.container.check_children_disjoint()?;
        self.container
            .source()
            .will_read(&self.container.child_ranges());
        let (container, count) = (&self.container, self.buckets);
        let buckets: Vec<(u64, Vec<(K, V)>)> = (0..count)
            .into_par_iter()
            .map(|index| {
                let bucket = Bucket::open(container.child(index)?, index, count, true, true)?;
                let entries = (0..bucket.count)
                    .map(|entry| bucket.entry(entry))
                    .collect::<Result<_>>()?;
                Ok((bucket.at, entries))
            })
            .collect::<Result<_>>()?;
        let total = buckets.iter().map(|(_, entries)| entries.len()).sum();
        let mut map = HashMap::with_capacity(total);
        for (at, entries) in buckets {
            for (entry, (key, value)) in entries.into_iter().enumerate() {
                if map.insert(key, value).is_some() {
                    return Err(ParError::DuplicateKey {
                        offset: at,
                        entry: entry as u64,
                    });
                }
            }
        }
        Ok(map)
    }
}

/// Decodes a map, remembering the index of the first key seen twice (and
/// failing there).
pub(super) struct UniqueMap<'c, K, V> {
    pub(super) repeat: &'c Cell<Option<u64>>,
    /// The bytes the map is decoded from.
    pub(super) bytes: usize,
    pub(super) _entries: PhantomData<fn() -> (K, V)>,
}

impl<'de, K, V> DeserializeSeed<'de> for UniqueMap<'_, K, V>
where
    K: DeserializeOwned + Hash + Eq,
    V: DeserializeOwned,
{
    type Value = HashMap<K, V>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, K, V> Visitor<'de> for UniqueMap<'_, K, V>
where
    K: DeserializeOwned + Hash + Eq,
    V: DeserializeOwned,
{
    type Value = HashMap<K, V>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map without repeated keys")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
        // The claimed length, but no more than one entry per two bytes.
        let mut map = HashMap::with_capacity(access.size_hint().unwrap_or(0).min(self.bytes / 2));
        let mut entry = 0u64;
        while let Some((key, value)) = access.next_entry::<K, V>()? {
            if map.insert(key, value).is_some() {
                self.repeat.set(Some(entry));
                return Err(A::Error::custom(format!("entry {entry} repeats a key")));
            }
            entry += 1;
        }
        Ok(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raw::compression::Compression;
    use crate::raw::reader::ParFile;
    use crate::raw::writer::ChunkGraph;
    use crate::typed::map::layout::MapLayout;

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
                    assert!(lazy.contains_key("key3").unwrap());
                }
                assert_eq!(lazy.get("absent").unwrap(), None);
                assert!(!lazy.contains_key("absent").unwrap());
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
    fn a_key_given_twice_is_refused_by_the_writer() {
        let (key, one, two) = ("k".to_string(), 1u8, 2u8);
        for layout in [MapLayout::Buckets, MapLayout::Inline] {
            let mut graph = ChunkGraph::new();
            assert!(matches!(
                graph.map([(&key, &one), (&key, &two)], layout),
                Err(ParError::Encode { what: "map", .. })
            ));
        }
    }

    #[test]
    fn a_bucket_claiming_too_many_entries_is_refused() {
        let mut graph = ChunkGraph::new();
        let mut payload = u32::MAX.to_le_bytes().to_vec();
        payload.extend_from_slice(&[0; 20]);
        let bucket = graph.add(payload, vec![]).unwrap();
        let root = graph
            .add(1u32.to_le_bytes().to_vec(), vec![bucket])
            .unwrap();
        let file = ParFile::new(graph.to_bytes(root, Compression::None).unwrap()).unwrap();
        let lazy: LazyMap<String, u8> = LazyMap::new(file.root().unwrap()).unwrap();
        assert!(matches!(lazy.get("x"), Err(ParError::Payload { .. })));
    }
}
