//! Every fold under a root: discovery by the shards' names, which
//! indexes are missing or stale, and indexing them all at once.
//!
//! ```text
//! ROOT/train_0000.tar ┐
//! ROOT/train_0001.tar ├ fold "train" → ROOT/train.taridx
//! ROOT/val_0000.tar   ─ fold "val"   → ROOT/val.taridx
//! ```
//!
//! A shard is a file `FOLD_SHARD.tar` whose `SHARD` has no `_` (the fold is
//! everything before the last `_`), or `FOLD-N.tar` or `FOLD.N.tar` (`N`
//! digits; [`crate::parse_shard_name`]). An index is stale when the
//! shards it finds ([`crate::find_shards`]) are not the fold's (a fold not
//! named glzn's way needs its shard list), when it is older than one of
//! its shards, when its rows disagree with the shards' sizes
//! (a row whose shard is missing, or whose member ends past its shard's
//! end), or when it does not cover its shards: a member after a shard's
//! last row, or a shard without rows that holds a member
//! ([`crate::Index::check_coverage`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use binfmt_core::IoResultExt;
use rayon::prelude::*;

use crate::build::{IndexOptions, index_shards, with_threads};
use crate::error::Result;
use crate::fold_names::{ShardNaming, fold_index_path, fold_shard_names, parse_shard_name};
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
    /// How its shards are named: any but glzn's gets a shard list beside
    /// the index ([`crate::record_shards`]).
    pub naming: ShardNaming,
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
/// order, named as [`crate::fold_shard_names`] reads names (glzn's where a
/// fold has them, else `FOLD-N.tar` or `FOLD.N.tar`).
pub fn discover(root: impl AsRef<Path>) -> Result<Vec<Fold>> {
    let root = root.as_ref();
    let dir = if root.as_os_str().is_empty() {
        Path::new(".")
    } else {
        root
    };
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).with_path(dir)? {
        let entry = entry.with_path(dir)?;
        if let Ok(name) = entry.file_name().into_string() {
            names.push(name);
        }
    }
    let folds: BTreeSet<&str> = names
        .iter()
        .filter_map(|name| parse_shard_name(name).map(|(fold, ..)| fold))
        .collect();
    folds
        .into_iter()
        .map(|name| {
            let (naming, shards) = fold_shard_names(name, names.iter().map(String::as_str))?;
            Ok(Fold {
                index: fold_index_path(root, name),
                shards: shards.into_iter().map(|shard| dir.join(shard)).collect(),
                naming,
                name: name.to_owned(),
            })
        })
        .collect()
}

impl Fold {
    /// Whether the fold's index is there, and fresh.
    pub fn state(&self) -> Result<FoldState> {
        if std::fs::metadata(&self.index).is_err() {
            return Ok(FoldState::Missing);
        }
        let list = crate::shard_list_path(&self.index);
        if self.naming != ShardNaming::Glzn && std::fs::symlink_metadata(&list).is_err() {
            return Ok(FoldState::Stale(format!(
                "{} is missing: shards named {} are found by it",
                list.display(),
                self.naming.pattern(&self.name)
            )));
        }
        match crate::find_shards(&self.index) {
            Ok(found)
                if found.len() == self.shards.len()
                    && found
                        .iter()
                        .zip(&self.shards)
                        .all(|(a, b)| binfmt_core::same_file(a, b)) => {}
            Ok(_) => {
                return Ok(FoldState::Stale(format!(
                    "{} names other shards than the fold's",
                    list.display()
                )));
            }
            Err(error) => {
                return Ok(FoldState::Stale(format!(
                    "its shards are not found: {error}"
                )));
            }
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
        crate::shards::check_not_input(crate::shard_list_path(&self.index), &self.shards)?;
        index_shards(&self.shards, options, || {})?.write_file(&self.index)?;
        crate::shard_list::record_shards(&self.index, &self.shards)
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
