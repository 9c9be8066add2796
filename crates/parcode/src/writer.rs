//! Writing: a graph of chunks, laid out bottom-up.
//!
//! A node's children must exist before the node is added, so the graph has
//! no cycles by construction. Writing lays the chunks out in post-order
//! from the root (each child before its parent, children in order, a shared
//! node once), so the same graph gives the same bytes whatever the thread
//! count. Payloads are produced (encoded, compressed) in parallel a batch at
//! a time, the next batch while the current one is written.

use std::borrow::Cow;
use std::fmt;
use std::io::{IoSlice, Write};
use std::path::Path;

use binfmt_core::io::write_all_vectored;
use binfmt_core::layout::{IntoBytes, U16, U32, U64};
use binfmt_core::{AtomicFile, IoResultExt};
use rayon::prelude::*;

use crate::compression::Compression;
use crate::error::{ParError, Result};
use crate::format::{ChildRef, GlobalHeader, MAGIC, MetaByte, VERSION};

/// A node of a [`ChunkGraph`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NodeId(usize);

/// A chunk's payload: bytes, or how to make them when the file is written
/// (so that encoding overlaps writing).
enum Payload<'g> {
    Ready(Vec<u8>),
    Deferred(Box<dyn Fn() -> Result<Vec<u8>> + Send + Sync + 'g>),
}

impl fmt::Debug for Payload<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ready(bytes) => write!(f, "Ready({} bytes)", bytes.len()),
            Self::Deferred(_) => f.write_str("Deferred"),
        }
    }
}

#[derive(Debug)]
struct Node<'g> {
    payload: Payload<'g>,
    children: Vec<NodeId>,
}

/// Chunks and their children, to be written as one PAR4 file. The lifetime
/// is that of the data the graph's deferred payloads will encode.
#[derive(Debug, Default)]
pub struct ChunkGraph<'g> {
    nodes: Vec<Node<'g>>,
}

/// Chunks produced at once while the previous batch is written.
const BATCH: usize = 32;

impl<'g> ChunkGraph<'g> {
    /// An empty graph.
    pub fn new() -> Self {
        Self { nodes: Vec::new() }
    }

    /// Adds a chunk with `payload` (uncompressed) and `children`, which
    /// must already be in this graph.
    pub fn add(&mut self, payload: Vec<u8>, children: Vec<NodeId>) -> Result<NodeId> {
        self.push(Payload::Ready(payload), children)
    }

    /// Adds a chunk whose payload `make` produces when the file is written.
    pub(crate) fn add_deferred(
        &mut self,
        make: impl Fn() -> Result<Vec<u8>> + Send + Sync + 'g,
        children: Vec<NodeId>,
    ) -> Result<NodeId> {
        self.push(Payload::Deferred(Box::new(make)), children)
    }

    fn push(&mut self, payload: Payload<'g>, children: Vec<NodeId>) -> Result<NodeId> {
        if let Some(missing) = children.iter().find(|child| child.0 >= self.nodes.len()) {
            return Err(ParError::Encode {
                what: "chunk graph",
                why: format!("child node {} is not in this graph", missing.0),
            });
        }
        self.nodes.push(Node { payload, children });
        Ok(NodeId(self.nodes.len() - 1))
    }

    /// The file with `root` as its root chunk.
    pub fn to_bytes(&self, root: NodeId, compression: Compression) -> Result<Vec<u8>> {
        let mut bytes = Vec::new();
        self.write_to(root, compression, &mut bytes)?;
        Ok(bytes)
    }

    /// Writes the file with `root` as its root chunk to `out`; returns its size.
    pub fn write_to(
        &self,
        root: NodeId,
        compression: Compression,
        out: &mut (impl Write + Send),
    ) -> Result<u64> {
        let order = self.post_order(root)?;
        let mut refs: Vec<Option<ChildRef>> = vec![None; self.nodes.len()];
        let mut offset = 0u64;
        let mut batches = order.chunks(BATCH);
        let mut current = match batches.next() {
            Some(batch) => self.produce(batch, compression)?,
            None => Vec::new(),
        };
        let mut written = 0;
        loop {
            let batch = order
                .get(written..written + current.len())
                .unwrap_or_default();
            let next = batches.next();
            let (wrote, produced) = rayon::join(
                || self.write_batch(batch, &current, compression, &mut refs, &mut offset, out),
                || next.map(|batch| self.produce(batch, compression)),
            );
            wrote?;
            written += batch.len();
            match produced {
                Some(produced) => current = produced?,
                None => break,
            }
        }
        let root_ref = refs
            .get(root.0)
            .copied()
            .flatten()
            .ok_or_else(|| missing(root))?;
        let header = GlobalHeader {
            magic: MAGIC,
            version: U16::new(VERSION),
            root_offset: root_ref.offset,
            root_length: root_ref.length,
            checksum: U32::new(0),
        };
        out.write_all(header.as_bytes()).map_err(output_error)?;
        Ok(offset + header.as_bytes().len() as u64)
    }

    /// The stored payloads of `batch`, made and compressed in parallel.
    fn produce(&self, batch: &[NodeId], compression: Compression) -> Result<Vec<Cow<'_, [u8]>>> {
        batch
            .par_iter()
            .map(|id| {
                let node = self.nodes.get(id.0).ok_or_else(|| missing(*id))?;
                match &node.payload {
                    Payload::Ready(bytes) => compression.compress(bytes),
                    Payload::Deferred(make) => {
                        let bytes = make()?;
                        Ok(Cow::Owned(compression.compress(&bytes)?.into_owned()))
                    }
                }
            })
            .collect()
    }

    /// Writes the chunks of `batch` (whose stored payloads are `stored`),
    /// recording where each one went.
    fn write_batch(
        &self,
        batch: &[NodeId],
        stored: &[Cow<'_, [u8]>],
        compression: Compression,
        refs: &mut [Option<ChildRef>],
        offset: &mut u64,
        out: &mut impl Write,
    ) -> Result<()> {
        for (id, payload) in batch.iter().zip(stored) {
            let node = self.nodes.get(id.0).ok_or_else(|| missing(*id))?;
            let mut trailer = Vec::with_capacity(node.children.len() * 16 + 5);
            for child in &node.children {
                let child_ref = refs
                    .get(child.0)
                    .copied()
                    .flatten()
                    .ok_or_else(|| missing(*child))?;
                trailer.extend_from_slice(child_ref.as_bytes());
            }
            if !node.children.is_empty() {
                let count = u32::try_from(node.children.len()).map_err(|_| ParError::Encode {
                    what: "chunk",
                    why: format!("{} children exceed the u32 count", node.children.len()),
                })?;
                trailer.extend_from_slice(&count.to_le_bytes());
            }
            trailer.push(MetaByte::new(!node.children.is_empty(), compression.id()).0);
            // Payload and trailer in one write: chunks reach the file in
            // large contiguous writes, which the page cache keeps in large
            // folios, so later readers fault fewer times.
            write_all_vectored(out, &mut [IoSlice::new(payload), IoSlice::new(&trailer)])
                .map_err(output_error)?;
            let length = (payload.len() + trailer.len()) as u64;
            if let Some(slot) = refs.get_mut(id.0) {
                *slot = Some(ChildRef {
                    offset: U64::new(*offset),
                    length: U64::new(length),
                });
            }
            *offset += length;
        }
        Ok(())
    }

    /// Writes the file to `path` atomically.
    pub fn write_file(
        &self,
        root: NodeId,
        compression: Compression,
        path: impl AsRef<Path>,
    ) -> Result<u64> {
        let path = path.as_ref();
        let mut file = AtomicFile::create(path)?;
        let size = self
            .write_to(root, compression, &mut file)
            .map_err(|error| match error {
                ParError::Core(binfmt_core::Error::Io { source, .. }) => {
                    binfmt_core::Error::io(path, source).into()
                }
                other => other,
            })?;
        file.flush().with_path(path)?;
        file.commit()?;
        Ok(size)
    }

    /// The nodes reachable from `root`, each after its children, each once.
    fn post_order(&self, root: NodeId) -> Result<Vec<NodeId>> {
        self.nodes.get(root.0).ok_or_else(|| missing(root))?;
        let mut order = Vec::new();
        let mut placed = vec![false; self.nodes.len()];
        // (node, children already pushed)
        let mut stack = vec![(root, false)];
        while let Some((id, expanded)) = stack.pop() {
            if placed.get(id.0).copied().unwrap_or(true) {
                continue;
            }
            if expanded {
                if let Some(slot) = placed.get_mut(id.0) {
                    *slot = true;
                }
                order.push(id);
            } else {
                stack.push((id, true));
                let node = self.nodes.get(id.0).ok_or_else(|| missing(id))?;
                stack.extend(node.children.iter().rev().map(|&child| (child, false)));
            }
        }
        Ok(order)
    }
}

fn output_error(error: std::io::Error) -> ParError {
    ParError::Core(binfmt_core::Error::io("<PAR4 output>", error))
}

fn missing(id: NodeId) -> ParError {
    ParError::Encode {
        what: "chunk graph",
        why: format!("node {} is not in this graph", id.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::ParFile;

    #[test]
    fn children_are_written_before_parents_in_order() {
        let mut graph = ChunkGraph::new();
        let a = graph.add(b"a".to_vec(), vec![]).unwrap();
        let b = graph.add(b"bb".to_vec(), vec![]).unwrap();
        let root = graph.add(b"root".to_vec(), vec![a, b]).unwrap();
        let bytes = graph.to_bytes(root, Compression::None).unwrap();
        // a + meta, bb + meta, root + 2 refs + count + meta, header.
        assert_eq!(&bytes[..2], b"a\0");
        assert_eq!(&bytes[2..5], b"bb\0");
        let file = ParFile::new(bytes).unwrap();
        let root = file.root().unwrap();
        assert_eq!(&*root.payload().unwrap(), b"root");
        let children: Vec<Vec<u8>> = root
            .children()
            .map(|c| c.unwrap().payload().unwrap().to_vec())
            .collect();
        assert_eq!(children, [b"a".to_vec(), b"bb".to_vec()]);
    }

    #[test]
    fn a_shared_node_is_written_once() {
        let mut graph = ChunkGraph::new();
        let shared = graph.add(b"shared".to_vec(), vec![]).unwrap();
        let root = graph.add(Vec::new(), vec![shared, shared]).unwrap();
        let bytes = graph.to_bytes(root, Compression::Lz4).unwrap();
        let file = ParFile::new(bytes).unwrap();
        let root = file.root().unwrap();
        assert_eq!(
            root.child(0).unwrap().offset(),
            root.child(1).unwrap().offset()
        );
        assert_eq!(file.verify().unwrap().chunks, 2);
    }

    #[test]
    fn unknown_children_are_refused() {
        let mut graph = ChunkGraph::new();
        assert!(graph.add(Vec::new(), vec![NodeId(3)]).is_err());
    }
}
