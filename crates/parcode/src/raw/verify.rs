//! Verifying a whole file: [`ParFile::verify`] walks every chunk once
//! (depth first, with the walk's record of the bytes already reached, so
//! a chunk reached twice is an error) and decompresses every payload.
//!
//! ```text
//! root ─▶ child 0 ─▶ its children ... ─▶ child 1 ─▶ ...   (one path held at a time)
//! ```

use binfmt_core::Source;

use crate::raw::error::Result;
use crate::raw::reader::{Chunk, ParFile};

impl<S: Source> ParFile<S> {
    /// Walks every chunk once and decompresses every payload: time linear
    /// in the file's size plus the decompressed bytes (each at most 255
    /// times its stored bytes), memory bounded by the largest payload plus
    /// a record of 16 bytes per chunk.
    ///
    /// # Examples
    ///
    /// ```
    /// use binfmt_parcode::{ChunkGraph, Compression, ParFile};
    ///
    /// let items: Vec<u32> = (0..1000).collect();
    /// let mut graph = ChunkGraph::new();
    /// let root = graph.vec_with_shard_len(&items, 100)?;
    /// let file = ParFile::new(graph.to_bytes(root, Compression::Lz4)?)?;
    /// let summary = file.verify()?;
    /// assert_eq!(summary.chunks, 11); // the container and 10 shards
    /// # Ok::<(), binfmt_parcode::ParError>(())
    /// ```
    pub fn verify(&self) -> Result<VerifySummary> {
        let mut summary = VerifySummary::default();
        let mut visit = |chunk: &Chunk<'_>| -> Result<()> {
            summary.chunks += 1;
            summary.payload_bytes += chunk.payload()?.len() as u64;
            self.source().will_read(&chunk.child_ranges());
            Ok(())
        };
        let root = self.root()?.walking()?;
        visit(&root)?;
        // Depth first, one path of (chunk, next child) at a time: memory
        // is bounded by the depth limit, not by the child counts.
        let mut path = vec![(root, 0)];
        while let Some((chunk, next)) = path.last_mut() {
            if *next == chunk.child_count() {
                path.pop();
                continue;
            }
            let child = chunk.child(*next)?;
            *next += 1;
            visit(&child)?;
            path.push((child, 0));
        }
        Ok(summary)
    }
}

/// What [`ParFile::verify`] walked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct VerifySummary {
    /// Chunks.
    pub chunks: u64,
    /// Their payload bytes after decompression.
    pub payload_bytes: u64,
}
