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
//!   ([`format`](mod@format) has the byte layout); [`ChunkGraph`] writes one, bottom-up,
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

// The derive names this crate `::binfmt_parcode` when it cannot find it
// under another name; inside the crate that path must resolve too.
extern crate self as binfmt_parcode;

pub mod api;
mod blob;
mod codec;
pub mod compression;
pub mod error;
pub mod format;
mod guard;
pub mod inspector;
mod job;
mod map;
mod native;
pub mod reader;
pub mod rt;
mod structure;
mod vec;
pub mod visitor;
mod writer;

/// Building the chunk tree to write (the reference's `parcode::graph`):
/// [`TaskGraph`](graph::TaskGraph) is [`ChunkGraph`] under the reference's name.
pub mod graph {
    pub use crate::job::{JobConfig, SerializationJob};
    pub use crate::writer::{ChunkGraph as TaskGraph, NodeId as ChunkId};
}

/// What the derive's generated code uses, re-exported so users need no
/// dependency of their own.
#[doc(hidden)]
pub mod internal {
    pub use bincode;
    pub use serde;
}

pub use api::{Parcode, ParcodeFile, ParcodeOptions};
pub use binfmt_parcode_derive::ParcodeObject;
pub use blob::{BlobMapWriter, STREAM_ABOVE};
pub use codec::hash_key;
pub use compression::{Compression, Compressor, Lz4Compressor, NoCompression};
pub use error::{Detail, ParError, ParcodeError};
pub use format::{GLOBAL_HEADER_SIZE, MAGIC};
pub use map::{LazyMap, MapLayout, ValueReader};
pub use native::{ChunkIterator, ParcodeItem, ParcodeNative};
pub use reader::{Chunk, Limits, ParFile, TAIL_READ, VerifySummary};
pub use rt::{ParcodeCollectionPromise, ParcodeLazyRef, ParcodeMapPromise, ParcodePromise};
pub use structure::{StructFields, StructReader};
pub use vec::LazyVec;
pub use visitor::ParcodeVisitor;
pub use writer::{ChunkGraph, NodeId};

/// `Result` with [`ParcodeError`], as the reference names it (the typed
/// layers return [`error::Result`], with [`ParError`]).
pub type Result<T, E = ParcodeError> = std::result::Result<T, E>;

impl ChunkGraph<'_> {
    /// Adds a single value as one chunk (the reference's layout for
    /// primitives, strings, and maps saved directly).
    pub fn value<T: serde::Serialize + ?Sized>(&mut self, value: &T) -> error::Result<NodeId> {
        let payload = codec::encode(value, "value")?;
        self.add(payload, Vec::new())
    }
}

impl Chunk<'_> {
    /// Decodes this chunk's whole payload as one value, which must use
    /// every byte of it.
    pub fn decode<T: serde::de::DeserializeOwned>(&self) -> error::Result<T> {
        let payload = self.payload()?;
        let (value, used) = codec::decode(&payload, self.offset(), "value")?;
        if used != payload.len() {
            return Err(ParError::Payload {
                offset: self.offset(),
                what: "value",
                why: format!("{} bytes after the value", payload.len() - used),
            });
        }
        Ok(value)
    }
}
