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
//! - [`keys`]: how member names become sample keys ([`KeyRule`]);
//! - [`tar`]: header blocks and the header-only shard scan; [`TarWriter`]
//!   writes deterministic ustar/pax shards;
//! - [`build`]: indexing shards ([`index_shards`], [`index_fold`]);
//! - [`Index`]: a checked index over any [`binfmt_core::Source`], and
//!   [`Index::verify`];
//! - [`Dataset`]: samples, lookups, filters and member readers over index +
//!   shards, opened lazily ([`shards`]);
//! - [`sampler`]: deterministic epoch orders for distributed training,
//!   computed position by position, with exact resume.
//!
//! ```no_run
//! use std::io::Read;
//! use binfmt_taridx::{Dataset, IndexOptions, index_fold};
//!
//! index_fold("shards", "train", IndexOptions::default(), || {})?;
//! let mut dataset = Dataset::open_fold("shards", "train")?;
//! dataset.filter_extensions(&["jpg", "cls"])?;
//! dataset.enforce_contiguous();
//! for row in dataset.sample(0)?.unwrap_or_default() {
//!     let bytes = dataset.read(row)?;
//!     println!("{:?}: {} bytes", dataset.extension(row), bytes.len());
//! }
//! # Ok::<(), binfmt_taridx::TaridxError>(())
//! ```

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod build;
mod checked;
mod dataset;
mod error;
mod fold_names;
pub mod folds;
pub mod foreign;
pub mod format;
mod index;
pub mod keys;
mod lookup;
mod member;
mod places;
mod sample_writer;
pub mod sampler;
mod scatter;
mod shard_list;
mod shard_patterns;
mod shard_reports;
pub mod shards;
pub mod tar;
mod tar_problem;
mod tar_writer;
mod window;

pub use build::{
    IndexBuilder, IndexFile, IndexOptions, IndexWriter, index_fold, index_shards,
    index_shards_into, write_index,
};
pub use dataset::{Dataset, DatasetOptions};
pub use error::{Result, RowProblem, TaridxError};
pub use fold_names::{
    ShardNaming, fold_index_path, fold_of_index, fold_shard_name, fold_shard_names, fold_shards,
    fold_shards_named, parse_shard_name,
};
pub use format::{MAGIC, Row};
pub use index::Index;
pub use keys::{KeyAndExtension, KeyRule, keyhash};
pub use member::{MemberInfo, MemberReader};
pub use sample_writer::{
    MAX_FOLD_SHARDS, MemberSource, SampleWriter, SampleWriterOptions, WrittenFold, WrittenShard,
};
pub use shard_list::{
    SHARD_LIST_SUFFIX, find_shards, find_shards_in, record_shards, shard_list_path,
};
pub use shard_patterns::expand_shard_patterns;
pub use shard_reports::{
    check_reports, publish_fold, publish_fold_indexed, write_index_of_reports,
};
pub use shards::{ShardBytes, ShardFiles, ShardSet};
pub use tar_writer::{TarWriter, check_member_name};
