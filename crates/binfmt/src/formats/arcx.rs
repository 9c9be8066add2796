//! ARCX: an archive's files as entries, and archives written by
//! conversion.
//!
//! Opened three ways ([`crate::OpenOptions`]): whole (`ArcxEntries`: its
//! tables built, every file readable), one file by name (`ArcxOne`: only
//! that file's manifest record decoded), or for a listing (`ArcxListing`:
//! the manifest walked, nothing kept, the whole archive opened only if
//! something else is asked). Directories and symlinks are entries listed
//! by kind (`directory`, `symlink`), restored by `extract`.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use binfmt_core::Source;

use crate::element_types::{TYPES_ENTRY, Types};
use crate::entries::{Entry, EntrySource, ExtractOptions};
use crate::error::{Error, InFile, Result};
use crate::origin::{OpenOptions, Origin};
use crate::sink::{ConvertOptions, EntrySink, Input, Written, copy_error};
use crate::sniff::Format;

/// Opens the archive in `source` as the entries `options` ask for.
pub(crate) fn open(
    source: Box<dyn Source>,
    origin: Origin,
    options: &OpenOptions,
) -> Result<Box<dyn EntrySource>> {
    // Reading needs the footer and the manifest only; a remote archive
    // leaves the header to `verify`, saving a request.
    let arcx_options = binfmt_arcx::OpenOptions::default().check_header(!origin.is_remote());
    if let Some(name) = &options.only {
        let one =
            binfmt_arcx::Archive::open_one(source, name, arcx_options).map_err(
                |error| match error {
                    binfmt_arcx::ArcxError::NotFound { .. } => Error::NotFound {
                        file: origin.file().to_owned(),
                        name: name.clone(),
                    },
                    other => Error::Arcx {
                        file: origin.file().to_owned(),
                        source: other,
                    },
                },
            )?;
        return Ok(Box::new(ArcxOne { one, origin }));
    }
    if options.listing {
        return Ok(Box::new(ArcxListing::open(source, origin, arcx_options)?));
    }
    Ok(Box::new(ArcxEntries {
        archive: binfmt_arcx::Archive::with_options(source, arcx_options).in_file(origin.file())?,
        origin,
    }))
}

/// `directory` or `symlink` for entries that are not regular files.
fn kind_name(kind: binfmt_arcx::FileKind) -> Option<&'static str> {
    match kind {
        binfmt_arcx::FileKind::Directory => Some("directory"),
        binfmt_arcx::FileKind::Symlink => Some("symlink"),
        _ => None,
    }
}

/// The entry of an ARCX file, directories and symlinks listed by kind.
fn arcx_entry(file: binfmt_arcx::FileEntry<'_>) -> Entry {
    let attributes = file.attributes();
    Entry {
        kind: kind_name(attributes.kind),
        mode: Some(attributes.mode),
        mtime_ns: Some(attributes.mtime_ns),
        ..Entry::new(file.path().to_string(), file.size())
    }
}

/// An ARCX archive: its files, with directories and symlinks listed by kind.
struct ArcxEntries {
    archive: binfmt_arcx::Archive<Box<dyn Source>>,
    origin: Origin,
}

impl ArcxEntries {
    /// A reader of the file at `name`.
    fn file_reader(&self, name: &str) -> Result<binfmt_arcx::FileReader<'_, Box<dyn Source>>> {
        match self.archive.find(name) {
            Some(file) => Ok(self.archive.reader_for(file)),
            None => Err(Error::NotFound {
                file: self.origin.file().to_owned(),
                name: name.to_owned(),
            }),
        }
    }
}

impl EntrySource for ArcxEntries {
    fn format(&self) -> Format {
        Format::Arcx
    }

    fn origin(&self) -> &Origin {
        &self.origin
    }

    fn list(&self) -> Result<Vec<Entry>> {
        Ok(self.archive.files().map(arcx_entry).collect())
    }

    fn open(&self, name: &str) -> Result<Box<dyn Read + Send + '_>> {
        Ok(Box::new(self.file_reader(name)?))
    }

    fn open_seekable(&self, name: &str) -> Result<Box<dyn crate::ReadSeek + '_>> {
        // Decompresses only the chunk a position lands in.
        Ok(Box::new(self.file_reader(name)?))
    }

    fn verify(&self) -> Result<()> {
        self.archive
            .verify()
            .map(|_| ())
            .in_file(self.origin.file())
    }

    fn prefetch(&self, names: &[&str]) {
        if self.origin.is_remote() {
            self.archive
                .prefetch(names.iter().filter_map(|name| self.archive.find(name)));
        }
    }

    fn extract_to(&self, dir: &Path, options: &ExtractOptions) -> Result<u64> {
        let arcx_options = binfmt_arcx::ExtractOptions::default().symlinks(options.symlinks);
        let summary = self
            .archive
            .extract_with_progress(dir, arcx_options, options.progress.unwrap_or(&|_, _| {}))
            .in_file(self.origin.file())?;
        Ok(summary.files + summary.directories + summary.symlinks)
    }
}

/// One file of an ARCX archive, opened by [`crate::OpenOptions::only`]: the only
/// entry listed, read and verified.
struct ArcxOne {
    one: binfmt_arcx::OneFile<Box<dyn Source>>,
    origin: Origin,
}

impl EntrySource for ArcxOne {
    fn format(&self) -> Format {
        Format::Arcx
    }

    fn origin(&self) -> &Origin {
        &self.origin
    }

    fn list(&self) -> Result<Vec<Entry>> {
        Ok(vec![arcx_entry(self.one.file())])
    }

    fn open(&self, name: &str) -> Result<Box<dyn Read + Send + '_>> {
        if self.one.file().path().is(name) {
            Ok(Box::new(self.one.reader()))
        } else {
            Err(Error::NotFound {
                file: self.origin.file().to_owned(),
                name: name.to_owned(),
            })
        }
    }

    /// Reads the entry: its blocks and its SHA-256.
    fn verify(&self) -> Result<()> {
        self.one.read().map(|_| ()).in_file(self.origin.file())
    }
}

/// An ARCX archive opened for listing ([`crate::OpenOptions::listing`]):
/// its entries are handed on as the manifest is walked
/// ([`binfmt_arcx::Listing`]), none kept, so `list` and `info` hold the
/// decompressed manifest and not its tables (`spec/limits.md`). Anything
/// else asked of it opens the whole archive first.
pub(crate) struct ArcxListing {
    listing: binfmt_arcx::Listing,
    source: Arc<dyn Source>,
    origin: Origin,
    options: binfmt_arcx::OpenOptions,
    full: OnceLock<ArcxEntries>,
}

impl ArcxListing {
    /// Reads and checks the manifest of the archive in `source`.
    fn open(
        source: Box<dyn Source>,
        origin: Origin,
        options: binfmt_arcx::OpenOptions,
    ) -> Result<Self> {
        let source: Arc<dyn Source> = Arc::from(source);
        let listing = binfmt_arcx::Listing::open(&source, options).in_file(origin.file())?;
        Ok(Self {
            listing,
            source,
            origin,
            options,
            full: OnceLock::new(),
        })
    }

    /// The whole archive, opened on first use.
    fn full(&self) -> Result<&ArcxEntries> {
        if let Some(full) = self.full.get() {
            return Ok(full);
        }
        let source: Box<dyn Source> = Box::new(Arc::clone(&self.source));
        let archive =
            binfmt_arcx::Archive::with_options(source, self.options).in_file(self.origin.file())?;
        let full = ArcxEntries {
            archive,
            origin: self.origin.clone(),
        };
        Ok(self.full.get_or_init(|| full))
    }
}

impl EntrySource for ArcxListing {
    fn format(&self) -> Format {
        Format::Arcx
    }

    fn origin(&self) -> &Origin {
        &self.origin
    }

    fn list(&self) -> Result<Vec<Entry>> {
        let mut entries = Vec::new();
        self.each_entry(&mut |entry| {
            entries.push(entry);
            Ok(())
        })?;
        Ok(entries)
    }

    fn each_entry(&self, visit: &mut dyn FnMut(Entry) -> std::io::Result<()>) -> Result<()> {
        let walked = self.listing.for_each(|file| {
            let entry = Entry {
                kind: kind_name(file.attributes.kind),
                ..Entry::new(file.path.to_string(), file.size)
            };
            visit(entry).map_err(|error| {
                Stop::Visit(Error::Core {
                    file: self.origin.file().to_owned(),
                    source: binfmt_core::Error::io(self.origin.file(), error),
                })
            })
        });
        match walked {
            Ok(()) => Ok(()),
            Err(Stop::Visit(error)) => Err(error),
            Err(Stop::Arcx(source)) => Err(Error::Arcx {
                file: self.origin.file().to_owned(),
                source,
            }),
        }
    }

    fn open(&self, name: &str) -> Result<Box<dyn Read + Send + '_>> {
        self.full()?.open(name)
    }

    fn verify(&self) -> Result<()> {
        self.full()?.verify()
    }

    fn inputs(&self) -> Vec<PathBuf> {
        vec![PathBuf::from(self.origin.file())]
    }

    fn prefetch(&self, names: &[&str]) {
        if let Ok(full) = self.full() {
            full.prefetch(names);
        }
    }

    fn extract_to(&self, dir: &Path, options: &ExtractOptions) -> Result<u64> {
        self.full()?.extract_to(dir, options)
    }
}

/// Why a listing stopped: the archive, or the caller's visitor.
enum Stop {
    Arcx(binfmt_arcx::ArcxError),
    Visit(Error),
}

impl From<binfmt_arcx::ArcxError> for Stop {
    fn from(error: binfmt_arcx::ArcxError) -> Self {
        Self::Arcx(error)
    }
}

/// Writes an archive in [`ConvertOptions::arcx_dialect`], each entry packed
/// as it is read.
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
        let mut packer = binfmt_arcx::Packer::new(
            out.create()?,
            binfmt_arcx::PackOptions::default().dialect(options.arcx_dialect),
        )
        .in_file(&file)?;
        let names = types.names(entries);
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
        let (destination, _) = packer.finish().in_file(&file)?;
        destination.commit().in_file(&file)?;
        Ok((
            vec![output.to_owned()],
            Written {
                entries: names.len() as u64 + u64::from(record.is_some()),
                extra_bytes: record.map_or(0, |r| r.len() as u64),
                taridx_keys: None,
            },
        ))
    }
}
