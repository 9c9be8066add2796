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

#![forbid(unsafe_code)]

mod bucket;
mod byte_values;
mod encode;
mod lazy;
mod value_reader;
mod verify;

pub(crate) use encode::{MapPlan, bucket_count, bucket_tables, entry_order, repeated_key};
pub use lazy::LazyMap;
pub use value_reader::ValueReader;

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
