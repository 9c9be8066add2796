//! `Vec<T>` as the reference lays it out: a container chunk and one child
//! per shard.
//!
//! ```text
//! container payload: total items u64 LE | bincode Vec<ShardRun { item_count: u32, repeat: u32 }>
//! shard payload:     bincode &[T] (varint length, then the items)
//! ```
//!
//! `repeat` consecutive shards hold `item_count` items each; the runs cover
//! the children in order.

use std::fmt;
use std::marker::PhantomData;
use std::mem::MaybeUninit;

use rayon::prelude::*;
use serde::de::{DeserializeOwned, DeserializeSeed, Deserializer, Error as _, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::codec::{decode, decode_seed, encode, encode_into};
use crate::error::{ParError, Result};
use crate::reader::Chunk;
use crate::writer::{ChunkGraph, NodeId};

/// A run of shards holding the same number of items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct ShardRun {
    item_count: u32,
    repeat: u32,
}

/// The shard size this writer aims for, as the reference does (128 KiB of
/// encoded items). Unlike the reference, which also divides by the number
/// of cores, the shard size depends only on the data, so the file does not
/// depend on the machine.
const TARGET_SHARD_BYTES: usize = 128 * 1024;

impl<'g> ChunkGraph<'g> {
    /// Adds `items` as a container with shards of about 128 KiB, encoded in
    /// parallel.
    pub fn vec<T: Serialize + Sync>(&mut self, items: &'g [T]) -> Result<NodeId> {
        let per_item = encoded_item_size(items)?;
        self.sharded(items, (TARGET_SHARD_BYTES / per_item).max(1), per_item)
    }

    /// Adds `items` as a container with `shard_len` items per shard (the
    /// last shard may hold fewer).
    pub fn vec_with_shard_len<T: Serialize + Sync>(
        &mut self,
        items: &'g [T],
        shard_len: usize,
    ) -> Result<NodeId> {
        let per_item = encoded_item_size(items)?;
        self.sharded(items, shard_len, per_item)
    }

    /// `items` in shards of `shard_len`; each shard is encoded when the
    /// file is written, into a buffer sized for `per_item` bytes an item.
    fn sharded<T: Serialize + Sync>(
        &mut self,
        items: &'g [T],
        shard_len: usize,
        per_item: usize,
    ) -> Result<NodeId> {
        let shard_len = shard_len.max(1);
        let mut runs: Vec<ShardRun> = Vec::new();
        let mut children = Vec::with_capacity(items.len().div_ceil(shard_len));
        for shard in items.chunks(shard_len) {
            let count = u32::try_from(shard.len()).map_err(|_| ParError::Encode {
                what: "Vec shard",
                why: "more than 2^32 items in one shard".into(),
            })?;
            match runs.last_mut() {
                Some(run) if run.item_count == count => run.repeat += 1,
                _ => runs.push(ShardRun {
                    item_count: count,
                    repeat: 1,
                }),
            }
            let encode_shard = move || {
                let mut buffer =
                    Vec::with_capacity(shard.len().saturating_mul(per_item).saturating_add(16));
                encode_into(shard, &mut buffer, "Vec shard")?;
                Ok(buffer)
            };
            children.push(self.add_deferred(encode_shard, Vec::new())?);
        }
        let mut payload = (items.len() as u64).to_le_bytes().to_vec();
        encode_into(&runs, &mut payload, "Vec shard runs")?;
        self.add(payload, children)
    }
}

/// The encoded size of an item, estimated from the first 8 (at least 1).
fn encoded_item_size<T: Serialize>(items: &[T]) -> Result<usize> {
    let sample = items.get(..items.len().min(8)).unwrap_or_default();
    let sample_bytes = encode(sample, "Vec sample")?.len().saturating_sub(1).max(1);
    Ok((sample_bytes / sample.len().max(1)).max(1))
}

/// A `Vec<T>` in a PAR4 file, read on demand: the length without touching
/// a shard, one shard per `get`, all shards in parallel for `load`.
///
/// # Examples
///
/// ```
/// use binfmt_parcode::{ChunkGraph, Compression, LazyVec, ParFile};
///
/// let words: Vec<String> = (0..1000).map(|i| format!("word {i}")).collect();
/// let mut graph = ChunkGraph::new();
/// let root = graph.vec_with_shard_len(&words, 100)?;
/// let file = ParFile::new(graph.to_bytes(root, Compression::None)?)?;
/// let lazy: LazyVec<String> = LazyVec::new(file.root()?)?;
/// assert_eq!((lazy.len(), lazy.shard_count()), (1000, 10));
/// assert_eq!(lazy.get(512)?, "word 512");     // decodes shard 5 only
/// assert_eq!(lazy.load()?, words);
/// # Ok::<(), binfmt_parcode::ParError>(())
/// ```
#[derive(Debug, Clone)]
pub struct LazyVec<'a, T> {
    container: Chunk<'a>,
    len: u64,
    runs: Vec<ShardRun>,
    /// An odd container (payload under 8 bytes) holds its items inline.
    inline: bool,
    _items: PhantomData<fn() -> T>,
}

impl<'a, T: DeserializeOwned + Send> LazyVec<'a, T> {
    /// Reads the container chunk: its item count and shard runs, which must
    /// cover exactly its children and its count.
    pub fn new(container: Chunk<'a>) -> Result<Self> {
        let offset = container.offset();
        let payload = container.payload()?;
        let bad = |why: String| ParError::Payload {
            offset,
            what: "Vec container",
            why,
        };
        let Some((count, runs_bytes)) = payload.split_first_chunk::<8>() else {
            drop(payload);
            let len = Self::decode_inline(&container)?.len() as u64;
            return Ok(Self {
                container,
                len,
                runs: Vec::new(),
                inline: true,
                _items: PhantomData,
            });
        };
        let len = u64::from_le_bytes(*count);
        let (runs, _): (Vec<ShardRun>, usize) = decode(runs_bytes, offset, "Vec shard runs")?;
        let (mut shards, mut items) = (0u64, 0u64);
        for run in &runs {
            shards = shards.saturating_add(u64::from(run.repeat));
            items = items.saturating_add(u64::from(run.item_count) * u64::from(run.repeat));
        }
        if shards != u64::from(container.child_count()) {
            return Err(bad(format!(
                "shard runs cover {shards} shards but the chunk has {} children",
                container.child_count()
            )));
        }
        if items != len {
            return Err(bad(format!(
                "shard runs hold {items} items but the container says {len}"
            )));
        }
        drop(payload);
        Ok(Self {
            container,
            len,
            runs,
            inline: false,
            _items: PhantomData,
        })
    }

    /// The number of items.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether there are no items.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The number of shards.
    pub fn shard_count(&self) -> u32 {
        self.container.child_count()
    }

    /// The container chunk.
    pub fn container(&self) -> &Chunk<'a> {
        &self.container
    }

    /// Item `index`, decoding only the shard that holds it.
    pub fn get(&self, index: u64) -> Result<T> {
        if index >= self.len {
            return Err(ParError::IndexOutOfRange {
                index,
                len: self.len,
            });
        }
        if self.inline {
            return self.inline_items()?.into_iter().nth(index as usize).ok_or(
                ParError::IndexOutOfRange {
                    index,
                    len: self.len,
                },
            );
        }
        let (shard, local) = self.locate(index)?;
        let chunk = self.container.child(shard)?;
        let payload = chunk.payload()?;
        decode_seed(
            NthItem::<T>::new(local),
            &payload,
            chunk.offset(),
            "Vec shard",
        )
        .map(|(item, _)| item)
    }

    /// Shard and position in the shard of item `index` (< len).
    fn locate(&self, index: u64) -> Result<(u32, usize)> {
        locate(&self.runs, index).ok_or(ParError::IndexOutOfRange {
            index,
            len: self.len,
        })
    }

    /// The items of shard `index`, checked against the run table.
    pub fn shard(&self, index: u32) -> Result<Vec<T>> {
        let chunk = self.container.child(index)?;
        let payload = chunk.payload()?;
        let (items, _): (Vec<T>, usize) = decode(&payload, chunk.offset(), "Vec shard")?;
        let expected = self.shard_len(index);
        if items.len() as u64 != expected {
            return Err(ParError::Payload {
                offset: chunk.offset(),
                what: "Vec shard",
                why: format!("{} items where the run table says {expected}", items.len()),
            });
        }
        Ok(items)
    }

    /// The number of items shard `shard` holds, by the run table.
    fn shard_len(&self, shard: u32) -> u64 {
        let mut first_shard = 0u64;
        for run in &self.runs {
            if u64::from(shard) < first_shard + u64::from(run.repeat) {
                return u64::from(run.item_count);
            }
            first_shard += u64::from(run.repeat);
        }
        0
    }

    fn inline_items(&self) -> Result<Vec<T>> {
        Self::decode_inline(&self.container)
    }

    /// The items of a container holding them inline: all of its payload.
    fn decode_inline(container: &Chunk<'a>) -> Result<Vec<T>> {
        let payload = container.payload()?;
        if payload.is_empty() {
            return Ok(Vec::new());
        }
        let (items, used) = decode::<Vec<T>>(&payload, container.offset(), "inline Vec")?;
        if used != payload.len() {
            return Err(ParError::Payload {
                offset: container.offset(),
                what: "inline Vec",
                why: format!("{} bytes after the items", payload.len() - used),
            });
        }
        Ok(items)
    }

    /// Every item, in order, decoding one shard at a time.
    pub fn iter(&self) -> impl Iterator<Item = Result<T>> + '_ {
        let shards: Box<dyn Iterator<Item = Result<Vec<T>>> + '_> = if self.inline {
            Box::new(std::iter::once(self.inline_items()))
        } else {
            Box::new((0..self.shard_count()).map(|shard| self.shard(shard)))
        };
        shards.flat_map(|shard| match shard {
            Ok(items) => items.into_iter().map(Ok).collect::<Vec<_>>(),
            Err(error) => vec![Err(error)],
        })
    }

    /// Every item, decoding the shards in parallel straight into the
    /// result.
    ///
    /// Memory: the result, plus one decompressed shard per thread. The
    /// result is reserved up front only when the shards' payloads (their
    /// stored sizes, or their LZ4 size prefixes, each at most 255 times
    /// the stored block) hold at least one byte per item; otherwise (items
    /// that encode to nothing) it grows as items are decoded.
    pub fn load(&self) -> Result<Vec<T>> {
        if self.inline {
            return self.inline_items();
        }
        let len = usize::try_from(self.len).map_err(|_| ParError::Payload {
            offset: self.container.offset(),
            what: "Vec container",
            why: format!("{} items exceed this host's address space", self.len),
        })?;
        self.container
            .source()
            .will_read(&self.container.child_ranges());
        let reservable = size_of::<T>() == 0 || self.len <= self.payload_bytes()?;
        if !reservable {
            let mut items = Vec::new();
            for shard in 0..self.shard_count() {
                items.extend(self.shard(shard)?);
            }
            return Ok(items);
        }
        let mut items: Vec<T> = Vec::with_capacity(len);
        let mut rest = items
            .spare_capacity_mut()
            .get_mut(..len)
            .unwrap_or_default();
        let mut shard_slots = Vec::with_capacity(self.container.child_count() as usize);
        for run in &self.runs {
            for _ in 0..run.repeat {
                let (slots, tail) = rest.split_at_mut((run.item_count as usize).min(rest.len()));
                shard_slots.push(slots);
                rest = tail;
            }
        }
        let filled: Vec<Result<Filled<'_, T>>> = shard_slots
            .into_par_iter()
            .enumerate()
            .map(|(shard, slots)| self.decode_shard_into(shard as u32, slots))
            .collect();
        let mut shards = Vec::with_capacity(filled.len());
        for shard in filled {
            // An error drops the items the other shards decoded (their
            // guards go out of scope) before it is returned.
            shards.push(shard?);
        }
        shards.into_iter().for_each(Filled::keep);
        #[allow(unsafe_code)]
        // SAFETY: the runs sum to `len` (checked in `new`), so the shard
        // slices above partition the first `len` slots of the spare
        // capacity; every shard returned a `Filled` guard, which exists
        // only once every slot of its slice is written, and `keep` handed
        // the items over to the vector. So slots 0..len are initialized.
        unsafe {
            items.set_len(len);
        }
        Ok(items)
    }

    /// The decompressed payload bytes of all shards, from the stored sizes
    /// and LZ4 size prefixes (each checked against the 255× bound).
    fn payload_bytes(&self) -> Result<u64> {
        (0..self.shard_count())
            .into_par_iter()
            .map(|shard| self.container.child(shard)?.payload_len())
            .try_reduce(|| 0, |a, b| Ok(a.saturating_add(b)))
    }

    fn decode_shard_into<'s>(
        &self,
        shard: u32,
        slots: &'s mut [MaybeUninit<T>],
    ) -> Result<Filled<'s, T>> {
        let chunk = self.container.child(shard)?;
        let payload = chunk.payload()?;
        decode_seed(IntoSlots { slots }, &payload, chunk.offset(), "Vec shard").map(|(f, _)| f)
    }
}

/// The run holding item `index`: (shard, position in the shard).
fn locate(runs: &[ShardRun], index: u64) -> Option<(u32, usize)> {
    let mut first_item = 0u64;
    let mut first_shard = 0u64;
    for run in runs {
        let per_shard = u64::from(run.item_count);
        let items = per_shard * u64::from(run.repeat);
        if index < first_item + items {
            let within = index - first_item;
            return Some((
                (first_shard + within / per_shard) as u32,
                (within % per_shard) as usize,
            ));
        }
        first_item += items;
        first_shard += u64::from(run.repeat);
    }
    None
}

/// A shard's slots, every one written: drops the items unless kept.
struct Filled<'s, T> {
    slots: &'s mut [MaybeUninit<T>],
}

impl<T> Filled<'_, T> {
    /// Hands the items over to whoever owns the slots (no drop).
    fn keep(mut self) {
        self.slots = &mut [];
    }
}

impl<T> Drop for Filled<'_, T> {
    fn drop(&mut self) {
        for slot in self.slots.iter_mut() {
            #[allow(unsafe_code)]
            // SAFETY: a `Filled` exists only once every slot is written,
            // and `keep` empties the slice when ownership moves elsewhere.
            unsafe {
                slot.assume_init_drop();
            }
        }
    }
}

/// Decodes a shard's items into exactly `slots.len()` slots, failing unless
/// the shard holds exactly that many (and dropping what it wrote when it
/// fails).
struct IntoSlots<'s, T> {
    slots: &'s mut [MaybeUninit<T>],
}

impl<'de, 's, T: Deserialize<'de>> DeserializeSeed<'de> for IntoSlots<'s, T> {
    type Value = Filled<'s, T>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de, 's, T: Deserialize<'de>> Visitor<'de> for IntoSlots<'s, T> {
    type Value = Filled<'s, T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a shard of {} items", self.slots.len())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let expected = self.slots.len();
        if let Some(found) = seq.size_hint().filter(|&found| found != expected) {
            return Err(A::Error::invalid_length(found, &self));
        }
        let slots = self.slots;
        let mut written = 0;
        match fill_slots(&mut seq, slots, &mut written) {
            Ok(()) => Ok(Filled { slots }),
            Err(error) => {
                // Drops the items written before the failure.
                drop(Filled {
                    slots: slots.get_mut(..written).unwrap_or_default(),
                });
                Err(error)
            }
        }
    }
}

/// Writes the next `slots.len()` items of `seq` into `slots`, counting them
/// in `written`; the sequence must end there.
fn fill_slots<'de, A: SeqAccess<'de>, T: Deserialize<'de>>(
    seq: &mut A,
    slots: &mut [MaybeUninit<T>],
    written: &mut usize,
) -> Result<(), A::Error> {
    let expected = slots.len();
    for slot in slots.iter_mut() {
        let item = seq.next_element::<T>()?.ok_or_else(|| {
            A::Error::invalid_length(*written, &"as many items as the run table says")
        })?;
        slot.write(item);
        *written += 1;
    }
    if seq.next_element::<T>()?.is_some() {
        return Err(A::Error::custom(format!(
            "more than the {expected} items the run table says"
        )));
    }
    Ok(())
}

/// Decodes a shard's items up to the one at `index`, and returns it.
struct NthItem<T> {
    index: usize,
    _item: PhantomData<fn() -> T>,
}

impl<T> NthItem<T> {
    fn new(index: usize) -> Self {
        Self {
            index,
            _item: PhantomData,
        }
    }
}

impl<'de, T: Deserialize<'de>> DeserializeSeed<'de> for NthItem<T> {
    type Value = T;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<T, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for NthItem<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a shard with an item at {}", self.index)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<T, A::Error> {
        for skipped in 0..self.index {
            seq.next_element::<T>()?
                .ok_or_else(|| A::Error::invalid_length(skipped, &self))?;
        }
        seq.next_element::<T>()?
            .ok_or_else(|| A::Error::invalid_length(self.index, &self))
    }
}
