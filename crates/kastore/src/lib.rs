//! kastore files (`.kas`, tskit `.trees`): a key → typed-array store.
//!
//! ```text
//! offset 0                      64                64 + 64·n
//! ┌────────────────────────────┬─────────────────┬──────┬───────────────────┐
//! │ header: signature (8),     │ n item          │ keys │ arrays, each      │
//! │ version, num_items,        │ descriptors of  │      │ 8-byte aligned    │
//! │ file_size, reserved        │ 64 bytes        │      │                   │
//! └────────────────────────────┴─────────────────┴──────┴───────────────────┘
//! ```
//!
//! This crate currently defines the identifying bytes; see `spec/kastore.md`.

/// The 8 bytes every kastore file starts with: `"\x89KAS\r\n\x1a\n"`.
pub const SIGNATURE: [u8; 8] = [0x89, b'K', b'A', b'S', b'\r', b'\n', 0x1a, b'\n'];

/// The size of the header, signature included.
pub const HEADER_SIZE: usize = 64;
