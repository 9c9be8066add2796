//! Writing: a tree of chunks, laid out bottom-up.
//!
//! ```text
//! graph:  root ─┬─ a ─── c          file:  │ c │ a │ b │ root │ header │
//!               └─ b
//! ```
//!
//! A node's children must exist before the node is added, and a node has
//! at most one parent, so the graph is a tree by construction (readers
//! refuse chunks reached twice). Writing lays the chunks out in post-order
//! from the root (each child before its parent, children in order), so the
//! same graph gives the same bytes whatever the thread count. Payloads are
//! produced (encoded, compressed) in parallel a batch at a time, the next
//! batch while the current one is written.
//!
//! [`ChunkWriter`] is the layer below: chunks appended to any `Write`, each
//! payload and trailer in one vectored write, then the global header. The
//! graph uses it, and so does [`crate::BlobMapWriter`], which streams
//! payloads too large to hold.

use std::borrow::Cow;
use std::fmt;
use std::io::{IoSlice, Seek, Write};
use std::path::Path;

use binfmt_core::io::write_all_vectored;
use binfmt_core::layout::{IntoBytes, U16, U32, U64};
use binfmt_core::{AtomicFile, Destination, IoResultExt};
use rayon::prelude::*;

use crate::raw::compression::Compression;
use crate::raw::error::{ParError, Result};
use crate::raw::format::{ChildRef, GlobalHeader, MAGIC, MetaByte, VERSION};

/// A node of a [`ChunkGraph`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(usize);

impl NodeId {
    /// The node's index in its graph (nodes are numbered as they are added).
    pub fn index(self) -> usize {
        self.0
    }
}

/// Makes a payload when the file is written.
pub(crate) type Deferred<'g> = Box<dyn Fn() -> Result<Vec<u8>> + Send + Sync + 'g>;

/// Writes a payload in pieces, in order, to the sink it is given.
type Stream<'g> = Box<dyn Fn(&mut Sink<'_>) -> Result<()> + Send + Sync + 'g>;

/// Where a streamed payload's pieces go: each call takes the next piece.
pub(crate) type Sink<'s> = dyn FnMut(&[u8]) -> Result<()> + 's;

/// A chunk's stored payload, ready to write (`None`: an uncompressed
/// streamed payload, written as its chunk is), and its compression.
type Stored<'a> = (Option<Cow<'a, [u8]>>, Compression);

/// A chunk's payload: bytes, or how to make them when the file is written
/// (so that encoding overlaps writing), or pieces written to the output as
/// the chunk is (gathered into one buffer only to be compressed).
enum Payload<'g> {
    Ready(Vec<u8>),
    Deferred(Deferred<'g>),
    Streamed(Stream<'g>),
}

impl fmt::Debug for Payload<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ready(bytes) => write!(f, "Ready({} bytes)", bytes.len()),
            Self::Deferred(_) => f.write_str("Deferred"),
            Self::Streamed(_) => f.write_str("Streamed"),
        }
    }
}

#[derive(Debug)]
struct Node<'g> {
    payload: Payload<'g>,
    children: Vec<NodeId>,
    has_parent: bool,
    /// This chunk's compression, when not the file's.
    compression: Option<Compression>,
}

/// Chunks and their children, to be written as one PAR4 file. The lifetime
/// is that of the data the graph's deferred payloads will encode.
///
/// # Examples
///
/// ```
/// use binfmt_parcode::{ChunkGraph, Compression, LazyVec, ParFile};
///
/// let ids: Vec<u64> = (0..10_000).collect();
/// let mut graph = ChunkGraph::new();
/// let root = graph.vec(&ids)?;
/// let mut out = Vec::new();
/// out = graph.write_to(root, Compression::Lz4, out)?;   // any Write, returned
/// let file = ParFile::new(out)?;
/// assert_eq!(LazyVec::<u64>::new(file.root()?)?.get(9_999)?, 9_999);
/// # Ok::<(), binfmt_parcode::ParError>(())
/// ```
///
/// The drop-in API builds the same graph parent first
/// ([`ChunkGraph::add_node`], [`ChunkGraph::link_parent_child`], as the
/// reference's `TaskGraph`, which is this type under that name); a link
/// that would not make a tree is reported when the file is written.
#[derive(Debug, Default)]
pub struct ChunkGraph<'g> {
    nodes: Vec<Node<'g>>,
    /// The first problem found while building, reported when writing.
    error: Option<ParError>,
}

/// Chunks produced at once while the previous batch is written.
const BATCH: usize = 32;

impl<'g> ChunkGraph<'g> {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a chunk whose payload `make` produces when the file is written,
    /// compressed with `compression` (`None`: the file's); its children are
    /// linked afterwards (the drop-in API's `add_node`).
    pub(crate) fn add_made(
        &mut self,
        make: Deferred<'g>,
        compression: Option<Compression>,
    ) -> NodeId {
        self.nodes.push(Node {
            payload: Payload::Deferred(make),
            children: Vec::new(),
            has_parent: false,
            compression,
        });
        NodeId(self.nodes.len() - 1)
    }

    /// Makes `child` the next child of `parent`. A node already linked, an
    /// unknown node, or a node linked to itself is reported when the file
    /// is written (the reference panics on unknown nodes).
    pub fn link_parent_child(&mut self, parent: NodeId, child: NodeId) {
        let problem = match self.nodes.get(child.0) {
            None => Some(missing(child)),
            Some(node) if node.has_parent || parent == child => Some(ParError::Encode {
                what: "chunk graph",
                why: format!(
                    "node {} would have two parents: a PAR4 file is a tree",
                    child.0
                ),
            }),
            Some(_) if self.nodes.get(parent.0).is_none() => Some(missing(parent)),
            Some(_) => None,
        };
        if let Some(problem) = problem {
            return self.fail(problem);
        }
        if let Some(node) = self.nodes.get_mut(child.0) {
            node.has_parent = true;
        }
        if let Some(node) = self.nodes.get_mut(parent.0) {
            node.children.push(child);
        }
    }

    /// Replaces the payload of `node` by what `make` produces, compressed
    /// with `compression` (the drop-in API's `replace_job`).
    pub(crate) fn replace_made(
        &mut self,
        node: NodeId,
        make: Deferred<'g>,
        compression: Option<Compression>,
    ) {
        match self.nodes.get_mut(node.0) {
            Some(slot) => {
                slot.payload = Payload::Deferred(make);
                slot.compression = compression;
            }
            None => self.fail(missing(node)),
        }
    }

    /// The number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the graph has no node.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Records a problem found while building, reported when writing.
    pub(crate) fn fail(&mut self, error: ParError) {
        self.error.get_or_insert(error);
    }

    /// Writes the file whose root is the first node added (as a value's
    /// `visit` adds its own chunk first).
    pub(crate) fn write_root<W: Write + Send>(
        &self,
        compression: Compression,
        out: W,
    ) -> Result<W> {
        if self.nodes.is_empty() {
            return Err(ParError::Encode {
                what: "chunk graph",
                why: "the value added no chunk".into(),
            });
        }
        self.write_to(NodeId(0), compression, out)
    }

    /// Adds a chunk with `payload` (uncompressed) and `children`, which
    /// must already be in this graph and have no parent yet.
    pub fn add(&mut self, payload: Vec<u8>, children: Vec<NodeId>) -> Result<NodeId> {
        self.push(Payload::Ready(payload), children)
    }

    /// Adds a chunk whose payload `make` produces when the file is written.
    pub fn add_deferred(
        &mut self,
        make: impl Fn() -> Result<Vec<u8>> + Send + Sync + 'g,
        children: Vec<NodeId>,
    ) -> Result<NodeId> {
        self.push(Payload::Deferred(Box::new(make)), children)
    }

    /// Adds a chunk whose payload `write` writes in pieces, in order, to
    /// the sink it is given, when the file is written: uncompressed, the
    /// pieces go to the output without being gathered first.
    pub(crate) fn add_streamed(
        &mut self,
        write: impl Fn(&mut Sink<'_>) -> Result<()> + Send + Sync + 'g,
        children: Vec<NodeId>,
    ) -> Result<NodeId> {
        self.push(Payload::Streamed(Box::new(write)), children)
    }

    /// Compresses `node`'s chunk with `compression` whatever the file's
    /// compression is (the meta byte is per chunk).
    pub fn set_compression(&mut self, node: NodeId, compression: Compression) -> Result<()> {
        let node = self.nodes.get_mut(node.0).ok_or_else(|| missing(node))?;
        node.compression = Some(compression);
        Ok(())
    }

    /// The children of `node`.
    pub fn children(&self, node: NodeId) -> &[NodeId] {
        self.nodes
            .get(node.0)
            .map_or(&[], |node| node.children.as_slice())
    }

    fn push(&mut self, payload: Payload<'g>, children: Vec<NodeId>) -> Result<NodeId> {
        for (index, child) in children.iter().enumerate() {
            let node = self.nodes.get(child.0).ok_or_else(|| missing(*child))?;
            if node.has_parent || children.get(..index).is_some_and(|c| c.contains(child)) {
                return Err(ParError::Encode {
                    what: "chunk graph",
                    why: format!(
                        "node {} would have two parents: a PAR4 file is a tree",
                        child.0
                    ),
                });
            }
        }
        for child in &children {
            if let Some(node) = self.nodes.get_mut(child.0) {
                node.has_parent = true;
            }
        }
        self.nodes.push(Node {
            payload,
            children,
            has_parent: false,
            compression: None,
        });
        Ok(NodeId(self.nodes.len() - 1))
    }

    /// The file with `root` as its root chunk.
    pub fn to_bytes(&self, root: NodeId, compression: Compression) -> Result<Vec<u8>> {
        self.write_to(root, compression, Vec::new())
    }

    /// Writes the file with `root` as its root chunk to `out`, every chunk
    /// compressed with `compression` unless set otherwise; returns `out`.
    pub fn write_to<W: Write + Send>(
        &self,
        root: NodeId,
        compression: Compression,
        out: W,
    ) -> Result<W> {
        if let Some(error) = &self.error {
            return Err(ParError::Encode {
                what: "chunk graph",
                why: error.to_string(),
            });
        }
        let order = self.post_order(root)?;
        let mut refs: Vec<Option<ChildRef>> = vec![None; self.nodes.len()];
        let mut writer = ChunkWriter::new(out);
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
                || self.write_batch(batch, &current, &mut refs, &mut writer),
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
        writer.finish(root_ref)
    }

    /// The stored payloads of `batch` and their compression, made and
    /// compressed in parallel (`None`: an uncompressed streamed payload,
    /// written when its chunk is).
    fn produce(&self, batch: &[NodeId], compression: Compression) -> Result<Vec<Stored<'_>>> {
        batch
            .par_iter()
            .map(|id| {
                let node = self.nodes.get(id.0).ok_or_else(|| missing(*id))?;
                let compression = node.compression.unwrap_or(compression);
                let stored = match &node.payload {
                    Payload::Ready(bytes) => compression.compress(bytes)?,
                    Payload::Deferred(make) => {
                        let bytes = make()?;
                        Cow::Owned(compression.compress_owned(bytes)?)
                    }
                    Payload::Streamed(_) if compression == Compression::None => {
                        return Ok((None, compression));
                    }
                    Payload::Streamed(write) => {
                        let mut bytes = Vec::new();
                        write(&mut |piece| {
                            bytes.extend_from_slice(piece);
                            Ok(())
                        })?;
                        Cow::Owned(compression.compress_owned(bytes)?)
                    }
                };
                Ok((Some(stored), compression))
            })
            .collect()
    }

    /// Writes the chunks of `batch` (whose stored payloads are `stored`),
    /// recording where each one went.
    fn write_batch<W: Write>(
        &self,
        batch: &[NodeId],
        stored: &[Stored<'_>],
        refs: &mut [Option<ChildRef>],
        writer: &mut ChunkWriter<W>,
    ) -> Result<()> {
        let mut children = Vec::new();
        for (id, (payload, compression)) in batch.iter().zip(stored) {
            let node = self.nodes.get(id.0).ok_or_else(|| missing(*id))?;
            children.clear();
            for child in &node.children {
                children.push(
                    refs.get(child.0)
                        .copied()
                        .flatten()
                        .ok_or_else(|| missing(*child))?,
                );
            }
            let written = match (payload, &node.payload) {
                (Some(payload), _) => writer.chunk(payload, &children, *compression)?,
                (None, Payload::Streamed(write)) => {
                    let start = writer.offset();
                    let mut len = 0u64;
                    let out = writer.output();
                    // Pieces (a map's entries) are small: the output's
                    // buffer gathers them (one `writev` of many small
                    // pieces measured slower).
                    write(&mut |piece| {
                        len += piece.len() as u64;
                        out.write_all(piece).map_err(output_error)
                    })?;
                    writer.end_chunk(start, len, &children, *compression)?
                }
                (None, _) => {
                    return Err(ParError::Encode {
                        what: "chunk graph",
                        why: format!("node {} has no payload", id.0),
                    });
                }
            };
            if let Some(slot) = refs.get_mut(id.0) {
                *slot = Some(written);
            }
        }
        Ok(())
    }

    /// Writes the file to `path` atomically; returns its size.
    pub fn write_file(
        &self,
        root: NodeId,
        compression: Compression,
        path: impl AsRef<Path>,
    ) -> Result<u64> {
        write_file_with(path.as_ref(), |file| self.write_to(root, compression, file))
    }

    /// The nodes reachable from `root`, each after its children; a cycle
    /// (possible only through links) is an error.
    fn post_order(&self, root: NodeId) -> Result<Vec<NodeId>> {
        let node = self.nodes.get(root.0).ok_or_else(|| missing(root))?;
        if node.has_parent {
            return Err(ParError::Encode {
                what: "chunk graph",
                why: format!("the root, node {}, is another node's child", root.0),
            });
        }
        let mut order = Vec::new();
        let mut entered = vec![false; self.nodes.len()];
        // (node, index of the next child to descend into)
        let mut path = vec![(root, 0usize)];
        while let Some((id, next)) = path.last_mut() {
            let node = self.nodes.get(id.0).ok_or_else(|| missing(*id))?;
            if *next == 0 {
                match entered.get_mut(id.0) {
                    Some(seen) if !*seen => *seen = true,
                    _ => {
                        return Err(ParError::Encode {
                            what: "chunk graph",
                            why: format!("node {} is reached twice (a cycle)", id.0),
                        });
                    }
                }
            }
            match node.children.get(*next) {
                Some(&child) => {
                    *next += 1;
                    path.push((child, 0));
                }
                None => {
                    order.push(*id);
                    path.pop();
                }
            }
        }
        Ok(order)
    }
}

/// Runs `write` on an atomic file at `path`, committing it on success;
/// returns the file's size. Output errors name the path.
pub(crate) fn write_file_with(
    path: &Path,
    write: impl FnOnce(&mut Box<dyn Destination>) -> Result<&mut Box<dyn Destination>>,
) -> Result<u64> {
    write_destination_with(Box::new(AtomicFile::create(path)?), write)
}

/// Runs `write` on `out` (a local file or an upload), committing it on
/// success; returns its size. Output errors name its location.
pub(crate) fn write_destination_with(
    mut out: Box<dyn Destination>,
    write: impl FnOnce(&mut Box<dyn Destination>) -> Result<&mut Box<dyn Destination>>,
) -> Result<u64> {
    let location = out.location();
    write(&mut out).map_err(|error| match error {
        ParError::Io { source, .. } => binfmt_core::Error::io(&location, source).into(),
        other => other,
    })?;
    out.flush().with_path(Path::new(&location))?;
    let size = out.stream_position().with_path(Path::new(&location))?;
    out.commit()?;
    Ok(size)
}

/// Chunks appended to a `Write`, then the global header: the layer every
/// PAR4 writer here shares.
#[derive(Debug)]
pub(crate) struct ChunkWriter<W> {
    out: W,
    offset: u64,
    trailer: Vec<u8>,
}

impl<W: Write> ChunkWriter<W> {
    pub(crate) fn new(out: W) -> Self {
        Self {
            out,
            offset: 0,
            trailer: Vec::new(),
        }
    }

    /// Where the next chunk starts.
    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }

    /// The output, for streaming a payload into it; the caller reports the
    /// bytes it wrote to [`ChunkWriter::end_chunk`].
    pub(crate) fn output(&mut self) -> &mut W {
        &mut self.out
    }

    /// Appends a chunk whose stored payload is `payload`.
    pub(crate) fn chunk(
        &mut self,
        payload: &[u8],
        children: &[ChildRef],
        compression: Compression,
    ) -> Result<ChildRef> {
        let start = self.offset;
        self.build_trailer(children, compression)?;
        // Payload and trailer in one write: chunks reach the file in large
        // contiguous writes, which the page cache keeps in large folios, so
        // later readers fault fewer times.
        write_all_vectored(
            &mut self.out,
            &mut [IoSlice::new(payload), IoSlice::new(&self.trailer)],
        )
        .map_err(output_error)?;
        self.offset += (payload.len() + self.trailer.len()) as u64;
        Ok(chunk_ref(start, self.offset))
    }

    /// Ends a chunk whose `payload_len` stored bytes, starting at `start`,
    /// the caller wrote through [`ChunkWriter::output`].
    pub(crate) fn end_chunk(
        &mut self,
        start: u64,
        payload_len: u64,
        children: &[ChildRef],
        compression: Compression,
    ) -> Result<ChildRef> {
        self.build_trailer(children, compression)?;
        self.out.write_all(&self.trailer).map_err(output_error)?;
        self.offset = start + payload_len + self.trailer.len() as u64;
        Ok(chunk_ref(start, self.offset))
    }

    fn build_trailer(&mut self, children: &[ChildRef], compression: Compression) -> Result<()> {
        self.trailer.clear();
        for child in children {
            self.trailer.extend_from_slice(child.as_bytes());
        }
        if !children.is_empty() {
            let count = u32::try_from(children.len()).map_err(|_| ParError::Encode {
                what: "chunk",
                why: format!("{} children exceed the u32 count", children.len()),
            })?;
            self.trailer.extend_from_slice(&count.to_le_bytes());
        }
        self.trailer
            .push(MetaByte::new(!children.is_empty(), compression.id()).as_u8());
        Ok(())
    }

    /// Appends the global header naming `root` and returns the output.
    pub(crate) fn finish(mut self, root: ChildRef) -> Result<W> {
        let header = GlobalHeader {
            magic: MAGIC,
            version: U16::new(VERSION),
            root_offset: root.offset,
            root_length: root.length,
            checksum: U32::new(0),
        };
        self.out
            .write_all(header.as_bytes())
            .and_then(|()| self.out.flush())
            .map_err(output_error)?;
        Ok(self.out)
    }
}

fn chunk_ref(start: u64, end: u64) -> ChildRef {
    ChildRef {
        offset: U64::new(start),
        length: U64::new(end - start),
    }
}

pub(crate) fn output_error(source: std::io::Error) -> ParError {
    ParError::Io {
        during: "writing the PAR4 output",
        source,
    }
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
    use crate::raw::reader::ParFile;

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
            .unwrap()
            .iter()
            .map(|c| c.payload().unwrap().to_vec())
            .collect();
        assert_eq!(children, [b"a".to_vec(), b"bb".to_vec()]);
    }

    #[test]
    fn a_node_has_one_parent() {
        let mut graph = ChunkGraph::new();
        let shared = graph.add(b"shared".to_vec(), vec![]).unwrap();
        assert!(matches!(
            graph.add(Vec::new(), vec![shared, shared]),
            Err(ParError::Encode { .. })
        ));
        graph.add(Vec::new(), vec![shared]).unwrap();
        assert!(graph.add(Vec::new(), vec![shared]).is_err());
    }

    #[test]
    fn unknown_children_are_refused() {
        let mut graph = ChunkGraph::new();
        assert!(graph.add(Vec::new(), vec![NodeId(3)]).is_err());
    }

    #[test]
    fn compression_is_per_chunk() {
        let mut graph = ChunkGraph::new();
        let plain = graph.add(vec![7; 1000], vec![]).unwrap();
        graph.set_compression(plain, Compression::None).unwrap();
        let packed = graph.add(vec![7; 1000], vec![]).unwrap();
        let root = graph.add(Vec::new(), vec![plain, packed]).unwrap();
        let file = ParFile::new(graph.to_bytes(root, Compression::Lz4).unwrap()).unwrap();
        let root = file.root().unwrap();
        assert_eq!(root.compression(), Compression::Lz4);
        assert_eq!(root.child(0).unwrap().compression(), Compression::None);
        assert_eq!(root.child(1).unwrap().compression(), Compression::Lz4);
        assert_eq!(root.child(1).unwrap().payload().unwrap().len(), 1000);
    }
}
