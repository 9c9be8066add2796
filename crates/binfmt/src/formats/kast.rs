//! KAST (kastore): a store's keys as entries, each array's little-endian
//! bytes as the entry's bytes and its element type as the entry's kind; and
//! stores written by conversion, one typed array per entry. A kastore is
//! the one format readable from a stream ([`open_stream`]).

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use binfmt_core::Source;

use crate::element_types::Types;
use crate::entries::{Entry, EntrySource};
use crate::error::{Error, InFile, Result};
use crate::origin::Origin;
use crate::sink::{ConvertOptions, Deferred, EntrySink, Input, Written, copy_error};
use crate::sniff::Format;

/// Opens the store in `source`.
pub(crate) fn open(source: Box<dyn Source>, origin: Origin) -> Result<Box<dyn EntrySource>> {
    Ok(Box::new(KastEntries {
        store: binfmt_kastore::Store::new(source).in_file(origin.file())?,
        origin,
    }))
}

/// Opens a stream (standard input, a pipe) as named entries: only a
/// kastore can be read that way (the other formats locate their data from
/// their end), so its signature is checked first and anything else is
/// refused before more is read.
pub fn open_stream(reader: &mut impl Read, name: &str) -> Result<Box<dyn EntrySource>> {
    let store = binfmt_kastore::Store::read_one(reader, name).map_err(|error| match error {
        binfmt_kastore::KastError::Core(binfmt_core::Error::BadMagic { .. }) => {
            Error::Unsupported {
                file: name.to_owned(),
                why: "only a kastore can be read from a stream (the other formats need a file they can read by offset)".into(),
            }
        }
        other => Error::Kast {
            file: name.to_owned(),
            source: other,
        },
    })?;
    let store = store.ok_or_else(|| Error::Kast {
        file: name.to_owned(),
        source: binfmt_kastore::KastError::Empty,
    })?;
    Ok(Box::new(KastEntries {
        store,
        origin: Origin::local(name),
    }))
}

/// A kastore file: its keys, each array's bytes as stored.
struct KastEntries<S = Box<dyn Source>> {
    store: binfmt_kastore::Store<S>,
    origin: Origin,
}

impl<S: binfmt_core::Source> KastEntries<S> {
    fn item(&self, name: &str) -> Result<binfmt_kastore::Item<'_>> {
        self.store.find(name).ok_or_else(|| Error::NotFound {
            file: self.origin.file().to_owned(),
            name: name.to_owned(),
        })
    }
}

impl<S: binfmt_core::Source> EntrySource for KastEntries<S> {
    fn format(&self) -> Format {
        Format::Kast
    }

    fn origin(&self) -> &Origin {
        &self.origin
    }

    fn list(&self) -> Result<Vec<Entry>> {
        Ok(self
            .store
            .items()
            .map(|item| Entry {
                name_not_utf8: std::str::from_utf8(item.key()).is_err(),
                kind: Some(item.item_type().name()),
                ..Entry::new(String::from_utf8_lossy(item.key()), item.byte_len())
            })
            .collect())
    }

    fn open(&self, name: &str) -> Result<Box<dyn Read + Send + '_>> {
        Ok(Box::new(
            self.item(name)?.reader().in_file(self.origin.file())?,
        ))
    }

    fn open_seekable(&self, name: &str) -> Result<Box<dyn crate::ReadSeek + '_>> {
        // The array's bytes are a range of the file: a seek moves in it.
        Ok(Box::new(
            self.item(name)?.reader().in_file(self.origin.file())?,
        ))
    }

    fn verify(&self) -> Result<()> {
        // Opening checked every descriptor against the file's size: every
        // array's bytes are there.
        Ok(())
    }

    fn prefetch(&self, names: &[&str]) {
        if self.origin.is_remote() {
            let ranges: Vec<std::ops::Range<u64>> = names
                .iter()
                .filter_map(|name| self.store.find(name))
                .map(|item| item.offset()..item.offset().saturating_add(item.byte_len()))
                .collect();
            self.store.source().will_read(&ranges);
        }
    }
}

/// Writes a kastore: one array per entry, typed as [`Types`] says, each
/// entry read when the writer reaches its key.
pub(crate) struct Sink;

impl EntrySink for Sink {
    fn write(
        &self,
        input: &Input<'_>,
        entries: &[Entry],
        types: &Types,
        out: &crate::outputs::Output,
        _options: &ConvertOptions,
    ) -> Result<(Vec<PathBuf>, Written)> {
        let output = &out.shown();
        let file = output.display().to_string();
        let sizes: HashMap<&str, u64> = entries
            .iter()
            .map(|entry| (entry.name.as_str(), entry.size))
            .collect();
        let names = types.names(entries);
        // Names passed `check_names_carry`; the writer applies the same rule.
        let mut writer = binfmt_kastore::Writer::with_path_keys();
        for name in &names {
            let item_type = types.get(name);
            let size = sizes.get(name).copied().unwrap_or(0);
            let deferred = Deferred::new(input, name);
            writer
                .insert_reader(name, item_type, size, deferred)
                .in_file(&file)
                .map_err(|error| error.in_entry(name))?;
        }
        writer
            .write_destination(out.create()?)
            .map_err(|error| kast_write_error(error, input, output))?;
        Ok((
            vec![output.to_owned()],
            Written {
                entries: names.len() as u64,
                extra_bytes: 0,
                taridx_keys: None,
            },
        ))
    }
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
            // The deferred reader carried this crate's error out: as it is.
            binfmt_core::carry::take::<Error>(source)
                .unwrap_or_else(|source| copy_error(source, input, &name, output))
        }
        other => Error::Kast {
            file: output.display().to_string(),
            source: other,
        },
    }
}
