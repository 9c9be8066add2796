//! Converting between formats, entry by entry, without changing a name or a
//! byte: a name the target cannot hold is an error that names it.
//!
//! | target | what is written |
//! |---|---|
//! | TARIDX | `DIR/FOLD.taridx` and shards `DIR/FOLD_0000.tar`, `DIR/FOLD_0001.tar`, … (a new shard when the next member would pass the size limit); ustar members, pax records for long or non-ASCII names; the index by the fold convention |
//! | ARCX | an archive in the chosen dialect |
//! | KAST | one uint8 array per entry, keyed by name |
//! | PAR4 | a `HashMap<String, Vec<u8>>` in the bucket layout (`parcode` 0.6.1 loads it with `Parcode::load`) |
//!
//! ARCX, TARIDX and PAR4 are written as entries are read (PAR4 takes every
//! key and size first, then reads each value as its bucket is written). KAST
//! needs every array's size before its first byte, so it holds the entries
//! in memory until they are written.

use std::cell::Cell;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

use binfmt_core::{AtomicFile, IoResultExt};

use crate::about;
use crate::entries::{EntrySource, check_names_carry, open};
use crate::sniff::Format;

/// How to write the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConvertOptions {
    /// The ARCX dialect, for ARCX targets.
    pub arcx_dialect: binfmt_arcx::Dialect,
    /// The largest tar shard, for TARIDX targets (a single larger member
    /// gets a shard of its own).
    pub shard_size: u64,
    /// Compression of PAR4 chunks.
    pub par4_compression: binfmt_parcode::Compression,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        Self {
            arcx_dialect: binfmt_arcx::Dialect::Spec,
            shard_size: 1 << 30,
            par4_compression: binfmt_parcode::Compression::None,
        }
    }
}

/// What a conversion wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConvertSummary {
    /// Entries written.
    pub entries: u64,
    /// Their bytes.
    pub bytes: u64,
    /// The files written (for TARIDX: the shards, then the index).
    pub outputs: Vec<PathBuf>,
}

/// Converts `input` (any format [`open`] reads) into `output` in format `to`.
pub fn convert(
    input: &Path,
    output: &Path,
    to: Format,
    options: &ConvertOptions,
) -> Result<ConvertSummary, String> {
    convert_with_progress(input, output, to, options, &|_, _| {})
}

/// [`convert`], calling `progress(entries read, entries in all)` after
/// each entry is read.
pub fn convert_with_progress(
    input: &Path,
    output: &Path,
    to: Format,
    options: &ConvertOptions,
    progress: &dyn Fn(u64, u64),
) -> Result<ConvertSummary, String> {
    let opened = open(input)?;
    let entries = opened.list()?;
    check_names_carry(&entries).map_err(|e| about(input, e))?;
    let source = Input {
        source: opened.as_ref(),
        path: input,
        read: Cell::new(0),
        total: entries.len() as u64,
        progress,
    };
    let names: Vec<&str> = entries.iter().map(|entry| entry.name.as_str()).collect();
    let bytes = entries.iter().map(|entry| entry.size).sum();
    let outputs = match to {
        Format::Arcx => to_arcx(&source, &names, output, options.arcx_dialect)?,
        Format::Kast => to_kast(&source, &names, output)?,
        Format::Par4 => to_par4(&source, &entries, output, options.par4_compression)?,
        Format::Taridx => to_taridx(&source, &names, output, options.shard_size)?,
        Format::Tar | Format::Unknown => return Err(format!("cannot convert to {to}")),
    };
    Ok(ConvertSummary {
        entries: names.len() as u64,
        bytes,
        outputs,
    })
}

/// The file being converted: its entries, its path for error messages, and
/// how far reading has got.
struct Input<'a> {
    source: &'a dyn EntrySource,
    path: &'a Path,
    read: Cell<u64>,
    total: u64,
    progress: &'a dyn Fn(u64, u64),
}

impl Input<'_> {
    /// One entry's bytes; a failure names the input file and the entry.
    fn read(&self, name: &str) -> Result<Vec<u8>, String> {
        let bytes = self
            .source
            .read(name)
            .map_err(|e| about(self.path, format!("entry {name:?}: {e}")))?;
        self.read.set(self.read.get() + 1);
        (self.progress)(self.read.get(), self.total);
        Ok(bytes)
    }
}

fn to_arcx(
    source: &Input<'_>,
    names: &[&str],
    output: &Path,
    dialect: binfmt_arcx::Dialect,
) -> Result<Vec<PathBuf>, String> {
    let mut packer = binfmt_arcx::Packer::create(
        output,
        binfmt_arcx::PackOptions {
            dialect,
            ..binfmt_arcx::PackOptions::default()
        },
    )
    .map_err(|e| about(output, e))?;
    for name in names {
        let bytes = source.read(name)?;
        packer
            .add(name, &mut bytes.as_slice())
            .map_err(|e| about(output, e))?;
    }
    packer.finish().map_err(|e| about(output, e))?;
    Ok(vec![output.to_owned()])
}

fn to_kast(source: &Input<'_>, names: &[&str], output: &Path) -> Result<Vec<PathBuf>, String> {
    let arrays: Vec<(&str, Vec<u8>)> = names
        .iter()
        .map(|name| Ok((*name, source.read(name)?)))
        .collect::<Result<_, String>>()?;
    let mut writer = binfmt_kastore::Writer::new();
    for (name, bytes) in &arrays {
        writer
            .insert_raw(name, binfmt_kastore::ItemType::Uint8, bytes.as_slice())
            .map_err(|e| about(output, format!("entry {name:?}: {e}")))?;
    }
    writer.write_file(output).map_err(|e| about(output, e))?;
    Ok(vec![output.to_owned()])
}

fn to_par4(
    source: &Input<'_>,
    entries: &[crate::entries::Entry],
    output: &Path,
    compression: binfmt_parcode::Compression,
) -> Result<Vec<PathBuf>, String> {
    // Keys and sizes first; each value is read when its bucket is written,
    // so one entry at a time is held, never the whole map.
    let mut map = binfmt_parcode::BlobMapWriter::new();
    for entry in entries {
        map.add(entry.name.as_str(), entry.size);
    }
    map.write_file(output, compression, |name| {
        source
            .read(name)
            .map(std::io::Cursor::new)
            .map_err(std::io::Error::other)
    })
    .map_err(|e| about(output, e))?;
    Ok(vec![output.to_owned()])
}

/// Names a TARIDX index cannot tell apart: two members with the same stem
/// and extension would be one sample with a duplicated field.
fn check_taridx_names(names: &[&str], output: &Path) -> Result<(), String> {
    let mut seen = HashSet::new();
    for name in names {
        if name.is_empty() {
            return Err(about(
                output,
                "an entry has an empty name, which a tar member cannot have",
            ));
        }
        let split = binfmt_taridx::build::split_name(name.as_bytes());
        if !seen.insert((split.stem.clone(), split.extension.clone())) {
            return Err(about(
                output,
                format!(
                    "entry {name:?} has the same stem {:?} and extension {:?} as an earlier entry: one TARIDX sample cannot hold both",
                    split.stem, split.extension
                ),
            ));
        }
    }
    Ok(())
}

fn to_taridx(
    source: &Input<'_>,
    names: &[&str],
    output: &Path,
    shard_size: u64,
) -> Result<Vec<PathBuf>, String> {
    let fold = output
        .file_stem()
        .and_then(|stem| stem.to_str())
        .filter(|fold| output.extension().is_some_and(|ext| ext == "taridx") && !fold.is_empty())
        .ok_or_else(|| about(output, "a TARIDX target must be named DIR/FOLD.taridx"))?;
    check_taridx_names(names, output)?;
    let dir = output
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    // Shards already there would join the fold when it is opened again.
    if let Ok(existing) = binfmt_taridx::fold_shards(&dir, fold) {
        let names: Vec<String> = existing
            .iter()
            .map(|path| path.display().to_string())
            .collect();
        return Err(about(
            output,
            format!(
                "shards of fold {fold:?} already exist ({}); remove them or choose another place",
                names.join(", ")
            ),
        ));
    }
    let mut shards: Vec<PathBuf> = Vec::new();
    let written = write_shards(source, names, &dir, fold, shard_size, output, &mut shards)
        .and_then(|()| {
            binfmt_taridx::index_shards(&shards, binfmt_taridx::IndexOptions::default(), || {})
                .map_err(|e| e.to_string())?
                .write_file(output)
                .map_err(|e| about(output, e))
        });
    if let Err(error) = written {
        // Each shard is whole, but a partial set would open as a smaller fold.
        for shard in &shards {
            let _ = std::fs::remove_file(shard);
        }
        return Err(error);
    }
    shards.push(output.to_owned());
    Ok(shards)
}

/// Writes the members into shards `DIR/FOLD_0000.tar`, ..., recording each
/// shard in `shards` as soon as it is created.
fn write_shards(
    source: &Input<'_>,
    names: &[&str],
    dir: &Path,
    fold: &str,
    shard_size: u64,
    output: &Path,
    shards: &mut Vec<PathBuf>,
) -> Result<(), String> {
    let mut current: Option<binfmt_taridx::TarWriter<AtomicFile>> = None;
    let finish = |writer: binfmt_taridx::TarWriter<AtomicFile>| -> Result<(), String> {
        let file = writer.finish().map_err(|e| e.to_string())?;
        file.commit().map_err(|e| e.to_string())
    };
    for name in names {
        let bytes = source.read(name)?;
        let needed = binfmt_taridx::TarWriter::<AtomicFile>::member_len(name, bytes.len() as u64);
        // Room for the two end blocks of an archive.
        if current.as_ref().is_some_and(|writer| {
            writer.written() > 0 && writer.written() + needed + 1024 > shard_size
        }) {
            if let Some(writer) = current.take() {
                finish(writer)?;
            }
        }
        if current.is_none() {
            let path = dir.join(format!("{fold}_{:04}.tar", shards.len()));
            let file = AtomicFile::create(&path).map_err(|e| e.to_string())?;
            shards.push(path);
            current = Some(binfmt_taridx::TarWriter::new(file));
        }
        if let Some(writer) = current.as_mut() {
            writer
                .append(name, &bytes)
                .with_path(shards.last().map_or(output, PathBuf::as_path))
                .map_err(|e| e.to_string())?;
        }
    }
    if let Some(writer) = current.take() {
        finish(writer)?;
    }
    if shards.is_empty() {
        // An empty fold still needs a shard for the fold convention to find.
        let path = dir.join(format!("{fold}_0000.tar"));
        finish(binfmt_taridx::TarWriter::new(
            AtomicFile::create(&path).map_err(|e| e.to_string())?,
        ))?;
        shards.push(path);
    }
    Ok(())
}
