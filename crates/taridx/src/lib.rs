//! TARIDX: a random-access index over WebDataset-style tar shards, in the
//! layout of the iTar indexer.
//!
//! ```text
//! offset 0           64                off_crash           off_arr          EOF
//! ┌─────────────────┬─────────────────┬───────────────────┬─────────────────┐
//! │ header 64 bytes │ extension block │ crash-stem block  │ rows, 32 bytes  │
//! │ "TARIDX\0\0"... │ "jpg\njson"     │ "stem_a\nstem_b"  │ each, to EOF    │
//! └─────────────────┴─────────────────┴───────────────────┴─────────────────┘
//! ```
//!
//! This crate currently defines the identifying bytes and the tar header
//! checksum; see `spec/taridx.md`.

pub mod tar;

/// The 8-byte magic field at the start of every index.
pub const MAGIC: [u8; 8] = *b"TARIDX\0\0";
