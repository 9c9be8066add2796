//! The other tar indexes people use, both ways: `wids` shard lists, NVIDIA
//! DALI `wds2idx` index files, and ratarmount's SQLite index.
//!
//! ```text
//! wids shard list (JSON)            DALI .idx (text, one line per sample)
//! {"__kind__": "wids-shard-index-v1",  v1.2 2
//!  "wids_version": 1, "name": FOLD,    cls 512 1 a.cls jpg 1536 4 a.jpg
//!  "shardlist": [{"url": "train_0000.tar", "nsamples": 2, "filesize": 10240}]}
//!                                      (v1.1: "ext offset size" per member)
//! ratarmount <shard>.index.sqlite: table files(path, name, offsetheader, offset,
//!   size, mtime, mode, type, linkname, uid, gid, istar, issparse, isgenerated,
//!   recursiondepth), metadata(key, value), versions(name, version, major, minor, patch)
//! ```
//!
//! Samples, where a foreign index counts them (wids `nsamples`, DALI lines),
//! are the runs of rows with one `(keyhash, crashid)` within a shard, in row
//! order: what wids and DALI count (consecutive members with one key) when
//! the index is WebDataset-keyed, and for glzn keys unless two consecutive
//! samples share a basename in different directories.
//!
//! A foreign index is a claim about the shards, never trusted: every file
//! read here goes through the input gate ([`binfmt_core::input`]) with a
//! limit derived from the shards, and what is read is only ever turned into
//! rows that [`crate::Index::verify`] then checks against the shards. The
//! writers return bytes or text; the caller writes them through the output
//! gate ([`binfmt_core::Inputs`]).

mod dali;
mod ratarmount;
mod shared;
mod wids;

pub use dali::{
    dali_index, dali_index_limit, dali_index_name, read_dali_index, read_dali_index_file,
};
pub use ratarmount::{
    RATARMOUNT_MAX_DB, ratarmount_db_limit, ratarmount_index, ratarmount_index_path,
    read_ratarmount,
};
pub use shared::shard_samples;
pub(crate) use wids::wids_shard_list_of_rows;
pub use wids::{WIDS_LIST_LIMIT, read_wids_shard_list, wids_shard_list, wids_shard_urls, wids_url};
