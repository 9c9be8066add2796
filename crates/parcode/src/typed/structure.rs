//! Structs in the layout of the reference's `#[derive(ParcodeObject)]`: a
//! chunk whose payload is the bincode of the plain fields, one after
//! another in declaration order, and whose children are the chunkable
//! fields (`#[parcode(chunkable)]` or `#[parcode(map)]`), in declaration
//! order.
//!
//! ```
//! use std::collections::HashMap;
//! use binfmt_parcode::{ChunkGraph, Compression, LazyMap, LazyVec, MapLayout, ParFile, StructFields, StructReader};
//!
//! // What the reference would derive for:
//! //   struct Catalog { name: String, #[parcode(chunkable)] ids: Vec<u64>,
//! //                    #[parcode(map)] index: HashMap<String, u32> }
//! struct CatalogView<'a> {
//!     name: String,
//!     ids: LazyVec<'a, u64>,
//!     index: LazyMap<'a, String, u32>,
//! }
//!
//! impl<'a> CatalogView<'a> {
//!     fn read(fields: &mut StructReader<'a>) -> binfmt_parcode::error::Result<Self> {
//!         Ok(Self { name: fields.field()?, ids: fields.vec()?, index: fields.map()? })
//!     }
//! }
//!
//! let mut graph = ChunkGraph::new();
//! let ids = graph.vec(&[10u64, 20, 30])?;
//! let index = graph.map(&HashMap::from([("b".to_string(), 2u32)]), MapLayout::Buckets)?;
//! let mut catalog = StructFields::new();
//! catalog.field(&"shelf".to_string())?;
//! let root = catalog.child(ids).child(index).finish(&mut graph)?;
//! let file = ParFile::new(graph.to_bytes(root, Compression::None)?)?;
//!
//! let view = CatalogView::read(&mut StructReader::new(file.root()?)?)?;
//! assert_eq!(view.name, "shelf");
//! assert_eq!(view.ids.get(2)?, 30);          // loads one shard
//! assert_eq!(view.index.get("b")?, Some(2)); // loads one bucket
//! # Ok::<(), binfmt_parcode::ParError>(())
//! ```

#![forbid(unsafe_code)]

use std::borrow::Cow;
use std::hash::Hash;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::raw::error::Result;
use crate::raw::reader::Chunk;
use crate::raw::writer::{ChunkGraph, NodeId};
use crate::typed::codec::{decode, encode_into};
use crate::typed::map::LazyMap;
use crate::typed::vec::LazyVec;

/// The fields of a struct being written: plain fields into the payload,
/// chunkable fields as children.
#[derive(Debug, Default)]
pub struct StructFields {
    payload: Vec<u8>,
    children: Vec<NodeId>,
}

impl StructFields {
    /// A struct with no fields yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a plain field.
    pub fn field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<&mut Self> {
        encode_into(value, &mut self.payload, "struct field")?;
        Ok(self)
    }

    /// Appends a chunkable field, already added to the graph (a `vec`, a
    /// `map`, or a nested struct).
    pub fn child(&mut self, node: NodeId) -> &mut Self {
        self.children.push(node);
        self
    }

    /// Adds the struct's chunk to `graph`.
    pub fn finish(&mut self, graph: &mut ChunkGraph<'_>) -> Result<NodeId> {
        graph.add(
            std::mem::take(&mut self.payload),
            std::mem::take(&mut self.children),
        )
    }
}

/// Reads a struct chunk field by field, in declaration order.
#[derive(Debug)]
pub struct StructReader<'a> {
    chunk: Chunk<'a>,
    payload: Cow<'a, [u8]>,
    position: usize,
    next_child: u32,
}

impl<'a> StructReader<'a> {
    /// Starts reading the struct in `chunk`.
    pub fn new(chunk: Chunk<'a>) -> Result<Self> {
        Ok(Self {
            payload: chunk.payload()?,
            chunk,
            position: 0,
            next_child: 0,
        })
    }

    /// The next plain field.
    pub fn field<T: DeserializeOwned>(&mut self) -> Result<T> {
        let rest = self.payload.get(self.position..).unwrap_or_default();
        let (value, used) = decode(rest, self.chunk.offset(), "struct field")?;
        self.position += used;
        Ok(value)
    }

    /// The next chunkable field's chunk.
    pub fn child(&mut self) -> Result<Chunk<'a>> {
        let child = self.chunk.child(self.next_child)?;
        self.next_child += 1;
        Ok(child)
    }

    /// The next chunkable field, a `Vec<T>`.
    pub fn vec<T: DeserializeOwned + Send>(&mut self) -> Result<LazyVec<'a, T>> {
        LazyVec::new(self.child()?)
    }

    /// The next chunkable field, a `HashMap<K, V>`.
    pub fn map<K, V>(&mut self) -> Result<LazyMap<'a, K, V>>
    where
        K: DeserializeOwned + Hash + Eq + Send,
        V: DeserializeOwned + Send,
    {
        LazyMap::new(self.child()?)
    }

    /// The next chunkable field, a nested struct.
    pub fn nested(&mut self) -> Result<StructReader<'a>> {
        StructReader::new(self.child()?)
    }
}
