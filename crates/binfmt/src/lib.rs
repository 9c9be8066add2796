//! The front door of the binfmt toolkit: recognise a file's format from its
//! magic bytes ([`sniff()`]), read any supported file as named entries
//! ([`open`], [`EntrySource`]), extract them ([`extract`]) and convert
//! between the four formats without losing a name, a byte or a kastore
//! element type ([`convert()`]).
//!
//! ```
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("tables.kas");
//! let mut writer = binfmt_kastore::Writer::new();
//! writer.insert("edges/left", &[0.0f64, 10.0][..])?;
//! writer.write_file(&path)?;
//!
//! assert_eq!(binfmt::sniff(&path)?, binfmt::Format::Kast);
//! let source = binfmt::open(&path)?;
//! let entry = &source.list()?[0];
//! assert_eq!((entry.name.as_str(), entry.size, entry.kind), ("edges/left", 16, Some("float64")));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(missing_docs)]
#![forbid(unsafe_code)]

// The command's modules name this library `binfmt`, as the binary did.
extern crate self as binfmt;

pub mod cli;
mod cmd;
pub mod convert;
mod element_types;
pub mod entries;
mod error;
pub mod formats;
pub mod mount;
pub mod origin;
mod output;
pub mod outputs;
pub mod seekable;
mod sink;
pub mod sniff;

pub use convert::{
    ConvertOptions, ConvertSummary, TYPES_ENTRY, convert, convert_source, convert_with_progress,
};
pub use entries::{Entry, EntrySource, ExtractOptions, extract};
pub use error::{Error, LeadingPath, Result, core_error};
pub use formats::kast::open_stream;
pub use formats::taridx::open_dataset;
pub use formats::{open, open_with};
pub use origin::{OpenOptions, Opened, Origin, is_remote, open_source};
pub use seekable::ReadSeek;
pub use sniff::{Format, sniff, sniff_bytes, sniff_source, sniff_tail_first};
