//! A bounds-checked forward reader over a byte slice.
//!
//! [`ByteReader`] is for variable-length structures (manifests, tables of
//! varints, text blocks): every read says what it reads, and every failure is
//! reported at its absolute file offset, because the reader knows where its
//! slice starts in the file.

use crate::error::{Error, Result, What};
use crate::layout::Record;
use crate::range::check_count;
use crate::varint;

/// Reads little-endian values, varints and records from the front of a slice.
#[derive(Debug, Clone)]
pub struct ByteReader<'a> {
    bytes: &'a [u8],
    position: usize,
    base: u64,
}

impl<'a> ByteReader<'a> {
    /// A reader over `bytes`, which start at offset 0 of the file.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self::at(bytes, 0)
    }

    /// A reader over `bytes`, which start at file offset `base`.
    pub fn at(bytes: &'a [u8], base: u64) -> Self {
        Self {
            bytes,
            position: 0,
            base,
        }
    }

    /// The absolute file offset of the next byte.
    pub fn offset(&self) -> u64 {
        self.base + self.position as u64
    }

    /// The bytes not yet read.
    pub fn rest(&self) -> &'a [u8] {
        self.bytes.get(self.position..).unwrap_or_default()
    }

    /// How many bytes are left.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.position
    }

    /// Whether every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The next `len` bytes.
    pub fn bytes(&mut self, len: usize, what: impl Into<What>) -> Result<&'a [u8]> {
        let rest = self.rest();
        let taken = rest.get(..len).ok_or_else(|| Error::Truncated {
            what: what.into(),
            offset: self.offset(),
            needed: len as u64,
            available: rest.len() as u64,
        })?;
        self.position += len;
        Ok(taken)
    }

    /// The next `len` bytes, for a length read from the file.
    pub fn bytes_u64(&mut self, len: u64, what: impl Into<What>) -> Result<&'a [u8]> {
        let what = what.into();
        let len = usize::try_from(len).map_err(|_| Error::Truncated {
            what: what.clone(),
            offset: self.offset(),
            needed: len,
            available: self.remaining() as u64,
        })?;
        self.bytes(len, what)
    }

    /// The next `N` bytes as an array.
    pub fn array<const N: usize>(&mut self, what: impl Into<What>) -> Result<[u8; N]> {
        let bytes = self.bytes(N, what)?;
        let mut array = [0; N];
        array.copy_from_slice(bytes);
        Ok(array)
    }

    /// One byte.
    pub fn u8(&mut self, what: impl Into<What>) -> Result<u8> {
        self.array::<1>(what).map(|[byte]| byte)
    }

    /// A little-endian `u16`.
    pub fn u16(&mut self, what: impl Into<What>) -> Result<u16> {
        self.array(what).map(u16::from_le_bytes)
    }

    /// A little-endian `u32`.
    pub fn u32(&mut self, what: impl Into<What>) -> Result<u32> {
        self.array(what).map(u32::from_le_bytes)
    }

    /// A little-endian `u64`.
    pub fn u64(&mut self, what: impl Into<What>) -> Result<u64> {
        self.array(what).map(u64::from_le_bytes)
    }

    /// An unsigned LEB128 varint.
    #[inline(always)]
    pub fn varint(&mut self, what: impl Into<What>) -> Result<u64> {
        // Most varints (ids, differences, small sizes) are one byte, and
        // most others (sizes, offsets inside a block) two or three.
        match *self.rest() {
            [a, ..] if a < 0x80 => {
                self.position += 1;
                Ok(u64::from(a))
            }
            [a, b, ..] if b < 0x80 => {
                self.position += 2;
                Ok(u64::from(a & 0x7f) | u64::from(b) << 7)
            }
            [a, b, c, ..] if c < 0x80 => {
                self.position += 3;
                Ok(u64::from(a & 0x7f) | u64::from(b & 0x7f) << 7 | u64::from(c) << 14)
            }
            _ => self.varint_long(what.into()),
        }
    }

    /// A varint of four bytes or more, or a malformed one.
    #[inline(never)]
    fn varint_long(&mut self, what: What) -> Result<u64> {
        let (value, len) =
            varint::decode_u64(self.rest(), self.offset()).map_err(|error| rename(error, what))?;
        self.position += len;
        Ok(value)
    }

    /// A zigzag LEB128 varint.
    #[inline]
    pub fn varint_signed(&mut self, what: impl Into<What>) -> Result<i64> {
        self.varint(what).map(varint::zigzag_decode)
    }

    /// A varint count of items that each take at least `min_item_size`
    /// bytes, checked against the bytes that remain so it is safe to
    /// allocate by.
    pub fn count(&mut self, min_item_size: u64, what: impl Into<What>) -> Result<usize> {
        let what = what.into();
        let count = self.varint(what.clone())?;
        check_count(count, min_item_size, self.remaining() as u64, what)
    }

    /// A fixed-layout record, viewed in place.
    pub fn record<R: Record>(&mut self) -> Result<&'a R> {
        let bytes = self.bytes(R::SIZE, R::WHAT)?;
        R::ref_at(bytes, 0)
    }
}

/// Puts the caller's name for a value on an error from a lower layer.
fn rename(error: Error, what: What) -> Error {
    match error {
        Error::Truncated {
            offset,
            needed,
            available,
            ..
        } => Error::Truncated {
            what,
            offset,
            needed,
            available,
        },
        Error::VarintOverflow { offset, .. } => Error::VarintOverflow { what, offset },
        other => other.context(what),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_in_order_with_absolute_offsets() {
        let bytes = [
            1, 0x34, 0x12, 0x78, 0x56, 0x34, 0x12, 0xac, 0x02, b'h', b'i',
        ];
        let mut reader = ByteReader::at(&bytes, 100);
        assert_eq!(reader.u8("a").unwrap(), 1);
        assert_eq!(reader.u16("b").unwrap(), 0x1234);
        assert_eq!(reader.u32("c").unwrap(), 0x1234_5678);
        assert_eq!(reader.offset(), 107);
        assert_eq!(reader.varint("d").unwrap(), 300);
        assert_eq!(reader.bytes(2, "e").unwrap(), b"hi");
        assert!(reader.is_empty());
    }

    proptest::proptest! {
        /// The short forms agree with the general decoder on any bytes:
        /// the value, the length taken, and the error.
        #[test]
        fn varints_read_as_the_general_decoder_reads_them(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..12),
            high in 0u8..12,
        ) {
            // Continuation bits on the first `high` bytes: every length.
            let bytes: Vec<u8> = bytes
                .iter()
                .enumerate()
                .map(|(i, &b)| if i < usize::from(high) { b | 0x80 } else { b & 0x7f })
                .collect();
            let mut reader = ByteReader::at(&bytes, 7);
            let general = varint::decode_u64(&bytes, 7);
            match (reader.varint("v"), general) {
                (Ok(value), Ok((expected, len))) => {
                    proptest::prop_assert_eq!(value, expected);
                    proptest::prop_assert_eq!(reader.remaining(), bytes.len() - len);
                }
                (Err(_), Err(_)) => {}
                (ours, general) => proptest::prop_assert!(false, "{ours:?} vs {general:?}"),
            }
        }
    }

    #[test]
    fn short_reads_name_the_field_and_offset() {
        let mut reader = ByteReader::at(&[1, 2, 3], 50);
        reader.u8("flags").unwrap();
        let error = reader.u32("block count").unwrap_err();
        assert_eq!(
            error.to_string(),
            "truncated block count at offset 51: need 4 bytes, have 2"
        );
        // A failed read consumes nothing.
        assert_eq!(reader.remaining(), 2);
    }

    #[test]
    fn varint_errors_carry_the_callers_name() {
        let mut reader = ByteReader::at(&[0xff, 0xff], 8);
        assert_eq!(
            reader.varint("file size").unwrap_err().to_string(),
            "truncated file size at offset 8: need 3 bytes, have 2"
        );
        let mut reader = ByteReader::new(&[0xff; 12]);
        assert!(matches!(
            reader.varint("chunk id"),
            Err(Error::VarintOverflow { what, offset: 0 }) if what == "chunk id"
        ));
    }

    #[test]
    fn counts_are_bounded_by_what_remains() {
        // Claims 2^60 entries followed by 4 bytes.
        let mut bytes = Vec::new();
        varint::encode_u64(1 << 60, &mut bytes);
        bytes.extend_from_slice(&[0; 4]);
        let mut reader = ByteReader::new(&bytes);
        assert!(matches!(
            reader.count(1, "file table"),
            Err(Error::CountTooLarge { count, .. }) if count == 1 << 60
        ));

        let mut reader = ByteReader::new(&[2, 0, 0]);
        assert_eq!(reader.count(1, "entries").unwrap(), 2);
    }

    #[test]
    fn huge_length_is_truncated_not_a_panic() {
        let mut reader = ByteReader::new(&[0; 4]);
        assert!(matches!(
            reader.bytes_u64(u64::MAX, "payload"),
            Err(Error::Truncated {
                needed: u64::MAX,
                ..
            })
        ));
    }
}
