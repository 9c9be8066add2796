//! Parcode V4 (`PAR4`) files: chunks written bottom-up, children before
//! parents, and a 26-byte global header at the very end that points at the
//! root chunk.
//!
//! ```text
//! ┌─────────┬─────────┬─────┬────────────┬──────────────────────────────┐
//! │ chunk 0 │ chunk 1 │ ... │ root chunk │ global header (26 bytes)     │
//! └─────────┴─────────┴─────┴────────────┴──────────────────────────────┘
//! global header: "PAR4" | version u16 | root offset u64 | root length u64 | checksum u32
//! ```
//!
//! This crate currently defines the identifying bytes; see `spec/parcode.md`.

/// The magic at the start of the global header.
pub const MAGIC: [u8; 4] = *b"PAR4";

/// The size of the global header at the end of the file.
pub const GLOBAL_HEADER_SIZE: usize = 26;
