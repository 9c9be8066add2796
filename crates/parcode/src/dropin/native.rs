//! Eager reading for the drop-in API (`parcode::reader`): [`ParcodeNative`]
//! rebuilds a value from its chunk, [`ParcodeItem`] reads the items of a
//! `Vec` shard, and the reference's `ChunkNode` methods (`read_raw`,
//! `decode_parallel_collection`, `get`, `iter`, ...) are here on [`Chunk`].
//!
//! ```text
//! shard payload: count varint | item₀ | item₁ | ...     (an item: its plain fields)
//! shard children: item₀'s chunkable fields | item₁'s | ...
//! ```
//!
//! Every shard is checked against the container's run table: its count, its
//! bytes (all of them read), its children (all of them used). A `Vec` is
//! loaded in parallel straight into the result, reserved only when the
//! shards' bytes hold at least one byte per item. Loads walk the subtree
//! ([`Chunk::walking`]): a chunk reached twice is an error.

use std::collections::HashMap;
use std::hash::Hash;
use std::io::Cursor;
use std::mem::MaybeUninit;
use std::vec::IntoIter;

use serde::de::DeserializeOwned;

use crate::dropin::error::ParcodeError;
use crate::dropin::fields::{self, next_child};
use crate::raw::error::ParError;
use crate::raw::reader::Chunk;
use crate::typed::codec::{Plain, decode_plain, skip_plain};
use crate::typed::map::LazyMap;
use crate::typed::vec::{Container, fill_shards};

/// `Result` with [`ParcodeError`], as the reference names it.
type Result<T, E = ParcodeError> = std::result::Result<T, E>;

/// A value rebuilt whole from its chunk (`Parcode::load`).
pub trait ParcodeNative: Sized {
    /// Reads the value from `node` and, for a struct, its children.
    fn from_node(node: &Chunk<'_>) -> Result<Self>;
}

/// A value that can be an item of a `Vec` shard.
pub trait ParcodeItem: Sized + Send + Sync + 'static {
    /// Reads one item at the reader's position, taking its chunkable
    /// fields from `children`.
    fn read_from_shard(
        reader: &mut Cursor<&[u8]>,
        children: &mut std::vec::IntoIter<Chunk<'_>>,
    ) -> Result<Self>;

    /// Reads a shard: its count, then that many items. The vector grows
    /// as items are read (a count is a claim, not a reservation).
    fn read_slice_from_shard(
        reader: &mut Cursor<&[u8]>,
        children: &mut std::vec::IntoIter<Chunk<'_>>,
    ) -> Result<Vec<Self>> {
        let count: u64 = fields::read_local(reader, "shard count")?;
        let mut items = Vec::new();
        for _ in 0..count {
            if fields::remaining(reader).is_empty() && size_of::<Self>() > 0 {
                return Err(ParError::Field {
                    field: "shard",
                    at: reader.position(),
                    why: format!("{count} items claimed, {} read", items.len()),
                }
                .into());
            }
            items.push(Self::read_from_shard(reader, children)?);
        }
        Ok(items)
    }

    /// Reads a shard into `destination`: its count (at most the
    /// destination's length), then the items; returns the count. Items
    /// written before a failure are not dropped.
    fn read_into_slice(
        reader: &mut Cursor<&[u8]>,
        children: &mut std::vec::IntoIter<Chunk<'_>>,
        destination: &mut [MaybeUninit<Self>],
    ) -> Result<usize> {
        let count: u64 = fields::read_local(reader, "shard count")?;
        let count = usize::try_from(count)
            .ok()
            .filter(|&count| count <= destination.len())
            .ok_or_else(|| ParError::Field {
                field: "shard count",
                at: reader.position(),
                why: format!("{count} items for {} slots", destination.len()),
            })?;
        for slot in destination.iter_mut().take(count) {
            slot.write(Self::read_from_shard(reader, children)?);
        }
        Ok(count)
    }

    /// How many children each item takes (its chunkable fields), when
    /// known: then one item is found without reading the ones before it.
    #[doc(hidden)]
    const REMOTE_FIELDS: Option<usize> = None;

    /// The most bytes one item takes in a shard, for types whose items
    /// have a bounded encoding (numbers and booleans); `None` otherwise.
    #[doc(hidden)]
    const MAX_ENCODED: Option<usize> = None;

    /// Moves the reader past `count` items' plain fields.
    #[doc(hidden)]
    fn skip_many(reader: &mut Cursor<&[u8]>, count: usize) -> Result<()> {
        (0..count).try_for_each(|_| Self::skip_in_shard(reader))
    }

    /// Moves the reader past one item's plain fields.
    #[doc(hidden)]
    fn skip_in_shard(reader: &mut Cursor<&[u8]>) -> Result<()> {
        Err(ParError::Field {
            field: "item",
            at: reader.position(),
            why: "this type cannot be skipped".into(),
        }
        .into())
    }

    /// Reads a whole shard (count and items) into exactly `slots`,
    /// counting the slots written in `written` so a failure can drop them.
    #[doc(hidden)]
    fn fill_slots(
        reader: &mut Cursor<&[u8]>,
        children: &mut std::vec::IntoIter<Chunk<'_>>,
        slots: &mut [MaybeUninit<Self>],
        written: &mut usize,
    ) -> Result<()> {
        let count: u64 = fields::read_local(reader, "shard count")?;
        if count != slots.len() as u64 {
            return Err(ParError::Field {
                field: "shard count",
                at: reader.position(),
                why: format!("{count} items where the run table says {}", slots.len()),
            }
            .into());
        }
        for slot in slots.iter_mut() {
            slot.write(Self::read_from_shard(reader, children)?);
            *written += 1;
        }
        Ok(())
    }
}

/// The item impls of numbers and booleans: bincode's own decoders, a shard
/// at a time.
macro_rules! plain_item {
    ($($t:ty => $kind:ident),*) => {$(
        impl ParcodeItem for $t {
            fn read_from_shard(
                reader: &mut Cursor<&[u8]>,
                _children: &mut std::vec::IntoIter<Chunk<'_>>,
            ) -> Result<Self> {
                let mut value = None;
                let used = decode_plain::<$t>(fields::remaining(reader), 1, reader.position(), stringify!($t), |v| value = Some(v))?;
                reader.set_position(reader.position() + used as u64);
                value.ok_or_else(|| ParError::Field { field: stringify!($t), at: reader.position(), why: "missing".into() }.into())
            }

            const REMOTE_FIELDS: Option<usize> = Some(0);

            const MAX_ENCODED: Option<usize> = Some(Plain::$kind.max_len());

            fn skip_in_shard(reader: &mut Cursor<&[u8]>) -> Result<()> {
                Self::skip_many(reader, 1)
            }

            fn skip_many(reader: &mut Cursor<&[u8]>, count: usize) -> Result<()> {
                let used = skip_plain(Plain::$kind, fields::remaining(reader), count, reader.position(), stringify!($t))?;
                reader.set_position(reader.position() + used as u64);
                Ok(())
            }

            fn fill_slots(
                reader: &mut Cursor<&[u8]>,
                _children: &mut std::vec::IntoIter<Chunk<'_>>,
                slots: &mut [MaybeUninit<Self>],
                written: &mut usize,
            ) -> Result<()> {
                fields::check_count(reader, slots.len() as u64)?;
                let len = slots.len();
                let mut next = slots.iter_mut();
                let used = decode_plain::<$t>(fields::remaining(reader), len, reader.position(), "Vec shard", |value| {
                    if let Some(slot) = next.next() {
                        slot.write(value);
                        *written += 1;
                    }
                })?;
                reader.set_position(reader.position() + used as u64);
                Ok(())
            }
        }

        impl ParcodeNative for $t {
            fn from_node(node: &Chunk<'_>) -> Result<Self> {
                Ok(node.decode()?)
            }
        }
    )*};
}

plain_item!(
    u8 => U8, u16 => U16, u32 => U32, u64 => U64, u128 => U128, usize => U64,
    i8 => I8, i16 => I16, i32 => I32, i64 => I64, i128 => I128, isize => I64,
    f32 => F32, f64 => F64, bool => Bool
);

impl ParcodeItem for String {
    fn read_from_shard(
        reader: &mut Cursor<&[u8]>,
        _children: &mut std::vec::IntoIter<Chunk<'_>>,
    ) -> Result<Self> {
        fields::read_local(reader, "String")
    }

    const REMOTE_FIELDS: Option<usize> = Some(0);

    fn skip_in_shard(reader: &mut Cursor<&[u8]>) -> Result<()> {
        fields::read_local::<String>(reader, "String").map(drop)
    }

    fn skip_many(reader: &mut Cursor<&[u8]>, count: usize) -> Result<()> {
        fields::skip_elements::<String>(reader, count)
    }

    // The whole shard through serde, straight into the slots.
    fn fill_slots(
        reader: &mut Cursor<&[u8]>,
        _children: &mut std::vec::IntoIter<Chunk<'_>>,
        slots: &mut [MaybeUninit<Self>],
        written: &mut usize,
    ) -> Result<()> {
        fields::fill_plain(reader, slots, written, std::convert::identity::<String>)
    }
}

impl ParcodeNative for String {
    fn from_node(node: &Chunk<'_>) -> Result<Self> {
        Ok(node.decode()?)
    }
}

impl<T: ParcodeItem> ParcodeNative for Vec<T> {
    fn from_node(node: &Chunk<'_>) -> Result<Self> {
        node.decode_parallel_collection()
    }
}

impl<K, V> ParcodeNative for HashMap<K, V>
where
    K: DeserializeOwned + Eq + Hash + Send + Sync,
    V: DeserializeOwned + Send + Sync,
{
    fn from_node(node: &Chunk<'_>) -> Result<Self> {
        Ok(LazyMap::<K, V>::new(node.clone())?.load()?)
    }
}

/// A shard decoded: its payload and children, ready for items.
fn open_shard<'a>(shard: &Chunk<'a>) -> Result<(std::borrow::Cow<'a, [u8]>, Vec<Chunk<'a>>)> {
    Ok((shard.payload()?, shard.children()?))
}

/// The shard's payload and children must be used up.
fn shard_done(
    shard: &Chunk<'_>,
    reader: &Cursor<&[u8]>,
    children: &mut std::vec::IntoIter<Chunk<'_>>,
) -> Result<()> {
    fields::end_of_payload(reader, shard)?;
    fields::end_of_children(children, shard)
}

/// The reference's `ChunkNode` methods.
impl<'a> Chunk<'a> {
    /// The payload, decompressed (the reference's name for [`Chunk::payload`]).
    pub fn read_raw(&self) -> Result<std::borrow::Cow<'a, [u8]>> {
        Ok(self.payload()?)
    }

    /// Child `index` (the reference's name for [`Chunk::child`]).
    pub fn get_child_by_index(&self, index: usize) -> Result<Chunk<'a>> {
        let index = u32::try_from(index).map_err(|_| ParError::IndexOutOfRange {
            index: index as u64,
            len: u64::from(self.child_count()),
        })?;
        Ok(self.child(index)?)
    }

    /// The item count of the `Vec` container this chunk holds: the first 8
    /// payload bytes, or 0 when there are fewer or they cannot be read.
    pub fn len(&self) -> u64 {
        self.payload()
            .ok()
            .and_then(|bytes| bytes.first_chunk::<8>().map(|b| u64::from_le_bytes(*b)))
            .unwrap_or(0)
    }

    /// Whether [`Chunk::len`] is 0.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every item of the `Vec` container this chunk holds, shards decoded
    /// in parallel straight into the result; the subtree is walked.
    pub fn decode_parallel_collection<T: ParcodeItem>(&self) -> Result<Vec<T>> {
        let container = if self.is_walking() {
            self.clone()
        } else {
            self.walking()?
        };
        let plan = Container::parse(&container)?;
        if plan.inline {
            // A container under 8 bytes is itself the shard.
            let (payload, children) = open_shard(&container)?;
            if payload.is_empty() {
                return Ok(Vec::new());
            }
            let mut reader = Cursor::new(&*payload);
            let mut children = children.into_iter();
            let items = T::read_slice_from_shard(&mut reader, &mut children)?;
            shard_done(&container, &reader, &mut children)?;
            return Ok(items);
        }
        fill_shards(&container, &plan, |shard, slots, written| {
            let chunk = container.child(shard)?;
            let (payload, children) = open_shard(&chunk)?;
            let mut reader = Cursor::new(&*payload);
            let mut children = children.into_iter();
            T::fill_slots(&mut reader, &mut children, slots, written)?;
            shard_done(&chunk, &reader, &mut children)
        })
    }

    /// Item `index` of the `Vec` container this chunk holds: one shard is
    /// read; items before it in the shard are skipped without reading their
    /// chunkable fields when the type says how many it has.
    pub fn get<T: ParcodeItem>(&self, index: usize) -> Result<T> {
        let at = self.locate_item(index)?;
        // Numbers: only the bytes that can hold the count (9) and the items
        // up to this one are read.
        let payload = match T::MAX_ENCODED {
            Some(max) => at.shard.item_prefix(max, at.local)?,
            None => at.shard.payload()?,
        };
        let mut reader = Cursor::new(&*payload);
        fields::check_count(&mut reader, at.expected)?;
        let mut children = skip_items::<T>(&at.shard, &mut reader, at.local)?;
        T::read_from_shard(&mut reader, &mut children)
    }

    /// The items of the `Vec` container this chunk holds, one shard at a
    /// time.
    pub fn iter<T: ParcodeItem>(self) -> Result<ChunkIterator<'a, T>> {
        let plan = Container::parse(&self)?;
        self.check_children_disjoint()?;
        Ok(ChunkIterator {
            container: self,
            plan,
            next_shard: 0,
            items: Vec::new().into_iter(),
            failed: false,
        })
    }

    /// The shard holding item `index` of this `Vec` container.
    pub(crate) fn locate_item(&self, index: usize) -> Result<Located<'a>> {
        let plan = Container::parse(self)?;
        let (shard, local) = plan.locate(index as u64).ok_or(ParError::IndexOutOfRange {
            index: index as u64,
            len: plan.len,
        })?;
        let (chunk, expected) = if plan.inline {
            (self.clone(), plan.len)
        } else {
            (self.leaf_child(shard)?, plan.shard_len(shard))
        };
        // An item takes at least a byte: an index beyond the shard's
        // bytes is refused before items are skipped one by one.
        let bytes = chunk.decompressed_len()?;
        if local as u64 >= bytes {
            return Err(ParError::Payload {
                offset: chunk.offset(),
                what: "Vec shard",
                why: format!("item {local} cannot be in {bytes} bytes"),
            }
            .into());
        }
        Ok(Located {
            shard: chunk,
            local,
            expected,
        })
    }
}

/// Where an item of a `Vec` container is.
pub(crate) struct Located<'a> {
    /// The shard (the container itself when it holds the items inline).
    pub(crate) shard: Chunk<'a>,
    /// The item's place in the shard.
    pub(crate) local: usize,
    /// The shard's item count by the run table.
    pub(crate) expected: u64,
}

/// Moves `reader` (past the shard's count) to item `local` and returns the
/// children from that item's on: only its own when the type says how many
/// each item has, otherwise all of the shard's, the items before it read
/// and dropped.
pub(crate) fn skip_items<'a, T: ParcodeItem>(
    shard: &Chunk<'a>,
    reader: &mut Cursor<&[u8]>,
    local: usize,
) -> Result<std::vec::IntoIter<Chunk<'a>>> {
    match T::REMOTE_FIELDS {
        Some(per_item) => {
            T::skip_many(reader, local)?;
            let first = local.saturating_mul(per_item);
            let own = (first..first.saturating_add(per_item))
                .map(|index| shard.get_child_by_index(index))
                .collect::<Result<Vec<_>>>()?;
            Ok(own.into_iter())
        }
        None => {
            let mut children = shard.children()?.into_iter();
            for _ in 0..local {
                T::read_from_shard(reader, &mut children)?;
            }
            Ok(children)
        }
    }
}

/// The items of a `Vec` container, one shard at a time
/// ([`Chunk::iter`]); it stops after the first error.
#[derive(Debug)]
pub struct ChunkIterator<'a, T> {
    container: Chunk<'a>,
    plan: Container,
    next_shard: u32,
    items: std::vec::IntoIter<T>,
    failed: bool,
}

impl<T: ParcodeItem> ChunkIterator<'_, T> {
    fn load_shard(&mut self) -> Result<bool> {
        let shards = if self.plan.inline {
            1
        } else {
            self.container.child_count()
        };
        if self.next_shard >= shards {
            return Ok(false);
        }
        let chunk = if self.plan.inline {
            self.container.clone()
        } else {
            self.container.child(self.next_shard)?
        };
        let expected = self.plan.shard_len(self.next_shard);
        self.next_shard += 1;
        let (payload, children) = open_shard(&chunk)?;
        if payload.is_empty() && self.plan.inline {
            return Ok(false);
        }
        let mut reader = Cursor::new(&*payload);
        let mut children = children.into_iter();
        let items = T::read_slice_from_shard(&mut reader, &mut children)?;
        if !self.plan.inline && items.len() as u64 != expected {
            return Err(ParError::Payload {
                offset: chunk.offset(),
                what: "Vec shard",
                why: format!("{} items where the run table says {expected}", items.len()),
            }
            .into());
        }
        shard_done(&chunk, &reader, &mut children)?;
        self.items = items.into_iter();
        Ok(true)
    }
}

impl<T: ParcodeItem> Iterator for ChunkIterator<'_, T> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.failed {
                return None;
            }
            if let Some(item) = self.items.next() {
                return Some(Ok(item));
            }
            match self.load_shard() {
                Ok(true) => {}
                Ok(false) => return None,
                Err(error) => {
                    self.failed = true;
                    return Some(Err(error));
                }
            }
        }
    }
}

/// The chunkable field `field`, loaded whole from the next child.
pub fn load_child<T: ParcodeNative>(
    children: &mut IntoIter<Chunk<'_>>,
    field: &'static str,
) -> Result<T> {
    T::from_node(&next_child(children, field)?)
}
