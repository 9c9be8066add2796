//! How a fold's files are named. glzn's convention: the shards of fold
//! `FOLD` are `FOLD_SHARD.tar` (`SHARD` without `_`; written as four or more
//! digits, `train_0000.tar`), its index `FOLD.taridx`, all in one directory.
//! Two more namings are recognised, the ones WebDataset users write
//! (`ShardWriter`'s `shard-000000.tar`, the hub's `train-000123.tar`):
//! `FOLD-NNNN.tar` and `FOLD.NNNN.tar`, the shard a run of digits. Every
//! place that names or finds a fold's files by name asks here.
//!
//! ```text
//! ROOT/train_0000.tar ┐
//! ROOT/train_0001.tar ├ fold "train" (glzn)  → ROOT/train.taridx
//! ROOT/val-000000.tar ─ fold "val"   (dash)  → ROOT/val.taridx + val.taridx.shards.json
//! ROOT/x.y.000007.tar ─ fold "x.y"   (dot)   → ROOT/x.y.taridx + x.y.taridx.shards.json
//! ```
//!
//! A name is read by its end: a stem ending in a separator (`_`, `-`, `.`)
//! and digits belongs to the fold before that separator
//! (`my_data-000001.tar` is fold `my_data`); any other stem with a `_`
//! belongs, as glzn reads it, to the fold before its last `_`.

use std::path::{Path, PathBuf};

use binfmt_core::IoResultExt;

use crate::error::{Result, TaridxError};

/// How a fold's shards are named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ShardNaming {
    /// glzn's `FOLD_SHARD.tar`, `SHARD` anything without `_`, sorted as
    /// text (the reference's order). The only naming an index needs no
    /// shard list for.
    Glzn,
    /// `FOLD-NNNN.tar` (WebDataset's `ShardWriter`), sorted by number.
    Dash,
    /// `FOLD.NNNN.tar`, sorted by number.
    Dot,
}

impl ShardNaming {
    /// The pattern, for messages: `FOLD_*.tar`, `FOLD-N.tar`, `FOLD.N.tar`.
    pub fn pattern(self, fold: &str) -> String {
        match self {
            Self::Glzn => format!("{fold}_*.tar"),
            Self::Dash => format!("{fold}-N.tar"),
            Self::Dot => format!("{fold}.N.tar"),
        }
    }
}

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

/// The fold, shard and naming a shard file name stands for, or `None`
/// for a name that is no fold's shard.
///
/// ```
/// use binfmt_taridx::{ShardNaming, parse_shard_name};
///
/// assert_eq!(parse_shard_name("train_0003.tar"), Some(("train", "0003", ShardNaming::Glzn)));
/// assert_eq!(parse_shard_name("shard-000001.tar"), Some(("shard", "000001", ShardNaming::Dash)));
/// assert_eq!(parse_shard_name("my_data-000001.tar"), Some(("my_data", "000001", ShardNaming::Dash)));
/// assert_eq!(parse_shard_name("val.7.tar"), Some(("val", "7", ShardNaming::Dot)));
/// assert_eq!(parse_shard_name("a_b.tar"), Some(("a", "b", ShardNaming::Glzn)));
/// assert_eq!(parse_shard_name("plain.tar"), None);
/// ```
pub fn parse_shard_name(name: &str) -> Option<(&str, &str, ShardNaming)> {
    let stem = name.strip_suffix(".tar")?;
    let digits = stem.len() - stem.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (before, shard) = stem.split_at(stem.len() - digits);
    let numbered = match before.chars().last() {
        Some('_') if digits > 0 => Some(ShardNaming::Glzn),
        Some('-') if digits > 0 => Some(ShardNaming::Dash),
        Some('.') if digits > 0 => Some(ShardNaming::Dot),
        _ => None,
    };
    let (fold, shard, naming) = match numbered {
        Some(naming) => (before.get(..before.len() - 1)?, shard, naming),
        None => {
            let (fold, shard) = stem.rsplit_once('_')?;
            (fold, shard, ShardNaming::Glzn)
        }
    };
    (!fold.is_empty()).then_some((fold, shard, naming))
}

/// The shards of `fold` among the file `names` of one directory, with
/// their naming, in fid order: glzn's names if there are any (so a glzn
/// fold reads as glzn reads it), else the one other naming present. Two
/// other namings at once are [`TaridxError::AmbiguousShards`]; no name at
/// all is an empty list.
pub fn fold_shard_names<'a>(
    fold: &str,
    names: impl IntoIterator<Item = &'a str>,
) -> Result<(ShardNaming, Vec<String>)> {
    let mut found: Vec<(ShardNaming, u128, &str)> = names
        .into_iter()
        .filter_map(|name| {
            let (of, shard, naming) = parse_shard_name(name)?;
            // Text order for glzn names (the reference's), numeric for the
            // others (`x-9.tar` before `x-10.tar`); ties keep text order.
            let number = match naming {
                ShardNaming::Glzn => 0,
                _ => shard.parse().unwrap_or(u128::MAX),
            };
            (of == fold).then_some((naming, number, name))
        })
        .collect();
    let naming = match found.iter().map(|(naming, ..)| *naming).min() {
        None => return Ok((ShardNaming::Glzn, Vec::new())),
        Some(ShardNaming::Glzn) => ShardNaming::Glzn,
        Some(first) => {
            if found.iter().any(|(naming, ..)| *naming != first) {
                return Err(TaridxError::AmbiguousShards {
                    fold: fold.to_owned(),
                    namings: format!(
                        "{} and {}",
                        ShardNaming::Dash.pattern(fold),
                        ShardNaming::Dot.pattern(fold)
                    ),
                });
            }
            first
        }
    };
    found.retain(|(of, ..)| *of == naming);
    found.sort_unstable();
    Ok((
        naming,
        found
            .into_iter()
            .map(|(_, _, name)| name.to_owned())
            .collect(),
    ))
}

/// The shards of `fold` in `root` by their names ([`fold_shard_names`]),
/// with their naming. An empty `root` (the parent of a bare file name) is
/// the current directory. No shard is [`TaridxError::NoShards`].
pub fn fold_shards_named(
    root: impl AsRef<Path>,
    fold: &str,
) -> Result<(ShardNaming, Vec<PathBuf>)> {
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
    let (naming, shards) = fold_shard_names(fold, names.iter().map(String::as_str))?;
    if shards.is_empty() {
        return Err(TaridxError::NoShards {
            index: fold_index_path(root, fold),
            looked: format!(
                "{}, {} and {} in {}",
                ShardNaming::Glzn.pattern(fold),
                ShardNaming::Dash.pattern(fold),
                ShardNaming::Dot.pattern(fold),
                root.display()
            ),
        });
    }
    Ok((
        naming,
        shards.into_iter().map(|name| root.join(name)).collect(),
    ))
}

/// The shards of `fold` in `root` by their names: glzn's
/// `FOLD_SHARD.tar` (`SHARD` without `_`, sorted), else `FOLD-N.tar` or
/// `FOLD.N.tar` (sorted by number). A fold's shard list, when it has one,
/// is read by [`crate::find_shards`], not here.
pub fn fold_shards(root: impl AsRef<Path>, fold: &str) -> Result<Vec<PathBuf>> {
    fold_shards_named(root, fold).map(|(_, shards)| shards)
}

/// The index path of `fold` in `root`: `ROOT/FOLD.taridx`.
pub fn fold_index_path(root: impl AsRef<Path>, fold: &str) -> PathBuf {
    root.as_ref().join(format!("{fold}.taridx"))
}

/// The fold an index path names: its file name without `.taridx`.
pub fn fold_of_index(index: &Path) -> Option<&str> {
    let fold = index.file_name()?.to_str()?.strip_suffix(".taridx")?;
    (!fold.is_empty()).then_some(fold)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glzn_names_keep_glzn_order_and_others_sort_by_number() {
        let names = ["t_0002.tar", "t_0010.tar", "t_0001.tar", "t-5.tar"];
        let (naming, shards) = fold_shard_names("t", names).unwrap();
        assert_eq!(naming, ShardNaming::Glzn);
        assert_eq!(shards, ["t_0001.tar", "t_0002.tar", "t_0010.tar"]);
        let (naming, shards) = fold_shard_names("t", ["t-10.tar", "t-9.tar", "t-09.tar"]).unwrap();
        assert_eq!(naming, ShardNaming::Dash);
        assert_eq!(shards, ["t-09.tar", "t-9.tar", "t-10.tar"]);
    }

    #[test]
    fn two_other_namings_of_one_fold_are_refused() {
        let error = fold_shard_names("t", ["t-0.tar", "t.0.tar"]).unwrap_err();
        assert!(
            matches!(error, TaridxError::AmbiguousShards { .. }),
            "{error}"
        );
        assert!(fold_shard_names("u", ["t-0.tar"]).unwrap().1.is_empty());
    }

    #[test]
    fn names_are_read_by_their_end() {
        assert_eq!(
            parse_shard_name("a_b-1.tar"),
            Some(("a_b", "1", ShardNaming::Dash))
        );
        assert_eq!(
            parse_shard_name("a_b_c.tar"),
            Some(("a_b", "c", ShardNaming::Glzn))
        );
        assert_eq!(parse_shard_name("-1.tar"), None);
        assert_eq!(parse_shard_name("_1.tar"), None);
        assert_eq!(parse_shard_name("x-.tar"), None);
        assert_eq!(parse_shard_name("x.tgz"), None);
    }
}
