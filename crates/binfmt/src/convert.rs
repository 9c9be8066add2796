//! Converting between formats, entry by entry, without changing a name or a
//! byte: a name the target cannot hold is an error that names it.
//!
//! | target | what is written |
//! |---|---|
//! | TARIDX | `DIR/FOLD.taridx` and shards `DIR/FOLD_0000.tar`, `DIR/FOLD_0001.tar`, … written by `binfmt_taridx::SampleWriter`: consecutive entries with one key are one sample, never split across shards; a new shard when the next sample would pass the size or sample limit; ustar members, pax records for long or non-ASCII names; the index built in the same pass |
//! | ARCX | an archive in the chosen dialect |
//! | KAST | one uint8 array per entry, keyed by name |
//! | PAR4 | a `HashMap<String, Vec<u8>>` in the bucket layout (`parcode` 0.6.1 loads it with `Parcode::load`) |
//!
//! ARCX and TARIDX are written as entries are read. KAST needs every array's
//! size before its first byte and PAR4 buckets need every key, so those two
//! hold the entries in memory until they are written.

use std::cell::Cell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::about;
use crate::entries::{EntrySource, check_names_carry, open};
use crate::sniff::Format;

/// How to write the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConvertOptions {
    /// The ARCX dialect, for ARCX targets.
    pub arcx_dialect: binfmt_arcx::Dialect,
    /// The largest tar shard, for TARIDX targets (a single larger sample
    /// gets a shard of its own).
    pub shard_size: u64,
    /// The most samples in one tar shard, for TARIDX targets.
    pub shard_samples: u64,
    /// How TARIDX targets key member names into samples.
    pub taridx_keys: binfmt_taridx::KeyRule,
    /// Compression of PAR4 chunks.
    pub par4_compression: binfmt_parcode::Compression,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        Self {
            arcx_dialect: binfmt_arcx::Dialect::Spec,
            shard_size: 1 << 30,
            shard_samples: u64::MAX,
            taridx_keys: binfmt_taridx::KeyRule::Glzn,
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
        Format::Par4 => to_par4(&source, &names, output, options.par4_compression)?,
        Format::Taridx => to_taridx(&source, &names, output, options)?,
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
    names: &[&str],
    output: &Path,
    compression: binfmt_parcode::Compression,
) -> Result<Vec<PathBuf>, String> {
    let map: HashMap<String, Vec<u8>> = names
        .iter()
        .map(|name| Ok(((*name).to_owned(), source.read(name)?)))
        .collect::<Result<_, String>>()?;
    let mut graph = binfmt_parcode::ChunkGraph::new();
    let root = graph
        .map(&map, binfmt_parcode::MapLayout::Buckets)
        .map_err(|e| about(output, e))?;
    graph
        .write_file(root, compression, output)
        .map_err(|e| about(output, e))?;
    Ok(vec![output.to_owned()])
}

/// Names a TARIDX index cannot tell apart: two members with the same key
/// and extension would be one sample with a duplicated field.
fn check_taridx_names(
    names: &[&str],
    output: &Path,
    rule: binfmt_taridx::KeyRule,
) -> Result<(), String> {
    let mut seen = HashMap::new();
    for name in names {
        if name.is_empty() {
            return Err(about(
                output,
                "an entry has an empty name, which a tar member cannot have",
            ));
        }
        let split = rule.split(name);
        if let Some(earlier) = seen.insert((split.key.clone(), split.extension.clone()), *name) {
            let advice = match rule {
                binfmt_taridx::KeyRule::Glzn => {
                    " (glzn's key is the basename: --taridx-keys webdataset keys samples by their whole path instead)"
                }
                _ => "",
            };
            return Err(about(
                output,
                format!(
                    "entries {earlier:?} and {name:?} have the same key {:?} and extension {:?} under the {} key rule: one TARIDX sample cannot hold both{advice}",
                    split.key,
                    split.extension,
                    rule.name()
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
    options: &ConvertOptions,
) -> Result<Vec<PathBuf>, String> {
    let fold = output
        .file_stem()
        .and_then(|stem| stem.to_str())
        .filter(|fold| output.extension().is_some_and(|ext| ext == "taridx") && !fold.is_empty())
        .ok_or_else(|| about(output, "a TARIDX target must be named DIR/FOLD.taridx"))?;
    let rule = options.taridx_keys;
    check_taridx_names(names, output, rule)?;
    let dir = output
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let failed = |error: binfmt_taridx::TaridxError| about(output, error);
    let mut writer = binfmt_taridx::SampleWriter::create(
        &dir,
        fold,
        binfmt_taridx::SampleWriterOptions::new()
            .max_bytes(options.shard_size)
            .max_samples(options.shard_samples)
            .key_rule(rule),
    )
    .map_err(failed)?;
    // A sample: consecutive entries with one key.
    let mut start = 0;
    while let Some(first) = names.get(start) {
        let key = rule.split(first).key;
        let end = names
            .iter()
            .skip(start)
            .position(|name| rule.split(name).key != key)
            .map_or(names.len(), |length| start + length);
        let members = names
            .get(start..end)
            .unwrap_or_default()
            .iter()
            .map(|name| Ok((*name, source.read(name)?)))
            .collect::<Result<Vec<_>, String>>()?;
        writer
            .write_members(
                members
                    .iter()
                    .map(|(name, bytes)| binfmt_taridx::MemberSource {
                        name: (*name).to_owned(),
                        size: bytes.len() as u64,
                        data: bytes.as_slice(),
                    })
                    .collect(),
            )
            .map_err(failed)?;
        start = end;
    }
    let fold = writer.finish().map_err(failed)?;
    let mut outputs = fold.shards;
    outputs.push(fold.index);
    Ok(outputs)
}
