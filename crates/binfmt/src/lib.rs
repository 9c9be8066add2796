//! The front door of the binfmt toolkit: recognise a file's format from its
//! magic bytes ([`sniff`]) and read any supported file as named entries
//! ([`open`]).
//!
//! ```no_run
//! let format = binfmt::sniff("data/train.taridx")?;
//! println!("{format}");
//! # Ok::<(), binfmt::Error>(())
//! ```

pub mod convert;
pub mod entries;
pub mod sniff;

pub use binfmt_core::{Error, Result};
pub use convert::{ConvertOptions, ConvertSummary, convert, convert_with_progress};
pub use entries::{Entry, EntrySource, extract, extract_with_progress, open};
pub use sniff::{Format, sniff, sniff_bytes};
