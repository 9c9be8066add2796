//! TARIDX: a random-access index over WebDataset-style tar shards, in the
//! layout of the iTar indexer (dsb-ifi/glzn), read and written byte for byte
//! as it does.
//!
//! ```text
//! offset 0           64                off_crash           off_arr          EOF
//! ┌─────────────────┬─────────────────┬───────────────────┬─────────────────┐
//! │ header 64 bytes │ extension block │ crash-stem block  │ rows, 32 bytes  │
//! │ "TARIDX\0\0"... │ "jpg\njson"     │ "stem_a\nstem_b"  │ each, to EOF    │
//! └─────────────────┴─────────────────┴───────────────────┴─────────────────┘
//! ```
//!
//! - [`format`](mod@format): the header and row layouts;
//! - [`tar`]: header blocks and the header-only shard scan; [`TarWriter`]
//!   writes deterministic ustar/pax shards;
//! - [`build`]: indexing shards ([`index_shards`], [`index_fold`]);
//! - [`Index`]: a checked index with its rows in place, and [`Index::verify`];
//! - [`Dataset`]: samples, lookups, filters and payloads over index + shards.
//!
//! ```no_run
//! use binfmt_taridx::{Dataset, IndexOptions, index_fold};
//!
//! index_fold("shards".as_ref(), "train", IndexOptions::default(), || {})?;
//! let mut dataset = Dataset::open_fold("shards", "train")?;
//! dataset.filter_extensions(&["jpg", "cls"])?;
//! dataset.enforce_contiguous();
//! for row in dataset.sample(0)?.unwrap_or_default() {
//!     let bytes: &[u8] = dataset.payload(row)?;
//!     println!("{:?}: {} bytes", dataset.extension(row), bytes.len());
//! }
//! # Ok::<(), binfmt_taridx::TaridxError>(())
//! ```

pub mod build;
mod dataset;
mod error;
pub mod format;
mod index;
pub mod tar;
mod tar_writer;

pub use build::{
    IndexBuilder, IndexOptions, fold_index_path, fold_shards, index_fold, index_shards,
};
pub use dataset::Dataset;
pub use error::{Result, TaridxError};
pub use format::{MAGIC, Row};
pub use index::Index;
pub use tar_writer::TarWriter;
