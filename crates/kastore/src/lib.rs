//! kastore files (`.kas`, tskit `.trees`): a key → typed-array store, read
//! and written exactly as the kastore C library and Python package do.
//!
//! ```text
//! offset 0          64                 64 + 64·n        keys end
//! ┌────────────────┬──────────────────┬────────────────┬─────────────────────┐
//! │ header         │ n item           │ keys, sorted,  │ arrays, each on an  │
//! │ 64 bytes       │ descriptors,     │ packed densely │ 8-byte boundary,    │
//! │ "\x89KAS\r\n…" │ 64 bytes each    │                │ zero padding between│
//! └────────────────┴──────────────────┴────────────────┴─────────────────────┘
//! ```
//!
//! The byte-level layout is in [`format`](mod@format); `spec/kastore.md` states every
//! check the reader makes. [`Store`] reads through any
//! [`binfmt_core::Source`] (a map by default: arrays are borrowed in place);
//! [`Store::read_one`] reads stores one after another from a stream;
//! [`Writer`] writes the same bytes as `kastore.dump`, and appends to or
//! updates an existing store; [`npy`] reads one-dimensional `.npy` files.
//!
//! ```
//! use binfmt_kastore::{Store, Writer};
//!
//! let mut writer = Writer::new();
//! writer.insert("edges/left", &[0.0f64, 10.0][..])?;
//! writer.insert("edges/parent", &[4i32, 5][..])?;
//! let store = Store::new(writer.to_bytes()?)?;
//!
//! for item in store.items() {
//!     println!("{:?} {} {}", item.key_str(), item.item_type(), item.len());
//! }
//! assert_eq!(&*store.array::<i32>("edges/parent")?, &[4, 5]);
//! assert!(store.array::<f32>("edges/left").is_err()); // it holds float64
//! # Ok::<(), binfmt_kastore::KastError>(())
//! ```

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod element;
mod error;
pub mod format;
pub mod npy;
mod reader;
mod writer;

pub use element::Element;
pub use error::{KastError, Result};
pub use format::{ItemType, SIGNATURE};
pub use reader::{Item, Pieces, Store};
pub use writer::Writer;
