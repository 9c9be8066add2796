//! What a conversion target is handed: the options, the input being read
//! entry by entry, and the [`EntrySink`] trait each format's module
//! implements to write itself.
//!
//! Conversion is source → sink: [`crate::convert_source`] lists the input
//! ([`crate::EntrySource`]), checks the names, works out the element types
//! ([`Types`]), and hands the regular entries to the target format's sink,
//! which opens each entry through [`Input::open`] when it writes it.

use std::cell::Cell;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::element_types::Types;
use crate::entries::{Entry, EntrySource, Prefetch};
use crate::error::{Error, Result};

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
    /// Whether TARIDX targets choose the key rule from the names instead:
    /// WebDataset's when a name is a path, [`ConvertOptions::taridx_keys`]
    /// otherwise.
    pub taridx_keys_by_names: bool,
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
            taridx_keys_by_names: false,
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

    /// These options keying TARIDX samples by WebDataset's rule when a
    /// name is a path (`edges/metadata` and `individuals/metadata` stay two
    /// samples), by [`ConvertOptions::taridx_keys`] otherwise; the rule
    /// used is [`ConvertSummary::taridx_keys`](crate::ConvertSummary).
    pub fn taridx_keys_by_names(mut self) -> Self {
        self.taridx_keys_by_names = true;
        self
    }

    /// These options compressing PAR4 chunks with `compression`.
    pub fn par4_compression(mut self, compression: binfmt_parcode::Compression) -> Self {
        self.par4_compression = compression;
        self
    }
}

/// A format conversion can write: one per format module.
pub(crate) trait EntrySink: Sync {
    /// Writes `entries` (regular, names checked) of `input` to `output`,
    /// with the element types `types`; returns the files written (for
    /// TARIDX: the shards, then the index) and what was written.
    fn write(
        &self,
        input: &Input<'_>,
        entries: &[Entry],
        types: &Types,
        output: &crate::outputs::Output,
        options: &ConvertOptions,
    ) -> Result<(Vec<PathBuf>, Written)>;
}

/// What a target writer reports beyond its files.
pub(crate) struct Written {
    /// Entries written (the types record included).
    pub(crate) entries: u64,
    /// Bytes written that no input entry had (the types record).
    pub(crate) extra_bytes: u64,
    /// The key rule a TARIDX target was written with.
    pub(crate) taridx_keys: Option<binfmt_taridx::KeyRule>,
}

/// The file being converted and how far reading has got.
pub(crate) struct Input<'a> {
    /// The file read.
    pub(crate) source: &'a dyn EntrySource,
    /// Entries opened so far.
    pub(crate) read: Cell<u64>,
    /// Entries to read in all.
    pub(crate) total: u64,
    /// Called with (read, total) after each entry is opened.
    pub(crate) progress: &'a dyn Fn(u64, u64),
    /// The remote read-ahead, in the order the target reads.
    pub(crate) ahead: Prefetch<'a>,
}

impl<'a> Input<'a> {
    /// One entry, as a stream; a failure names the input file and the entry.
    pub(crate) fn open(&self, name: &str) -> Result<Box<dyn Read + 'a>> {
        self.ahead.before(name);
        let reader = self.source.open(name).map_err(|e| e.in_entry(name))?;
        self.read.set(self.read.get() + 1);
        (self.progress)(self.read.get(), self.total);
        Ok(reader)
    }

    /// What the input is called in messages.
    pub(crate) fn file(&self) -> &str {
        self.source.file()
    }
}

/// An I/O error while copying an entry: the input's error (a checksum
/// mismatch) when there is one, else the output's.
pub(crate) fn copy_error(
    error: std::io::Error,
    input: &Input<'_>,
    name: &str,
    output: &Path,
) -> Error {
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

/// A reader that opens its entry when first read, so a writer holding one
/// per entry (KAST keys, TARIDX members) keeps one entry open at a time.
pub(crate) struct Deferred<'i, 'a> {
    input: &'i Input<'a>,
    name: String,
    reader: Option<Box<dyn Read + 'a>>,
}

impl<'i, 'a> Deferred<'i, 'a> {
    /// The entry called `name` of `input`, not opened yet.
    pub(crate) fn new(input: &'i Input<'a>, name: &str) -> Self {
        Self {
            input,
            name: name.to_owned(),
            reader: None,
        }
    }
}

impl Read for Deferred<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.reader.is_none() {
            self.reader = Some(
                self.input
                    .open(&self.name)
                    .map_err(binfmt_core::carry::into_io)?,
            );
        }
        match self.reader.as_mut() {
            Some(reader) => {
                let n = reader.read(buf).map_err(|error| {
                    if error.kind() == std::io::ErrorKind::Interrupted {
                        return error;
                    }
                    let named =
                        crate::error::from_io(error, self.input.file()).in_entry(&self.name);
                    binfmt_core::carry::into_io(named)
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
