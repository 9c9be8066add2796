//! `HashMap<K, V>` in the two layouts the reference reads.
//!
//! **Buckets** (the reference's `#[parcode(map)]` layout, and this writer's
//! default): a container whose payload is the bucket count (u32 LE), one
//! child per bucket. A key goes to bucket `hash_key(key) % buckets`, with
//! `buckets = clamp(len / 2000, 1, 1024)` (0 for an empty map):
//!
//! ```text
//! bucket payload: count u32 | 4 zero bytes | count × hash u64 | count × offset u32 | blob
//! blob entry at offset: bincode (K, V), up to the next entry's offset (the last: the end)
//! ```
//!
//! **Inline** (what the reference writes for a map saved directly): one
//! chunk without children whose payload is the bincode of the whole map;
//! `00 00 00 00` (the reference's empty map) and an empty payload are empty
//! maps.
//!
//! Within a bucket this writer orders entries by hash, then by encoded key,
//! so the bytes do not depend on the map's iteration order.
//!
//! Reading checks what the entries mean, not only where they are:
//!
//! | rule | error |
//! |---|---|
//! | bucket count = number of children; tables fit in the payload | `Payload` |
//! | entry offsets start at 0 and strictly increase; each entry decodes to exactly its bytes | `EntryOutOfOrder`, `EntryLength` |
//! | every stored hash is in its bucket (`hash % buckets`) | `WrongBucket` |
//! | every decoded key hashes to its stored hash | `HashMismatch` |
//! | no key twice (`get` checks every entry with the key's hash; `load` and the inline layout every key) | `DuplicateKey` |

use std::borrow::{Borrow, Cow};
use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};

use rayon::prelude::*;
use serde::Serialize;
use serde::de::{DeserializeOwned, DeserializeSeed, Deserializer, Error as _, MapAccess, Visitor};

use crate::codec::{decode, decode_seed, encode, encode_into, hash_key};
use crate::error::{ParError, Result};
use crate::reader::Chunk;
use crate::writer::{ChunkGraph, NodeId, Sink};

/// How a map is laid out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
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
const BUCKET_HEADER: u64 = 8;
/// Bytes of the hash and offset tables per entry.
const TABLE_ENTRY: u64 = 12;
/// Bytes of the hash table per entry.
const HASH_ENTRY: u64 = 8;

/// The reference's bucket count for a map of `entries` entries.
pub(crate) fn bucket_count(entries: usize) -> usize {
    if entries == 0 {
        0
    } else {
        (entries / ITEMS_PER_BUCKET).clamp(1, MAX_BUCKETS)
    }
}

/// The header and tables of a bucket whose entries, in order, have these
/// hashes and encoded sizes (nothing for an empty bucket).
pub(crate) fn bucket_tables(entries: &[(u64, u64)]) -> Result<Vec<u8>> {
    if entries.is_empty() {
        return Ok(Vec::new());
    }
    let too_big = |what: &str| ParError::Encode {
        what: "map bucket",
        why: format!("{what} exceeds u32"),
    };
    let count = u32::try_from(entries.len()).map_err(|_| too_big("entry count"))?;
    let mut tables = Vec::with_capacity(8 + entries.len() * 12);
    tables.extend_from_slice(&count.to_le_bytes());
    tables.extend_from_slice(&[0; 4]);
    for (hash, _) in entries {
        tables.extend_from_slice(&hash.to_le_bytes());
    }
    let mut offset = 0u64;
    for (_, size) in entries {
        let start =
            u32::try_from(offset).map_err(|_| too_big("an entry's offset in the bucket"))?;
        tables.extend_from_slice(&start.to_le_bytes());
        offset = offset.saturating_add(*size);
    }
    Ok(tables)
}

/// The writers' order of entries: by hash, then by encoded key. Equal
/// hashes and keys are the same key, which a map cannot hold twice.
pub(crate) fn entry_order(
    (hash_a, key_a): (u64, &[u8]),
    (hash_b, key_b): (u64, &[u8]),
) -> std::cmp::Ordering {
    hash_a.cmp(&hash_b).then_with(|| key_a.cmp(key_b))
}

/// The error for a key added twice to a map being written.
pub(crate) fn repeated_key(key: &[u8]) -> ParError {
    ParError::Encode {
        what: "map",
        why: format!(
            "a key (encoded {:02x?}) is added twice",
            key.get(..key.len().min(32)).unwrap_or_default()
        ),
    }
}

/// Entries one task hashes and encodes at a time, in the map's order.
const PART: usize = 4096;

/// An entry encoded into its part's buffer.
#[derive(Debug, Clone, Copy)]
struct Encoded {
    hash: u64,
    /// The entry's index in the map's iteration order.
    entry: usize,
    /// Where its bytes (key, then value) start in the buffer; they end
    /// where the next entry's start (the last: at the buffer's end).
    start: usize,
    key_len: usize,
}

/// A run of [`PART`] entries, hashed, then encoded bucket by bucket into
/// one buffer: each key is read twice in a row and each value once, in the
/// map's order, and a bucket's entries of the run are contiguous.
#[derive(Debug)]
struct Part {
    bytes: Vec<u8>,
    /// The run's entries, bucket by bucket.
    entries: Vec<Encoded>,
    /// Where each bucket's entries start in `entries`, then the end.
    starts: Vec<usize>,
}

/// Room reserved in a part's buffer per entry, in eighths of the size of
/// the run's first entry.
const ROOM_EIGHTHS: usize = 9;
/// At most this much room is reserved ahead (the first entry may be far
/// larger than the others).
const MAX_ROOM: usize = 16 << 20;

impl Part {
    fn encode<K: Serialize + Hash, V: Serialize>(
        first: usize,
        run: &[(&K, &V)],
        buckets: usize,
        bucketed: bool,
    ) -> Result<Self> {
        let bucket_of = |hash: u64| {
            if bucketed {
                hash.checked_rem(buckets as u64).unwrap_or(0) as usize
            } else {
                0
            }
        };
        let hashes: Vec<u64> = run.iter().map(|(key, _)| hash_key(*key)).collect();
        // Counting sort of the run's entries by bucket.
        let mut starts = vec![0; buckets + 1];
        for &hash in &hashes {
            if let Some(count) = starts.get_mut(bucket_of(hash) + 1) {
                *count += 1;
            }
        }
        for bucket in 0..buckets {
            let before = starts.get(bucket).copied().unwrap_or(0);
            if let Some(start) = starts.get_mut(bucket + 1) {
                *start += before;
            }
        }
        let mut next = starts.clone();
        let mut grouped = vec![0; run.len()];
        for (index, &hash) in hashes.iter().enumerate() {
            if let Some(at) = next.get_mut(bucket_of(hash)) {
                if let Some(slot) = grouped.get_mut(*at) {
                    *slot = index;
                }
                *at += 1;
            }
        }
        let mut bytes = Vec::new();
        let mut entries = Vec::with_capacity(run.len());
        for index in grouped {
            let (Some((key, value)), Some(&hash)) = (run.get(index), hashes.get(index)) else {
                continue;
            };
            let start = bytes.len();
            encode_into(*key, &mut bytes, "map key")?;
            let key_len = bytes.len() - start;
            encode_into(*value, &mut bytes, "map value")?;
            if entries.is_empty() {
                // Room for the run at about the first entry's size: the
                // buffer grows once or not at all, rather than doubling.
                let room = (bytes.len().saturating_mul(ROOM_EIGHTHS) / 8).saturating_mul(run.len());
                bytes.reserve(room.min(MAX_ROOM));
            }
            entries.push(Encoded {
                hash,
                entry: first + index,
                start,
                key_len,
            });
        }
        Ok(Self {
            bytes,
            entries,
            starts,
        })
    }

    /// The run's entries in bucket `bucket`, and where they start among
    /// the run's entries.
    fn bucket(&self, bucket: usize) -> (&[Encoded], usize) {
        match (self.starts.get(bucket), self.starts.get(bucket + 1)) {
            (Some(&start), Some(&end)) => (self.entries.get(start..end).unwrap_or_default(), start),
            _ => (&[], 0),
        }
    }

    /// Entry `index` of the run: its hash, its bytes (key, then value) and
    /// its key's length.
    fn entry(&self, index: usize) -> Option<(u64, &[u8], usize)> {
        let entry = self.entries.get(index)?;
        let end = self
            .entries
            .get(index + 1)
            .map_or(self.bytes.len(), |next| next.start);
        Some((entry.hash, self.bytes.get(entry.start..end)?, entry.key_len))
    }
}

/// An entry: its part and its index among the part's entries.
#[derive(Debug, Clone, Copy)]
struct Slot {
    part: usize,
    index: usize,
}

/// A map's entries encoded and in order: what writing a payload needs,
/// without the map.
#[derive(Debug)]
pub(crate) struct EncodedMap {
    parts: Vec<Part>,
    /// The entries of each bucket in order (one list, the whole map, when
    /// inline).
    order: Vec<Vec<Slot>>,
}

impl EncodedMap {
    /// The entry at `slot`: its hash, bytes (key, then value) and key
    /// length.
    fn entry(&self, slot: Slot) -> (u64, &[u8], usize) {
        self.parts
            .get(slot.part)
            .and_then(|part| part.entry(slot.index))
            .unwrap_or((0, &[], 0))
    }

    /// Bucket `bucket`'s entries from every part, ordered by hash, then
    /// (equal hashes, rare) by encoded key; equal keys are the same key
    /// given twice.
    fn order_bucket(parts: &[Part], bucket: usize) -> Result<Vec<Slot>> {
        let len = parts.iter().map(|part| part.bucket(bucket).0.len()).sum();
        let mut keyed: Vec<(u64, Slot)> = Vec::with_capacity(len);
        for (part, encoded) in parts.iter().enumerate() {
            let (entries, first) = encoded.bucket(bucket);
            keyed.extend(entries.iter().enumerate().map(|(index, entry)| {
                let index = first + index;
                (entry.hash, Slot { part, index })
            }));
        }
        keyed.sort_unstable_by_key(|&(hash, _)| hash);
        let key = |slot: Slot| {
            parts
                .get(slot.part)
                .and_then(|part| part.entry(slot.index))
                .and_then(|(_, bytes, key_len)| bytes.get(..key_len))
                .unwrap_or_default()
        };
        let mut start = 0;
        while start < keyed.len() {
            let hash = keyed.get(start).map_or(0, |&(hash, _)| hash);
            let end = start
                + keyed
                    .get(start..)
                    .unwrap_or_default()
                    .iter()
                    .take_while(|&&(other, _)| other == hash)
                    .count();
            if end - start > 1 {
                let tied = keyed.get_mut(start..end).unwrap_or_default();
                tied.sort_unstable_by(|a, b| key(a.1).cmp(key(b.1)));
                if let Some(pair) = tied.windows(2).find(|pair| match pair {
                    [a, b] => key(a.1) == key(b.1),
                    _ => false,
                }) {
                    return Err(repeated_key(pair.first().map_or(&[][..], |p| key(p.1))));
                }
            }
            start = end.max(start + 1);
        }
        Ok(keyed.into_iter().map(|(_, slot)| slot).collect())
    }

    /// The number of buckets.
    fn bucket_count(&self) -> usize {
        self.order.len()
    }

    /// Writes bucket `bucket`'s payload (header, tables, entries; nothing
    /// for an empty bucket) to `out`, in pieces: the entries straight from
    /// where they were encoded, in order.
    pub(crate) fn write_bucket(&self, bucket: usize, out: &mut Sink<'_>) -> Result<()> {
        let slots = self.order.get(bucket).map_or(&[][..], Vec::as_slice);
        if slots.is_empty() {
            return Ok(());
        }
        let spans: Vec<(u64, u64)> = slots
            .iter()
            .map(|&slot| {
                let (hash, bytes, _) = self.entry(slot);
                (hash, bytes.len() as u64)
            })
            .collect();
        out(&bucket_tables(&spans)?)?;
        for &slot in slots {
            out(self.entry(slot).1)?;
        }
        Ok(())
    }

    /// Bucket `bucket`'s payload.
    fn bucket_payload(&self, bucket: usize) -> Result<Vec<u8>> {
        let slots = self.order.get(bucket).map_or(&[][..], Vec::as_slice);
        let entries: usize = slots.iter().map(|&slot| self.entry(slot).1.len()).sum();
        let tables = match slots.len() {
            0 => 0,
            len => BUCKET_HEADER as usize + len * TABLE_ENTRY as usize,
        };
        let mut payload = Vec::with_capacity(tables + entries);
        self.write_bucket(bucket, &mut |piece| {
            payload.extend_from_slice(piece);
            Ok(())
        })?;
        Ok(payload)
    }
}

/// A map laid out for writing: its entries hashed and encoded, ordered
/// (within each bucket, or whole for the inline layout) by hash then encoded
/// key. Shared by [`ChunkGraph::map`] and the drop-in visitor, which makes
/// payloads from it when the file is written.
pub(crate) struct MapPlan<'m, K, V> {
    entries: Vec<(&'m K, &'m V)>,
    encoded: EncodedMap,
}

impl<'m, K: Serialize + Hash + Sync, V: Serialize + Sync> MapPlan<'m, K, V> {
    /// The bucket layout of `entries` (a key given twice is an error).
    pub(crate) fn buckets(entries: impl IntoIterator<Item = (&'m K, &'m V)>) -> Result<Self> {
        Self::plan(entries, true)
    }

    /// The inline layout of `entries`.
    pub(crate) fn inline(entries: impl IntoIterator<Item = (&'m K, &'m V)>) -> Result<Self> {
        Self::plan(entries, false)
    }

    fn plan(entries: impl IntoIterator<Item = (&'m K, &'m V)>, bucketed: bool) -> Result<Self> {
        let entries: Vec<(&K, &V)> = entries.into_iter().collect();
        let count = if bucketed {
            bucket_count(entries.len())
        } else {
            1
        };
        let parts: Vec<Part> = entries
            .par_chunks(PART)
            .enumerate()
            .map(|(run, chunk)| Part::encode(run * PART, chunk, count, bucketed))
            .collect::<Result<_>>()?;
        let order = (0..count)
            .into_par_iter()
            .map(|bucket| EncodedMap::order_bucket(&parts, bucket))
            .collect::<Result<_>>()?;
        Ok(Self {
            entries,
            encoded: EncodedMap { parts, order },
        })
    }

    /// The number of entries.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The number of buckets.
    pub(crate) fn bucket_count(&self) -> usize {
        self.encoded.bucket_count()
    }

    /// The entries of bucket `bucket`, in order.
    pub(crate) fn bucket_entries(
        &self,
        bucket: usize,
    ) -> impl Iterator<Item = (&'m K, &'m V)> + '_ {
        self.encoded
            .order
            .get(bucket)
            .into_iter()
            .flatten()
            .filter_map(|slot| self.encoded.parts.get(slot.part)?.entries.get(slot.index))
            .filter_map(|encoded| self.entries.get(encoded.entry).copied())
    }

    /// Bucket `bucket`'s payload: header, tables, entries.
    pub(crate) fn bucket_payload(&self, bucket: usize) -> Result<Vec<u8>> {
        self.encoded.bucket_payload(bucket)
    }

    /// The inline layout's payload: the count, then every entry.
    pub(crate) fn inline_payload(&self) -> Result<Vec<u8>> {
        let mut payload = encode(&(self.entries.len() as u64), "map length")?;
        for &slot in self.encoded.order.iter().flatten() {
            payload.extend_from_slice(self.encoded.entry(slot).1);
        }
        Ok(payload)
    }

    /// The encoded entries, without the map.
    pub(crate) fn into_encoded(self) -> EncodedMap {
        self.encoded
    }
}

impl ChunkGraph<'_> {
    /// Adds a map in `layout`. A key given twice is an error.
    pub fn map<'m, K, V, I>(&mut self, entries: I, layout: MapLayout) -> Result<NodeId>
    where
        K: Serialize + Hash + Sync + 'm,
        V: Serialize + Sync + 'm,
        I: IntoIterator<Item = (&'m K, &'m V)>,
    {
        match layout {
            MapLayout::Inline => {
                let plan = MapPlan::inline(entries)?;
                self.add(plan.inline_payload()?, Vec::new())
            }
            MapLayout::Buckets => {
                // The buckets' payloads are written from the encoded
                // entries when the file is, not gathered into buffers first.
                let encoded = Arc::new(MapPlan::buckets(entries)?.into_encoded());
                let children = (0..encoded.bucket_count())
                    .map(|bucket| {
                        let encoded = Arc::clone(&encoded);
                        self.add_streamed(move |out| encoded.write_bucket(bucket, out), Vec::new())
                    })
                    .collect::<Result<Vec<_>>>()?;
                self.add(
                    (encoded.bucket_count() as u32).to_le_bytes().to_vec(),
                    children,
                )
            }
        }
    }
}

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
    container: Chunk<'a>,
    buckets: u32,
    inline: OnceLock<HashMap<K, V>>,
    /// Byte-vector values of the inline layout: where each lies in the
    /// payload, which readers share (values are never copied out).
    inline_values: OnceLock<InlineValues<'a, K>>,
    _entries: PhantomData<fn() -> (K, V)>,
}

/// The inline payload and each key's value range in it.
#[derive(Debug)]
struct InlineValues<'a, K> {
    payload: Arc<Cow<'a, [u8]>>,
    ranges: HashMap<K, (usize, usize)>,
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
    fn bucket(&self, index: u32, whole: bool) -> Result<Bucket<'a>> {
        let chunk = if whole {
            self.container.child(index)?
        } else {
            self.container.leaf_child(index)?
        };
        Bucket::open(chunk, index, self.buckets, whole, whole)
    }

    /// The bucket that holds `hash`.
    fn bucket_of(&self, hash: u64, whole: bool) -> Result<Bucket<'a>> {
        self.bucket((hash % u64::from(self.buckets)) as u32, whole)
    }

    /// The index of the entry holding `key` in `bucket`, with its decoded
    /// key's length: every entry with the key's hash is decoded, so a key
    /// stored twice is an error rather than a silent pick.
    fn find<Q>(bucket: &Bucket<'a>, key: &Q, hash: u64) -> Result<Option<(u32, u64)>>
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
    fn find_value<Q>(bucket: &Bucket<'a>, key: &Q, hash: u64) -> Result<Option<(u32, V)>>
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
            return Ok(values.ranges.get(key).map(|&(start, end)| ValueReader {
                len: (end - start) as u64,
                inner: ValueBytes::Shared {
                    bytes: Arc::clone(&values.payload),
                    position: start,
                    end,
                },
            }));
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
                        at..at + length.min(KEY_READ)
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
                range.end - (range.end - range.start).min(crate::reader::TAIL_READ)..range.end
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
                if chunk.compression() == crate::Compression::None {
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

/// A map value read as a stream ([`LazyMap::reader`]); failures are
/// `io::Error`s that [`ParError::from_io`] turns back into the typed error.
#[derive(Debug)]
pub struct ValueReader<'a> {
    inner: ValueBytes<'a>,
    len: u64,
}

#[derive(Debug)]
enum ValueBytes<'a> {
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
    fn memory_range(bytes: Cow<'a, [u8]>, position: usize, end: usize) -> Self {
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

/// A bucket's payload, split into its tables after checking them.
struct Bucket<'a> {
    /// The bucket chunk's offset, for errors.
    at: u64,
    index: u32,
    buckets: u32,
    count: u32,
    /// The payload's first bytes read from a stored bucket: the header, the
    /// hash table, the offset table, and whatever followed in the same read
    /// (empty for a whole payload, which holds them).
    head: Cow<'a, [u8]>,
    data: Data<'a>,
    /// Where the entries start in the payload, and how many bytes they take.
    data_start: u64,
    data_len: u64,
}

/// Where a bucket's entries are read from.
enum Data<'a> {
    /// The whole payload, decompressed (borrowed from a source in memory).
    Whole(Cow<'a, [u8]>),
    /// The chunk, its payload stored as is: ranges are read on demand.
    Stored(Chunk<'a>),
}

/// Entries whose tables a stored bucket's first read covers (with the
/// header, in one read): the reference's buckets aim for 2,000 entries; a
/// bigger bucket's remaining tables take a second read.
const TABLES_READ: u64 = 2_304;

/// Key bytes read at first when a key is decoded from a stored entry; a
/// longer key is read again with 16 times as many.
const KEY_READ: u64 = 4096;

impl<'a> Bucket<'a> {
    /// Bucket `index` of `buckets` in `chunk`: the whole payload (`whole`),
    /// or, stored as is outside memory, its header and hash table, with the
    /// offset table too when `offsets` (for a pass over every entry); a
    /// lookup then reads only the offsets around the entries it reads.
    fn open(
        chunk: Chunk<'a>,
        index: u32,
        buckets: u32,
        whole: bool,
        offsets: bool,
    ) -> Result<Self> {
        let at = chunk.offset();
        let stored_as_is = chunk.compression() == crate::Compression::None;
        let in_memory = chunk.source().in_memory().is_some();
        let (data, payload_len) = if whole || !stored_as_is || in_memory {
            let payload = chunk.payload()?;
            let len = payload.len() as u64;
            (Data::Whole(payload), len)
        } else {
            let len = chunk.payload_len();
            (Data::Stored(chunk), len)
        };
        let mut bucket = Self {
            at,
            index,
            buckets,
            count: 0,
            head: Cow::Borrowed(&[]),
            data,
            data_start: 0,
            data_len: 0,
        };
        // The reference writes an empty bucket as an empty payload.
        if payload_len == 0 {
            return Ok(bucket);
        }
        let bad = |why: String| ParError::Payload {
            offset: at,
            what: "map bucket",
            why,
        };
        if payload_len < BUCKET_HEADER {
            return Err(bad(format!(
                "{payload_len} bytes, too short for the 8-byte bucket header"
            )));
        }
        // One read for the header and (usually) the tables read: their
        // size is known only from the count in the header.
        let per_entry = if offsets { TABLE_ENTRY } else { HASH_ENTRY };
        if let Data::Stored(chunk) = &bucket.data {
            let first = payload_len.min(BUCKET_HEADER + per_entry * TABLES_READ);
            bucket.head = chunk.stored_bytes(0, first)?;
        }
        let count = bucket
            .head()
            .first_chunk::<4>()
            .map_or(0, |bytes| u32::from_le_bytes(*bytes));
        let tables_len = u64::from(count) * TABLE_ENTRY;
        if tables_len > payload_len - BUCKET_HEADER {
            return Err(bad(format!(
                "{count} entries need {} bytes of tables but the payload has {payload_len}",
                tables_len + BUCKET_HEADER
            )));
        }
        let have = bucket.head.len() as u64;
        let wanted = BUCKET_HEADER + u64::from(count) * per_entry;
        if let Data::Stored(chunk) = &bucket.data
            && have < wanted
        {
            let rest = chunk.stored_bytes(have, wanted - have)?;
            let mut head = std::mem::take(&mut bucket.head).into_owned();
            head.extend_from_slice(&rest);
            bucket.head = Cow::Owned(head);
        }
        bucket.count = count;
        bucket.data_start = BUCKET_HEADER + tables_len;
        bucket.data_len = payload_len - bucket.data_start;
        Ok(bucket)
    }

    /// The payload's first bytes: at least the header and the tables.
    fn head(&self) -> &[u8] {
        match &self.data {
            Data::Whole(bytes) => bytes,
            Data::Stored(_) => &self.head,
        }
    }

    /// `len` bytes of the payload from `start`, which the caller checked
    /// (from the first read when it holds them).
    fn bytes(&self, start: u64, len: u64) -> Result<Cow<'_, [u8]>> {
        let range = start as usize..(start + len) as usize;
        match &self.data {
            Data::Whole(bytes) => Ok(Cow::Borrowed(bytes.get(range).unwrap_or_default())),
            Data::Stored(chunk) => match self.head.get(range) {
                Some(bytes) => Ok(Cow::Borrowed(bytes)),
                None => chunk.stored_bytes(start, len),
            },
        }
    }

    fn hash(&self, entry: u32) -> u64 {
        let at = BUCKET_HEADER as usize + entry as usize * 8;
        self.head()
            .get(at..at + 8)
            .and_then(|bytes| bytes.first_chunk::<8>())
            .map_or(0, |bytes| u64::from_le_bytes(*bytes))
    }

    /// Entry `entry`'s bytes in the data, up to the next entry's start (the
    /// last: to the end), checked: the first starts at 0, each after the one
    /// before, none past the data; and its hash belongs in this bucket. A
    /// lookup checks the entries it reads (reading the offsets of the
    /// entry, the one before and the one after, when the first read did not
    /// bring the offset table); a load, every entry.
    fn span(&self, entry: u32) -> Result<(u64, u64)> {
        let first = entry.saturating_sub(1);
        let last = entry.saturating_add(1).min(self.count.saturating_sub(1));
        let window = self.bytes(
            BUCKET_HEADER + u64::from(self.count) * HASH_ENTRY + u64::from(first) * 4,
            u64::from(last.saturating_sub(first) + 1) * 4,
        )?;
        let offset = |at: u32| {
            let at = at.saturating_sub(first) as usize * 4;
            window
                .get(at..at + 4)
                .and_then(|bytes| bytes.first_chunk::<4>())
                .map_or(0, |bytes| u64::from(u32::from_le_bytes(*bytes)))
        };
        let start = offset(entry);
        let previous = entry.checked_sub(1).map(offset);
        let end = if entry + 1 < self.count {
            offset(entry + 1)
        } else {
            self.data_len
        };
        let in_order = match previous {
            None => start == 0,
            Some(previous) => start > previous,
        };
        // The next entry starts after this one; the last ends at the end.
        let next_in_order = if entry + 1 < self.count {
            end > start
        } else {
            end >= start
        };
        if !in_order || !next_in_order {
            let (entry, start, previous) = if in_order {
                // This entry is fine; the next one starts before it.
                (entry + 1, end, start)
            } else {
                (entry, start, previous.unwrap_or(0))
            };
            return Err(ParError::EntryOutOfOrder {
                bucket: self.at,
                entry,
                start,
                previous,
            });
        }
        let hash = self.hash(entry);
        let expected = hash % u64::from(self.buckets.max(1));
        if expected != u64::from(self.index) {
            return Err(ParError::WrongBucket {
                bucket: self.at,
                index: self.index,
                buckets: self.buckets,
                entry,
                hash,
                expected,
            });
        }
        Ok((start, end - start))
    }

    /// Entries whose stored hash is `target`, in table order (one pass
    /// over the hash table: every entry with the hash is a candidate).
    fn with_hash(&self, target: u64) -> impl Iterator<Item = u32> + '_ {
        let first = BUCKET_HEADER as usize;
        let hashes = self
            .head()
            .get(first..first + self.count as usize * 8)
            .unwrap_or_default();
        // Blocks of eight hashes tested at once (compares the compiler
        // vectorizes); the few blocks with a match, and the rest, one by one.
        let blocks = hashes.chunks_exact(64);
        let rest = blocks.remainder();
        let rest_first = (hashes.len() / 64 * 8) as u32;
        let hit = move |block: &[u8; 64]| {
            block.chunks_exact(8).fold(false, |hit, hash| {
                hit | hash
                    .first_chunk::<8>()
                    .is_some_and(|hash| u64::from_le_bytes(*hash) == target)
            })
        };
        blocks
            .enumerate()
            .filter(move |(_, block)| block.first_chunk::<64>().is_some_and(hit))
            .flat_map(move |(block, bytes)| entries_with_hash(bytes, block as u32 * 8, target))
            .chain(entries_with_hash(rest, rest_first, target))
    }

    /// Checks a decoded key against its stored hash.
    fn check_hash<K: Hash>(&self, entry: u32, key: &K) -> Result<()> {
        let (stored, computed) = (self.hash(entry), hash_key(key));
        if stored != computed {
            return Err(ParError::HashMismatch {
                bucket: self.at,
                entry,
                stored,
                computed,
            });
        }
        Ok(())
    }

    /// Entry `entry`, which must decode to exactly its bytes.
    fn entry<K: DeserializeOwned + Hash, V: DeserializeOwned>(&self, entry: u32) -> Result<(K, V)> {
        let (start, length) = self.span(entry)?;
        let bytes = self.bytes(self.data_start + start, length)?;
        let ((key, value), used) = decode::<(K, V)>(&bytes, self.at, "map entry")?;
        if used as u64 != length {
            return Err(ParError::EntryLength {
                bucket: self.at,
                entry,
                length,
                used: used as u64,
            });
        }
        self.check_hash(entry, &key)?;
        Ok((key, value))
    }

    /// Entry `entry`'s key, checked against its hash, and the bytes it
    /// takes; reads only a prefix of the entry when that holds the key.
    fn key<K: DeserializeOwned + Hash>(&self, entry: u32) -> Result<(K, u64)> {
        let (start, length) = self.span(entry)?;
        let mut read = length.min(KEY_READ);
        loop {
            let bytes = self.bytes(self.data_start + start, read)?;
            match decode::<K>(&bytes, self.at, "map key") {
                Ok((key, used)) => {
                    self.check_hash(entry, &key)?;
                    return Ok((key, used as u64));
                }
                Err(_) if read < length => read = length.min(read.saturating_mul(16)),
                Err(error) => return Err(error),
            }
        }
    }

    /// Entry `entry`'s key, checked against its hash, and the length of
    /// its value, a byte vector, which must end where the entry does;
    /// reads only a prefix of the entry when that holds both.
    fn key_and_value_len<K: DeserializeOwned + Hash>(&self, entry: u32) -> Result<(K, u64)> {
        let (start, length) = self.span(entry)?;
        let mut read = length.min(KEY_READ);
        loop {
            let bytes = self.bytes(self.data_start + start, read)?;
            let decoded = decode::<K>(&bytes, self.at, "map key").and_then(|(key, used)| {
                let rest = bytes.get(used..).unwrap_or_default();
                let (len, more) = decode::<u64>(rest, self.at, "map value length")?;
                Ok((key, (used + more) as u64, len))
            });
            match decoded {
                Ok((key, prefix, len)) => {
                    self.check_hash(entry, &key)?;
                    if prefix.checked_add(len) != Some(length) {
                        return Err(ParError::EntryLength {
                            bucket: self.at,
                            entry,
                            length,
                            used: prefix.saturating_add(len),
                        });
                    }
                    return Ok((key, len));
                }
                Err(_) if read < length => read = length.min(read.saturating_mul(16)),
                Err(error) => return Err(error),
            }
        }
    }

    /// A reader of entry `entry`'s value, a byte vector after a key of
    /// `key_len` bytes: a varint length, then the bytes, which must end
    /// where the entry does.
    fn value_reader(self, entry: u32, key_len: u64) -> Result<ValueReader<'a>> {
        let (start, length) = self.span(entry)?;
        let value_at = start + key_len;
        let prefix = self.bytes(self.data_start + value_at, (length - key_len).min(9))?;
        let (len, used) = decode::<u64>(&prefix, self.at, "map value length")?;
        let bytes_at = value_at + used as u64;
        if len != length - (bytes_at - start) {
            return Err(ParError::EntryLength {
                bucket: self.at,
                entry,
                length,
                used: (bytes_at - start).saturating_add(len),
            });
        }
        let from = self.data_start + bytes_at;
        Ok(match self.data {
            Data::Whole(bytes) => {
                ValueReader::memory_range(bytes, from as usize, (from + len) as usize)
            }
            Data::Stored(chunk) => {
                let source = chunk.source();
                let reader = binfmt_core::SourceExt::reader(
                    source,
                    chunk.offset() + from,
                    len,
                    "PAR4 map value",
                )?;
                ValueReader {
                    inner: ValueBytes::Source {
                        reader,
                        name: source.name(),
                    },
                    len,
                }
            }
        })
    }
}

/// The entries (numbered from `first`) of the hash table `hashes` whose
/// hash is `target`.
fn entries_with_hash(hashes: &[u8], first: u32, target: u64) -> impl Iterator<Item = u32> + '_ {
    hashes
        .chunks_exact(8)
        .enumerate()
        .filter(move |(_, hash)| {
            hash.first_chunk::<8>()
                .is_some_and(|hash| u64::from_le_bytes(*hash) == target)
        })
        .map(move |(at, _)| first + at as u32)
}

/// Decodes a map, remembering the index of the first key seen twice (and
/// failing there).
struct UniqueMap<'c, K, V> {
    repeat: &'c Cell<Option<u64>>,
    /// The bytes the map is decoded from.
    bytes: usize,
    _entries: PhantomData<fn() -> (K, V)>,
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
