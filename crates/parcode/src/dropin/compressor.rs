//! The reference's `Compressor` trait (`parcode::compression`), over the
//! raw layer's [`Compression`].

use std::borrow::Cow;

use crate::dropin::error::ParcodeError;
use crate::raw::compression::Compression;

/// A payload codec, as the reference's `Compressor` trait: the id stored in
/// the meta byte, and the two directions. Writers here choose a
/// [`Compression`]; this trait is for code written against the reference.
pub trait Compressor: Send + Sync + std::fmt::Debug {
    /// The id in the meta byte.
    fn id(&self) -> u8;

    /// `data` stored (borrowed when stored as is).
    fn compress<'a>(&self, data: &'a [u8]) -> Result<Cow<'a, [u8]>, ParcodeError>;

    /// A stored payload back (its stated size checked before allocating).
    fn decompress<'a>(&self, data: &'a [u8]) -> Result<Cow<'a, [u8]>, ParcodeError>;

    /// Appends `data`, stored, to `output`.
    fn compress_append(&self, data: &[u8], output: &mut Vec<u8>) -> Result<(), ParcodeError> {
        output.extend_from_slice(&self.compress(data)?);
        Ok(())
    }
}

/// Payloads stored as is (id 0).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoCompression;

/// LZ4 payloads with a size prefix (id 1).
#[derive(Debug, Clone, Copy, Default)]
pub struct Lz4Compressor;

macro_rules! compressor {
    ($($name:ident => $compression:expr),*) => {$(
        impl Compressor for $name {
            fn id(&self) -> u8 {
                $compression.id()
            }

            fn compress<'a>(&self, data: &'a [u8]) -> Result<Cow<'a, [u8]>, ParcodeError> {
                Ok($compression.compress(data)?)
            }

            fn decompress<'a>(&self, data: &'a [u8]) -> Result<Cow<'a, [u8]>, ParcodeError> {
                // A payload on its own has no file offset.
                Ok($compression.decompress(data, 0)?)
            }
        }
    )*};
}

compressor!(NoCompression => Compression::None, Lz4Compressor => Compression::Lz4);
