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
//! Three layers, each using only the ones below it:
//!
//! - raw, the chunk tree: [`ParFile`] and [`Chunk`] read and check it
//!   ([`format`](mod@format) has the byte layout), [`ParFile::verify`]
//!   walks all of it, [`ChunkGraph`] writes one, bottom-up,
//!   deterministically; its error is [`ParError`];
//! - typed, what the reference puts in payloads (bincode 2, standard
//!   configuration): [`LazyVec`] for `Vec<T>`, [`LazyMap`] for
//!   `HashMap<K, V>`, [`StructFields`] / [`StructReader`] for structs;
//!   also [`ParError`];
//! - drop-in, the names and signatures of `parcode` 0.6.1: [`Parcode`],
//!   [`ParcodeFile`], the [`inspector`], the derive's traits
//!   ([`ParcodeVisitor`], [`ParcodeNative`], [`rt::ParcodeLazyRef`]); its
//!   error, [`ParcodeError`], wraps [`ParError`] (and
//!   [`ParcodeError::typed`] gives it back).
//!
//! ```text
//! dropin  ── api, file, inspector, visitor, promise (rt), native, job, fields, compressor, error
//!   │
//! typed   ── map/{encode, layout, lazy, byte_values, value_reader, bucket, verify}, vec, structure, blob, value, codec, guard
//!   │
//! raw     ── writer, verify, reader, compression, format, error
//! ```
//!
//! The reference's module paths (`parcode::reader`, `parcode::graph`,
//! `parcode::rt`, ...) are modules of re-exports below.
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

#![deny(missing_docs)]

// The derive names this crate `::binfmt_parcode` when it cannot find it
// under another name; inside the crate that path must resolve too.
extern crate self as binfmt_parcode;

mod dropin;
mod raw;
mod typed;

pub use dropin::{inspector, visitor};
pub use raw::format;

/// The drop-in entry points (the reference's `parcode::api`).
pub mod api {
    pub use crate::dropin::api::{Parcode, ParcodeOptions};
    pub use crate::dropin::file::ParcodeFile;
}

/// Chunk payload compression (the reference's `parcode::compression`):
/// [`Compression`] is what this crate's writers take; [`Compressor`] is the
/// reference's trait.
pub mod compression {
    pub use crate::dropin::compressor::{Compressor, Lz4Compressor, NoCompression};
    pub use crate::raw::compression::Compression;
}

/// The errors: [`ParError`] of the raw and typed layers, and the drop-in
/// API's [`ParcodeError`], which wraps it.
pub mod error {
    pub use crate::dropin::error::{Detail, ParcodeError};
    pub use crate::raw::error::{ParError, Result};
}

/// Reading (the reference's `parcode::reader`): the chunk tree, and the
/// drop-in API's eager readers.
pub mod reader {
    pub use crate::dropin::file::ParcodeFile;
    pub use crate::dropin::native::{ChunkIterator, ParcodeItem, ParcodeNative};
    pub use crate::raw::reader::{Chunk, Limits, ParFile, TAIL_READ};
    pub use crate::raw::verify::VerifySummary;

    /// [`Chunk`] under the reference's name.
    pub type ChunkNode<'a> = Chunk<'a>;
}

/// Lazy mirrors and promises (the reference's `parcode::rt`).
pub mod rt {
    pub use crate::dropin::job::ConfiguredJob;
    pub use crate::dropin::promise::*;
}

/// Building the chunk tree to write (the reference's `parcode::graph`):
/// [`TaskGraph`](graph::TaskGraph) is [`ChunkGraph`] under the reference's name.
pub mod graph {
    pub use crate::dropin::job::{JobConfig, SerializationJob};
    pub use crate::raw::writer::{ChunkGraph as TaskGraph, NodeId as ChunkId};
}

/// What the reference's derive names `parcode::internal`.
#[doc(hidden)]
pub mod internal {
    pub use bincode;
    pub use serde;
}

/// What the derive's generated code uses, and nothing else may: the
/// paths can change in any release (as serde's `__private`).
#[doc(hidden)]
pub mod __private {
    pub use bincode;
    pub use serde;

    pub use crate::dropin::error::ParcodeError;
    pub use crate::dropin::fields::{
        end_of_children, end_of_payload, fill_plain, next_child, read_local, skip_elements,
        write_local,
    };
    pub use crate::dropin::job::{JobConfig, SerializationJob, job_for};
    pub use crate::dropin::native::{ParcodeItem, ParcodeNative, load_child};
    pub use crate::dropin::promise::ParcodeLazyRef;
    pub use crate::dropin::visitor::ParcodeVisitor;
    pub use crate::raw::format::ChildRef;
    pub use crate::raw::reader::Chunk;
    pub use crate::raw::writer::{ChunkGraph as TaskGraph, NodeId as ChunkId};

    /// `Result` with [`ParcodeError`].
    pub type Result<T, E = ParcodeError> = std::result::Result<T, E>;
}

pub use binfmt_parcode_derive::ParcodeObject;
pub use compression::{Compression, Compressor, Lz4Compressor, NoCompression};
pub use dropin::api::{Parcode, ParcodeOptions};
pub use dropin::file::ParcodeFile;
pub use dropin::native::{ChunkIterator, ParcodeItem, ParcodeNative};
pub use dropin::promise::{
    ParcodeCollectionPromise, ParcodeLazyRef, ParcodeMapPromise, ParcodePromise,
};
pub use dropin::visitor::ParcodeVisitor;
pub use error::{Detail, ParError, ParcodeError};
pub use raw::format::{GLOBAL_HEADER_SIZE, MAGIC};
pub use raw::reader::{Chunk, Limits, ParFile, TAIL_READ};
pub use raw::verify::VerifySummary;
pub use raw::writer::{ChunkGraph, NodeId};
pub use typed::blob::{BlobMapWriter, STREAM_ABOVE};
pub use typed::codec::hash_key;
pub use typed::map::{LazyMap, MapLayout, ValueReader};
pub use typed::structure::{StructFields, StructReader};
pub use typed::vec::LazyVec;

/// `Result` with [`ParcodeError`], as the reference names it (the typed
/// layers return [`error::Result`], with [`ParError`]).
pub type Result<T, E = ParcodeError> = std::result::Result<T, E>;
