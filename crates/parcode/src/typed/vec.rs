//! `Vec<T>` as the reference lays it out: a container chunk and one child
//! per shard.
//!
//! ```text
//! container payload: total items u64 LE | bincode Vec<ShardRun { item_count: u32, repeat: u32 }>
//! shard payload:     count varint | the items (serde: each in full; derived: plain fields)
//! shard children:    the items' chunkable fields, item by item (derived items only)
//! ```
//!
//! `repeat` consecutive shards hold `item_count` items each; the runs cover
//! the children in order. A container payload under 8 bytes holds its items
//! itself (count and items), as the reference's reader allows.
//!
//! Shard sizes follow the reference's rule — about 128 KiB of encoded
//! items, at least 4 KiB, and at least 8 shards when that allows — with the
//! core count fixed at 2 instead of the machine's, so a file depends only
//! on its data (and equals what the reference writes on a 2-core machine).

use std::fmt;
use std::marker::PhantomData;
use std::mem::MaybeUninit;

use rayon::prelude::*;
use serde::de::{DeserializeOwned, DeserializeSeed, Deserializer, Error as _, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::raw::error::{ParError, Result};
use crate::raw::reader::Chunk;
use crate::raw::writer::{ChunkGraph, NodeId};
use crate::typed::codec::{
    Plain, decode, decode_seed, encode, encode_into, plain_kind, skip_plain,
};

/// A run of shards holding the same number of items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ShardRun {
    item_count: u32,
    repeat: u32,
}

/// The reference's shard sizing constants.
const TARGET_SHARD_BYTES: u64 = 128 * 1024;
const MIN_SHARD_BYTES: u64 = 4 * 1024;
/// Shards the reference aims for per core, and the core count assumed here.
const SHARDS_PER_CORE: usize = 4;
const CORES: usize = 2;

/// How a vector is cut into shards.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ShardPlan {
    /// Items per shard (the last may hold fewer).
    pub(crate) shard_len: usize,
}

/// The reference's shard length for `items` (its rule, 2 cores).
pub(crate) fn plan_shards<T: Serialize>(items: &[T]) -> ShardPlan {
    if items.is_empty() {
        return ShardPlan { shard_len: 1 };
    }
    // The average encoded size of the first 8 items, length prefix included.
    let sample = items.get(..items.len().min(8)).unwrap_or_default();
    let sample_bytes = encode(sample, "Vec sample").map_or(0, |bytes| bytes.len() as u64);
    let per_item = if sample_bytes > 0 {
        (sample_bytes / sample.len() as u64).max(1)
    } else {
        (size_of::<T>() as u64).max(1)
    };
    let by_bytes = usize::try_from((TARGET_SHARD_BYTES / per_item).max(1)).unwrap_or(usize::MAX);
    let by_cores = (items.len() / (CORES * SHARDS_PER_CORE)).max(1);
    let candidate = by_bytes.min(by_cores);
    let shard_len = if (candidate as u64).saturating_mul(per_item) < MIN_SHARD_BYTES {
        usize::try_from((MIN_SHARD_BYTES / per_item).max(1)).unwrap_or(usize::MAX)
    } else {
        candidate
    };
    ShardPlan { shard_len }
}

/// The container payload of `len` items in shards of `shard_len`.
pub(crate) fn container_payload(len: usize, shard_len: usize) -> Result<Vec<u8>> {
    let shard_len = shard_len.max(1);
    let mut runs: Vec<ShardRun> = Vec::new();
    let mut left = len;
    while left > 0 {
        let count = u32::try_from(left.min(shard_len)).map_err(|_| ParError::Encode {
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
        left -= count as usize;
    }
    let mut payload = (len as u64).to_le_bytes().to_vec();
    encode_into(&runs, &mut payload, "Vec shard runs")?;
    Ok(payload)
}

impl<'g> ChunkGraph<'g> {
    /// Adds `items` as a container and shards, sized as the reference
    /// sizes them (see the module's documentation), encoded in parallel
    /// when the file is written.
    pub fn vec<T: Serialize + Sync>(&mut self, items: &'g [T]) -> Result<NodeId> {
        self.vec_with_shard_len(items, plan_shards(items).shard_len)
    }

    /// Adds `items` as a container with `shard_len` items per shard (the
    /// last shard may hold fewer).
    pub fn vec_with_shard_len<T: Serialize + Sync>(
        &mut self,
        items: &'g [T],
        shard_len: usize,
    ) -> Result<NodeId> {
        let shard_len = shard_len.max(1);
        let payload = container_payload(items.len(), shard_len)?;
        let mut children = Vec::with_capacity(items.len().div_ceil(shard_len));
        // Shard buffers start at the size the first items suggest.
        let per_item = encode(
            items.get(..items.len().min(8)).unwrap_or_default(),
            "Vec sample",
        )
        .map_or(1, |bytes| bytes.len() / items.len().clamp(1, 8));
        for shard in items.chunks(shard_len) {
            let encode_shard = move || {
                let mut buffer =
                    Vec::with_capacity(shard.len().saturating_mul(per_item).saturating_add(16));
                encode_into(shard, &mut buffer, "Vec shard")?;
                Ok(buffer)
            };
            children.push(self.add_deferred(encode_shard, Vec::new())?);
        }
        self.add(payload, children)
    }
}

/// A `Vec` container's run table, checked against its children.
#[derive(Debug, Clone)]
pub(crate) struct Container {
    /// The item count.
    pub(crate) len: u64,
    runs: Vec<ShardRun>,
    /// The container holds its items itself (payload under 8 bytes).
    pub(crate) inline: bool,
}

impl Container {
    /// Reads the container's payload: the runs must cover exactly its
    /// children and its item count.
    pub(crate) fn parse(container: &Chunk<'_>) -> Result<Self> {
        let offset = container.offset();
        let payload = container.payload()?;
        let bad = |why: String| ParError::Payload {
            offset,
            what: "Vec container",
            why,
        };
        let Some((count, runs_bytes)) = payload.split_first_chunk::<8>() else {
            // Inline: the count that starts the items.
            let len = if payload.is_empty() {
                0
            } else {
                decode::<u64>(&payload, offset, "inline Vec count")?.0
            };
            return Ok(Self {
                len,
                runs: Vec::new(),
                inline: true,
            });
        };
        let len = u64::from_le_bytes(*count);
        let (runs, used): (Vec<ShardRun>, usize) = decode(runs_bytes, offset, "Vec shard runs")?;
        if used != runs_bytes.len() {
            return Err(bad(format!(
                "{} bytes after the shard runs",
                runs_bytes.len() - used
            )));
        }
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
        Ok(Self {
            len,
            runs,
            inline: false,
        })
    }

    /// Shard and position in the shard of item `index`.
    pub(crate) fn locate(&self, index: u64) -> Option<(u32, usize)> {
        if index >= self.len {
            return None;
        }
        if self.inline {
            return Some((0, index as usize));
        }
        let (mut first_item, mut first_shard) = (0u64, 0u64);
        for run in &self.runs {
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

    /// The number of items shard `shard` holds, by the run table.
    pub(crate) fn shard_len(&self, shard: u32) -> u64 {
        if self.inline {
            return self.len;
        }
        let mut first_shard = 0u64;
        for run in &self.runs {
            if u64::from(shard) < first_shard + u64::from(run.repeat) {
                return u64::from(run.item_count);
            }
            first_shard += u64::from(run.repeat);
        }
        0
    }
}

/// Every item of the (non-inline) container, shards decoded in parallel
/// straight into the result by `decode(shard, slots, written)`, which fills
/// exactly `slots` and counts what it wrote.
///
/// An item takes at least one byte of its shard's payload or one child
/// chunk, so a count beyond the shards' decompressed bytes (stored sizes
/// and LZ4 size prefixes, each at most 255 × its block) plus their children
/// is refused before anything is reserved. Items decoded before a failure
/// are dropped.
pub(crate) fn fill_shards<T, E>(
    container: &Chunk<'_>,
    plan: &Container,
    decode: impl Fn(u32, &mut [MaybeUninit<T>], &mut usize) -> Result<(), E> + Sync,
) -> Result<Vec<T>, E>
where
    T: Send,
    E: From<ParError> + Send,
{
    let offset = container.offset();
    let too_many = |why: String| ParError::Payload {
        offset,
        what: "Vec container",
        why,
    };
    let len = usize::try_from(plan.len).map_err(|_| {
        too_many(format!(
            "{} items exceed this host's address space",
            plan.len
        ))
    })?;
    container.check_children_disjoint()?;
    container.source().will_read(&container.child_ranges());
    // A look at each shard's size, outside the walk (the decoding below
    // reaches each shard once).
    let peek = container.unwalked();
    let bytes = (0..container.child_count())
        .into_par_iter()
        .map(|shard| {
            let chunk = peek.child(shard)?;
            Ok(chunk
                .decompressed_len()?
                .saturating_add(u64::from(chunk.child_count())))
        })
        .try_reduce(|| 0, |a, b| Ok::<_, ParError>(a.saturating_add(b)))?;
    if plan.len > bytes {
        return Err(too_many(format!(
            "{} items cannot fit in {bytes} bytes and children of shards",
            plan.len
        ))
        .into());
    }
    let mut items: Vec<T> = Vec::with_capacity(len);
    let mut rest = items
        .spare_capacity_mut()
        .get_mut(..len)
        .unwrap_or_default();
    let mut shard_slots = Vec::with_capacity(container.child_count() as usize);
    for run in &plan.runs {
        for _ in 0..run.repeat {
            let (slots, tail) = rest.split_at_mut((run.item_count as usize).min(rest.len()));
            shard_slots.push(slots);
            rest = tail;
        }
    }
    let filled: Vec<Result<Filled<'_, T>, E>> = shard_slots
        .into_par_iter()
        .enumerate()
        .map(|(shard, slots)| {
            let mut written = 0;
            match decode(shard as u32, slots, &mut written) {
                Ok(()) if written == slots.len() => Ok(Filled { slots }),
                outcome => {
                    // Drops the items written before the failure.
                    drop(Filled {
                        slots: slots.get_mut(..written).unwrap_or_default(),
                    });
                    Err(outcome.err().unwrap_or_else(|| {
                        too_many(format!("shard {shard} filled {written} of its items")).into()
                    }))
                }
            }
        })
        .collect();
    let mut shards = Vec::with_capacity(filled.len());
    for shard in filled {
        // An error drops the items the other shards decoded (their guards
        // go out of scope) before it is returned.
        shards.push(shard?);
    }
    shards.into_iter().for_each(Filled::keep);
    #[allow(unsafe_code)]
    // SAFETY: the runs sum to `len` (checked by `Container::parse`), so the
    // shard slices above partition the first `len` slots of the spare
    // capacity; every shard returned a `Filled` guard, which exists only
    // once every slot of its slice is written, and `keep` handed the items
    // over to the vector. So slots 0..len are initialized.
    unsafe {
        items.set_len(len);
    }
    Ok(items)
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
    plan: Container,
    _items: PhantomData<fn() -> T>,
}

impl<'a, T: DeserializeOwned + Send> LazyVec<'a, T> {
    /// Reads the container chunk: its item count and shard runs, which must
    /// cover exactly its children and its count (items held inline must
    /// decode to exactly its payload).
    pub fn new(container: Chunk<'a>) -> Result<Self> {
        let plan = Container::parse(&container)?;
        let mut lazy = Self {
            container,
            plan,
            _items: PhantomData,
        };
        if lazy.plan.inline {
            lazy.plan.len = lazy.inline_items()?.len() as u64;
        }
        Ok(lazy)
    }

    /// The number of items.
    pub fn len(&self) -> u64 {
        self.plan.len
    }

    /// Whether there are no items.
    pub fn is_empty(&self) -> bool {
        self.plan.len == 0
    }

    /// The number of shards.
    pub fn shard_count(&self) -> u32 {
        self.container.child_count()
    }

    /// The container chunk.
    pub fn container(&self) -> &Chunk<'a> {
        &self.container
    }

    fn out_of_range(&self, index: u64) -> ParError {
        ParError::IndexOutOfRange {
            index,
            len: self.plan.len,
        }
    }

    /// Item `index`, decoding only the shard that holds it (up to the item).
    pub fn get(&self, index: u64) -> Result<T> {
        let (shard, local) = self
            .plan
            .locate(index)
            .ok_or_else(|| self.out_of_range(index))?;
        if self.plan.inline {
            return self
                .inline_items()?
                .into_iter()
                .nth(local)
                .ok_or_else(|| self.out_of_range(index));
        }
        let chunk = self.container.leaf_child(shard)?;
        let kind = plain_kind::<T>();
        // A number lies within the count's 9 bytes and its kind's widest
        // encoding per item up to it: only those bytes are read.
        let payload = match kind {
            Some(kind) => chunk.item_prefix(kind.max_len(), local)?,
            None => chunk.payload()?,
        };
        let bytes = match chunk.compression() {
            crate::raw::compression::Compression::None => chunk.payload_len(),
            _ => payload.len() as u64,
        };
        // An item takes at least a byte: no skipping past the payload.
        if local as u64 >= bytes {
            return Err(ParError::Payload {
                offset: chunk.offset(),
                what: "Vec shard",
                why: format!("item {local} cannot be in {bytes} bytes"),
            });
        }
        if let Some(kind) = kind {
            return Self::nth_plain(kind, &payload, local, chunk.offset());
        }
        decode_seed(
            NthItem::<T>::new(local),
            &payload,
            chunk.offset(),
            "Vec shard",
        )
        .map(|(item, _)| item)
    }

    /// Item `local` of a shard of numbers or booleans: the items before it
    /// skipped by bincode's own decoders, which read the same bytes as
    /// serde does, without its per-item indirection.
    fn nth_plain(kind: Plain, payload: &[u8], local: usize, offset: u64) -> Result<T> {
        let (count, mut at) = decode::<u64>(payload, offset, "Vec shard")?;
        if local as u64 >= count {
            return Err(ParError::Payload {
                offset,
                what: "Vec shard",
                why: format!("no item {local} in a shard of {count}"),
            });
        }
        at += skip_plain(
            kind,
            payload.get(at..).unwrap_or_default(),
            local,
            offset,
            "Vec shard",
        )?;
        decode::<T>(payload.get(at..).unwrap_or_default(), offset, "Vec shard")
            .map(|(item, _)| item)
    }

    /// The items of shard `index`, which must be exactly those the run
    /// table says.
    pub fn shard(&self, index: u32) -> Result<Vec<T>> {
        let chunk = self.container.child(index)?;
        let payload = chunk.payload()?;
        let expected = self.plan.shard_len(index);
        if expected > payload.len() as u64 {
            return Err(ParError::Payload {
                offset: chunk.offset(),
                what: "Vec shard",
                why: format!("{expected} items cannot be in {} bytes", payload.len()),
            });
        }
        let mut slots: Vec<MaybeUninit<T>> = Vec::with_capacity(expected as usize);
        slots.resize_with(expected as usize, MaybeUninit::uninit);
        let (filled, used) = decode_seed(
            IntoSlots::new(&mut slots),
            &payload,
            chunk.offset(),
            "Vec shard",
        )?;
        filled.keep();
        if used != payload.len() {
            // The items are kept by nobody: take them back to drop them.
            drop(into_items(slots));
            return Err(ParError::Payload {
                offset: chunk.offset(),
                what: "Vec shard",
                why: format!("{} bytes after the items", payload.len() - used),
            });
        }
        Ok(into_items(slots))
    }

    fn inline_items(&self) -> Result<Vec<T>> {
        let payload = self.container.payload()?;
        if payload.is_empty() {
            return Ok(Vec::new());
        }
        let offset = self.container.offset();
        let (items, used) = decode::<Vec<T>>(&payload, offset, "inline Vec")?;
        if used != payload.len() {
            return Err(ParError::Payload {
                offset,
                what: "inline Vec",
                why: format!("{} bytes after the items", payload.len() - used),
            });
        }
        Ok(items)
    }

    /// Every item, in order, decoding one shard at a time (the shards
    /// must be distinct chunks).
    pub fn iter(&self) -> impl Iterator<Item = Result<T>> + '_ {
        let shards: Box<dyn Iterator<Item = Result<Vec<T>>> + '_> = if self.plan.inline {
            Box::new(std::iter::once(self.inline_items()))
        } else if let Err(error) = self.container.check_children_disjoint() {
            Box::new(std::iter::once(Err(error)))
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
    /// Memory: the result, reserved only when the shards' decompressed
    /// bytes (stored sizes, or LZ4 size prefixes, each at most 255 times
    /// the stored block) hold at least one byte per item, plus one
    /// decompressed shard per thread.
    pub fn load(&self) -> Result<Vec<T>> {
        if self.plan.inline {
            return self.inline_items();
        }
        let container = &self.container;
        fill_shards(container, &self.plan, |shard, slots, written| {
            let chunk = container.child(shard)?;
            let payload = chunk.payload()?;
            let len = slots.len();
            let (filled, used) =
                decode_seed(IntoSlots::new(slots), &payload, chunk.offset(), "Vec shard")?;
            filled.keep();
            *written = len;
            if used != payload.len() {
                return Err(ParError::Payload {
                    offset: chunk.offset(),
                    what: "Vec shard",
                    why: format!("{} bytes after the items", payload.len() - used),
                });
            }
            Ok(())
        })
    }
}

/// Slots every one of which is written, as a vector that owns the items.
fn into_items<T>(slots: Vec<MaybeUninit<T>>) -> Vec<T> {
    slots
        .into_iter()
        .map(|slot| {
            #[allow(unsafe_code)]
            // SAFETY: called only on slots `IntoSlots` filled, every one
            // of them written (its `Filled` guard was returned and kept).
            unsafe {
                slot.assume_init()
            }
        })
        .collect()
}

/// A shard's slots, every one written: drops the items unless kept.
pub(crate) struct Filled<'s, T> {
    slots: &'s mut [MaybeUninit<T>],
}

impl<T> Filled<'_, T> {
    /// Hands the items over to whoever owns the slots (no drop).
    pub(crate) fn keep(mut self) {
        self.slots = &mut [];
    }
}

impl<T> Drop for Filled<'_, T> {
    fn drop(&mut self) {
        for slot in self.slots.iter_mut() {
            #[allow(unsafe_code)]
            // SAFETY: a `Filled` exists only over written slots, and `keep`
            // empties the slice when ownership moves elsewhere.
            unsafe {
                slot.assume_init_drop();
            }
        }
    }
}

/// Decodes a shard's items into exactly `slots.len()` slots, failing unless
/// the shard holds exactly that many (and dropping what it wrote when it
/// fails). Each element is decoded as `L` and made an item by `make`.
pub(crate) struct IntoSlots<'s, T, L, F> {
    slots: &'s mut [MaybeUninit<T>],
    make: F,
    _element: PhantomData<fn() -> L>,
}

impl<'s, T> IntoSlots<'s, T, T, fn(T) -> T> {
    /// Decodes items into `slots` (the items as they are: a closure, not a
    /// function pointer, so each item's move inlines).
    #[allow(clippy::new_ret_no_self)]
    pub(crate) fn new(slots: &'s mut [MaybeUninit<T>]) -> IntoSlots<'s, T, T, impl Fn(T) -> T> {
        IntoSlots::mapping(slots, |item| item)
    }
}

impl<'s, T, L, F: Fn(L) -> T> IntoSlots<'s, T, L, F> {
    /// Decodes elements, each made an item by `make`, into `slots`.
    pub(crate) fn mapping(slots: &'s mut [MaybeUninit<T>], make: F) -> Self {
        Self {
            slots,
            make,
            _element: PhantomData,
        }
    }
}

impl<'de, 's, T, L: Deserialize<'de>, F: Fn(L) -> T> DeserializeSeed<'de>
    for IntoSlots<'s, T, L, F>
{
    type Value = Filled<'s, T>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de, 's, T, L: Deserialize<'de>, F: Fn(L) -> T> Visitor<'de> for IntoSlots<'s, T, L, F> {
    type Value = Filled<'s, T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a shard of {} items", self.slots.len())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let expected = self.slots.len();
        if let Some(found) = seq.size_hint().filter(|&found| found != expected) {
            return Err(A::Error::invalid_length(found, &self));
        }
        let (slots, make) = (self.slots, self.make);
        let mut written = 0;
        match fill_slots(&mut seq, slots, &mut written, &make) {
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
fn fill_slots<'de, A: SeqAccess<'de>, T, L: Deserialize<'de>>(
    seq: &mut A,
    slots: &mut [MaybeUninit<T>],
    written: &mut usize,
    make: &impl Fn(L) -> T,
) -> Result<(), A::Error> {
    let expected = slots.len();
    for slot in slots.iter_mut() {
        let element = seq.next_element::<L>()?.ok_or_else(|| {
            A::Error::invalid_length(*written, &"as many items as the run table says")
        })?;
        slot.write(make(element));
        *written += 1;
    }
    if seq.next_element::<L>()?.is_some() {
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
