//! A single value as one chunk: the reference's layout for primitives,
//! strings, and maps saved directly.
//!
//! ```text
//! chunk payload: bincode(value)   (every byte of it; no children)
//! ```

#![forbid(unsafe_code)]

use crate::raw::error::{ParError, Result};
use crate::raw::reader::Chunk;
use crate::raw::writer::{ChunkGraph, NodeId};
use crate::typed::codec;

impl ChunkGraph<'_> {
    /// Adds a single value as one chunk (the reference's layout for
    /// primitives, strings, and maps saved directly).
    pub fn value<T: serde::Serialize + ?Sized>(&mut self, value: &T) -> Result<NodeId> {
        let payload = codec::encode(value, "value")?;
        self.add(payload, Vec::new())
    }
}

impl Chunk<'_> {
    /// Decodes this chunk's whole payload as one value, which must use
    /// every byte of it.
    pub fn decode<T: serde::de::DeserializeOwned>(&self) -> Result<T> {
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
