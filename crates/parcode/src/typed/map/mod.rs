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
mod layout;
mod lazy;
mod value_reader;
mod verify;

pub(crate) use encode::{MapPlan, bucket_count, bucket_tables, entry_order, repeated_key};
pub use layout::MapLayout;
pub use lazy::LazyMap;
pub use value_reader::ValueReader;
