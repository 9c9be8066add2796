//! The drop-in entry points (`parcode::api`): [`Parcode`] saves, loads and
//! opens values of types with `#[derive(ParcodeObject)]` (and primitives,
//! `String`, `Vec<T>`, `HashMap<K, V>`), with the names and signatures of
//! `parcode` 0.6.1; the file it opens is a [`ParcodeFile`].
//!
//! ```text
//! save/write/serialize:  value ─visit─▶ TaskGraph ─▶ chunks, bottom-up ─▶ header
//! load:                  header ─▶ root chunk ─from_node─▶ value (subtree walked)
//! open + root::<T>():    header ─▶ root chunk ─create_lazy─▶ T's mirror (promises)
//! ```
//!
//! The bytes written are the same whatever the thread count (the
//! reference's shards depend on the core count), a file written by path
//! appears whole or not at all, and every failure is a typed error.
//!
//! # Examples
//!
//! ```
//! use binfmt_parcode::{Parcode, ParcodeObject};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Debug, PartialEq, Serialize, Deserialize, ParcodeObject)]
//! struct Level {
//!     id: u32,
//!     #[parcode(chunkable)]
//!     tiles: Vec<u16>,
//! }
//!
//! let level = Level { id: 7, tiles: (0..10_000).map(|i| i as u16).collect() };
//! let bytes = Parcode::serialize(&level)?;
//! assert_eq!(Parcode::load_bytes::<Level>(bytes.clone())?, level);
//!
//! let file = Parcode::open_bytes(bytes)?;
//! let lazy = file.root::<Level>()?;     // reads the root chunk only
//! assert_eq!(lazy.id, 7);
//! assert_eq!(lazy.tiles.len(), 10_000); // the container, no shard
//! assert_eq!(lazy.tiles.get(1234)?, 1234);
//! # Ok::<(), binfmt_parcode::ParcodeError>(())
//! ```

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use binfmt_core::ByteSource;

use crate::dropin::error::ParcodeError;
use crate::dropin::file::ParcodeFile;
use crate::dropin::inspector::{DebugReport, ParcodeInspector};
use crate::dropin::native::ParcodeNative;
use crate::dropin::visitor::ParcodeVisitor;
use crate::raw::compression::Compression;
use crate::raw::writer::ChunkGraph as TaskGraph;
use crate::raw::writer::write_file_with;

type Result<T, E = ParcodeError> = std::result::Result<T, E>;

/// Saving, loading and opening PAR4 files.
#[derive(Debug)]
pub struct Parcode;

/// Options for writing: compression on or off (off by default). A field's
/// own `#[parcode(compression = "...")]` applies whatever this says.
#[derive(Debug, Default, Clone, Copy)]
pub struct ParcodeOptions {
    use_compression: bool,
}

impl Parcode {
    /// The options builder.
    pub fn builder() -> ParcodeOptions {
        ParcodeOptions::default()
    }

    /// Writes `root_object` to `path` (atomically), uncompressed.
    pub fn save<T, P>(path: P, root_object: &T) -> Result<()>
    where
        T: ParcodeVisitor + Sync,
        P: AsRef<Path>,
    {
        Self::builder().save(path, root_object)
    }

    /// Writes `root_object` to `path`; the same bytes as [`Parcode::save`].
    pub fn save_sync<T, P>(path: P, root_object: &T) -> Result<()>
    where
        T: ParcodeVisitor,
        P: AsRef<Path>,
    {
        Self::builder().save_sync(path, root_object)
    }

    /// Writes `root_object` to `writer`.
    pub fn write<T, W>(writer: W, root_object: &T) -> Result<()>
    where
        T: ParcodeVisitor + Sync,
        W: Write + Send,
    {
        Self::builder().write(writer, root_object)
    }

    /// Writes `root_object` to `writer`; the same bytes as [`Parcode::write`].
    pub fn write_sync<T, W>(writer: W, root_object: &T) -> Result<()>
    where
        T: ParcodeVisitor,
        W: Write + Send,
    {
        Self::builder().write_sync(writer, root_object)
    }

    /// `root_object`'s file, in memory.
    pub fn serialize<T>(root_object: &T) -> Result<Vec<u8>>
    where
        T: ParcodeVisitor + Sync,
    {
        let mut bytes = Vec::with_capacity(4096);
        Self::write(&mut bytes, root_object)?;
        Ok(bytes)
    }

    /// Reads the whole value in the file at `path` (mapped at once: a load
    /// reads every chunk, however small).
    pub fn load<T, P>(path: P) -> Result<T>
    where
        T: ParcodeNative,
        P: AsRef<Path>,
    {
        ParcodeFile::from_source(ByteSource::open(path)?)?.load()
    }

    /// Reads the whole value in `data`.
    pub fn load_bytes<T>(data: impl Into<Arc<Vec<u8>>>) -> Result<T>
    where
        T: ParcodeNative,
    {
        ParcodeFile::from_bytes(data)?.load()
    }

    /// Opens the file at `path` (mapped) for lazy reading.
    pub fn open<P: AsRef<Path>>(path: P) -> Result<ParcodeFile> {
        ParcodeFile::open(path)
    }

    /// Opens the file in `data` for lazy reading.
    pub fn open_bytes(data: impl Into<Arc<Vec<u8>>>) -> Result<ParcodeFile> {
        ParcodeFile::from_bytes(data)
    }

    /// The chunk tree of the file at `path`.
    pub fn inspect<P: AsRef<Path>>(path: P) -> Result<DebugReport> {
        ParcodeInspector::inspect(path)
    }

    /// The chunk tree of the file in `data`.
    pub fn inspect_bytes(data: impl Into<Arc<Vec<u8>>>) -> Result<DebugReport> {
        ParcodeFile::from_bytes(data)?.inspect()
    }
}

impl ParcodeOptions {
    /// Compresses every chunk with LZ4 (`true`) or none (`false`), except
    /// fields whose attribute says otherwise.
    pub fn compression(mut self, enable: bool) -> Self {
        self.use_compression = enable;
        self
    }

    fn file_compression(&self) -> Compression {
        if self.use_compression {
            Compression::Lz4
        } else {
            Compression::None
        }
    }

    /// Writes `root_object` to `path` atomically (a temporary file in the
    /// same directory, renamed when complete).
    pub fn save<T, P>(&self, path: P, root_object: &T) -> Result<()>
    where
        T: ParcodeVisitor + Sync,
        P: AsRef<Path>,
    {
        self.save_sync(path, root_object)
    }

    /// As [`ParcodeOptions::save`]: the bytes never depend on threads.
    pub fn save_sync<T, P>(&self, path: P, root_object: &T) -> Result<()>
    where
        T: ParcodeVisitor,
        P: AsRef<Path>,
    {
        let mut graph = TaskGraph::new();
        root_object.visit(&mut graph, None, None);
        let compression = self.file_compression();
        write_file_with(path.as_ref(), |file| graph.write_root(compression, file))?;
        Ok(())
    }

    /// Writes `root_object` to `writer`.
    pub fn write<T, W>(&self, writer: W, root_object: &T) -> Result<()>
    where
        T: ParcodeVisitor + Sync,
        W: Write + Send,
    {
        self.write_sync(writer, root_object)
    }

    /// As [`ParcodeOptions::write`]: the bytes never depend on threads.
    pub fn write_sync<T, W>(&self, writer: W, root_object: &T) -> Result<()>
    where
        T: ParcodeVisitor,
        W: Write + Send,
    {
        let mut graph = TaskGraph::new();
        root_object.visit(&mut graph, None, None);
        graph.write_root(self.file_compression(), writer)?;
        Ok(())
    }
}
