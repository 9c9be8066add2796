//! One bucket of the bucket layout: its tables checked, its entries
//! found by hash and read on demand.

use std::borrow::Cow;
use std::hash::Hash;

use serde::de::DeserializeOwned;

use super::layout::{BUCKET_HEADER, HASH_ENTRY, TABLE_ENTRY};
use super::value_reader::{ValueBytes, ValueReader};

use crate::raw::error::{ParError, Result};
use crate::raw::reader::Chunk;
use crate::typed::codec::{decode, hash_key};

/// A bucket's payload, split into its tables after checking them.
pub(super) struct Bucket<'a> {
    /// The bucket chunk's offset, for errors.
    pub(super) at: u64,
    pub(super) index: u32,
    pub(super) buckets: u32,
    pub(super) count: u32,
    /// The payload's first bytes read from a stored bucket: the header, the
    /// hash table, the offset table, and whatever followed in the same read
    /// (empty for a whole payload, which holds them).
    pub(super) head: Cow<'a, [u8]>,
    pub(super) data: Data<'a>,
    /// Where the entries start in the payload, and how many bytes they take.
    pub(super) data_start: u64,
    pub(super) data_len: u64,
}

/// Where a bucket's entries are read from.
pub(super) enum Data<'a> {
    /// The whole payload, decompressed (borrowed from a source in memory).
    Whole(Cow<'a, [u8]>),
    /// The chunk, its payload stored as is: ranges are read on demand.
    Stored(Chunk<'a>),
}

/// Entries whose tables a stored bucket's first read covers (with the
/// header, in one read): the reference's buckets aim for 2,000 entries; a
/// bigger bucket's remaining tables take a second read.
const TABLES_READ: u64 = 2_304;

/// Key bytes read at first when a key is decoded from a stored entry; a
/// longer key is read again with 16 times as many.
pub(super) const KEY_READ: u64 = 4096;

/// Entry bytes a listing reads at first ([`Bucket::key_and_value_len`]):
/// the key and the value's length, not the value (a key longer than about
/// 240 bytes is read again with 16 times as many).
pub(super) const LISTED_PREFIX: u64 = 256;

impl<'a> Bucket<'a> {
    /// Bucket `index` of `buckets` in `chunk`: the whole payload (`whole`),
    /// or, stored as is outside memory, its header and hash table, with the
    /// offset table too when `offsets` (for a pass over every entry); a
    /// lookup then reads only the offsets around the entries it reads.
    pub(super) fn open(
        chunk: Chunk<'a>,
        index: u32,
        buckets: u32,
        whole: bool,
        offsets: bool,
    ) -> Result<Self> {
        let at = chunk.offset();
        let stored_as_is = chunk.compression() == crate::raw::compression::Compression::None;
        let in_memory = chunk.source().in_memory().is_some();
        let (data, payload_len) = if whole || !stored_as_is || in_memory {
            let payload = chunk.payload()?;
            let len = payload.len() as u64;
            (Data::Whole(payload), len)
        } else {
            let len = chunk.payload_len();
            (Data::Stored(chunk), len)
        };
        let mut bucket = Self {
            at,
            index,
            buckets,
            count: 0,
            head: Cow::Borrowed(&[]),
            data,
            data_start: 0,
            data_len: 0,
        };
        // The reference writes an empty bucket as an empty payload.
        if payload_len == 0 {
            return Ok(bucket);
        }
        let bad = |why: String| ParError::Payload {
            offset: at,
            what: "map bucket",
            why,
        };
        if payload_len < BUCKET_HEADER {
            return Err(bad(format!(
                "{payload_len} bytes, too short for the 8-byte bucket header"
            )));
        }
        // One read for the header and (usually) the tables read: their
        // size is known only from the count in the header.
        let per_entry = if offsets { TABLE_ENTRY } else { HASH_ENTRY };
        if let Data::Stored(chunk) = &bucket.data {
            let first = payload_len.min(BUCKET_HEADER + per_entry * TABLES_READ);
            bucket.head = chunk.stored_bytes(0, first)?;
        }
        let count = bucket
            .head()
            .first_chunk::<4>()
            .map_or(0, |bytes| u32::from_le_bytes(*bytes));
        // Every byte a bucket holds belongs to an entry: an empty bucket is
        // an empty payload (or its header alone).
        if count == 0 && payload_len > BUCKET_HEADER {
            return Err(ParError::BucketUnused {
                bucket: at,
                bytes: payload_len - BUCKET_HEADER,
            });
        }
        let tables_len = u64::from(count) * TABLE_ENTRY;
        if tables_len > payload_len - BUCKET_HEADER {
            return Err(bad(format!(
                "{count} entries need {} bytes of tables but the payload has {payload_len}",
                tables_len + BUCKET_HEADER
            )));
        }
        let have = bucket.head.len() as u64;
        let wanted = BUCKET_HEADER + u64::from(count) * per_entry;
        if let Data::Stored(chunk) = &bucket.data
            && have < wanted
        {
            let rest = chunk.stored_bytes(have, wanted - have)?;
            let mut head = std::mem::take(&mut bucket.head).into_owned();
            head.extend_from_slice(&rest);
            bucket.head = Cow::Owned(head);
        }
        bucket.count = count;
        bucket.data_start = BUCKET_HEADER + tables_len;
        bucket.data_len = payload_len - bucket.data_start;
        Ok(bucket)
    }

    /// The payload's first bytes: at least the header and the tables.
    pub(super) fn head(&self) -> &[u8] {
        match &self.data {
            Data::Whole(bytes) => bytes,
            Data::Stored(_) => &self.head,
        }
    }

    /// `len` bytes of the payload from `start`, which the caller checked
    /// (from the first read when it holds them).
    pub(super) fn bytes(&self, start: u64, len: u64) -> Result<Cow<'_, [u8]>> {
        let range = start as usize..(start + len) as usize;
        match &self.data {
            Data::Whole(bytes) => Ok(Cow::Borrowed(bytes.get(range).unwrap_or_default())),
            Data::Stored(chunk) => match self.head.get(range) {
                Some(bytes) => Ok(Cow::Borrowed(bytes)),
                None => chunk.stored_bytes(start, len),
            },
        }
    }

    pub(super) fn hash(&self, entry: u32) -> u64 {
        let at = BUCKET_HEADER as usize + entry as usize * 8;
        self.head()
            .get(at..at + 8)
            .and_then(|bytes| bytes.first_chunk::<8>())
            .map_or(0, |bytes| u64::from_le_bytes(*bytes))
    }

    /// Entry `entry`'s bytes in the data, up to the next entry's start (the
    /// last: to the end), checked: the first starts at 0, each after the one
    /// before, none past the data; and its hash belongs in this bucket. A
    /// lookup checks the entries it reads (reading the offsets of the
    /// entry, the one before and the one after, when the first read did not
    /// bring the offset table); a load, every entry.
    pub(super) fn span(&self, entry: u32) -> Result<(u64, u64)> {
        let first = entry.saturating_sub(1);
        let last = entry.saturating_add(1).min(self.count.saturating_sub(1));
        let window = self.bytes(
            BUCKET_HEADER + u64::from(self.count) * HASH_ENTRY + u64::from(first) * 4,
            u64::from(last.saturating_sub(first) + 1) * 4,
        )?;
        let offset = |at: u32| {
            let at = at.saturating_sub(first) as usize * 4;
            window
                .get(at..at + 4)
                .and_then(|bytes| bytes.first_chunk::<4>())
                .map_or(0, |bytes| u64::from(u32::from_le_bytes(*bytes)))
        };
        let start = offset(entry);
        let previous = entry.checked_sub(1).map(offset);
        let end = if entry + 1 < self.count {
            offset(entry + 1)
        } else {
            self.data_len
        };
        let in_order = match previous {
            None => start == 0,
            Some(previous) => start > previous,
        };
        // The next entry starts after this one; the last ends at the end.
        let next_in_order = if entry + 1 < self.count {
            end > start
        } else {
            end >= start
        };
        if !in_order || !next_in_order {
            let (entry, start, previous) = if in_order {
                // This entry is fine; the next one starts before it.
                (entry + 1, end, start)
            } else {
                (entry, start, previous.unwrap_or(0))
            };
            return Err(ParError::EntryOutOfOrder {
                bucket: self.at,
                entry,
                start,
                previous,
            });
        }
        let hash = self.hash(entry);
        let expected = hash % u64::from(self.buckets.max(1));
        if expected != u64::from(self.index) {
            return Err(ParError::WrongBucket {
                bucket: self.at,
                index: self.index,
                buckets: self.buckets,
                entry,
                hash,
                expected,
            });
        }
        Ok((start, end - start))
    }

    /// Entries whose stored hash is `target`, in table order (one pass
    /// over the hash table: every entry with the hash is a candidate).
    pub(super) fn with_hash(&self, target: u64) -> impl Iterator<Item = u32> + '_ {
        let first = BUCKET_HEADER as usize;
        let hashes = self
            .head()
            .get(first..first + self.count as usize * 8)
            .unwrap_or_default();
        // Blocks of eight hashes tested at once (compares the compiler
        // vectorizes); the few blocks with a match, and the rest, one by one.
        let blocks = hashes.chunks_exact(64);
        let rest = blocks.remainder();
        let rest_first = (hashes.len() / 64 * 8) as u32;
        let hit = move |block: &[u8; 64]| {
            block.chunks_exact(8).fold(false, |hit, hash| {
                hit | hash
                    .first_chunk::<8>()
                    .is_some_and(|hash| u64::from_le_bytes(*hash) == target)
            })
        };
        blocks
            .enumerate()
            .filter(move |(_, block)| block.first_chunk::<64>().is_some_and(hit))
            .flat_map(move |(block, bytes)| entries_with_hash(bytes, block as u32 * 8, target))
            .chain(entries_with_hash(rest, rest_first, target))
    }

    /// Checks a decoded key against its stored hash.
    pub(super) fn check_hash<K: Hash>(&self, entry: u32, key: &K) -> Result<()> {
        let (stored, computed) = (self.hash(entry), hash_key(key));
        if stored != computed {
            return Err(ParError::HashMismatch {
                bucket: self.at,
                entry,
                stored,
                computed,
            });
        }
        Ok(())
    }

    /// Entry `entry`, which must decode to exactly its bytes.
    pub(super) fn entry<K: DeserializeOwned + Hash, V: DeserializeOwned>(
        &self,
        entry: u32,
    ) -> Result<(K, V)> {
        let (start, length) = self.span(entry)?;
        let bytes = self.bytes(self.data_start + start, length)?;
        let ((key, value), used) = decode::<(K, V)>(&bytes, self.at, "map entry")?;
        if used as u64 != length {
            return Err(ParError::EntryLength {
                bucket: self.at,
                entry,
                length,
                used: used as u64,
            });
        }
        self.check_hash(entry, &key)?;
        Ok((key, value))
    }

    /// Entry `entry`'s key, checked against its hash, and the bytes it
    /// takes; reads only a prefix of the entry when that holds the key.
    pub(super) fn key<K: DeserializeOwned + Hash>(&self, entry: u32) -> Result<(K, u64)> {
        let (start, length) = self.span(entry)?;
        let mut read = length.min(KEY_READ);
        loop {
            let bytes = self.bytes(self.data_start + start, read)?;
            match decode::<K>(&bytes, self.at, "map key") {
                Ok((key, used)) => {
                    self.check_hash(entry, &key)?;
                    return Ok((key, used as u64));
                }
                Err(_) if read < length => read = length.min(read.saturating_mul(16)),
                Err(error) => return Err(error),
            }
        }
    }

    /// Entry `entry`'s key, checked against its hash, and the length of
    /// its value, a byte vector, which must end where the entry does;
    /// reads only a prefix of the entry when that holds both.
    pub(super) fn key_and_value_len<K: DeserializeOwned + Hash>(
        &self,
        entry: u32,
    ) -> Result<(K, u64)> {
        let (start, length) = self.span(entry)?;
        let mut read = length.min(LISTED_PREFIX);
        loop {
            let bytes = self.bytes(self.data_start + start, read)?;
            let decoded = decode::<K>(&bytes, self.at, "map key").and_then(|(key, used)| {
                let rest = bytes.get(used..).unwrap_or_default();
                let (len, more) = decode::<u64>(rest, self.at, "map value length")?;
                Ok((key, (used + more) as u64, len))
            });
            match decoded {
                Ok((key, prefix, len)) => {
                    self.check_hash(entry, &key)?;
                    if prefix.checked_add(len) != Some(length) {
                        return Err(ParError::EntryLength {
                            bucket: self.at,
                            entry,
                            length,
                            used: prefix.saturating_add(len),
                        });
                    }
                    return Ok((key, len));
                }
                Err(_) if read < length => read = length.min(read.saturating_mul(16)),
                Err(error) => return Err(error),
            }
        }
    }

    /// A reader of entry `entry`'s value, a byte vector after a key of
    /// `key_len` bytes: a varint length, then the bytes, which must end
    /// where the entry does.
    pub(super) fn value_reader(self, entry: u32, key_len: u64) -> Result<ValueReader<'a>> {
        let (start, length) = self.span(entry)?;
        let value_at = start + key_len;
        let prefix = self.bytes(self.data_start + value_at, (length - key_len).min(9))?;
        let (len, used) = decode::<u64>(&prefix, self.at, "map value length")?;
        let bytes_at = value_at + used as u64;
        if len != length - (bytes_at - start) {
            return Err(ParError::EntryLength {
                bucket: self.at,
                entry,
                length,
                used: (bytes_at - start).saturating_add(len),
            });
        }
        let from = self.data_start + bytes_at;
        Ok(match self.data {
            Data::Whole(bytes) => ValueReader::new(ValueBytes::Memory(bytes), from, len)?,
            Data::Stored(chunk) => {
                let start = chunk.offset() + from;
                // The value is read next: a remote source fetches it and
                // reads ahead no further than its end.
                if len > 0 && chunk.source().in_memory().is_none() {
                    chunk
                        .source()
                        .will_read(std::slice::from_ref(&(start..start.saturating_add(len))));
                }
                ValueReader::new(ValueBytes::Stored(chunk.source()), start, len)?
            }
        })
    }
}

/// The entries (numbered from `first`) of the hash table `hashes` whose
/// hash is `target`.
fn entries_with_hash(hashes: &[u8], first: u32, target: u64) -> impl Iterator<Item = u32> + '_ {
    hashes
        .chunks_exact(8)
        .enumerate()
        .filter(move |(_, hash)| {
            hash.first_chunk::<8>()
                .is_some_and(|hash| u64::from_le_bytes(*hash) == target)
        })
        .map(move |(at, _)| first + at as u32)
}
