//! The front door of the binfmt toolkit: recognise a file's format from its
//! magic bytes, whatever the format.
//!
//! ```no_run
//! let format = binfmt::sniff("data/train.taridx")?;
//! println!("{format}");
//! # Ok::<(), binfmt::Error>(())
//! ```

pub mod sniff;

pub use binfmt_core::{Error, Result};
pub use sniff::{Format, sniff, sniff_bytes};
