//! Values inside payloads: serde + bincode 2 with the standard
//! configuration (varint integers, little-endian), as the reference uses.

#![forbid(unsafe_code)]

use std::cell::Cell;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;

use serde::Serialize;
use serde::de::{DeserializeOwned, DeserializeSeed, Deserializer, Visitor};
use xxhash_rust::xxh64::Xxh64;

use crate::raw::error::{ParError, Result};
use crate::typed::guard::GuardedSeed;

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
    bincode::serde::encode_into_writer(value, Append(out), bincode::config::standard()).map_err(
        |error| ParError::Encode {
            what,
            why: error.to_string(),
        },
    )
}

/// A bincode writer appending to a vector (in place of bincode's
/// `std::io::Write` adapter, which also counts every write).
struct Append<'v>(&'v mut Vec<u8>);

impl bincode::enc::write::Writer for Append<'_> {
    #[inline(always)]
    fn write(&mut self, bytes: &[u8]) -> Result<(), bincode::error::EncodeError> {
        self.0.extend_from_slice(bytes);
        Ok(())
    }
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

/// A number or boolean type, as bincode encodes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plain {
    Bool,
    U8,
    U16,
    U32,
    U64,
    U128,
    I8,
    I16,
    I32,
    I64,
    I128,
    F32,
    F64,
}

/// The number or boolean type `T` decodes as, when it decodes as one alone
/// (the type itself, or newtypes around it): what its `Deserialize` asks a
/// probe deserializer for. A `Deserialize` consumes its deserializer with
/// one request, so a type that asks for a `u64` is encoded exactly as a
/// `u64`, whatever its visitor then makes of the value.
pub(crate) fn plain_kind<T: DeserializeOwned>() -> Option<Plain> {
    let asked = Cell::new(None);
    // The probe's values are made up: only the request matters.
    drop(T::deserialize(Probe(&asked)));
    asked.get()
}

/// The deserializer [`plain_kind`] hands a type: it answers requests for
/// numbers and booleans (and looks through newtypes), refuses the rest.
struct Probe<'c>(&'c Cell<Option<Plain>>);

#[derive(Debug)]
struct NotPlain;

impl fmt::Display for NotPlain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a number or boolean")
    }
}

impl std::error::Error for NotPlain {}

impl serde::de::Error for NotPlain {
    fn custom<M: fmt::Display>(_: M) -> Self {
        NotPlain
    }
}

macro_rules! probe_plain {
    ($($method:ident => $kind:ident, $visit:ident($zero:expr);)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, NotPlain> {
            self.0.set(Some(Plain::$kind));
            visitor.$visit($zero)
        }
    )*};
}

impl<'de> Deserializer<'de> for Probe<'_> {
    type Error = NotPlain;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, NotPlain> {
        Err(NotPlain)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, NotPlain> {
        // bincode encodes a newtype as what it wraps.
        visitor.visit_newtype_struct(self)
    }

    probe_plain! {
        deserialize_bool => Bool, visit_bool(false);
        deserialize_u8 => U8, visit_u8(0);
        deserialize_u16 => U16, visit_u16(0);
        deserialize_u32 => U32, visit_u32(0);
        deserialize_u64 => U64, visit_u64(0);
        deserialize_u128 => U128, visit_u128(0);
        deserialize_i8 => I8, visit_i8(0);
        deserialize_i16 => I16, visit_i16(0);
        deserialize_i32 => I32, visit_i32(0);
        deserialize_i64 => I64, visit_i64(0);
        deserialize_i128 => I128, visit_i128(0);
        deserialize_f32 => F32, visit_f32(0.0);
        deserialize_f64 => F64, visit_f64(0.0);
    }

    serde::forward_to_deserialize_any! {
        char str string bytes byte_buf option unit unit_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

impl Plain {
    /// The most bytes bincode (standard configuration) encodes one value of
    /// this kind in: a tag byte and the widest integer the kind's decoder
    /// accepts after it, or the fixed size.
    pub(crate) const fn max_len(self) -> usize {
        match self {
            Self::Bool | Self::U8 | Self::I8 => 1,
            Self::U16 | Self::I16 => 3,
            Self::F32 => 4,
            Self::U32 | Self::I32 => 5,
            Self::F64 => 8,
            Self::U64 | Self::I64 => 9,
            Self::U128 | Self::I128 => 17,
        }
    }

    /// The bytes `count` values at the start of `bytes` take, found from
    /// their tag bytes alone, when every tag is one this kind's decoder
    /// accepts and the values lie within `bytes` (then decoding them
    /// succeeds); `None` otherwise, and for booleans, whose byte must be
    /// checked.
    fn skipped_len(self, bytes: &[u8], count: usize) -> Option<usize> {
        // The widest tag the kind's varint decoder accepts (251: u16,
        // 252: u32, 253: u64, 254: u128); below 251 the tag is the value.
        let widest = match self {
            Self::Bool => return None,
            Self::U8 | Self::I8 => return Some(count).filter(|&n| n <= bytes.len()),
            Self::F32 => return count.checked_mul(4).filter(|&n| n <= bytes.len()),
            Self::F64 => return count.checked_mul(8).filter(|&n| n <= bytes.len()),
            Self::U16 | Self::I16 => 251,
            Self::U32 | Self::I32 => 252,
            Self::U64 | Self::I64 => 253,
            Self::U128 | Self::I128 => 254,
        };
        let len_of = |tag: u8| match tag {
            0..=250 => Some(1),
            251 => Some(3),
            252 if widest >= 252 => Some(5),
            253 if widest >= 253 => Some(9),
            254 if widest >= 254 => Some(17),
            _ => None,
        };
        let (mut at, mut left) = (0usize, count);
        while left > 0 {
            let len = len_of(*bytes.get(at)?)?;
            at += len;
            left -= 1;
            // Values of one size usually follow one another: eight tags at
            // once (loads that do not wait on one another), while all eight
            // say that size.
            while left >= 8
                && (0..8).all(|k| {
                    bytes
                        .get(at + k * len)
                        .is_some_and(|&tag| len_of(tag) == Some(len))
                })
            {
                at += 8 * len;
                left -= 8;
            }
        }
        (at <= bytes.len()).then_some(at)
    }
}

/// Moves past `count` values of type `kind` at the start of `bytes`: the
/// bytes serde would read for them, checked alike (each value's tag read,
/// the last within the bytes; a failure is reported by bincode's own
/// decoders, which are run again to name it); returns the bytes used. The
/// chunk at `offset` is named in errors.
pub(crate) fn skip_plain(
    kind: Plain,
    bytes: &[u8],
    count: usize,
    offset: u64,
    what: &'static str,
) -> Result<usize> {
    if let Some(used) = kind.skipped_len(bytes, count) {
        return Ok(used);
    }
    match kind {
        Plain::Bool => decode_plain::<bool>(bytes, count, offset, what, drop),
        Plain::U8 => decode_plain::<u8>(bytes, count, offset, what, drop),
        Plain::U16 => decode_plain::<u16>(bytes, count, offset, what, drop),
        Plain::U32 => decode_plain::<u32>(bytes, count, offset, what, drop),
        Plain::U64 => decode_plain::<u64>(bytes, count, offset, what, drop),
        Plain::U128 => decode_plain::<u128>(bytes, count, offset, what, drop),
        Plain::I8 => decode_plain::<i8>(bytes, count, offset, what, drop),
        Plain::I16 => decode_plain::<i16>(bytes, count, offset, what, drop),
        Plain::I32 => decode_plain::<i32>(bytes, count, offset, what, drop),
        Plain::I64 => decode_plain::<i64>(bytes, count, offset, what, drop),
        Plain::I128 => decode_plain::<i128>(bytes, count, offset, what, drop),
        Plain::F32 => decode_plain::<f32>(bytes, count, offset, what, drop),
        Plain::F64 => decode_plain::<f64>(bytes, count, offset, what, drop),
    }
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
    fn plain_kinds_are_what_types_ask_for() {
        // Never built: only their `Deserialize` is looked at.
        #[derive(serde::Deserialize)]
        #[allow(dead_code)]
        struct Id(u64);
        #[derive(serde::Deserialize)]
        #[allow(dead_code)]
        struct Pair(u64, u64);
        assert_eq!(plain_kind::<u64>(), Some(Plain::U64));
        assert_eq!(plain_kind::<usize>(), Some(Plain::U64));
        assert_eq!(plain_kind::<i16>(), Some(Plain::I16));
        assert_eq!(plain_kind::<f64>(), Some(Plain::F64));
        assert_eq!(plain_kind::<bool>(), Some(Plain::Bool));
        assert_eq!(plain_kind::<Id>(), Some(Plain::U64));
        // A visitor refusing the probe's zero still asked for a u64.
        assert_eq!(plain_kind::<std::num::NonZeroU64>(), Some(Plain::U64));
        assert_eq!(plain_kind::<Pair>(), None);
        assert_eq!(plain_kind::<String>(), None);
        assert_eq!(plain_kind::<Option<u64>>(), None);
        assert_eq!(plain_kind::<char>(), None);
    }

    #[test]
    fn skipping_reads_what_decoding_reads() {
        let values: Vec<i64> = vec![0, -1, 300, i64::MIN, 1 << 40, 7];
        let bytes = encode(&values, "x").unwrap();
        let (_, prefix) = decode::<u64>(&bytes, 0, "x").unwrap();
        for (count, value) in values.iter().enumerate() {
            let used = skip_plain(Plain::I64, &bytes[prefix..], count, 0, "x").unwrap();
            let (next, _) = decode::<i64>(&bytes[prefix + used..], 0, "x").unwrap();
            assert_eq!(next, *value);
        }
        // Past the end, and a tag a u16 cannot have, are errors.
        assert!(skip_plain(Plain::I64, &bytes[prefix..], 7, 0, "x").is_err());
        assert!(skip_plain(Plain::U16, &[253, 0, 0, 0, 0, 0, 0, 0, 0], 1, 0, "x").is_err());
    }

    #[test]
    fn tag_skipping_agrees_with_bincode_on_any_bytes() {
        use Plain::*;
        // Bytes biased towards tags, every kind, every count up to the end.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..2000 {
            let bytes: Vec<u8> = (0..state % 40)
                .map(|_| {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1);
                    let byte = (state >> 56) as u8;
                    if byte % 3 == 0 { 250 + byte % 6 } else { byte }
                })
                .collect();
            for kind in [U8, U16, U32, U64, U128, I8, I16, I32, I64, I128, F32, F64] {
                for count in 0..=bytes.len() + 1 {
                    let slow = match kind {
                        U8 => decode_plain::<u8>(&bytes, count, 0, "x", drop),
                        U16 => decode_plain::<u16>(&bytes, count, 0, "x", drop),
                        U32 => decode_plain::<u32>(&bytes, count, 0, "x", drop),
                        U64 => decode_plain::<u64>(&bytes, count, 0, "x", drop),
                        U128 => decode_plain::<u128>(&bytes, count, 0, "x", drop),
                        I8 => decode_plain::<i8>(&bytes, count, 0, "x", drop),
                        I16 => decode_plain::<i16>(&bytes, count, 0, "x", drop),
                        I32 => decode_plain::<i32>(&bytes, count, 0, "x", drop),
                        I64 => decode_plain::<i64>(&bytes, count, 0, "x", drop),
                        I128 => decode_plain::<i128>(&bytes, count, 0, "x", drop),
                        F32 => decode_plain::<f32>(&bytes, count, 0, "x", drop),
                        _ => decode_plain::<f64>(&bytes, count, 0, "x", drop),
                    };
                    assert_eq!(
                        kind.skipped_len(&bytes, count),
                        slow.ok(),
                        "{kind:?} {count} {bytes:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn strings_are_checked_as_utf8() {
        for text in [
            "",
            "ascii only",
            "d\u{e9}j\u{e0} vu \u{1f980}",
            "0123456789abcdef\u{e9}",
        ] {
            let bytes = encode(text, "string").unwrap();
            assert_eq!(decode::<String>(&bytes, 0, "string").unwrap().0, text);
            assert_eq!(
                decode::<Box<str>>(&bytes, 0, "string").unwrap().0.as_ref(),
                text
            );
        }
        // A lone continuation byte, a truncated sequence, an overlong one.
        for bad in [&[1u8, 0x80][..], &[2, b'a', 0xc3], &[2, 0xc0, 0x80]] {
            assert!(matches!(
                decode::<String>(bad, 3, "string"),
                Err(ParError::Payload { offset: 3, .. })
            ));
        }
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
