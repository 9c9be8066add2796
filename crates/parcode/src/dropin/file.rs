//! [`ParcodeFile`]: an open PAR4 file as the drop-in API reads it, over
//! the raw layer's [`ParFile`].

use std::path::Path;
use std::sync::Arc;

use binfmt_core::{MapOnDemand, Source};

use crate::dropin::error::ParcodeError;
use crate::dropin::native::ParcodeNative;
use crate::dropin::promise::ParcodeLazyRef;
use crate::raw::reader::{Chunk, Limits, ParFile};
use crate::raw::verify::VerifySummary;

type Result<T, E = ParcodeError> = std::result::Result<T, E>;

/// An open PAR4 file: the header and root trailer checked, the rest read
/// on demand.
#[derive(Debug)]
pub struct ParcodeFile {
    file: ParFile<Box<dyn Source>>,
}

impl ParcodeFile {
    /// Opens the regular file at `path`: small reads by `pread`, large ones
    /// from a map made on the first of them ([`MapOnDemand`]).
    pub fn open<P: AsRef<Path>>(path: P) -> Result<Self> {
        Self::from_source(MapOnDemand::open(path)?)
    }

    /// The file in `data`.
    pub fn from_bytes(data: impl Into<Arc<Vec<u8>>>) -> Result<Self> {
        Self::from_source(data.into())
    }

    /// The file in any source (a map, memory, `pread`, any `Read + Seek`).
    pub fn from_source(source: impl Source + 'static) -> Result<Self> {
        Self::with_limits(source, Limits::default())
    }

    /// [`ParcodeFile::from_source`] with other limits.
    pub fn with_limits(source: impl Source + 'static, limits: Limits) -> Result<Self> {
        let source: Box<dyn Source> = Box::new(source);
        Ok(Self {
            file: ParFile::with_limits(source, limits)?,
        })
    }

    /// The whole value, read with the subtree walked (a chunk reached
    /// twice is an error).
    pub fn load<T: ParcodeNative>(&self) -> Result<T> {
        T::from_node(&self.root_node()?.walking()?)
    }

    /// The value's lazy view: for a derived struct, its plain fields read
    /// and its chunkable fields promised.
    pub fn root<'a, T: ParcodeLazyRef<'a>>(&'a self) -> Result<T::Lazy> {
        T::create_lazy(self.root_node()?)
    }

    /// [`ParcodeFile::root`] under another name.
    pub fn load_lazy<'a, T: ParcodeLazyRef<'a>>(&'a self) -> Result<T::Lazy> {
        self.root::<T>()
    }

    /// [`ParcodeFile::root`] under another name.
    pub fn read_lazy<'a, T: ParcodeLazyRef<'a>>(&'a self) -> Result<T::Lazy> {
        self.root::<T>()
    }

    /// Walks every chunk once and decompresses every payload.
    pub fn verify(&self) -> Result<VerifySummary> {
        Ok(self.file.verify()?)
    }

    /// The size of the file.
    pub fn file_size(&self) -> u64 {
        self.file.file_size()
    }

    /// The root chunk.
    pub fn root_node(&self) -> Result<Chunk<'_>> {
        Ok(self.file.root()?)
    }

    /// The physical file.
    pub fn par_file(&self) -> &ParFile<Box<dyn Source>> {
        &self.file
    }
}
