//! A fold's shard list: which shards an index covers, recorded beside the
//! index whenever their names do not say so (spec/taridx.md §9.1).
//!
//! The list is a wids shard list (the JSON wids reads, so the same file
//! serves `wids.ShardListDataset`), named after the index file:
//!
//! ```text
//! DIR/train.taridx              the index, byte-identical to glzn's
//! DIR/train.taridx.shards.json  {"__kind__": "wids-shard-index-v1", "wids_version": 1,
//!                                "name": "train", "shardlist": [
//!                                  {"url": "shard-000000.tar", "nsamples": 3, "filesize": 10240}, ...]}
//! ```
//!
//! Each `url` is relative to the list's directory. An index's shards are
//! found in this order: its list, if there is one; else the shards its
//! fold's name finds in its directory ([`crate::fold_shards`]). Writers
//! record a list unless glzn's names find exactly the shards indexed, in
//! their order (so glzn folds keep exactly glzn's files), and remove a
//! list left over from before when they do.

use std::path::{Path, PathBuf};

use crate::error::{Result, TaridxError};
use crate::fold_names::{ShardNaming, fold_of_index, fold_shards_named};
use crate::foreign::{WIDS_LIST_LIMIT, read_wids_shard_list, wids_shard_list_of_rows};

/// What a shard list's file name adds to its index's: `.shards.json`.
pub const SHARD_LIST_SUFFIX: &str = ".shards.json";

/// Where the shard list of the index at `index` is: `INDEX.shards.json`.
///
/// ```
/// use std::path::Path;
///
/// assert_eq!(
///     binfmt_taridx::shard_list_path(Path::new("data/train.taridx")),
///     Path::new("data/train.taridx.shards.json"),
/// );
/// ```
pub fn shard_list_path(index: &Path) -> PathBuf {
    let mut path = index.as_os_str().to_owned();
    path.push(SHARD_LIST_SUFFIX);
    PathBuf::from(path)
}

/// The shards of the index at `index`, in fid order: those its shard list
/// names (read through the input gate, at most
/// [`WIDS_LIST_LIMIT`] bytes), else those its fold's name finds beside it.
/// Neither is [`TaridxError::NoShards`], saying where it looked.
///
/// # Examples
///
/// ```no_run
/// let shards = binfmt_taridx::find_shards("data/train.taridx".as_ref())?;
/// let dataset = binfmt_taridx::Dataset::open("data/train.taridx", &shards)?;
/// # Ok::<(), binfmt_taridx::TaridxError>(())
/// ```
pub fn find_shards(index: &Path) -> Result<Vec<PathBuf>> {
    find_shards_in(index, index.parent().unwrap_or(Path::new("")))
}

/// [`find_shards`] of the index at `index` whose shards are in `dir`
/// instead of beside it: the shard list `DIR/NAME.shards.json` (`NAME` the
/// index's file name), else the fold's shards by name in `dir`. Every
/// shard a list names must be there: one that is not is
/// [`TaridxError::NoShards`] naming it and the list, at open.
pub fn find_shards_in(index: &Path, dir: &Path) -> Result<Vec<PathBuf>> {
    let name = index.file_name().unwrap_or(index.as_os_str());
    let list = shard_list_path(&dir.join(name));
    if std::fs::symlink_metadata(&list).is_ok() {
        let shards: Vec<PathBuf> = read_wids_shard_list(&list)?
            .into_iter()
            .map(|(path, _)| path)
            .collect();
        if let Some(missing) = shards
            .iter()
            .find(|shard| std::fs::symlink_metadata(shard).is_err())
        {
            return Err(TaridxError::NoShards {
                index: index.to_owned(),
                looked: format!(
                    "{}, which its shard list {} names, and it is not there",
                    missing.display(),
                    list.display()
                ),
            });
        }
        return Ok(shards);
    }
    let shown = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let Some(fold) = fold_of_index(index) else {
        return Err(TaridxError::NoShards {
            index: index.to_owned(),
            looked: format!(
                "{} (the index is not named FOLD.taridx, so no shard names follow from it)",
                list.display()
            ),
        });
    };
    fold_shards_named(dir, fold)
        .map(|(_, shards)| shards)
        .map_err(|error| match error {
            TaridxError::NoShards { .. } => TaridxError::NoShards {
                index: index.to_owned(),
                looked: format!(
                    "{}, then {}, {} and {} in {}",
                    list.display(),
                    ShardNaming::Glzn.pattern(fold),
                    ShardNaming::Dash.pattern(fold),
                    ShardNaming::Dot.pattern(fold),
                    shown.display()
                ),
            },
            other => other,
        })
}

/// Records beside the index at `index` (already written) which `shards`
/// its rows point into: writes its shard list (atomically, through the output gate: never
/// over a shard), unless glzn's names find exactly these shards in this
/// order, when a list left there from before is removed instead.
pub fn record_shards(index: &Path, shards: &[PathBuf]) -> Result<()> {
    let list = shard_list_path(index);
    let dir = index.parent().unwrap_or(Path::new(""));
    let named = fold_of_index(index).and_then(|fold| fold_shards_named(dir, fold).ok());
    let by_names = matches!(&named, Some((ShardNaming::Glzn, found))
        if found.len() == shards.len()
            && found.iter().zip(shards).all(|(a, b)| binfmt_core::same_file(a, b)));
    if by_names {
        return match std::fs::symlink_metadata(&list) {
            Ok(meta) if meta.is_dir() => Err(binfmt_core::Error::io(
                &list,
                std::io::Error::other("a directory is where the shard list goes"),
            )
            .into()),
            Ok(_) => std::fs::remove_file(&list)
                .map_err(|error| binfmt_core::Error::io(&list, error).into()),
            Err(_) => Ok(()),
        };
    }
    crate::shards::check_not_input(&list, shards)?;
    let name = fold_of_index(index).unwrap_or("shards");
    let written = crate::Index::open(index)?;
    let rows = written.rows()?;
    let value = wids_shard_list_of_rows(&rows, shards, dir, name)?;
    let mut text = serde_json::to_string_pretty(&value)
        .map_err(|error| binfmt_core::Error::io(&list, std::io::Error::other(error)))?;
    text.push('\n');
    if text.len() as u64 > WIDS_LIST_LIMIT {
        return Err(TaridxError::TooManyShards {
            count: shards.len(),
        });
    }
    let mut file = binfmt_core::AtomicFile::create(&list)?;
    std::io::Write::write_all(&mut file, text.as_bytes())
        .map_err(|error| binfmt_core::Error::io(&list, error))?;
    file.commit()?;
    Ok(())
}
