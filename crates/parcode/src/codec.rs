//! Values inside payloads: serde + bincode 2 with the standard
//! configuration (varint integers, little-endian), as the reference uses.

use std::hash::{Hash, Hasher};
use std::marker::PhantomData;

use serde::Serialize;
use serde::de::{DeserializeOwned, DeserializeSeed};
use xxhash_rust::xxh64::Xxh64;

use crate::error::{ParError, Result};
use crate::guard::GuardedSeed;

/// Encodes a value.
pub fn encode<T: Serialize + ?Sized>(value: &T, what: &'static str) -> Result<Vec<u8>> {
    bincode::serde::encode_to_vec(value, bincode::config::standard()).map_err(|error| {
        ParError::Encode {
            what,
            why: error.to_string(),
        }
    })
}

/// Appends an encoded value to `out`.
pub fn encode_into<T: Serialize + ?Sized>(
    value: &T,
    out: &mut Vec<u8>,
    what: &'static str,
) -> Result<()> {
    bincode::serde::encode_into_std_write(value, out, bincode::config::standard())
        .map(|_| ())
        .map_err(|error| ParError::Encode {
            what,
            why: error.to_string(),
        })
}

/// Decodes a value from the start of `bytes`, the payload of the chunk at
/// `offset`; returns it with the number of bytes it used.
pub fn decode<T: DeserializeOwned>(
    bytes: &[u8],
    offset: u64,
    what: &'static str,
) -> Result<(T, usize)> {
    decode_seed(PhantomData::<T>, bytes, offset, what)
}

/// [`decode`] through a serde seed.
///
/// bincode allocates an owned string or byte vector by the length the
/// input claims before reading it, so a hostile length could ask for any
/// amount. Decoding goes through [`GuardedSeed`], which has bincode decode
/// those as borrowed data, checked against the bytes present before
/// anything is allocated; nothing else bincode decodes from a slice
/// allocates by a claim (serde's collections cap what they reserve from a
/// length hint). So no allocation exceeds what the payload holds, without
/// bincode's limit and its accounting on every value.
pub fn decode_seed<'de, S: DeserializeSeed<'de>>(
    seed: S,
    bytes: &'de [u8],
    offset: u64,
    what: &'static str,
) -> Result<(S::Value, usize)> {
    bincode::serde::seed_decode_from_slice(GuardedSeed(seed), bytes, bincode::config::standard())
        .map_err(|error| ParError::Payload {
            offset,
            what,
            why: error.to_string(),
        })
}

/// A bincode reader over a slice that counts the bytes it gave out.
struct Counting<'s> {
    bytes: &'s [u8],
    used: usize,
}

impl bincode::de::read::Reader for Counting<'_> {
    #[inline]
    fn read(&mut self, out: &mut [u8]) -> Result<(), bincode::error::DecodeError> {
        let Some((taken, rest)) = self.bytes.split_at_checked(out.len()) else {
            return Err(bincode::error::DecodeError::UnexpectedEnd {
                additional: out.len() - self.bytes.len(),
            });
        };
        out.copy_from_slice(taken);
        self.bytes = rest;
        self.used += out.len();
        Ok(())
    }

    #[inline]
    fn peek_read(&mut self, n: usize) -> Option<&[u8]> {
        self.bytes.get(..n)
    }

    #[inline]
    fn consume(&mut self, n: usize) {
        let n = n.min(self.bytes.len());
        self.bytes = self.bytes.get(n..).unwrap_or_default();
        self.used += n;
    }
}

/// Values of a type that allocates nothing (numbers, booleans) decoded one
/// after another by bincode's own decoders (the same bytes as through
/// serde, without its per-value indirection): `count` of them, each handed
/// to `each`. Returns the bytes used. The chunk at `offset` is named in
/// errors.
pub(crate) fn decode_plain<T: bincode::Decode<()>>(
    bytes: &[u8],
    count: usize,
    offset: u64,
    what: &'static str,
    mut each: impl FnMut(T),
) -> Result<usize> {
    let mut decoder =
        bincode::de::DecoderImpl::new(Counting { bytes, used: 0 }, bincode::config::standard(), ());
    for _ in 0..count {
        let value = T::decode(&mut decoder).map_err(|error| ParError::Payload {
            offset,
            what,
            why: error.to_string(),
        })?;
        each(value);
    }
    Ok(bincode::de::Decoder::reader(&mut decoder).used)
}

/// The hash the reference buckets map keys by: xxHash64, seed 0, over the
/// bytes the key's `Hash` implementation feeds a hasher.
pub fn hash_key<K: Hash + ?Sized>(key: &K) -> u64 {
    let mut hasher = Xxh64::new(0);
    key.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_keys_hash_their_bytes_then_0xff() {
        // `str`'s Hash writes the bytes and a 0xff terminator.
        assert_eq!(hash_key("abc"), xxhash_rust::xxh64::xxh64(b"abc\xff", 0));
        assert_eq!(hash_key(&"abc".to_owned()), hash_key("abc"));
    }

    #[test]
    fn standard_config_is_varint() {
        assert_eq!(encode(&300u64, "x").unwrap(), [251, 44, 1]);
        assert_eq!(encode(&vec![1u8, 2], "x").unwrap(), [2, 1, 2]);
        let (value, used) = decode::<u64>(&[251, 44, 1, 9], 0, "x").unwrap();
        assert_eq!((value, used), (300, 3));
    }

    #[test]
    fn a_hostile_length_fails_without_allocating() {
        // A Vec<u64> claiming u64::MAX items in 10 bytes.
        let bytes = encode(&u64::MAX, "len").unwrap();
        assert!(decode::<Vec<u64>>(&bytes, 0, "vec").is_err());
    }

    #[test]
    fn a_length_beyond_the_payload_is_an_error_not_an_allocation() {
        // 0xFD introduces a u64 varint: a string of 2^62 bytes in 9 bytes.
        let mut bytes = vec![0xFD];
        bytes.extend_from_slice(&(1u64 << 62).to_le_bytes());
        assert!(matches!(
            decode::<String>(&bytes, 7, "string"),
            Err(ParError::Payload { offset: 7, .. })
        ));
        assert!(decode::<Vec<u8>>(&bytes, 7, "bytes").is_err());
        assert!(decode::<Vec<String>>(&bytes, 7, "strings").is_err());
        // What fits still decodes.
        let hello = encode("hello", "string").unwrap();
        assert_eq!(decode::<String>(&hello, 0, "string").unwrap().0, "hello");
    }
}
