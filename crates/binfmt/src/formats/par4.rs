//! PAR4 (Parcode V4): the entries of a root `HashMap<String, Vec<u8>>`
//! (inline or bucketed), read through the file's source, and that map
//! written by conversion. A PAR4 file whose root is of another type opens,
//! but has no named entries (`binfmt par4 inspect` shows its chunk tree).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::io::Read;
use std::path::PathBuf;

use binfmt_core::Source;

use crate::element_types::{TYPES_ENTRY, Types};
use crate::entries::{Entry, EntrySource, Prefetch};
use crate::error::{Error, InFile, Result};
use crate::origin::Origin;
use crate::sink::{ConvertOptions, EntrySink, Input, Written, copy_error};
use crate::sniff::Format;

/// Opens the PAR4 file in `source`: its global header and its root's
/// trailer.
pub(crate) fn open(source: Box<dyn Source>, origin: Origin) -> Result<Box<dyn EntrySource>> {
    let parfile = binfmt_parcode::ParFile::new(source).in_file(origin.file())?;
    Ok(Box::new(Par4Entries { parfile, origin }))
}

/// A PAR4 file whose root is a `HashMap<String, Vec<u8>>`, read through
/// its source: opening reads the global header and the root's trailer,
/// a listing each bucket's tables and each entry's key and length prefix,
/// a value only its bucket's tables and its own bytes (streamed).
struct Par4Entries {
    parfile: binfmt_parcode::ParFile<Box<dyn Source>>,
    origin: Origin,
}

impl Par4Entries {
    fn no_entries(&self, error: &binfmt_parcode::ParError) -> Error {
        Error::Unsupported {
            file: self.origin.file().to_owned(),
            why: format!(
                "the root is not a HashMap<String, Vec<u8>>, so the file has no named entries ({error}); `binfmt par4 inspect` shows its chunk tree"
            ),
        }
    }

    /// The value of the entry called `name`, streamed from its offset.
    fn value(&self, name: &str) -> Result<binfmt_parcode::ValueReader<'_>> {
        self.map()?
            .reader(name)
            .in_file(self.origin.file())?
            .ok_or_else(|| Error::NotFound {
                file: self.origin.file().to_owned(),
                name: name.to_owned(),
            })
    }

    /// The root as a map (reads nothing: the root was read at open).
    fn map(&self) -> Result<binfmt_parcode::LazyMap<'_, String, Vec<u8>>> {
        let root = self.parfile.root().in_file(self.origin.file())?;
        binfmt_parcode::LazyMap::new(root).map_err(|error| self.no_entries(&error))
    }
}

impl EntrySource for Par4Entries {
    fn format(&self) -> Format {
        Format::Par4
    }

    fn origin(&self) -> &Origin {
        &self.origin
    }

    fn list(&self) -> Result<Vec<Entry>> {
        let mut entries: Vec<Entry> = self
            .map()?
            .value_lens()
            .in_file(self.origin.file())?
            .into_iter()
            .map(|(name, size)| Entry::new(name, size))
            .collect();
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }

    fn list_to_read(&self) -> Result<Vec<Entry>> {
        // Every value is read next: a file that fits half the memory cache
        // is fetched whole now (a few large requests), so neither the
        // listing (a key and length per entry) nor the values cost a
        // request each.
        if let Some(remote) = self.origin.remote() {
            let len = binfmt_core::Source::len(&**remote);
            if len <= remote.options().memory_cache() / 2 {
                self.parfile
                    .source()
                    .will_read(std::slice::from_ref(&(0..len)));
            }
        }
        self.list()
    }

    fn open(&self, name: &str) -> Result<Box<dyn Read + Send + '_>> {
        Ok(Box::new(self.value(name)?))
    }

    fn open_seekable(&self, name: &str) -> Result<Box<dyn crate::ReadSeek + '_>> {
        Ok(Box::new(self.value(name)?))
    }

    fn verify(&self) -> Result<()> {
        self.parfile.verify().in_file(self.origin.file())?;
        self.parfile.verify_entries().in_file(self.origin.file())
    }

    fn prefetch(&self, names: &[&str]) {
        if self.origin.is_remote()
            && let Ok(map) = self.map()
        {
            map.prefetch(names.iter().copied());
        }
    }
}

/// Writes a `HashMap<String, Vec<u8>>` in the bucket layout, compressed
/// as [`ConvertOptions::par4_compression`] says: every key and size first,
/// then each value read as its bucket is written.
pub(crate) struct Sink;

impl EntrySink for Sink {
    fn write(
        &self,
        input: &Input<'_>,
        entries: &[Entry],
        types: &Types,
        out: &crate::outputs::Output,
        options: &ConvertOptions,
    ) -> Result<(Vec<PathBuf>, Written)> {
        let output = &out.shown();
        let file = output.display().to_string();
        // Keys and sizes first; each value is read when its bucket is written,
        // so one entry at a time is held, never the whole map.
        let mut map = binfmt_parcode::BlobMapWriter::new();
        for entry in types.kept(entries) {
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
        let written = map.write_destination(out.create()?, options.par4_compression, |name| {
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
                taridx_keys: None,
            },
        ))
    }
}
