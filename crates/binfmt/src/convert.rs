//! Converting between formats, entry by entry, without changing a name or a
//! byte: a name the target cannot hold is an error that names it.
//!
//! | target | what is written |
//! |---|---|
//! | TARIDX | `DIR/FOLD.taridx` and shards `DIR/FOLD_0000.tar`, `DIR/FOLD_0001.tar`, … written by `binfmt_taridx::SampleWriter`: consecutive entries with one key are one sample, never split across shards; a new shard when the next sample would pass the size or sample limit; ustar members, pax records for long or non-ASCII names; the index built in the same pass |
//! | ARCX | an archive in the chosen dialect |
//! | KAST | one array per entry, keyed by name: typed as the kastore it came from, uint8 otherwise |
//! | PAR4 | a `HashMap<String, Vec<u8>>` in the bucket layout (`parcode` 0.6.1 loads it with `Parcode::load`) |
//!
//! **Element types travel.** A kastore's arrays keep their element types
//! through every format: converting a kastore to ARCX, PAR4 or TARIDX adds
//! one entry, [`TYPES_ENTRY`], a small JSON record of the type of each key
//! that is not uint8, which the format's own tools see as an ordinary file;
//! converting back to KAST reads it and writes each array with its type, so
//! KAST → any format → KAST gives the original bytes. Without that record
//! (an archive of plain files, a store of uint8 arrays) every array is
//! uint8. `spec/conversion.md` states the rule.
//!
//! Entries are streamed from the input to the output: ARCX and TARIDX
//! targets take each entry as it is read; a PAR4 target takes every key and
//! size first, then reads each value as its bucket is written; a KAST
//! target reads each array when its turn comes in key order.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use binfmt_kastore::ItemType;

use crate::entries::{Entry, EntrySource, Prefetch, check_names_carry, open};
use crate::error::{Error, InFile, Result};
use crate::sniff::Format;

/// The entry that carries kastore element types through formats without a
/// type field.
pub const TYPES_ENTRY: &str = "__kastore__.json";

/// The record's format marker, so a file of that name that is not ours is
/// recognised as not ours.
const TYPES_MARKER: &str = "binfmt kastore types";

/// How to write the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
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

impl ConvertOptions {
    /// These options writing ARCX in `dialect`.
    pub fn arcx_dialect(mut self, dialect: binfmt_arcx::Dialect) -> Self {
        self.arcx_dialect = dialect;
        self
    }

    /// These options cutting TARIDX shards at `bytes`.
    pub fn shard_size(mut self, bytes: u64) -> Self {
        self.shard_size = bytes;
        self
    }

    /// These options putting at most `samples` samples in a TARIDX shard.
    pub fn shard_samples(mut self, samples: u64) -> Self {
        self.shard_samples = samples;
        self
    }

    /// These options keying TARIDX samples by `rule`.
    pub fn taridx_keys(mut self, rule: binfmt_taridx::KeyRule) -> Self {
        self.taridx_keys = rule;
        self
    }

    /// These options compressing PAR4 chunks with `compression`.
    pub fn par4_compression(mut self, compression: binfmt_parcode::Compression) -> Self {
        self.par4_compression = compression;
        self
    }
}

/// What a conversion wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConvertSummary {
    /// Entries written (the types record included).
    pub entries: u64,
    /// Their bytes.
    pub bytes: u64,
    /// The files written (for TARIDX: the shards, then the index).
    pub outputs: Vec<PathBuf>,
    /// Entries of the input that are not bytes (ARCX directories and
    /// symlinks), which the target does not hold.
    pub skipped: Vec<String>,
}

/// Converts `input` (any format [`open`] reads) into `output` in format `to`.
///
/// # Examples
///
/// ```
/// use binfmt::{ConvertOptions, Format};
///
/// let dir = tempfile::tempdir()?;
/// let mut writer = binfmt_kastore::Writer::new();
/// writer.insert("nodes/time", &[0.5f64, 1.5][..])?;
/// writer.write_file(dir.path().join("tables.kas"))?;
///
/// // Through ARCX and back: the float64 array keeps its type and bytes.
/// let arcx = dir.path().join("tables.arcx");
/// binfmt::convert(dir.path().join("tables.kas"), &arcx, Format::Arcx, &ConvertOptions::default())?;
/// let back = dir.path().join("back.kas");
/// binfmt::convert(&arcx, &back, Format::Kast, &ConvertOptions::default())?;
/// assert_eq!(std::fs::read(&back)?, std::fs::read(dir.path().join("tables.kas"))?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn convert(
    input: impl AsRef<Path>,
    output: impl AsRef<Path>,
    to: Format,
    options: &ConvertOptions,
) -> Result<ConvertSummary> {
    convert_with_progress(input, output, to, options, &|_, _| {})
}

/// [`convert`], calling `progress(entries read, entries in all)` after
/// each entry is read.
pub fn convert_with_progress(
    input: impl AsRef<Path>,
    output: impl AsRef<Path>,
    to: Format,
    options: &ConvertOptions,
    progress: &dyn Fn(u64, u64),
) -> Result<ConvertSummary> {
    let (input, output) = (input.as_ref(), output.as_ref());
    let opened = open(input)?;
    convert_source(opened.as_ref(), output, to, options, progress)
}

/// Converts an opened source into `output`.
pub fn convert_source(
    source: &dyn EntrySource,
    output: impl AsRef<Path>,
    to: Format,
    options: &ConvertOptions,
    progress: &dyn Fn(u64, u64),
) -> Result<ConvertSummary> {
    let output = output.as_ref();
    // The output gate: never over the file read, nor (a TARIDX fold) over
    // one of its shards; by device and inode.
    binfmt_core::Inputs::new(&source.inputs())
        .check(output)
        .in_file(source.file())?;
    let listed = source.list()?;
    check_names_carry(source.file(), &listed)?;
    let (entries, skipped): (Vec<Entry>, Vec<Entry>) =
        listed.into_iter().partition(Entry::is_regular);
    let types = Types::of(source, &entries)?;
    // The types record would take the place of an entry of its name: refuse
    // before anything is written, on every target alike.
    // Refused even when no record is needed (all arrays uint8): converted
    // back, the key's bytes would be read as a record and retype arrays.
    if to != Format::Kast
        && types.from_kastore
        && entries.iter().any(|entry| entry.name == TYPES_ENTRY)
    {
        return Err(Error::CannotHold {
            file: source.file().to_owned(),
            name: TYPES_ENTRY.to_owned(),
            why: format!(
                "converting a kastore to {to} reserves this name for its element types (converted back, this key would be read as them); rename the key (or convert to kast, which needs no record)"
            ),
        });
    }
    let input = Input {
        source,
        read: Cell::new(0),
        total: entries.len() as u64,
        progress,
        ahead: Prefetch::new(source, &entries),
    };
    let output_name = output.display().to_string();
    let (outputs, written) = match to {
        Format::Arcx => to_arcx(&input, &entries, &types, output, options.arcx_dialect)?,
        Format::Kast => to_kast(&input, &entries, &types, output)?,
        Format::Par4 => to_par4(&input, &entries, &types, output, options.par4_compression)?,
        Format::Taridx => to_taridx(&input, &entries, &types, output, options)?,
        Format::Tar | Format::Unknown => {
            return Err(Error::Unsupported {
                file: output_name,
                why: format!("cannot convert to {to}"),
            });
        }
    };
    let bytes = entries
        .iter()
        .filter(|entry| entry.name != TYPES_ENTRY || !types.from_record)
        .try_fold(written.extra_bytes, |total, entry| {
            total.checked_add(entry.size)
        })
        .ok_or_else(|| Error::Unsupported {
            file: source.file().to_owned(),
            why: "entry sizes add up to more than 2^64 bytes".into(),
        })?;
    Ok(ConvertSummary {
        entries: written.entries,
        bytes,
        outputs,
        skipped: skipped.into_iter().map(|entry| entry.name).collect(),
    })
}

/// What a target writer reports beyond its files.
struct Written {
    entries: u64,
    /// Bytes written that no input entry had (the types record).
    extra_bytes: u64,
}

/// The element type of every entry: from a kastore input, or from a types
/// record in the input; uint8 for anything else.
#[derive(Debug, Default)]
struct Types {
    by_name: HashMap<String, ItemType>,
    /// The types came from a [`TYPES_ENTRY`] record, which is metadata, not
    /// an entry to carry on.
    from_record: bool,
    /// The input was a kastore: the record must be added to non-KAST targets.
    from_kastore: bool,
}

impl Types {
    fn of(source: &dyn EntrySource, entries: &[Entry]) -> Result<Self> {
        if source.format() == Format::Kast {
            let by_name = entries
                .iter()
                .filter_map(|entry| {
                    entry
                        .kind
                        .and_then(ItemType::from_name)
                        .map(|item_type| (entry.name.clone(), item_type))
                })
                .collect();
            return Ok(Self {
                by_name,
                from_record: false,
                from_kastore: true,
            });
        }
        let Some(record) = entries.iter().find(|entry| entry.name == TYPES_ENTRY) else {
            return Ok(Self::default());
        };
        // A record is a few dozen bytes per key; refuse an absurd one
        // before reading it.
        if record.size > 64 << 20 {
            return Ok(Self::default());
        }
        let bytes = source.read(TYPES_ENTRY)?;
        let Some(by_name) = parse_record(&bytes) else {
            // Not our record: an ordinary file of that name.
            return Ok(Self::default());
        };
        let sizes: HashMap<&str, u64> = entries
            .iter()
            .map(|entry| (entry.name.as_str(), entry.size))
            .collect();
        for (name, item_type) in &by_name {
            let fits = sizes
                .get(name.as_str())
                .is_some_and(|size| size % item_type.size() == 0);
            if !fits {
                return Err(Error::CannotHold {
                    file: source.file().to_owned(),
                    name: name.clone(),
                    why: format!(
                        "{TYPES_ENTRY} says it holds {item_type} values, but it is missing or not a whole number of them"
                    ),
                });
            }
        }
        Ok(Self {
            by_name,
            from_record: true,
            from_kastore: false,
        })
    }

    fn get(&self, name: &str) -> ItemType {
        self.by_name.get(name).copied().unwrap_or(ItemType::Uint8)
    }

    /// The record to write for a non-KAST target, when the input was a
    /// kastore with arrays of other types than uint8 (uint8 is what a key
    /// without a record gets, so a store of bytes round-trips without one).
    fn record(&self) -> Option<Vec<u8>> {
        let items: BTreeMap<&str, &str> = self
            .by_name
            .iter()
            .filter(|(_, item_type)| **item_type != ItemType::Uint8)
            .map(|(name, item_type)| (name.as_str(), item_type.name()))
            .collect();
        if !self.from_kastore || items.is_empty() {
            return None;
        }
        serde_json::to_vec_pretty(&serde_json::json!({
            "format": TYPES_MARKER,
            "version": 1,
            "items": items,
        }))
        .ok()
    }
}

/// The types a record holds, or `None` when the bytes are not a record.
fn parse_record(bytes: &[u8]) -> Option<HashMap<String, ItemType>> {
    let value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    if value.get("format")?.as_str()? != TYPES_MARKER || value.get("version")?.as_u64()? != 1 {
        return None;
    }
    value
        .get("items")?
        .as_object()?
        .iter()
        .map(|(name, item_type)| {
            let item_type = ItemType::from_name(item_type.as_str()?)?;
            Some((name.clone(), item_type))
        })
        .collect()
}

/// The file being converted and how far reading has got.
struct Input<'a> {
    source: &'a dyn EntrySource,
    read: Cell<u64>,
    total: u64,
    progress: &'a dyn Fn(u64, u64),
    ahead: Prefetch<'a>,
}

impl<'a> Input<'a> {
    /// One entry, as a stream; a failure names the input file and the entry.
    fn open(&self, name: &str) -> Result<Box<dyn Read + 'a>> {
        self.ahead.before(name);
        let reader = self.source.open(name).map_err(|e| e.in_entry(name))?;
        self.read.set(self.read.get() + 1);
        (self.progress)(self.read.get(), self.total);
        Ok(reader)
    }

    fn file(&self) -> &str {
        self.source.file()
    }
}

/// An I/O error while copying an entry: the input's error (a checksum
/// mismatch) when there is one, else the output's.
fn copy_error(error: std::io::Error, input: &Input<'_>, name: &str, output: &Path) -> Error {
    let from_input = error
        .get_ref()
        .is_some_and(|inner| !inner.is::<std::io::Error>());
    let file = if from_input {
        input.file().to_owned()
    } else {
        output.display().to_string()
    };
    crate::error::from_io(error, &file).in_entry(name)
}

/// A TARIDX writer's error while copying a sample: the entry's own error
/// (naming it) when its reader failed, else the writer's.
fn taridx_copy_error(error: binfmt_taridx::TaridxError, output: &Path) -> Error {
    let file = output.display().to_string();
    match error {
        binfmt_taridx::TaridxError::Core(binfmt_core::Error::Io { source, .. }) => {
            crate::error::from_io(source, &file)
        }
        other => Error::Taridx {
            file,
            source: other,
        },
    }
}

/// The entries to write: every regular entry but a types record the types
/// came from (non-KAST targets from a kastore add a record of their own).
fn kept<'e>(entries: &'e [Entry], types: &'e Types) -> impl Iterator<Item = &'e Entry> {
    entries
        .iter()
        .filter(|entry| !(types.from_record && entry.name == TYPES_ENTRY))
}

/// The names of [`kept`] entries.
fn names<'e>(entries: &'e [Entry], types: &'e Types) -> Vec<&'e str> {
    kept(entries, types)
        .map(|entry| entry.name.as_str())
        .collect()
}

fn to_arcx(
    input: &Input<'_>,
    entries: &[Entry],
    types: &Types,
    output: &Path,
    dialect: binfmt_arcx::Dialect,
) -> Result<(Vec<PathBuf>, Written)> {
    let file = output.display().to_string();
    let mut packer =
        binfmt_arcx::Packer::create(output, binfmt_arcx::PackOptions::default().dialect(dialect))
            .in_file(&file)?;
    let names = names(entries, types);
    for name in &names {
        packer
            .add(name, &mut input.open(name)?)
            .map_err(|error| match error {
                binfmt_arcx::ArcxError::Core(binfmt_core::Error::Io { source, .. }) => {
                    copy_error(source, input, name, output)
                }
                other => Error::Arcx {
                    file: file.clone(),
                    source: other,
                }
                .in_entry(name),
            })?;
    }
    let record = types.record();
    if let Some(record) = &record {
        packer
            .add(TYPES_ENTRY, &mut record.as_slice())
            .in_file(&file)?;
    }
    packer.commit().in_file(&file)?;
    Ok((
        vec![output.to_owned()],
        Written {
            entries: names.len() as u64 + u64::from(record.is_some()),
            extra_bytes: record.map_or(0, |r| r.len() as u64),
        },
    ))
}

/// A reader that opens its entry when first read, so a KAST writer holding
/// one per key keeps one entry open at a time.
struct Deferred<'i, 'a> {
    input: &'i Input<'a>,
    name: String,
    reader: Option<Box<dyn Read + 'a>>,
}

impl Read for Deferred<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.reader.is_none() {
            self.reader = Some(self.input.open(&self.name).map_err(std::io::Error::other)?);
        }
        match self.reader.as_mut() {
            Some(reader) => {
                let n = reader.read(buf).map_err(|error| {
                    if error.kind() == std::io::ErrorKind::Interrupted {
                        return error;
                    }
                    let named =
                        crate::error::from_io(error, self.input.file()).in_entry(&self.name);
                    std::io::Error::other(named)
                })?;
                if n == 0 {
                    // Done: free the entry's buffers before the next one.
                    self.reader = None;
                }
                Ok(n)
            }
            None => Ok(0),
        }
    }
}

fn to_kast(
    input: &Input<'_>,
    entries: &[Entry],
    types: &Types,
    output: &Path,
) -> Result<(Vec<PathBuf>, Written)> {
    let file = output.display().to_string();
    let sizes: HashMap<&str, u64> = entries
        .iter()
        .map(|entry| (entry.name.as_str(), entry.size))
        .collect();
    let names = names(entries, types);
    // Names passed `check_names_carry`; the writer applies the same rule.
    let mut writer = binfmt_kastore::Writer::with_path_keys();
    for name in &names {
        let item_type = types.get(name);
        let size = sizes.get(name).copied().unwrap_or(0);
        let deferred = Deferred {
            input,
            name: (*name).to_owned(),
            reader: None,
        };
        writer
            .insert_reader(name, item_type, size, deferred)
            .in_file(&file)
            .map_err(|error| error.in_entry(name))?;
    }
    writer
        .write_file(output)
        .map_err(|error| kast_write_error(error, input, output))?;
    Ok((
        vec![output.to_owned()],
        Written {
            entries: names.len() as u64,
            extra_bytes: 0,
        },
    ))
}

/// A failure writing a KAST target: reading an input entry (the kastore
/// writer names the key; the deferred reader may carry this crate's error
/// out) or writing the output (named by its path).
fn kast_write_error(error: binfmt_kastore::KastError, input: &Input<'_>, output: &Path) -> Error {
    // An entry's reader failed: its error, named by the entry.
    let error = match error {
        binfmt_kastore::KastError::ReadArray { key, source } => {
            binfmt_kastore::KastError::Core(binfmt_core::Error::io(key, source))
        }
        other => other,
    };
    match error {
        binfmt_kastore::KastError::Core(binfmt_core::Error::Io { path, source })
            if path != output =>
        {
            let name = path.display().to_string();
            if !source.get_ref().is_some_and(|inner| inner.is::<Error>()) {
                return copy_error(source, input, &name, output);
            }
            match source.into_inner().map(|inner| inner.downcast::<Error>()) {
                Some(Ok(inner)) => *inner,
                _ => Error::Core {
                    file: input.file().to_owned(),
                    source: binfmt_core::Error::corrupt(
                        format!("entry {name:?}"),
                        "an error was lost",
                    ),
                },
            }
        }
        other => Error::Kast {
            file: output.display().to_string(),
            source: other,
        },
    }
}

fn to_par4(
    input: &Input<'_>,
    entries: &[Entry],
    types: &Types,
    output: &Path,
    compression: binfmt_parcode::Compression,
) -> Result<(Vec<PathBuf>, Written)> {
    let file = output.display().to_string();
    // Keys and sizes first; each value is read when its bucket is written,
    // so one entry at a time is held, never the whole map.
    let mut map = binfmt_parcode::BlobMapWriter::new();
    for entry in kept(entries, types) {
        map.add(entry.name.as_str(), entry.size);
    }
    let record = types.record();
    if let Some(record) = &record {
        map.add(TYPES_ENTRY, record.len() as u64);
    }
    // The writer reads values in bucket order: announce them in that order.
    let order = map.write_order().in_file(&file)?;
    let by_name: HashMap<&str, &Entry> = entries
        .iter()
        .map(|entry| (entry.name.as_str(), entry))
        .collect();
    let in_order: Vec<Entry> = order
        .iter()
        .filter_map(|name| by_name.get(name).map(|entry| (*entry).clone()))
        .collect();
    let input = Input {
        ahead: Prefetch::new(input.source, &in_order),
        read: Cell::new(input.read.get()),
        ..*input
    };
    // The input's error, when opening an entry failed.
    let failed = RefCell::new(None);
    let written = map.write_file(output, compression, |name| {
        if let (Some(record), true) = (&record, name == TYPES_ENTRY) {
            return Ok(Box::new(record.as_slice()) as Box<dyn Read>);
        }
        input.open(name).map_err(|error| {
            let message = error.to_string();
            failed.replace(Some(error));
            std::io::Error::other(message)
        })
    });
    if let Err(error) = written {
        return Err(match (failed.take(), error) {
            (Some(input_error), _) => input_error,
            (None, binfmt_parcode::ParError::ValueRead { key, source }) => {
                copy_error(source, &input, &key, output)
            }
            (None, other) => Error::Par4 {
                file,
                source: other,
            },
        });
    }
    Ok((
        vec![output.to_owned()],
        Written {
            entries: map.len() as u64,
            extra_bytes: record.map_or(0, |r| r.len() as u64),
        },
    ))
}

/// Names a TARIDX index cannot tell apart: two members with the same key
/// and extension would be one sample with a duplicated field.
fn check_taridx_names(names: &[&str], output: &Path, rule: binfmt_taridx::KeyRule) -> Result<()> {
    let mut seen: HashMap<(String, String), &str> = HashMap::new();
    for name in names {
        if name.is_empty() {
            return Err(Error::CannotHold {
                file: output.display().to_string(),
                name: String::new(),
                why: "an empty name, which a tar member cannot have".into(),
            });
        }
        let split = rule.split(name);
        if let Some(earlier) = seen.insert((split.key.clone(), split.extension.clone()), name) {
            let advice = match rule {
                binfmt_taridx::KeyRule::Glzn => {
                    " (glzn's key is the file name up to its first dot, without the directory: --taridx-keys webdataset keys samples by their whole path instead)"
                }
                _ => "",
            };
            return Err(Error::CannotHold {
                file: output.display().to_string(),
                name: (*name).to_owned(),
                why: format!(
                    "has the same key {:?} and extension {:?} as {earlier:?} under the {} key rule: one TARIDX sample cannot hold both{advice}",
                    split.key,
                    split.extension,
                    rule.name()
                ),
            });
        }
    }
    Ok(())
}

fn to_taridx(
    input: &Input<'_>,
    entries: &[Entry],
    types: &Types,
    output: &Path,
    options: &ConvertOptions,
) -> Result<(Vec<PathBuf>, Written)> {
    let file = output.display().to_string();
    let fold = output
        .file_stem()
        .and_then(|stem| stem.to_str())
        .filter(|fold| output.extension().is_some_and(|ext| ext == "taridx") && !fold.is_empty())
        .ok_or_else(|| Error::Unsupported {
            file: file.clone(),
            why: "a TARIDX target must be named DIR/FOLD.taridx".into(),
        })?;
    let record = types.record();
    let mut names = names(entries, types);
    if record.is_some() {
        names.push(TYPES_ENTRY);
    }
    let mut seen = HashSet::new();
    names.retain(|name| seen.insert(*name));
    let rule = options.taridx_keys;
    check_taridx_names(&names, output, rule)?;
    let dir = output
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let sizes: HashMap<&str, u64> = entries
        .iter()
        .map(|entry| (entry.name.as_str(), entry.size))
        .collect();
    // Each member streams from its entry, opened when the tar writer
    // reaches it: one entry's reading memory at a time, never its bytes.
    let member = |name: &str| -> binfmt_taridx::MemberSource<Box<dyn Read + '_>> {
        match (&record, name) {
            (Some(record), TYPES_ENTRY) => binfmt_taridx::MemberSource {
                name: name.to_owned(),
                size: record.len() as u64,
                data: Box::new(record.as_slice()),
            },
            _ => binfmt_taridx::MemberSource {
                name: name.to_owned(),
                size: sizes.get(name).copied().unwrap_or(0),
                data: Box::new(Deferred {
                    input,
                    name: name.to_owned(),
                    reader: None,
                }),
            },
        }
    };
    // Every shard written goes through the output gate with the source's
    // files as inputs.
    let mut writer = binfmt_taridx::SampleWriter::create_over(
        &dir,
        fold,
        binfmt_taridx::SampleWriterOptions::new()
            .max_bytes(options.shard_size)
            .max_samples(options.shard_samples)
            .key_rule(rule),
        binfmt_core::Inputs::new(&input.source.inputs()),
    )
    .in_file(&file)?;
    // A sample: consecutive entries with one key, never split across shards.
    let mut start = 0;
    while let Some(first) = names.get(start) {
        let key = rule.split(first).key;
        let end = names
            .iter()
            .skip(start)
            .position(|name| rule.split(name).key != key)
            .map_or(names.len(), |length| start + length);
        let members = names.get(start..end).unwrap_or_default();
        writer
            .write_members(members.iter().map(|name| member(name)).collect())
            .map_err(|error| taridx_copy_error(error, output))?;
        start = end;
    }
    let fold = writer.finish().in_file(&file)?;
    let mut outputs = fold.shards;
    outputs.push(fold.index);
    Ok((
        outputs,
        Written {
            entries: names.len() as u64,
            extra_bytes: record.map_or(0, |r| r.len() as u64),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_recognised_only_with_its_marker() {
        let good = br#"{"format": "binfmt kastore types", "version": 1, "items": {"a": "float64", "b/c": "int8"}}"#;
        let types = parse_record(good).unwrap();
        assert_eq!(types.get("a"), Some(&ItemType::Float64));
        assert_eq!(types.get("b/c"), Some(&ItemType::Int8));
        for not_ours in [
            &br#"{"items": {"a": "float64"}}"#[..],
            br#"{"format": "binfmt kastore types", "version": 2, "items": {}}"#,
            br#"{"format": "binfmt kastore types", "version": 1, "items": {"a": "complex128"}}"#,
            b"not json",
        ] {
            assert!(parse_record(not_ours).is_none());
        }
    }
}
