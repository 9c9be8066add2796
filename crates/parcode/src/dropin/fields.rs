//! Reading and writing a struct's fields in its chunk's payload, and
//! taking its chunkable fields from the children: what the derive's
//! generated code calls (through `__private`), and what the built-in
//! [`ParcodeNative`](crate::ParcodeNative) and
//! [`ParcodeItem`](crate::ParcodeItem) impls share.
//!
//! ```text
//! struct chunk payload: bincode(field 1) bincode(field 2) ...   (nothing after the last)
//! children:             one per chunkable field, in declaration order (none left over)
//! ```

use std::fmt;
use std::io::{Cursor, Write};
use std::marker::PhantomData;
use std::vec::IntoIter;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::dropin::error::ParcodeError;
use crate::raw::error::ParError;
use crate::raw::reader::Chunk;
use crate::typed::codec::{decode, decode_seed};
use crate::typed::vec::IntoSlots;

type Result<T, E = ParcodeError> = std::result::Result<T, E>;

/// Appends `value`'s bincode (standard configuration) to `writer`.
#[doc(hidden)]
pub fn write_local<T: Serialize + ?Sized, W: Write>(value: &T, writer: &mut W) -> Result<()> {
    bincode::serde::encode_into_std_write(value, writer, bincode::config::standard())
        .map(drop)
        .map_err(|error| ParcodeError::Serialization(error.to_string()))
}

/// The bytes not yet read.
#[doc(hidden)]
pub fn remaining<'r>(reader: &Cursor<&'r [u8]>) -> &'r [u8] {
    let bytes: &'r [u8] = reader.get_ref();
    usize::try_from(reader.position())
        .ok()
        .and_then(|at| bytes.get(at..))
        .unwrap_or_default()
}

/// Decodes the field `field` at the reader's position (claims bounded by
/// the bytes that remain) and moves past it.
#[doc(hidden)]
pub fn read_local<T: DeserializeOwned>(
    reader: &mut Cursor<&[u8]>,
    field: &'static str,
) -> Result<T> {
    let at = reader.position();
    let (value, used) = decode::<T>(remaining(reader), at, field).map_err(|error| match error {
        ParError::Payload { why, .. } => ParError::Field { field, at, why },
        other => other,
    })?;
    reader.set_position(at + used as u64);
    Ok(value)
}

/// Fills `slots` with a whole shard (count, then items) of a struct whose
/// items have plain fields only: each item's fields decoded as one tuple `L`
/// (the same bytes as field after field) and made an item by `make`.
#[doc(hidden)]
pub fn fill_plain<L: DeserializeOwned, T>(
    reader: &mut Cursor<&[u8]>,
    slots: &mut [std::mem::MaybeUninit<T>],
    written: &mut usize,
    make: impl Fn(L) -> T,
) -> Result<()> {
    let at = reader.position();
    let len = slots.len();
    let (filled, used) = decode_seed(
        IntoSlots::mapping(slots, make),
        remaining(reader),
        at,
        "Vec shard",
    )?;
    filled.keep();
    *written = len;
    reader.set_position(at + used as u64);
    Ok(())
}

/// Moves `reader` past `count` values of type `L`, in one decoder call.
#[doc(hidden)]
pub fn skip_elements<L: DeserializeOwned>(reader: &mut Cursor<&[u8]>, count: usize) -> Result<()> {
    let at = reader.position();
    let ((), used) = decode_seed(
        SkipElements::<L> {
            count,
            _element: PhantomData,
        },
        remaining(reader),
        at,
        "skipped items",
    )?;
    reader.set_position(at + used as u64);
    Ok(())
}

/// Decodes `count` values of `L` (no length prefix) and drops them.
struct SkipElements<L> {
    count: usize,
    _element: PhantomData<fn() -> L>,
}

impl<'de, L: serde::Deserialize<'de>> serde::de::DeserializeSeed<'de> for SkipElements<L> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_tuple(self.count, self)
    }
}

impl<'de, L: serde::Deserialize<'de>> serde::de::Visitor<'de> for SkipElements<L> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} items", self.count)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        for skipped in 0..self.count {
            seq.next_element::<L>()?
                .ok_or_else(|| serde::de::Error::invalid_length(skipped, &self))?;
        }
        Ok(())
    }
}

/// Reads a shard's count, which must be the run table's.
#[doc(hidden)]
pub fn check_count(reader: &mut Cursor<&[u8]>, expected: u64) -> Result<()> {
    let count: u64 = read_local(reader, "shard count")?;
    if count != expected {
        return Err(ParError::Field {
            field: "shard count",
            at: reader.position(),
            why: format!("{count} items where the run table says {expected}"),
        }
        .into());
    }
    Ok(())
}

/// Every byte of `node`'s payload was read.
#[doc(hidden)]
pub fn end_of_payload(reader: &Cursor<&[u8]>, node: &Chunk<'_>) -> Result<()> {
    let left = remaining(reader).len();
    if left > 0 {
        return Err(ParError::Payload {
            offset: node.offset(),
            what: "struct",
            why: format!("{left} bytes after the last field"),
        }
        .into());
    }
    Ok(())
}

/// Every child of `node` was used.
#[doc(hidden)]
pub fn end_of_children(children: &mut IntoIter<Chunk<'_>>, node: &Chunk<'_>) -> Result<()> {
    let left = children.len();
    if left > 0 {
        return Err(ParError::Payload {
            offset: node.offset(),
            what: "struct",
            why: format!("{left} children beyond its chunkable fields"),
        }
        .into());
    }
    Ok(())
}

/// The next child, for the chunkable field `field`.
#[doc(hidden)]
pub fn next_child<'a>(
    children: &mut IntoIter<Chunk<'a>>,
    field: &'static str,
) -> Result<Chunk<'a>> {
    children
        .next()
        .ok_or_else(|| ParError::MissingChild { field }.into())
}
