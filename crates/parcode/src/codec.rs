//! Values inside payloads: serde + bincode 2 with the standard
//! configuration (varint integers, little-endian), as the reference uses.

use std::hash::{Hash, Hasher};

use serde::Serialize;
use serde::de::DeserializeOwned;
use xxhash_rust::xxh64::Xxh64;

use crate::error::{ParError, Result};

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
/// `offset`; returns it with the number of bytes it used. serde's
/// collections never preallocate more than a small bound from a length in
/// the input, so a hostile length fails at the end of the bytes instead of
/// allocating.
pub fn decode<T: DeserializeOwned>(
    bytes: &[u8],
    offset: u64,
    what: &'static str,
) -> Result<(T, usize)> {
    bincode::serde::decode_from_slice(bytes, bincode::config::standard()).map_err(|error| {
        ParError::Payload {
            offset,
            what,
            why: error.to_string(),
        }
    })
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
}
