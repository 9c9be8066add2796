//! Indexing shards from what their writers reported, without reading them
//! again: how a fold written by many workers (Ray tasks, each with a
//! [`SampleWriter::shards_only`](crate::SampleWriter::shards_only)) gets
//! its index.
//!
//! The reports are `(shard name, [(member name, header offset, size)],
//! shard size)` in fid order. They come from another process, so they are
//! checked as any input is: each member's header starts on a 512-byte
//! block, members are in order and do not overlap, and every member ends
//! before its shard's end blocks. The index is the one indexing
//! the shards would give (the same [`IndexBuilder`] from the same members).
//!
//! The shard list (`INDEX.shards.json`, wids' format) is written when the
//! names are not the fold's own (`FOLD_0000.tar`, ...), and removed when
//! they are, exactly as for a fold indexed from its files.

use binfmt_core::OutputDir;
use serde_json::json;

use crate::build::IndexBuilder;
use crate::error::{Result, TaridxError};
use crate::fold_names::fold_shard_name;
use crate::keys::KeyRule;
use crate::sample_writer::WrittenShard;
use crate::shard_list::SHARD_LIST_SUFFIX;
use crate::tar::{BLOCK, Member};

/// Writes the index `index_name` (`FOLD.taridx`) under `out` for `shards`
/// (names relative to `out`, in fid order), from their reported members,
/// then records the shard list beside it when the names need one. Returns
/// the number of rows.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use binfmt_core::LocalDir;
/// use binfmt_taridx::{Dataset, KeyRule, SampleWriter, SampleWriterOptions, write_index_of_reports};
/// let dir = tempfile::tempdir()?;
/// let out = Arc::new(LocalDir::new(dir.path(), Arc::default()));
/// let mut writer = SampleWriter::shards_only(out.clone(), "task-0-", SampleWriterOptions::new())?;
/// writer.write("a", &[("txt", b"one".as_slice())])?;
/// let shards = writer.finish_shards()?;
/// write_index_of_reports(out.as_ref(), "train.taridx", &shards, KeyRule::Glzn)?;
/// let index = dir.path().join("train.taridx");
/// // The names are not the fold's own: the shard list beside it finds them.
/// let dataset = Dataset::open(&index, &binfmt_taridx::find_shards(&index)?)?;
/// assert_eq!(dataset.lookup_verified("a")?.len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_index_of_reports(
    out: &dyn OutputDir,
    index_name: &str,
    shards: &[WrittenShard],
    rule: KeyRule,
) -> Result<u64> {
    index_name
        .strip_suffix(".taridx")
        .filter(|fold| !fold.is_empty() && !fold.contains(['/', '\\', '\0']))
        .ok_or_else(|| TaridxError::BadName {
            name: index_name.to_owned(),
            why: "an index is named FOLD.taridx (no '/')",
        })?;
    if shards.len() > usize::from(u16::MAX) + 1 {
        return Err(TaridxError::TooManyShards {
            count: shards.len(),
        });
    }
    check_reports(index_name, shards)?;
    let mut builder = IndexBuilder::new(rule);
    let mut rows = 0u64;
    for (fid, shard) in shards.iter().enumerate() {
        let fid = u16::try_from(fid).map_err(|_| TaridxError::TooManyShards {
            count: shards.len(),
        })?;
        for (name, offset, size) in &shard.members {
            builder.add(
                fid,
                Member {
                    offset: *offset,
                    size: *size,
                    name: name.clone().into_bytes(),
                },
            )?;
            rows += 1;
        }
    }
    let listed: Vec<_> = shards
        .iter()
        .map(|shard| (shard.name.clone(), samples_in(shard, rule), shard.size))
        .collect();
    write_index_and_list(out, index_name, builder, &listed)?;
    Ok(rows)
}

/// Writes the index `index_name` under `out` from `builder`, then its
/// shard list from `shards` (name, samples, size) when the names are not
/// the fold's own; an old list is removed when they are. Both names are
/// checked by the gate before anything is written.
pub(crate) fn write_index_and_list(
    out: &dyn OutputDir,
    index_name: &str,
    mut builder: IndexBuilder,
    shards: &[(String, u64, u64)],
) -> Result<()> {
    let fold = index_name.strip_suffix(".taridx").unwrap_or(index_name);
    out.check(index_name)?;
    let list = format!("{index_name}{SHARD_LIST_SUFFIX}");
    out.check(&list)?;
    let file = out.create(index_name)?;
    builder.write_to(file)?.commit()?;
    let own_names = shards
        .iter()
        .enumerate()
        .all(|(fid, (name, _, _))| *name == fold_shard_name(fold, fid));
    if own_names {
        out.remove(&list)?;
        return Ok(());
    }
    let shardlist: Vec<_> = shards
        .iter()
        .map(|(name, samples, size)| {
            json!({
                "url": name,
                "nsamples": samples,
                "filesize": size,
            })
        })
        .collect();
    let value = json!({
        "__kind__": "wids-shard-index-v1",
        "wids_version": 1,
        "name": fold,
        "shardlist": shardlist,
    });
    let mut text = serde_json::to_string_pretty(&value)
        .map_err(|error| binfmt_core::Error::io(out.show(&list), std::io::Error::other(error)))?;
    text.push('\n');
    let mut file = out.create(&list)?;
    std::io::Write::write_all(&mut file, text.as_bytes())
        .map_err(|error| binfmt_core::Error::io(out.show(&list), error))?;
    file.commit()?;
    Ok(())
}

/// Indexes local `shards` and puts the fold in `out`: each shard copied
/// under its file name (streamed, through the gate), then the index
/// `index_name`, then its shard list when the names need one, so a reader
/// never finds the index before its shards. Two shards with one file name
/// are refused before anything is written. Returns the names written.
pub fn publish_fold(
    shards: &[std::path::PathBuf],
    out: &dyn OutputDir,
    index_name: &str,
    options: crate::IndexOptions,
    on_shard_done: impl Fn() + Sync,
) -> Result<Vec<String>> {
    let names = published_names(shards, out, index_name)?;
    let builder = crate::build::index_shards(shards, options, on_shard_done)?;
    publish_indexed(shards, names, out, index_name, builder)
}

/// [`publish_fold`] for shards already indexed by `builder` (an index
/// imported from a foreign one, checked against the shards).
pub fn publish_fold_indexed(
    shards: &[std::path::PathBuf],
    out: &dyn OutputDir,
    index_name: &str,
    builder: IndexBuilder,
) -> Result<Vec<String>> {
    let names = published_names(shards, out, index_name)?;
    publish_indexed(shards, names, out, index_name, builder)
}

/// Each shard's file name, checked by the gate, and the index's.
fn published_names(
    shards: &[std::path::PathBuf],
    out: &dyn OutputDir,
    index_name: &str,
) -> Result<Vec<String>> {
    let mut names = Vec::with_capacity(shards.len());
    let mut seen = std::collections::HashSet::new();
    for shard in shards {
        let name = shard
            .file_name()
            .and_then(|name| name.to_str())
            .ok_or_else(|| TaridxError::BadName {
                name: shard.display().to_string(),
                why: "a shard published needs a UTF-8 file name",
            })?;
        if !seen.insert(name) {
            return Err(TaridxError::BadName {
                name: name.to_owned(),
                why: "two shards have this file name: they would be one object under the prefix",
            });
        }
        refuse_sidecar_name(name, index_name)?;
        out.check(name)?;
        names.push(name.to_owned());
    }
    out.check(index_name)?;
    Ok(names)
}

fn publish_indexed(
    shards: &[std::path::PathBuf],
    mut names: Vec<String>,
    out: &dyn OutputDir,
    index_name: &str,
    mut builder: IndexBuilder,
) -> Result<Vec<String>> {
    let rows = builder.rows()?.to_vec();
    let mut listed = Vec::with_capacity(shards.len());
    for (fid, (shard, name)) in shards.iter().zip(&names).enumerate() {
        let (mut file, size) = binfmt_core::input::open(shard)?;
        let mut upload = out.create(name)?;
        let copied = std::io::copy(&mut file, &mut upload)
            .map_err(|error| binfmt_core::Error::io(out.show(name), error))?;
        if copied != size {
            return Err(TaridxError::Foreign {
                file: shard.clone(),
                why: format!("the shard changed while it was copied ({size} bytes, then {copied})"),
            });
        }
        upload.commit()?;
        let fid = u16::try_from(fid).map_err(|_| TaridxError::TooManyShards {
            count: shards.len(),
        })?;
        let samples = crate::foreign::shard_samples(&rows, fid).len() as u64;
        listed.push((name.clone(), samples, size));
    }
    write_index_and_list(out, index_name, builder, &listed)?;
    names.push(index_name.to_owned());
    Ok(names)
}

/// Checks reports as [`write_index_of_reports`] does before writing:
/// every shard name relative and not the index's or its list's, every
/// member within its shard, in order, on 512-byte blocks.
pub fn check_reports(index_name: &str, shards: &[WrittenShard]) -> Result<()> {
    for shard in shards {
        check_shard_name(&shard.name)?;
        refuse_sidecar_name(&shard.name, index_name)?;
        check_members(shard)?;
    }
    Ok(())
}

/// A shard may not be named as the index or its shard list beside it:
/// writing those would replace the shard.
fn refuse_sidecar_name(name: &str, index_name: &str) -> Result<()> {
    if name == index_name || name == format!("{index_name}{SHARD_LIST_SUFFIX}") {
        return Err(TaridxError::BadName {
            name: name.to_owned(),
            why: "a shard is named as the index or its shard list, which are written beside it",
        });
    }
    Ok(())
}

/// A shard name relative to the index's directory: `/`-separated, no
/// empty, `.` or `..` part, no `\` or NUL, not absolute.
fn check_shard_name(name: &str) -> Result<()> {
    let bad = name.is_empty()
        || name.contains(['\\', '\0'])
        || name
            .split('/')
            .any(|part| part.is_empty() || part == "." || part == "..");
    if bad {
        return Err(TaridxError::BadName {
            name: name.to_owned(),
            why: "a shard is named relative to its index: no empty, '.' or '..' part, no '\\' or NUL",
        });
    }
    Ok(())
}

/// Each member's own header starts on a block at or after the end of the
/// member before (pax headers may come between), and its data (the block
/// after the header, padded to a block) ends before the shard's two end
/// blocks.
fn check_members(shard: &WrittenShard) -> Result<()> {
    let bad = |why: String| TaridxError::Foreign {
        file: shard.name.clone().into(),
        why,
    };
    let mut end = 0u64;
    for (name, offset, size) in &shard.members {
        let member_end = size
            .div_ceil(BLOCK)
            .checked_mul(BLOCK)
            .and_then(|padded| offset.checked_add(BLOCK)?.checked_add(padded));
        let ok = offset % BLOCK == 0
            && *offset >= end
            && member_end
                .is_some_and(|member_end| member_end.saturating_add(2 * BLOCK) <= shard.size);
        if !ok {
            return Err(bad(format!(
                "reported member {name:?} with its header at {offset} ({size} bytes) does not fit: \
                 a header starts on a 512-byte block after the member before, and the data ends \
                 before the shard's end blocks ({} bytes)",
                shard.size
            )));
        }
        end = member_end.unwrap_or(u64::MAX);
    }
    Ok(())
}

/// Samples in a shard: runs of members with one key.
fn samples_in(shard: &WrittenShard, rule: KeyRule) -> u64 {
    let mut samples = 0;
    let mut last: Option<String> = None;
    for (name, _, _) in &shard.members {
        let key = rule.split(name).key;
        if last.as_deref() != Some(key.as_str()) {
            samples += 1;
            last = Some(key);
        }
    }
    samples
}
