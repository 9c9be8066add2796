//! The two map layouts and the sizes of the bucket layout's parts (the
//! byte layouts are in [`super`]'s documentation):
//!
//! ```text
//! bucket payload: count u32 | 4 zero bytes | count × hash u64 | count × offset u32 | entries
//!                 ◀─ BUCKET_HEADER ─▶      ◀──────── TABLE_ENTRY per entry ────────▶
//! ```

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
pub(super) const ITEMS_PER_BUCKET: usize = 2000;
/// At most this many buckets, as the reference.
pub(super) const MAX_BUCKETS: usize = 1024;
/// Bucket header: count u32 and 4 zero bytes.
pub(super) const BUCKET_HEADER: u64 = 8;
/// Bytes of the hash and offset tables per entry.
pub(super) const TABLE_ENTRY: u64 = 12;
/// Bytes of the hash table per entry.
pub(super) const HASH_ENTRY: u64 = 8;
