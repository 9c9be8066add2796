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

use crate::codec::{decode, encode, encode_into, hash_key};
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

impl ChunkGraph<'_> {
    /// Adds a map in `layout`.
    pub fn map<'m, K, V, I>(&mut self, entries: I, layout: MapLayout) -> Result<NodeId>
    where
        K: Serialize + Hash + Sync + 'm,
        V: Serialize + Sync + 'm,
        I: IntoIterator<Item = (&'m K, &'m V)>,
    {
        let entries: Vec<(&K, &V)> = entries.into_iter().collect();
        let hashes: Vec<u64> = entries.par_iter().map(|(key, _)| hash_key(*key)).collect();
        let hash_of = |entry: usize| hashes.get(entry).copied().unwrap_or_default();
        // Order by hash; equal hashes (rare) by encoded key. A key that fails
        // to encode sorts first here and reports its error when encoded below.
        let by_hash_then_key = |a: &usize, b: &usize| {
            hash_of(*a).cmp(&hash_of(*b)).then_with(|| {
                let key = |entry: usize| {
                    entries
                        .get(entry)
                        .map(|(key, _)| encode(*key, "map key").unwrap_or_default())
                };
                key(*a).cmp(&key(*b))
            })
        };
        match layout {
            MapLayout::Inline => {
                let mut order: Vec<usize> = (0..entries.len()).collect();
                order.par_sort_unstable_by(by_hash_then_key);
                let mut payload = encode(&(entries.len() as u64), "map length")?;
                for (key, value) in order.iter().filter_map(|&entry| entries.get(entry)) {
                    encode_into(*key, &mut payload, "map key")?;
                    encode_into(*value, &mut payload, "map value")?;
                }
                self.add(payload, Vec::new())
            }
            MapLayout::Buckets => {
                let buckets = if entries.is_empty() {
                    0
                } else {
                    (entries.len() / ITEMS_PER_BUCKET).clamp(1, MAX_BUCKETS)
                };
                let mut members: Vec<Vec<usize>> = vec![Vec::new(); buckets];
                for (entry, hash) in hashes.iter().enumerate() {
                    if let Some(bucket) = members.get_mut((hash % buckets as u64) as usize) {
                        bucket.push(entry);
                    }
                }
                let payloads: Vec<Vec<u8>> = members
                    .par_iter_mut()
                    .map(|bucket| {
                        bucket.sort_unstable_by(by_hash_then_key);
                        bucket_payload(bucket, &entries, &hashes)
                    })
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

/// A bucket's payload: its entries (indices into `entries`, in order) with
/// their hashes, offsets, and the encoded entries.
fn bucket_payload<K: Serialize, V: Serialize>(
    bucket: &[usize],
    entries: &[(&K, &V)],
    hashes: &[u64],
) -> Result<Vec<u8>> {
    if bucket.is_empty() {
        return Ok(Vec::new());
    }
    let too_big = |what: &str| ParError::Encode {
        what: "map bucket",
        why: format!("{what} exceeds u32"),
    };
    let count = u32::try_from(bucket.len()).map_err(|_| too_big("entry count"))?;
    let mut blob = Vec::new();
    let mut offsets = Vec::with_capacity(bucket.len() * 4);
    let mut hash_table = Vec::with_capacity(bucket.len() * 8);
    for &entry in bucket {
        let (key, value) = entries.get(entry).ok_or_else(|| too_big("entry index"))?;
        hash_table.extend_from_slice(&hashes.get(entry).copied().unwrap_or_default().to_le_bytes());
        offsets.extend_from_slice(
            &u32::try_from(blob.len())
                .map_err(|_| too_big("bucket data"))?
                .to_le_bytes(),
        );
        encode_into(*key, &mut blob, "map key")?;
        encode_into(*value, &mut blob, "map value")?;
    }
    let mut payload =
        Vec::with_capacity(BUCKET_HEADER + hash_table.len() + offsets.len() + blob.len());
    payload.extend_from_slice(&count.to_le_bytes());
    payload.extend_from_slice(&[0; 4]);
    payload.extend_from_slice(&hash_table);
    payload.extend_from_slice(&offsets);
    payload.extend_from_slice(&blob);
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
        // This writer sorts buckets by hash, so a search finds the
        // candidates; buckets written elsewhere may be in any order, so a
        // miss falls back to scanning every hash.
        let first = sorted_position(view.count, hash, |index| view.hash(index));
        let sorted_candidates = (first..view.count).take_while(|&index| view.hash(index) == hash);
        for index in sorted_candidates.chain(view.matching(hash)) {
            let (stored, value): (K, V) = view.entry(index)?;
            if stored.borrow() == key {
                return Ok(Some(value));
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

/// The first index in `0..len` whose hash is not below `target`, for hashes
/// in ascending order. Hashes are uniform over 64 bits, so the target's
/// share of the range predicts its position: the search starts there,
/// gallops outward until it brackets the target, then bisects. It usually
/// reads a few neighbouring hashes, one page of the table, where a plain
/// binary search would touch pages across all of it.
fn sorted_position(len: u32, target: u64, hash_at: impl Fn(u32) -> u64) -> u32 {
    if len == 0 {
        return 0;
    }
    let guess = ((u128::from(target) * u128::from(len)) >> 64) as u32;
    let (mut low, mut high);
    if hash_at(guess) < target {
        // The answer is above the guess: gallop up.
        (low, high) = (guess + 1, guess + 1);
        let mut step = 1;
        while high < len && hash_at(high) < target {
            low = high + 1;
            high = high.saturating_add(step).min(len);
            step = step.saturating_mul(2);
        }
    } else {
        // The answer is at or below the guess: gallop down.
        (low, high) = (guess, guess);
        let mut step = 1;
        while low > 0 && hash_at(low - 1) >= target {
            high = low - 1;
            low = low.saturating_sub(step);
            step = step.saturating_mul(2);
        }
    }
    // Now every index below `low` is below target and `high` is not (or is len).
    while low < high {
        let middle = low + (high - low) / 2;
        if hash_at(middle) < target {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    low
}

/// A bucket payload, split into its tables after checking their sizes
/// against the payload's length.
struct Bucket<'p> {
    offset: u64,
    count: u32,
    hashes: &'p [u8],
    offsets: &'p [u8],
    data: &'p [u8],
}

impl<'p> Bucket<'p> {
    fn parse(payload: &'p [u8], offset: u64) -> Result<Self> {
        if payload.len() < BUCKET_HEADER {
            // The reference writes an empty bucket as an empty payload.
            return Ok(Self {
                offset,
                count: 0,
                hashes: &[],
                offsets: &[],
                data: &[],
            });
        }
        let count = payload
            .first_chunk::<4>()
            .map_or(0, |bytes| u32::from_le_bytes(*bytes));
        let tables = (count as usize)
            .checked_mul(12)
            .filter(|&tables| tables <= payload.len() - BUCKET_HEADER);
        let too_short = || ParError::Payload {
            offset,
            what: "map bucket",
            why: format!(
                "{count} entries need {} bytes of tables but the payload has {}",
                u64::from(count) * 12 + 8,
                payload.len()
            ),
        };
        let tables = tables.ok_or_else(too_short)?;
        let rest = payload.get(BUCKET_HEADER..).ok_or_else(too_short)?;
        let (hashes, rest) = rest.split_at(tables / 12 * 8);
        let (offsets, data) = rest.split_at(tables / 12 * 4);
        Ok(Self {
            offset,
            count,
            hashes,
            offsets,
            data,
        })
    }

    fn hash(&self, index: u32) -> u64 {
        let at = index as usize * 8;
        self.hashes
            .get(at..at + 8)
            .and_then(|bytes| bytes.first_chunk::<8>())
            .map_or(0, |bytes| u64::from_le_bytes(*bytes))
    }

    /// Indices whose hash is `target`, in table order.
    fn matching(&self, target: u64) -> impl Iterator<Item = u32> + '_ {
        self.hashes
            .chunks_exact(8)
            .enumerate()
            .filter(move |(_, bytes)| {
                bytes
                    .first_chunk::<8>()
                    .is_some_and(|bytes| u64::from_le_bytes(*bytes) == target)
            })
            .map(|(index, _)| index as u32)
    }

    fn entry<K: DeserializeOwned, V: DeserializeOwned>(&self, index: u32) -> Result<(K, V)> {
        let at = index as usize * 4;
        let relative = self
            .offsets
            .get(at..at + 4)
            .and_then(|bytes| bytes.first_chunk::<4>())
            .map_or(0, |bytes| u32::from_le_bytes(*bytes));
        let data = self
            .data
            .get(relative as usize..)
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
    fn sorted_position_matches_a_linear_search() {
        let mut state = 0x1234_5678_9abc_def0u64;
        for len in [0usize, 1, 2, 3, 10, 100, 2000] {
            let mut hashes: Vec<u64> = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state
                })
                .collect();
            hashes.sort_unstable();
            if len > 4 {
                hashes[2] = hashes[3]; // a duplicate
            }
            let mut targets: Vec<u64> = hashes.clone();
            targets.extend([0, 1, u64::MAX, u64::MAX / 2]);
            targets.extend(hashes.iter().map(|h| h.wrapping_add(1)));
            for target in targets {
                let expected = hashes.iter().position(|&h| h >= target).unwrap_or(len) as u32;
                let found = sorted_position(len as u32, target, |i| hashes[i as usize]);
                assert_eq!(found, expected, "len {len} target {target}");
            }
        }
    }

    #[test]
    fn a_bucket_claiming_too_many_entries_is_refused() {
        let mut payload = u32::MAX.to_le_bytes().to_vec();
        payload.extend_from_slice(&[0; 20]);
        assert!(Bucket::parse(&payload, 0).is_err());
    }
}
