//! `binfmt taridx pack`, `export` and `import`: the commands that turn
//! something else into a fold or an index, or an index into another
//! tool's.
//!
//! Each collects every file it reads into one [`Inputs`] (the index and its
//! shards, a wids list, each DALI `.idx`, each SQLite database, every file
//! pack walks) and writes every output through it, so no output ever
//! replaces an input; all outputs are checked before the first is written.
//! Every file is read through the input gate (`binfmt_core::input`). An
//! export first runs what `verify` runs; an import is verified against its
//! shards before it is written.

use std::io::Write;
use std::path::{Path, PathBuf};

use binfmt_core::{FileSource, Inputs, Source};
use binfmt_taridx::{Dataset, Index, IndexOptions, KeyRule, ShardFiles, foreign};

use super::{ExportArgs, ForeignArg, ImportArgs, PackArgs, failed, index_shards_of};
use crate::output::{self, CommandResult, Status};

/// Checks every output before the first is written: none is an input, and
/// no two are one file (two shards whose DALI `.idx` names agree).
fn check_outputs(inputs: &Inputs, outputs: &[PathBuf]) -> Result<(), String> {
    let mut planned = Inputs::default();
    let mut names = std::collections::HashSet::new();
    for out in outputs {
        inputs.check(out).map_err(|error| error.to_string())?;
        let name = std::path::absolute(out).unwrap_or_else(|_| out.clone());
        if !names.insert(name) || planned.named_by(out).is_some() {
            return Err(output::about(
                out,
                "two outputs of this command are this one file; binfmt never writes one output over another",
            ));
        }
        planned.add(out);
    }
    Ok(())
}

/// Writes `bytes` to `path` atomically through the output gate.
fn write_bytes(inputs: &Inputs, path: &Path, bytes: &[u8]) -> Result<(), String> {
    if binfmt::is_remote(path) {
        // An object: uploaded whole (local inputs cannot be it).
        let target = binfmt::outputs::Output::open(
            path,
            std::sync::Arc::default(),
            &binfmt_remote::RemoteOptions::default(),
        )
        .map_err(|error| error.to_string())?;
        let mut object = target.create().map_err(|error| error.to_string())?;
        object
            .write_all(bytes)
            .map_err(|e| output::about(path, e))?;
        return object.commit().map_err(|e| e.to_string());
    }
    let mut file = inputs.create(path).map_err(|e| e.to_string())?;
    file.write_all(bytes).map_err(|e| output::about(path, e))?;
    file.commit().map_err(|e| e.to_string())
}

/// At most as many shards as a fid can number (fids count from 0 here).
fn check_shard_count(shards: &[PathBuf]) -> Result<(), String> {
    if shards.len() > usize::from(u16::MAX) + 1 {
        return Err(binfmt_taridx::TaridxError::TooManyShards {
            count: shards.len(),
        }
        .to_string());
    }
    Ok(())
}

fn parent_or_dot(path: &Path) -> PathBuf {
    path.parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// What pack reads a member from.
enum PackSource {
    File(PathBuf),
    Entry(String),
}

pub(super) fn pack(args: &PackArgs) -> CommandResult {
    let rule = KeyRule::from(args.keys);
    let out = &args.output;
    let fold = out
        .file_stem()
        .and_then(|stem| stem.to_str())
        .filter(|_| out.extension().is_some_and(|ext| ext == "taridx"))
        .ok_or_else(|| output::about(out, "the output must be named DIR/FOLD.taridx"))?;
    let dir = parent_or_dot(out);
    // (name, size, where from), grouped by WebDataset key below.
    let mut files: Vec<(String, u64, PackSource)> = Vec::new();
    let mut inputs = Inputs::default();
    let archive = if args.input.is_dir() {
        for (name, path, size) in regular_files(&args.input)? {
            inputs.add(&path);
            files.push((name, size, PackSource::File(path)));
        }
        None
    } else {
        let source = binfmt::open(&args.input).map_err(output::failed)?;
        // Local files by device and inode, remote ones by URL and ETag.
        inputs = binfmt::outputs::gate_inputs(source.as_ref());
        for entry in source.list().map_err(output::failed)? {
            files.push((
                entry.name.clone(),
                entry.size,
                PackSource::Entry(entry.name),
            ));
        }
        Some(source)
    };
    // Before anything is written: the index may not replace a file read.
    inputs.check(out).map_err(|e| e.to_string())?;
    let mut samples: std::collections::BTreeMap<String, Vec<(String, u64, PackSource)>> =
        std::collections::BTreeMap::new();
    for (name, size, from) in files {
        let split = KeyRule::WebDataset.split(&name);
        if split.extension.is_empty() {
            return Err(output::about(
                &args.input,
                format!("{name:?} has no extension: a WebDataset sample member is KEY.EXT"),
            ));
        }
        let extension = name
            .get(split.key.len() + 1..)
            .unwrap_or_default()
            .to_owned();
        samples
            .entry(split.key)
            .or_default()
            .push((extension, size, from));
    }
    let options = binfmt_taridx::SampleWriterOptions::new()
        .max_samples(args.max_samples)
        .max_bytes(args.max_bytes)
        .key_rule(rule);
    let mut writer = if binfmt::is_remote(out) {
        // Shards and the index under the URL's prefix, the index last.
        let target = binfmt::outputs::Output::open(
            out,
            std::sync::Arc::new(inputs),
            &binfmt_remote::RemoteOptions::default(),
        )
        .map_err(|error| error.to_string())?;
        binfmt_taridx::SampleWriter::create_in(target.dir, fold, options)
    } else {
        binfmt_taridx::SampleWriter::create_over(&dir, fold, options, inputs)
    }
    .map_err(failed(out))?;
    let bar = output::progress(output::Steps::Items("samples"), "packing");
    bar.set_length(samples.len() as u64);
    for (key, mut members) in samples {
        members.sort_by(|a, b| a.0.cmp(&b.0));
        let mut streams: Vec<(String, u64, Box<dyn std::io::Read>)> = Vec::new();
        for (extension, size, from) in members {
            let reader: Box<dyn std::io::Read> = match from {
                PackSource::File(path) => {
                    let (file, len) = binfmt_core::input::open(&path).map_err(|e| e.to_string())?;
                    if len != size {
                        return Err(output::about(
                            &path,
                            format!("changed while packing ({size} bytes, now {len})"),
                        ));
                    }
                    Box::new(file)
                }
                PackSource::Entry(name) => {
                    let bytes = archive
                        .as_ref()
                        .map(|source| source.read(&name))
                        .transpose()
                        .map_err(output::failed)?
                        .unwrap_or_default();
                    Box::new(std::io::Cursor::new(bytes))
                }
            };
            streams.push((extension, size, reader));
        }
        writer.write_streams(&key, streams).map_err(failed(out))?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    let fold = writer.finish().map_err(failed(out))?;
    output::note(format_args!(
        "packed {} samples ({} members, {} bytes) into {} shards; wrote {}",
        fold.samples,
        fold.members,
        fold.bytes,
        fold.shards.len(),
        output::shown(&fold.index)
    ));
    Ok(Status::Success)
}

/// The regular files under `dir` as (name relative to `dir` with `/`
/// separators, path, size). Symlinks are never followed and, like other
/// non-regular files and names that are not UTF-8, are skipped with a note
/// on stderr.
fn regular_files(dir: &Path) -> Result<Vec<(String, PathBuf, u64)>, String> {
    let mut files = Vec::new();
    let mut stack = vec![(String::new(), dir.to_path_buf())];
    while let Some((prefix, directory)) = stack.pop() {
        let entries = std::fs::read_dir(&directory).map_err(|e| output::about(&directory, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| output::about(&directory, e))?;
            let path = entry.path();
            let kind = entry.file_type().map_err(|e| output::about(&path, e))?;
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                output::note(format_args!(
                    "skipped {}: name is not UTF-8",
                    output::shown(&path)
                ));
                continue;
            };
            let name = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            if kind.is_dir() {
                stack.push((name, path));
            } else if kind.is_file() {
                let size = entry.metadata().map_err(|e| output::about(&path, e))?.len();
                files.push((name, path, size));
            } else {
                output::note(format_args!(
                    "skipped {}: not a regular file",
                    output::escape(&name)
                ));
            }
        }
    }
    Ok(files)
}

pub(super) fn export(args: &ExportArgs) -> CommandResult {
    // Export verifies the whole fold and writes beside its shards: it
    // takes a fold on this machine (the outputs may go to s3://).
    if binfmt::is_remote(&args.index) {
        return Err(output::about(
            &args.index,
            "taridx export reads a local fold: copy the index and its shards here first",
        ));
    }
    let shards = index_shards_of(&args.index, args.shards.as_deref())?;
    check_shard_count(&shards)?;
    // Read by offset, not mapped (as every command reads a local file): an
    // index cut short underneath is an error, not SIGBUS.
    let index = FileSource::open(&args.index)
        .map_err(binfmt_taridx::TaridxError::from)
        .and_then(Index::new)
        .map_err(failed(&args.index))?;
    let dataset = Dataset::new(
        index,
        ShardFiles::new(shards.clone()),
        binfmt_taridx::DatasetOptions::default(),
    )
    .map_err(failed(&args.index))?;
    // What verify refuses is never exported: rows past a shard, aliased
    // rows, a row in a shard that is not there, members the rows miss.
    dataset.verify().map_err(failed(&args.index))?;
    let mut inputs = Inputs::new(&shards);
    inputs.add(&args.index);
    let beside = |shard: &Path| args.output.clone().unwrap_or_else(|| parent_or_dot(shard));
    match args.to {
        ForeignArg::Wids => {
            let Some(out) = &args.output else {
                output::usage_error("wids: give -o LIST.json")
            };
            check_outputs(&inputs, std::slice::from_ref(out))?;
            let name = args
                .index
                .file_stem()
                .map(|stem| stem.to_string_lossy().into_owned())
                .unwrap_or_default();
            // A list in object storage names the shards as they are named
            // beside it when the fold is published there (`taridx index -o
            // s3://...`): relative to the shards' directory.
            let list_dir = if binfmt::is_remote(out) {
                shards.first().map_or(Path::new(""), |shard| {
                    shard.parent().unwrap_or(Path::new(""))
                })
            } else {
                out.parent().unwrap_or(Path::new(""))
            };
            let list = foreign::wids_shard_list(dataset.index(), &shards, list_dir, &name)
                .map_err(failed(&args.index))?;
            let text = serde_json::to_string_pretty(&list).map_err(|e| e.to_string())? + "\n";
            write_bytes(&inputs, out, text.as_bytes())?;
            output::note(format_args!("wrote {}", output::shown(out)));
        }
        ForeignArg::Dali => {
            let paths: Vec<PathBuf> = shards
                .iter()
                .map(|shard| beside(shard).join(foreign::dali_index_name(shard)))
                .collect();
            check_outputs(&inputs, &paths)?;
            for (fid, path) in (0u16..).zip(&paths) {
                let text = foreign::dali_index(&dataset, fid, args.with_names)
                    .map_err(failed(&args.index))?;
                let dir = parent_or_dot(path);
                if !binfmt::is_remote(&dir) {
                    binfmt_core::extract::create_dir(&dir).map_err(|e| e.to_string())?;
                }
                write_bytes(&inputs, path, text.as_bytes())?;
                output::note(format_args!("wrote {}", output::shown(path)));
            }
        }
        ForeignArg::Ratarmount => {
            let paths: Vec<PathBuf> = shards
                .iter()
                .map(|shard| {
                    foreign::ratarmount_index_path(
                        beside(shard).join(shard.file_name().unwrap_or_default()),
                    )
                })
                .collect();
            check_outputs(&inputs, &paths)?;
            for (fid, path) in (0u16..).zip(&paths) {
                let bytes =
                    foreign::ratarmount_index(&dataset, fid).map_err(failed(&args.index))?;
                let dir = parent_or_dot(path);
                if !binfmt::is_remote(&dir) {
                    binfmt_core::extract::create_dir(&dir).map_err(|e| e.to_string())?;
                }
                write_bytes(&inputs, path, &bytes)?;
                output::note(format_args!("wrote {}", output::shown(path)));
            }
        }
    }
    Ok(Status::Success)
}

pub(super) fn import(args: &ImportArgs) -> CommandResult {
    let out = &args.output;
    let rule = KeyRule::from(args.keys);
    let mut inputs = Inputs::new(&args.inputs);
    let (shards, mut builder) = match args.from {
        ForeignArg::Wids => {
            let [list] = args.inputs.as_slice() else {
                output::usage_error("wids: give one shard list")
            };
            inputs.check(out).map_err(|e| e.to_string())?;
            let entries = foreign::read_wids_shard_list(list).map_err(failed(list))?;
            let shards: Vec<PathBuf> = entries.iter().map(|(path, _)| path.clone()).collect();
            for shard in &shards {
                inputs.add(shard);
            }
            inputs.check(out).map_err(|e| e.to_string())?;
            let mut builder =
                binfmt_taridx::index_shards(&shards, IndexOptions::new().key_rule(rule), || {})
                    .map_err(|e| e.to_string())?;
            let rows = builder.rows().map_err(failed(out))?;
            for (fid, (shard, nsamples)) in (0u16..).zip(&entries) {
                let counted = foreign::shard_samples(rows, fid).len() as u64;
                if counted != *nsamples {
                    output::note(format_args!(
                        "note: {} lists {nsamples} samples, the index has {counted}",
                        output::shown(shard)
                    ));
                }
            }
            (shards, builder)
        }
        ForeignArg::Dali | ForeignArg::Ratarmount => {
            let shards = args.inputs.clone();
            check_shard_count(&shards)?;
            let claims: Vec<PathBuf> = shards
                .iter()
                .map(|shard| {
                    let dir = args
                        .from_dir
                        .clone()
                        .unwrap_or_else(|| parent_or_dot(shard));
                    if args.from == ForeignArg::Dali {
                        dir.join(foreign::dali_index_name(shard))
                    } else {
                        foreign::ratarmount_index_path(
                            dir.join(shard.file_name().unwrap_or_default()),
                        )
                    }
                })
                .collect();
            for claim in &claims {
                inputs.add(claim);
            }
            inputs.check(out).map_err(|e| e.to_string())?;
            let mut builder = binfmt_taridx::IndexBuilder::new(rule);
            for ((fid, shard), claim) in (0u16..).zip(&shards).zip(&claims) {
                let source = FileSource::open(shard).map_err(|e| e.to_string())?;
                let members = if args.from == ForeignArg::Dali {
                    foreign::read_dali_index_file(claim, &source).map_err(failed(claim))?
                } else {
                    foreign::read_ratarmount(claim, source.len()).map_err(failed(claim))?
                };
                for member in members {
                    builder.add(fid, member).map_err(failed(out))?;
                }
            }
            (shards, builder)
        }
    };
    // The foreign index is a claim: every row is checked against its
    // shard, and every member of every shard must have its row.
    let index = Index::new(builder.to_bytes().map_err(failed(out))?).map_err(failed(out))?;
    index
        .verify(Some(&ShardFiles::new(shards.clone())))
        .map_err(failed(out))?;
    if binfmt::is_remote(out) {
        // The fold goes to the prefix whole: shards, then the index.
        let target = binfmt::outputs::Output::open(
            out,
            std::sync::Arc::new(inputs),
            &binfmt_remote::RemoteOptions::default(),
        )
        .map_err(|error| error.to_string())?;
        let written = binfmt_taridx::publish_fold_indexed(
            &shards,
            target.dir.as_ref(),
            &target.name,
            builder,
        )
        .map_err(failed(out))?;
        for name in written {
            output::note(format_args!(
                "wrote {}",
                output::shown(&target.dir.show(&name))
            ));
        }
        return Ok(Status::Success);
    }
    write_bytes(&inputs, out, index.source())?;
    output::note(format_args!("wrote {}", output::shown(out)));
    Ok(Status::Success)
}
