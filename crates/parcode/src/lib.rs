//! Parcode V4 (`PAR4`) files: object graphs written once, opened in
//! constant time, and loaded piece by piece; compatible with the `parcode`
//! 0.6.1 crate in both directions.
//!
//! ```text
//! ┌─────────┬─────────┬─────┬────────────┬──────────────────────────────┐
//! │ chunk 0 │ chunk 1 │ ... │ root chunk │ global header (26 bytes)     │
//! └─────────┴─────────┴─────┴────────────┴──────────────────────────────┘
//! chunk: payload | [child refs (16 bytes each) | child count u32] | MetaByte
//! global header: "PAR4" | version u16 | root offset u64 | root length u64 | checksum u32
//! ```
//!
//! Two layers:
//!
//! - physical: [`ParFile`] and [`Chunk`] read and check the chunk tree
//!   ([`format`] has the byte layout); [`ChunkGraph`] writes one, bottom-up,
//!   deterministically;
//! - typed, what the reference puts in payloads (bincode 2, standard
//!   configuration): [`LazyVec`] for `Vec<T>`, [`LazyMap`] for
//!   `HashMap<K, V>`, [`StructFields`] / [`StructReader`] for structs.
//!
//! ```
//! use binfmt_parcode::{ChunkGraph, Compression, LazyVec, ParFile};
//!
//! let items: Vec<u64> = (0..100_000).collect();
//! let mut graph = ChunkGraph::new();
//! let root = graph.vec(&items)?;
//! let bytes = graph.to_bytes(root, Compression::Lz4)?;
//!
//! let file = ParFile::new(bytes)?;                 // reads the header and root trailer
//! let lazy: LazyVec<u64> = LazyVec::new(file.root()?)?;
//! assert_eq!(lazy.len(), 100_000);                 // no shard touched
//! assert_eq!(lazy.get(73_421)?, 73_421);           // one shard decoded
//! assert_eq!(lazy.load()?, items);                 // all shards, in parallel
//! # Ok::<(), binfmt_parcode::ParError>(())
//! ```

mod blob;
mod codec;
mod compression;
mod error;
pub mod format;
mod map;
mod reader;
mod structure;
mod vec;
mod writer;

pub use blob::{BlobMapWriter, STREAM_ABOVE};
pub use codec::hash_key;
pub use compression::Compression;
pub use error::{ParError, Result};
pub use format::{GLOBAL_HEADER_SIZE, MAGIC};
pub use map::{LazyMap, MapLayout, ValueReader};
pub use reader::{Chunk, Limits, ParFile, TAIL_READ, VerifySummary};
pub use structure::{StructFields, StructReader};
pub use vec::LazyVec;
pub use writer::{ChunkGraph, NodeId};

impl ChunkGraph<'_> {
    /// Adds a single value as one chunk (the reference's layout for
    /// primitives, strings, and maps saved directly).
    pub fn value<T: serde::Serialize + ?Sized>(&mut self, value: &T) -> Result<NodeId> {
        let payload = codec::encode(value, "value")?;
        self.add(payload, Vec::new())
    }
}

impl Chunk<'_> {
    /// Decodes this chunk's whole payload as one value.
    pub fn decode<T: serde::de::DeserializeOwned>(&self) -> Result<T> {
        Ok(codec::decode(&self.payload()?, self.offset(), "value")?.0)
    }
}
