//! Unsigned LEB128 varints and zigzag-encoded signed varints.
//!
//! ```text
//! value 300 = 0b1_0010_1100
//! bytes      [1010_1100] [0000_0010]
//!             │└ low 7 bits, continuation bit set
//!             └─ next 7 bits, continuation bit clear: last byte
//! ```
//!
//! A `u64` needs at most 10 bytes, and the 10th may only carry the value's top
//! bit. Decoding refuses an 11th byte and bits beyond 64 with
//! [`Error::VarintOverflow`] instead of wrapping, and an input that ends
//! inside a varint with [`Error::Truncated`] at the varint's offset.
//! Encoders emit the shortest form; decoders accept padded forms such as
//! `80 00` for 0, as protobuf and most LEB128 readers do.

use crate::error::{Error, Result};

/// The longest encoding of a `u64`.
pub const MAX_LEN: usize = 10;

/// Appends the shortest LEB128 encoding of `value`.
pub fn encode_u64(mut value: u64, out: &mut Vec<u8>) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Appends the zigzag LEB128 encoding of `value`.
pub fn encode_i64(value: i64, out: &mut Vec<u8>) {
    encode_u64(zigzag_encode(value), out);
}

/// The number of bytes [`encode_u64`] writes for `value`.
pub fn encoded_len(value: u64) -> usize {
    let bits = 64 - (value | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Maps signed to unsigned so small magnitudes stay small: 0, -1, 1, -2 → 0, 1, 2, 3.
pub fn zigzag_encode(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

/// Inverse of [`zigzag_encode`].
pub fn zigzag_decode(value: u64) -> i64 {
    ((value >> 1) as i64) ^ -((value & 1) as i64)
}

/// Decodes a varint at the start of `bytes`, whose first byte sits at file
/// offset `offset` (for error messages). Returns the value and the number of
/// bytes it used.
pub fn decode_u64(bytes: &[u8], offset: u64) -> Result<(u64, usize)> {
    match decode_u64_words(bytes) {
        Some(decoded) => Ok(decoded),
        None => decode_u64_bytewise(bytes, offset),
    }
}

/// [`decode_u64`] from eight bytes read at once, for a varint that is
/// complete and valid with eight bytes present (nine or ten: with those
/// present too); `None` otherwise, for the byte-by-byte decoder to decode
/// or refuse.
#[inline]
fn decode_u64_words(bytes: &[u8]) -> Option<(u64, usize)> {
    const CONTINUATIONS: u64 = 0x8080_8080_8080_8080;
    let word = u64::from_le_bytes(*bytes.first_chunk::<8>()?);
    let ends = !word & CONTINUATIONS;
    if ends != 0 {
        // The first byte without its continuation bit ends the varint.
        let len = (ends.trailing_zeros() / 8 + 1) as usize;
        let kept = word & (u64::MAX >> (64 - 8 * len));
        return Some((gather(kept), len));
    }
    let low = gather(word);
    match (bytes.get(8).copied()?, bytes.get(9).copied()) {
        (ninth, _) if ninth < 0x80 => Some((low | u64::from(ninth) << 56, 9)),
        // The tenth byte carries bit 63 only.
        (ninth, Some(tenth)) if tenth <= 1 => Some((
            low | u64::from(ninth & 0x7f) << 56 | u64::from(tenth) << 63,
            10,
        )),
        _ => None,
    }
}

/// The 7-bit payloads of eight varint bytes (a little-endian word), side
/// by side.
#[inline]
fn gather(word: u64) -> u64 {
    let word = word & 0x7f7f_7f7f_7f7f_7f7f;
    let word = (word & 0x007f_007f_007f_007f) | (word & 0x7f00_7f00_7f00_7f00) >> 1;
    let word = (word & 0x0000_3fff_0000_3fff) | (word & 0x3fff_0000_3fff_0000) >> 2;
    (word & 0x0000_0000_0fff_ffff) | (word & 0x0fff_ffff_0000_0000) >> 4
}

/// [`decode_u64`] a byte at a time.
fn decode_u64_bytewise(bytes: &[u8], offset: u64) -> Result<(u64, usize)> {
    let mut value = 0u64;
    for (index, &byte) in bytes.iter().take(MAX_LEN).enumerate() {
        let payload = u64::from(byte & 0x7f);
        if index == MAX_LEN - 1 && (byte > 1) {
            // Continuation past 10 bytes, or bits beyond the 64th.
            return Err(Error::VarintOverflow {
                what: "varint".into(),
                offset,
            });
        }
        value |= payload << (7 * index);
        if byte & 0x80 == 0 {
            return Ok((value, index + 1));
        }
    }
    let available = bytes.len().min(MAX_LEN) as u64;
    Err(Error::Truncated {
        what: "varint".into(),
        offset,
        needed: available + 1,
        available,
    })
}

/// Decodes a zigzag varint; see [`decode_u64`].
pub fn decode_i64(bytes: &[u8], offset: u64) -> Result<(i64, usize)> {
    decode_u64(bytes, offset).map(|(value, len)| (zigzag_decode(value), len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn encoded(value: u64) -> Vec<u8> {
        let mut out = Vec::new();
        encode_u64(value, &mut out);
        out
    }

    #[test]
    fn known_encodings() {
        assert_eq!(encoded(0), [0x00]);
        assert_eq!(encoded(1), [0x01]);
        assert_eq!(encoded(127), [0x7f]);
        assert_eq!(encoded(128), [0x80, 0x01]);
        assert_eq!(encoded(300), [0xac, 0x02]);
        assert_eq!(
            encoded(u64::MAX),
            [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]
        );
    }

    #[test]
    fn decodes_and_reports_length() {
        assert_eq!(decode_u64(&[0xac, 0x02, 0xff], 0).unwrap(), (300, 2));
        assert_eq!(
            decode_u64(&encoded(u64::MAX), 0).unwrap(),
            (u64::MAX, MAX_LEN)
        );
    }

    #[test]
    fn padded_forms_are_accepted() {
        assert_eq!(decode_u64(&[0x80, 0x00], 0).unwrap(), (0, 2));
    }

    #[test]
    fn eleven_bytes_overflow() {
        let bytes = [0x80; 11];
        assert!(matches!(
            decode_u64(&bytes, 40),
            Err(Error::VarintOverflow { offset: 40, .. })
        ));
    }

    #[test]
    fn bits_beyond_64_overflow() {
        // Ten bytes whose last one sets bit 64: 2^64 does not fit.
        let mut bytes = [0x80; 10];
        bytes[9] = 0x02;
        assert!(matches!(
            decode_u64(&bytes, 0),
            Err(Error::VarintOverflow { .. })
        ));
    }

    #[test]
    fn truncated_varint_reports_its_offset() {
        let error = decode_u64(&[0xff, 0xff], 1000).unwrap_err();
        assert!(matches!(
            error,
            Error::Truncated {
                offset: 1000,
                needed: 3,
                available: 2,
                ..
            }
        ));
        assert!(matches!(
            decode_u64(&[], 7),
            Err(Error::Truncated {
                offset: 7,
                needed: 1,
                available: 0,
                ..
            })
        ));
    }

    #[test]
    fn zigzag_maps_small_magnitudes_to_small_codes() {
        assert_eq!(zigzag_encode(0), 0);
        assert_eq!(zigzag_encode(-1), 1);
        assert_eq!(zigzag_encode(1), 2);
        assert_eq!(zigzag_encode(-2), 3);
        assert_eq!(zigzag_encode(i64::MAX), u64::MAX - 1);
        assert_eq!(zigzag_encode(i64::MIN), u64::MAX);
        let mut out = Vec::new();
        encode_i64(-65, &mut out);
        assert_eq!(out, [0x81, 0x01]);
        assert_eq!(decode_i64(&out, 0).unwrap(), (-65, 2));
    }

    proptest! {
        #[test]
        fn words_decode_as_bytes_do(bytes in proptest::collection::vec(prop_oneof![Just(0x80u8), Just(0xffu8), Just(0u8), Just(1u8), Just(2u8), any::<u8>()], 0..14)) {
            let bytewise = decode_u64_bytewise(&bytes, 3);
            match decode_u64_words(&bytes) {
                Some(decoded) => prop_assert_eq!(bytewise.as_ref().ok(), Some(&decoded)),
                None => prop_assert!(bytewise.is_err() || bytes.len() < 8),
            }
            prop_assert_eq!(format!("{:?}", decode_u64(&bytes, 3)), format!("{bytewise:?}"));
        }

        #[test]
        fn unsigned_round_trip(value: u64, tail in proptest::collection::vec(any::<u8>(), 0..4)) {
            let mut bytes = encoded(value);
            let len = bytes.len();
            prop_assert_eq!(len, encoded_len(value));
            bytes.extend_from_slice(&tail);
            prop_assert_eq!(decode_u64(&bytes, 0).unwrap(), (value, len));
        }

        #[test]
        fn signed_round_trip(value: i64) {
            let mut bytes = Vec::new();
            encode_i64(value, &mut bytes);
            prop_assert_eq!(decode_i64(&bytes, 0).unwrap(), (value, bytes.len()));
        }

        #[test]
        fn every_prefix_is_truncated(value in 128u64..) {
            let bytes = encoded(value);
            for cut in 0..bytes.len() {
                let truncated = matches!(decode_u64(&bytes[..cut], 0), Err(Error::Truncated { .. }));
                prop_assert!(truncated);
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..16)) {
            if let Ok((_, len)) = decode_u64(&bytes, 0) {
                prop_assert!((1..=MAX_LEN).contains(&len));
            }
        }
    }
}
