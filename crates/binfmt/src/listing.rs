//! An ARCX archive opened for listing ([`crate::OpenOptions::listing`]):
//! its entries are handed on as the manifest is walked
//! ([`binfmt_arcx::Listing`]), none kept, so `list` and `info` hold the
//! decompressed manifest and not its tables (`spec/limits.md`). Anything
//! else asked of it opens the whole archive first.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use binfmt_core::Source;

use crate::entries::{ArcxEntries, Entry, EntrySource, ExtractOptions};
use crate::error::{Error, InFile, Result};
use crate::sniff::Format;

/// See the module documentation.
pub(crate) struct ArcxListing {
    listing: binfmt_arcx::Listing,
    source: Arc<dyn Source>,
    file: String,
    remote: Option<Arc<binfmt_remote::RemoteSource>>,
    options: binfmt_arcx::OpenOptions,
    full: OnceLock<ArcxEntries>,
}

/// `directory` or `symlink` for entries that are not regular files.
fn kind_name(kind: binfmt_arcx::FileKind) -> Option<&'static str> {
    match kind {
        binfmt_arcx::FileKind::Directory => Some("directory"),
        binfmt_arcx::FileKind::Symlink => Some("symlink"),
        _ => None,
    }
}

impl ArcxListing {
    /// Reads and checks the manifest of the archive in `source`.
    pub(crate) fn open(
        source: Box<dyn Source>,
        file: String,
        remote: Option<Arc<binfmt_remote::RemoteSource>>,
        options: binfmt_arcx::OpenOptions,
    ) -> Result<Self> {
        let source: Arc<dyn Source> = Arc::from(source);
        let listing = binfmt_arcx::Listing::open(&source, options).in_file(&file)?;
        Ok(Self {
            listing,
            source,
            file,
            remote,
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
            binfmt_arcx::Archive::with_options(source, self.options).in_file(&self.file)?;
        let full = ArcxEntries {
            archive,
            file: self.file.clone(),
            remote: self.remote.clone(),
        };
        Ok(self.full.get_or_init(|| full))
    }
}

impl EntrySource for ArcxListing {
    fn format(&self) -> Format {
        Format::Arcx
    }

    fn file(&self) -> &str {
        &self.file
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
                    file: self.file.clone(),
                    source: binfmt_core::Error::io(&self.file, error),
                })
            })
        });
        match walked {
            Ok(()) => Ok(()),
            Err(Stop::Visit(error)) => Err(error),
            Err(Stop::Arcx(source)) => Err(Error::Arcx {
                file: self.file.clone(),
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
        vec![PathBuf::from(&self.file)]
    }

    fn stats(&self) -> Option<binfmt_remote::Stats> {
        self.remote.as_ref().map(|remote| remote.stats())
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
