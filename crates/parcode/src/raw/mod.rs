//! The raw chunk tree: the byte layout ([`format`]), reading and checking
//! chunks ([`reader`]), verifying a whole file ([`verify`]), writing a tree
//! bottom-up ([`writer`]), payload compression ([`compression`]), and the
//! error of this layer and the typed one ([`error`]).
//!
//! ```text
//! ┌─────────┬─────────┬─────┬────────────┬──────────────────────────────┐
//! │ chunk 0 │ chunk 1 │ ... │ root chunk │ global header (26 bytes)     │
//! └─────────┴─────────┴─────┴────────────┴──────────────────────────────┘
//! ```
//!
//! Nothing here knows what a payload holds: that is the typed layer's
//! (`typed`), and the drop-in API (`dropin`) sits on both. Nothing here
//! names either.

#![forbid(unsafe_code)]

pub mod compression;
pub mod error;
pub mod format;
pub mod reader;
pub mod verify;
pub mod writer;
