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
//!
//! Each target is a format's entry sink (`EntrySink`), in that format's
//! module of [`crate::formats`].

use std::cell::Cell;
use std::path::{Path, PathBuf};

pub use crate::element_types::TYPES_ENTRY;
use crate::element_types::Types;
use crate::entries::{Entry, EntrySource, Prefetch, check_names_carry};
use crate::error::{Error, InFile, Result};
use crate::formats::open;
pub use crate::sink::ConvertOptions;
use crate::sink::Input;
use crate::sniff::Format;

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
    /// For a TARIDX target, the key rule its samples were keyed by.
    pub taridx_keys: Option<binfmt_taridx::KeyRule>,
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
    let output = crate::outputs::Output::open(
        output,
        std::sync::Arc::new(crate::outputs::gate_inputs(source)),
        &binfmt_remote::RemoteOptions::default(),
    )?;
    convert_source_to(source, &output, to, options, progress)
}

/// Converts an opened source into `output` (a local file or an S3
/// object, opened with [`crate::outputs::Output::open`] over the
/// source's [`crate::outputs::gate_inputs`]).
pub fn convert_source_to(
    source: &dyn EntrySource,
    output: &crate::outputs::Output,
    to: Format,
    options: &ConvertOptions,
    progress: &dyn Fn(u64, u64),
) -> Result<ConvertSummary> {
    // The output gate: never over the file read, nor (a TARIDX fold) over
    // one of its shards; by device and inode, or by URL and ETag.
    output.dir.check(&output.name).in_file(source.file())?;
    let listed = source.list_to_read()?;
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
    let output_name = output.shown().display().to_string();
    let Some(sink) = crate::formats::sink(to) else {
        return Err(Error::Unsupported {
            file: output_name,
            why: format!("cannot convert to {to}"),
        });
    };
    let (outputs, written) = sink.write(&input, &entries, &types, output, options)?;
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
        taridx_keys: written.taridx_keys,
    })
}
