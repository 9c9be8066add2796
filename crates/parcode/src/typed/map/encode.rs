//! Writing a map: entries hashed and encoded in parallel parts, then laid
//! out in buckets (or inline) as [`super`] describes.

use std::hash::Hash;
use std::sync::Arc;

use rayon::prelude::*;
use serde::Serialize;

use super::layout::{BUCKET_HEADER, ITEMS_PER_BUCKET, MAX_BUCKETS, MapLayout, TABLE_ENTRY};

use crate::raw::error::{ParError, Result};
use crate::raw::writer::{ChunkGraph, NodeId, Sink};
use crate::typed::codec::{encode, encode_into, hash_key};

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
