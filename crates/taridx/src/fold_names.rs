//! How a fold's files are named, by glzn's convention: the shards of fold
//! `FOLD` are `FOLD_SHARD.tar` (`SHARD` without `_`; written as four or more
//! digits, `train_0000.tar`), its index `FOLD.taridx`, all in one directory.
//! Every place that names or finds a fold's files asks here.
//!
//! ```text
//! ROOT/train_0000.tar ┐
//! ROOT/train_0001.tar ├ fold "train" → ROOT/train.taridx
//! ROOT/val_0000.tar   ─ fold "val"   → ROOT/val.taridx
//! ```

use std::path::{Path, PathBuf};

use binfmt_core::IoResultExt;

use crate::error::{Result, TaridxError};

/// The file name of shard `fid` of `fold` as writers name it:
/// `FOLD_NNNN.tar`, the fid in at least four digits (`train_0003.tar`).
///
/// ```
/// assert_eq!(binfmt_taridx::fold_shard_name("train", 3), "train_0003.tar");
/// assert_eq!(binfmt_taridx::fold_shard_name("val", 12345), "val_12345.tar");
/// ```
pub fn fold_shard_name(fold: &str, fid: usize) -> String {
    format!("{fold}_{fid:04}.tar")
}

/// The shards of `fold` in `root` by the reference's convention: files
/// `{fold}_{shard}.tar` whose `{shard}` has no `_`, sorted by `{shard}`.
/// An empty `root` (the parent of a bare file name) is the current directory.
pub fn fold_shards(root: impl AsRef<Path>, fold: &str) -> Result<Vec<PathBuf>> {
    let root = root.as_ref();
    let root = if root.as_os_str().is_empty() {
        Path::new(".")
    } else {
        root
    };
    let mut names = Vec::new();
    for entry in std::fs::read_dir(root).with_path(root)? {
        let entry = entry.with_path(root)?;
        if let Some(name) = entry.file_name().to_str() {
            names.push(name.to_owned());
        }
    }
    let shards = fold_shard_names(fold, names.iter().map(String::as_str));
    if shards.is_empty() {
        return Err(TaridxError::NoShards {
            root: root.to_owned(),
            fold: fold.to_owned(),
        });
    }
    Ok(shards.into_iter().map(|name| root.join(name)).collect())
}

/// The shards of `fold` among the file `names` of one directory, in fid
/// order: the names `FOLD_SHARD.tar` whose `SHARD` has no `_`, sorted by
/// `SHARD` (for listings that are not a local directory: an S3 prefix).
pub fn fold_shard_names<'a>(fold: &str, names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let prefix = format!("{fold}_");
    let mut shards: Vec<(&str, &str)> = names
        .into_iter()
        .filter_map(|name| {
            let shard = name.strip_prefix(&prefix)?.strip_suffix(".tar")?;
            (!shard.contains('_')).then_some((shard, name))
        })
        .collect();
    shards.sort_unstable();
    shards
        .into_iter()
        .map(|(_, name)| name.to_owned())
        .collect()
}

/// The index path of `fold` in `root`: `ROOT/FOLD.taridx`.
pub fn fold_index_path(root: impl AsRef<Path>, fold: &str) -> PathBuf {
    root.as_ref().join(format!("{fold}.taridx"))
}
