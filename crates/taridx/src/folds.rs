//! Every fold under a root: discovery by glzn's naming convention, which
//! indexes are missing or stale, and indexing them all at once.
//!
//! ```text
//! ROOT/train_0000.tar ┐
//! ROOT/train_0001.tar ├ fold "train" → ROOT/train.taridx
//! ROOT/val_0000.tar   ─ fold "val"   → ROOT/val.taridx
//! ```
//!
//! A shard is a file `FOLD_SHARD.tar` whose `SHARD` has no `_` (the fold is
//! everything before the last `_`). An index is stale when it is older
//! than one of its shards, when its rows disagree with the shards' sizes
//! (a row whose shard is missing, or whose member ends past its shard's
//! end), or when it does not cover its shards: a member after a shard's
//! last row, or a shard without rows that holds a member
//! ([`crate::Index::check_coverage`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use binfmt_core::IoResultExt;
use rayon::prelude::*;

use crate::build::{IndexOptions, index_shards, with_threads};
use crate::error::Result;
use crate::fold_names::fold_index_path;
use crate::index::Index;

/// One fold found under a root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fold {
    /// Its name.
    pub name: String,
    /// Its shards, in fid order.
    pub shards: Vec<PathBuf>,
    /// Where its index is (or goes).
    pub index: PathBuf,
}

/// Whether a fold's index can be used.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FoldState {
    /// The index is there and agrees with the shards.
    Fresh,
    /// There is no index.
    Missing,
    /// The index is there but out of date; why.
    Stale(String),
}

/// The folds under `root`, sorted by name, each with its shards in fid
/// order.
pub fn discover(root: impl AsRef<Path>) -> Result<Vec<Fold>> {
    let root = root.as_ref();
    let dir = if root.as_os_str().is_empty() {
        Path::new(".")
    } else {
        root
    };
    let mut folds: BTreeMap<String, Vec<(String, PathBuf)>> = BTreeMap::new();
    for entry in std::fs::read_dir(dir).with_path(dir)? {
        let entry = entry.with_path(dir)?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some((fold, shard)) = name
            .strip_suffix(".tar")
            .and_then(|stem| stem.rsplit_once('_'))
        else {
            continue;
        };
        if !fold.is_empty() {
            folds
                .entry(fold.to_owned())
                .or_default()
                .push((shard.to_owned(), entry.path()));
        }
    }
    Ok(folds
        .into_iter()
        .map(|(name, mut shards)| {
            shards.sort();
            Fold {
                index: fold_index_path(root, &name),
                shards: shards.into_iter().map(|(_, path)| path).collect(),
                name,
            }
        })
        .collect())
}

impl Fold {
    /// Whether the fold's index is there, and fresh.
    pub fn state(&self) -> Result<FoldState> {
        if std::fs::metadata(&self.index).is_err() {
            return Ok(FoldState::Missing);
        }
        // Through the input gate first (a FIFO or a device is named, never
        // read), and read by offset, not mapped: an index cut short
        // underneath is an error here, never SIGBUS. Its time comes from
        // the descriptor, so it is the file's that is read.
        let source = match binfmt_core::FileSource::open(&self.index) {
            Ok(source) => source,
            Err(error) => {
                return Ok(FoldState::Stale(format!(
                    "the index does not open: {error}"
                )));
            }
        };
        let index_meta = source.file().metadata().with_path(&self.index)?;
        let mut lens = Vec::with_capacity(self.shards.len());
        for shard in &self.shards {
            let meta = std::fs::metadata(shard).with_path(shard)?;
            if let (Ok(index_time), Ok(shard_time)) = (index_meta.modified(), meta.modified())
                && shard_time > index_time
            {
                return Ok(FoldState::Stale(format!(
                    "{} is newer than the index",
                    shard.display()
                )));
            }
            lens.push(meta.len());
        }
        let index = match Index::new(source) {
            Ok(index) => index,
            Err(error) => {
                return Ok(FoldState::Stale(format!(
                    "the index does not open: {error}"
                )));
            }
        };
        for (number, row) in (0u64..).zip(index.rows()?.iter()) {
            let fid = usize::from(row.fid.get());
            let Some(&len) = lens.get(fid) else {
                return Ok(FoldState::Stale(format!(
                    "row {number} is in shard {fid}, but the fold has {} shards",
                    lens.len()
                )));
            };
            let end = row
                .offset
                .get()
                .checked_add(crate::tar::BLOCK)
                .and_then(|start| start.checked_add(row.size.get()));
            if end.is_none_or(|end| end > len) {
                return Ok(FoldState::Stale(format!(
                    "row {number}'s member ends past the end of {} ({len} bytes)",
                    self.shards
                        .get(fid)
                        .map_or_else(String::new, |s| s.display().to_string())
                )));
            }
        }
        // Every member of every shard has a row: none after a shard's last
        // row, no shard without rows (only the headers after each shard's
        // last row are read).
        let shards = crate::shards::ShardFiles::new(self.shards.clone());
        if let Err(error) = index.check_coverage(&shards) {
            return Ok(FoldState::Stale(error.to_string()));
        }
        Ok(FoldState::Fresh)
    }

    /// Indexes the fold's shards and writes its index atomically.
    pub fn index(&self, options: IndexOptions) -> Result<()> {
        crate::shards::check_not_input(&self.index, &self.shards)?;
        index_shards(&self.shards, options, || {})?.write_file(&self.index)
    }
}

/// Indexes `folds` in parallel (folds at once, each fold's shards scanned
/// in parallel too), on `jobs` threads; returns each fold's result in the
/// order given.
pub fn index_all(folds: &[Fold], options: IndexOptions) -> Vec<Result<()>> {
    let run = || folds.par_iter().map(|fold| fold.index(options)).collect();
    match options.jobs {
        Some(jobs) => with_threads(jobs, run),
        None => run(),
    }
}
