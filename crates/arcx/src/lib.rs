//! ARCX archives: zstd-compressed data blocks, a manifest, and a fixed-size
//! footer at the end that makes opening constant-time.
//!
//! ```text
//! offset 0            80                     manifest_offset      len-40   len
//! ┌──────────────────┬──────────────────────┬────────────────────┬────────┐
//! │ header "ARCX0001"│ data blocks          │ manifest "MFv2"... │ footer │
//! │ 80 bytes         │ u32 size + zstd each │                    │ 40 B   │
//! └──────────────────┴──────────────────────┴────────────────────┴────────┘
//! ```
//!
//! This crate currently defines the identifying bytes; see `spec/arcx.md`.

/// The first 8 bytes of every ARCX archive.
pub const HEADER_MAGIC: [u8; 8] = *b"ARCX0001";

/// The size of the fixed header at the start of the archive.
pub const HEADER_SIZE: usize = 80;

/// The magic that opens the footer.
pub const FOOTER_MAGIC: [u8; 8] = *b"ARCXEND1";

/// The size of the footer at the end of the archive.
pub const FOOTER_SIZE: usize = 40;
