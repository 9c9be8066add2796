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

use std::path::Path;

/// An error message that names `path` exactly once: `PATH: message`, or the
/// message as it is when it already starts with the path.
pub fn about(path: &Path, error: impl std::fmt::Display) -> String {
    let message = error.to_string();
    let name = path.display().to_string();
    if message.starts_with(&name) {
        message
    } else {
        format!("{name}: {message}")
    }
}
