//! Chunk payload compression, framed as the reference's `lz4_flex` feature
//! frames it: the uncompressed size as a little-endian u32, then one LZ4
//! block.
//!
//! ```text
//! id 0: payload as is        id 1: size u32 LE | LZ4 block
//! ```

use std::borrow::Cow;

use crate::raw::error::{ParError, Result};

/// LZ4 never expands less than this: a block of `n` bytes decodes to at most
/// `255 n + 16` bytes, so a larger stated size is refused before allocating.
const LZ4_MAX_RATIO: u64 = 255;

/// A chunk payload's compression.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Compression {
    /// Stored as is (id 0).
    #[default]
    None,
    /// LZ4 block with its size prepended (id 1).
    Lz4,
}

impl Compression {
    /// The name tools show: `none` or `lz4`.
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Lz4 => "lz4",
        }
    }

    /// The id stored in the meta byte.
    pub fn id(self) -> u8 {
        match self {
            Self::None => 0,
            Self::Lz4 => 1,
        }
    }

    /// The compression with meta-byte id `id`, for the chunk at `offset`.
    pub fn from_id(id: u8, offset: u64) -> Result<Self> {
        match id {
            0 => Ok(Self::None),
            1 => Ok(Self::Lz4),
            _ => Err(ParError::UnknownCompression { offset, id }),
        }
    }

    /// Compresses a payload (borrowing it when stored as is).
    pub fn compress(self, payload: &[u8]) -> Result<Cow<'_, [u8]>> {
        match self {
            Self::None => Ok(Cow::Borrowed(payload)),
            Self::Lz4 => {
                u32::try_from(payload.len()).map_err(|_| ParError::Encode {
                    what: "LZ4 payload",
                    why: format!("{} bytes exceed the u32 size prefix", payload.len()),
                })?;
                Ok(Cow::Owned(lz4_flex::compress_prepend_size(payload)))
            }
        }
    }

    /// [`Compression::compress`] of a payload the caller owns: stored as
    /// is, it is returned without a copy.
    pub(crate) fn compress_owned(self, payload: Vec<u8>) -> Result<Vec<u8>> {
        match self.compress(&payload)? {
            Cow::Borrowed(_) => Ok(payload),
            Cow::Owned(compressed) => Ok(compressed),
        }
    }

    /// Checks the size an LZ4 prefix claims against what its `block`-byte
    /// block can decode to, before anything is allocated by it.
    pub(crate) fn check_lz4_claim(claim: u64, block: u64, offset: u64) -> Result<()> {
        if claim > LZ4_MAX_RATIO * block + 16 {
            return Err(ParError::Lz4 {
                offset,
                why: format!("a {block}-byte block cannot hold the {claim} bytes it claims"),
            });
        }
        Ok(())
    }

    /// Decompresses the payload of the chunk at `offset`, borrowing it when
    /// it is stored as is.
    pub fn decompress(self, stored: &[u8], offset: u64) -> Result<Cow<'_, [u8]>> {
        match self {
            Self::None => Ok(Cow::Borrowed(stored)),
            Self::Lz4 => {
                let lz4 = |why: String| ParError::Lz4 { offset, why };
                let (size, block) = stored.split_first_chunk::<4>().ok_or_else(|| {
                    lz4(format!(
                        "{} bytes, too short for the size prefix",
                        stored.len()
                    ))
                })?;
                let size = u64::from(u32::from_le_bytes(*size));
                Self::check_lz4_claim(size, block.len() as u64, offset)?;
                let mut out = vec![0; size as usize];
                let written = lz4_flex::block::decompress_into(block, &mut out)
                    .map_err(|error| lz4(error.to_string()))?;
                if written as u64 != size {
                    return Err(lz4(format!(
                        "decompressed to {written} bytes, expected {size}"
                    )));
                }
                Ok(Cow::Owned(out))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lz4_round_trip_and_framing() {
        let data = b"abcabcabcabcabcabcabcabc".repeat(10);
        let stored = Compression::Lz4.compress(&data).unwrap();
        assert_eq!(&stored[..4], &(data.len() as u32).to_le_bytes());
        assert_eq!(
            &*Compression::Lz4.decompress(&stored, 0).unwrap(),
            &data[..]
        );
    }

    #[test]
    fn hostile_lz4_sizes_are_refused_without_allocating() {
        let mut stored = u32::MAX.to_le_bytes().to_vec();
        stored.extend_from_slice(&[0x10, b'a']);
        assert!(matches!(
            Compression::Lz4.decompress(&stored, 7),
            Err(ParError::Lz4 { offset: 7, .. })
        ));
        let good = Compression::Lz4.compress(&[1u8; 1000]).unwrap();
        assert!(
            Compression::Lz4
                .decompress(&good[..good.len() - 1], 0)
                .is_err()
        );
        assert!(Compression::Lz4.decompress(&[1, 0], 0).is_err());
        assert!(matches!(
            Compression::from_id(2, 9),
            Err(ParError::UnknownCompression { offset: 9, id: 2 })
        ));
    }
}
