//! The chunk tree of a file, for people (`parcode::inspector`):
//! [`DebugReport`] prints as the reference's report does, one line a chunk
//! with its kind, stored payload size, compression and children.
//!
//! ```text
//! === PARCODE INSPECTOR REPORT ===
//! Root Offset:    95
//!
//! [GRAPH LAYOUT]
//! └── [Generic Container] Size: 4b | Algo: None | Children: 2
//!     ├── [Vec Container] Size: 11b | Algo: None | Children: 1 [Vec<3> items across 1 logical shards]
//!     │   └── [Vec Shard] Size: 4b | Algo: None | Children: 0 [3 items]
//!     └── [Map Container] Size: 4b | Algo: None | Children: 1 [Hashtable with 1 buckets]
//!         └── [Map Bucket] Size: 88b | Algo: None | Children: 0 [5 entries]
//! ```
//!
//! Kinds are recognised by layout: a `Vec` container's run table must cover
//! its children and item count, a map container's bucket count must be its
//! child count; their children are shards and buckets. The walk refuses a
//! chunk reached twice and is bounded by the depth limit (the reference
//! recurses without bound and overflows its stack on a cycle).

use std::fmt;
use std::path::Path;

use serde::Serialize;

use crate::dropin::error::ParcodeError;
use crate::dropin::file::ParcodeFile;
use crate::raw::reader::Chunk;
use crate::typed::vec::Container;

type Result<T, E = ParcodeError> = std::result::Result<T, E>;

/// A file's chunk tree.
#[derive(Debug, Serialize)]
pub struct DebugReport {
    /// The file's size.
    pub file_size: u64,
    /// Where the root chunk starts.
    pub root_offset: u64,
    /// The format version (4).
    pub global_version: u16,
    /// The root chunk and, below it, every chunk.
    pub tree: ChunkInfo,
}

/// One chunk of a [`DebugReport`].
#[derive(Debug, Serialize)]
pub struct ChunkInfo {
    /// Where it starts.
    pub offset: u64,
    /// Its length, trailer included.
    pub total_length: u64,
    /// Its payload as stored (compressed or not).
    pub payload_size: u64,
    /// Its number of children.
    pub child_count: u32,
    /// `None`, `LZ4`.
    pub compression_algo: String,
    /// Whether it has children (the meta byte's bit 0).
    pub is_chunkable: bool,
    /// What the layout says it is: `Vec Container`, `Vec Shard`, `Map
    /// Container`, `Map Bucket`, `Generic Container`, `Leaf/Blob`.
    pub node_type_hint: String,
    /// Item, shard, bucket or entry counts, when known.
    pub distribution_info: Option<String>,
    /// Its children, in order.
    pub children: Vec<ChunkInfo>,
}

/// Builds [`DebugReport`]s.
#[derive(Debug)]
pub struct ParcodeInspector;

/// What a chunk's parent says its children are.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Parent {
    Other,
    Vec,
    Map,
}

impl ParcodeFile {
    /// The chunk tree.
    pub fn inspect(&self) -> Result<DebugReport> {
        ParcodeInspector::inspect_file(self)
    }
}

impl ParcodeInspector {
    /// The chunk tree of an open file.
    pub fn inspect_file(file: &ParcodeFile) -> Result<DebugReport> {
        let root = file.root_node()?.walking()?;
        Ok(DebugReport {
            file_size: file.file_size(),
            root_offset: root.offset(),
            global_version: crate::raw::format::VERSION,
            tree: Self::node(&root, Parent::Other, None)?,
        })
    }

    /// The chunk tree of the file at `path`.
    pub fn inspect<P: AsRef<Path>>(path: P) -> Result<DebugReport> {
        Self::inspect_file(&ParcodeFile::open(path)?)
    }

    fn node(chunk: &Chunk<'_>, parent: Parent, items: Option<u64>) -> Result<ChunkInfo> {
        let (hint, info, kind, plan) = Self::kind(chunk, parent, items);
        let mut children = Vec::new();
        for (index, child) in chunk.children()?.iter().enumerate() {
            let items = plan.as_ref().map(|plan| plan.shard_len(index as u32));
            children.push(Self::node(child, kind, items)?);
        }
        Ok(ChunkInfo {
            offset: chunk.offset(),
            total_length: chunk.length(),
            payload_size: chunk.payload_len(),
            child_count: chunk.child_count(),
            compression_algo: match chunk.compression() {
                crate::raw::compression::Compression::Lz4 => "LZ4".into(),
                _ => "None".into(),
            },
            is_chunkable: chunk.meta().is_chunkable(),
            node_type_hint: hint.into(),
            distribution_info: info,
            children,
        })
    }

    /// The chunk's kind, its counts, what its children are, and its run
    /// table when it is a `Vec` container.
    fn kind(
        chunk: &Chunk<'_>,
        parent: Parent,
        items: Option<u64>,
    ) -> (&'static str, Option<String>, Parent, Option<Container>) {
        match parent {
            Parent::Vec => {
                let info = items.map(|items| format!("{items} items"));
                return ("Vec Shard", info, Parent::Other, None);
            }
            Parent::Map => {
                let entries = chunk.payload().ok().map(|payload| {
                    payload
                        .first_chunk::<4>()
                        .map_or(0, |bytes| u32::from_le_bytes(*bytes))
                });
                let info = entries.map(|entries| format!("{entries} entries"));
                return ("Map Bucket", info, Parent::Other, None);
            }
            Parent::Other => {}
        }
        if chunk.child_count() == 0 {
            return ("Leaf/Blob", None, Parent::Other, None);
        }
        let Ok(payload) = chunk.payload() else {
            return ("Corrupted", None, Parent::Other, None);
        };
        if payload.len() == 4 && *payload == chunk.child_count().to_le_bytes() {
            let info = format!("Hashtable with {} buckets", chunk.child_count());
            return ("Map Container", Some(info), Parent::Map, None);
        }
        if payload.len() >= 8
            && let Ok(plan) = Container::parse(chunk)
        {
            let info = format!(
                "Vec<{}> items across {} logical shards",
                plan.len,
                chunk.child_count()
            );
            return ("Vec Container", Some(info), Parent::Vec, Some(plan));
        }
        ("Generic Container", None, Parent::Other, None)
    }
}

impl fmt::Display for DebugReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "=== PARCODE INSPECTOR REPORT ===")?;
        writeln!(f, "Root Offset:    {}", self.root_offset)?;
        writeln!(f, "\n[GRAPH LAYOUT]")?;
        self.tree.write_line(f, "", true)
    }
}

impl ChunkInfo {
    fn write_line(&self, f: &mut fmt::Formatter<'_>, prefix: &str, last: bool) -> fmt::Result {
        let (connector, below) = if last {
            ("└── ", "    ")
        } else {
            ("├── ", "│   ")
        };
        let info = self
            .distribution_info
            .as_deref()
            .map(|info| format!(" [{info}]"))
            .unwrap_or_default();
        writeln!(
            f,
            "{prefix}{connector}[{}] Size: {}b | Algo: {} | Children: {}{info}",
            self.node_type_hint, self.payload_size, self.compression_algo, self.child_count
        )?;
        let prefix = format!("{prefix}{below}");
        for (index, child) in self.children.iter().enumerate() {
            child.write_line(f, &prefix, index + 1 == self.children.len())?;
        }
        Ok(())
    }
}
