//! Checking what a file's map entries mean, after its chunks are verified
//! ([`ParFile::verify`] checks only the chunk tree): when the root is a map
//! of string keys and byte values (what the `binfmt` tools list and read),
//! every key against its hash, no key twice, every entry's length.
//!
//! ```text
//! root container ─▶ bucket i: hash table │ offset table │ entries (key, value)
//!                   each entry: offset in order, exact length, hash(key) = stored hash,
//!                               hash % buckets = i, key not seen before
//! ```

use binfmt_core::Source;

use super::lazy::LazyMap;
use crate::raw::error::{ParError, Result};
use crate::raw::reader::ParFile;

impl<S: Source> ParFile<S> {
    /// Checks every entry of the root, when the root reads as a map of
    /// `String` keys and byte values. A root of another type (PAR4 does not
    /// record it) has nothing more to check: an error decoding it as that
    /// map is not the file's, and is not reported.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::collections::HashMap;
    /// use binfmt_parcode::{ChunkGraph, Compression, MapLayout, ParFile};
    ///
    /// let files: HashMap<String, Vec<u8>> = [("a.txt".to_owned(), b"hi".to_vec())].into();
    /// let mut graph = ChunkGraph::new();
    /// let root = graph.map(&files, MapLayout::Buckets)?;
    /// let file = ParFile::new(graph.to_bytes(root, Compression::Lz4)?)?;
    /// file.verify()?;
    /// file.verify_entries()?;
    /// # Ok::<(), binfmt_parcode::ParError>(())
    /// ```
    pub fn verify_entries(&self) -> Result<()> {
        let root = self.root()?;
        let Ok(map) = LazyMap::<String, Vec<u8>>::new(root) else {
            return Ok(());
        };
        match map.value_lens() {
            Ok(_) => Ok(()),
            Err(
                error @ (ParError::DuplicateKey { .. }
                | ParError::HashMismatch { .. }
                | ParError::WrongBucket { .. }
                | ParError::EntryOutOfOrder { .. }
                | ParError::EntryLength { .. }
                | ParError::BucketUnused { .. }
                | ParError::ChildrenOverlap { .. }
                | ParError::Lz4 { .. }
                | ParError::Core(_)),
            ) => Err(error),
            Err(_) => Ok(()),
        }
    }
}
