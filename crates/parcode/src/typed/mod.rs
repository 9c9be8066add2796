//! The typed layer: what the reference puts in payloads (bincode 2,
//! standard configuration), over the raw chunk tree (`raw`); nothing here
//! names the drop-in API (`dropin`).
//!
//! ```text
//! Vec<T>          container: len, shard runs │ children: shards (count | items)
//! HashMap<K, V>   container: bucket count    │ children: buckets (tables | entries)
//!                 or one inline chunk: bincode(map)
//! struct          payload: plain fields      │ children: chunkable fields
//! ```
//!
//! [`codec`] is the bounded bincode codec everything decodes through
//! ([`guard`] keeps claimed lengths within the bytes present); [`vec`],
//! [`map`] and [`structure`] write and read the three shapes lazily;
//! [`blob`] streams a map of byte values to a file; [`value`] is a single
//! value as one chunk.

pub mod blob;
pub mod codec;
pub mod guard;
pub mod map;
pub mod structure;
pub mod value;
pub mod vec;
