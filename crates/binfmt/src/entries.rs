//! One view of every format: named entries that can be listed, read as
//! streams, extracted and verified.
//!
//! | format | entries |
//! |---|---|
//! | TARIDX (+ its shards) | the fold's tar members, by full member name, read through the index |
//! | ARCX | files by path (empty directories and symlinks are listed with their kind; `extract` restores them) |
//! | KAST | keys; an entry's bytes are the array's little-endian bytes, its kind the element type |
//! | PAR4 | the entries of a root `HashMap<String, Vec<u8>>` (inline or bucketed); any other PAR4 file has no named entries |
//! | tar | not opened here: index it with `binfmt taridx index` first |
//!
//! Entries are read through [`EntrySource::open`], a `std::io::Read` that
//! yields bytes as they are decompressed or copied and checks the format's
//! checksum at the end, so reading, extracting and converting move entries
//! in bounded pieces whatever their size. Each format's source is in its
//! module of [`crate::formats`].

use std::cell::Cell;
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::{Error, InFile, Result};
use crate::origin::Origin;
use crate::sniff::Format;

/// One entry of a listing.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Entry {
    /// The entry's name (path, member name, key).
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
    /// What the format says the entry is, where it says anything: the
    /// kastore element type (`float64`, ...), or `directory` / `symlink`
    /// for ARCX entries that are not regular files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    /// The stored name is not UTF-8: `name` shows it with U+FFFD in place
    /// of the bad bytes, so it cannot be carried to another file unchanged.
    #[serde(skip_serializing_if = "is_false")]
    pub name_not_utf8: bool,
    /// Permission bits, where the format keeps them (ARCX).
    #[serde(skip)]
    pub mode: Option<u32>,
    /// Modification time in nanoseconds since the Unix epoch, where the
    /// format keeps it (ARCX).
    #[serde(skip)]
    pub mtime_ns: Option<i64>,
}

impl Entry {
    /// An entry called `name` of `size` bytes.
    pub fn new(name: impl Into<String>, size: u64) -> Self {
        Self {
            name: name.into(),
            size,
            kind: None,
            name_not_utf8: false,
            mode: None,
            mtime_ns: None,
        }
    }

    /// Whether the entry holds file bytes (not an ARCX directory or symlink).
    pub fn is_regular(&self) -> bool {
        !matches!(self.kind, Some("directory" | "symlink"))
    }
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// Refuses entries whose names cannot be carried to another file or a
/// directory unchanged: a stored name that is not UTF-8, a name that
/// appears twice (only one of the two could be kept, and reading by name
/// gives the first), or a name no extractor would write (absolute, `..`,
/// `.` or empty components, a trailing `/`, NUL, backslash).
pub(crate) fn check_names_carry(file: &str, entries: &[Entry]) -> Result<()> {
    let mut seen = std::collections::HashSet::with_capacity(entries.len());
    for entry in entries {
        if let Err(why) = binfmt_core::extract::check_relative_name(&entry.name) {
            return Err(Error::CannotHold {
                file: file.to_owned(),
                name: entry.name.clone(),
                why: format!("{why}: no extractor would write it, so no target takes it"),
            });
        }
        if entry.name_not_utf8 {
            return Err(Error::CannotHold {
                file: file.to_owned(),
                name: entry.name.clone(),
                why: "its stored name is not UTF-8, and writing it elsewhere would change it"
                    .into(),
            });
        }
        if !seen.insert(entry.name.as_str()) {
            return Err(Error::CannotHold {
                file: file.to_owned(),
                name: entry.name.clone(),
                why: "appears twice, and only one could be written".into(),
            });
        }
    }
    Ok(())
}

/// A file of any supported format, seen as named entries. Sources and their
/// entry streams can move between threads (the Python package reads them
/// with the interpreter lock released).
pub trait EntrySource: Send + Sync {
    /// The file's format.
    fn format(&self) -> Format;
    /// Where the file's bytes come from.
    fn origin(&self) -> &Origin;
    /// What the file is called in messages: its path or URL.
    fn file(&self) -> &str {
        self.origin().file()
    }
    /// Every entry, in the file's order.
    fn list(&self) -> Result<Vec<Entry>>;
    /// Every entry, for a caller that reads them all next (extraction,
    /// conversion): a remote TARIDX fold whose members fit the memory
    /// cache fetches them whole as it lists them (a few large requests),
    /// so reading them makes no request, and a larger one lists headers
    /// only, as [`EntrySource::list`] does; a remote PAR4 file that fits
    /// half the memory cache is fetched whole first. The other formats
    /// list as `list` does.
    fn list_to_read(&self) -> Result<Vec<Entry>> {
        self.list()
    }
    /// Hands every entry to `visit`, in the file's order, stopping at the
    /// first error `visit` returns (reported as an I/O error of the file).
    /// A source opened with [`crate::OpenOptions::listing`] hands them on as it
    /// reads them and holds none (an ARCX archive: `spec/limits.md`); the
    /// others list them first.
    fn each_entry(&self, visit: &mut dyn FnMut(Entry) -> std::io::Result<()>) -> Result<()> {
        for entry in self.list()? {
            visit(entry)
                .map_err(|error| binfmt_core::Error::io(self.file(), error))
                .in_file(self.file())?;
        }
        Ok(())
    }
    /// How many entries there are and their bytes (`None` when the sizes
    /// add up past 2^64), when the file says so without its entries being
    /// read: a TARIDX index, one row per member with its size, so `info`
    /// reads the index alone and no shard. `None` for the other formats,
    /// whose entries are counted from their listing.
    fn totals(&self) -> Option<(usize, Option<u64>)> {
        None
    }
    /// The entry called `name`, as a stream; the format's checks of its
    /// bytes run as it is read, the last one when it ends.
    fn open(&self, name: &str) -> Result<Box<dyn Read + Send + '_>>;
    /// The entry called `name`, readable from any offset: a seek reads only
    /// what the new position needs where the format allows (every format's
    /// main reader: a TARIDX member and a kastore array are byte ranges, a
    /// PAR4 value streams from its offset, an ARCX file decompresses only
    /// the chunk a position lands in), else reads forward to it
    /// ([`crate::seekable::Reopening`]). Reads after a seek run the
    /// format's piece-wise checks (ARCX block CRC32s), not its whole-entry
    /// ones (an ARCX file's SHA-256 needs every byte in order).
    fn open_seekable(&self, name: &str) -> Result<Box<dyn crate::ReadSeek + '_>> {
        let name = name.to_owned();
        Ok(Box::new(crate::seekable::Reopening::new(
            move || self.open(&name),
            None,
        )?))
    }
    /// Checks everything the format can check.
    fn verify(&self) -> Result<()>;

    /// Every file the source reads (a fold: its index and each shard), so
    /// that no output is written over one of them. Remote locations never
    /// match a local file.
    fn inputs(&self) -> Vec<PathBuf> {
        vec![PathBuf::from(self.file())]
    }

    /// What reading has cost so far, when the file is remote (requests,
    /// bytes received); `None` for a local file.
    fn stats(&self) -> Option<binfmt_remote::Stats> {
        self.origin().stats()
    }

    /// Announces that the entries called `names` will be read next: a
    /// remote file fetches their bytes together, in merged requests
    /// several at a time, so reading many entries is limited by bandwidth
    /// rather than by one round trip each. Names not found are ignored
    /// (reading them reports it). Does nothing for a local file.
    fn prefetch(&self, names: &[&str]) {
        let _ = names;
    }

    /// The bytes of the entry called `name`.
    fn read(&self, name: &str) -> Result<Vec<u8>> {
        let mut bytes = Vec::new();
        self.open(name)?
            .read_to_end(&mut bytes)
            .in_file(self.file())
            .map_err(|error| error.in_entry(name))?;
        Ok(bytes)
    }

    /// Extracts every entry under `dir`; formats with more than bytes to
    /// restore (ARCX modes, times, directories, symlinks) override it.
    fn extract_to(&self, dir: &Path, options: &ExtractOptions) -> Result<u64> {
        extract_entries(self, dir, options)
    }
}

/// How [`extract`] writes.
#[derive(Default)]
#[non_exhaustive]
pub struct ExtractOptions<'a> {
    /// Recreate symlinks stored in an ARCX archive (targets inside the
    /// directory only); without this they are skipped.
    pub symlinks: bool,
    /// Called with (entries written, entries in all) after each entry,
    /// from whichever thread wrote it.
    pub progress: Option<&'a (dyn Fn(u64, u64) + Sync)>,
}

impl std::fmt::Debug for ExtractOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExtractOptions")
            .field("symlinks", &self.symlinks)
            .finish()
    }
}

impl<'a> ExtractOptions<'a> {
    /// These options, recreating symlinks or not.
    pub fn symlinks(mut self, symlinks: bool) -> Self {
        self.symlinks = symlinks;
        self
    }

    /// These options, reporting progress to `progress`.
    pub fn progress(mut self, progress: &'a (dyn Fn(u64, u64) + Sync)) -> Self {
        self.progress = Some(progress);
        self
    }
}

/// Writes every entry of `source` to a file under `dir` named by the
/// entry, streaming each one, and returns how many were written.
///
/// Names go through [`binfmt_core::extract::safe_target`]: one that would
/// land outside `dir` (absolute, `..`, empty components) is refused, and no
/// directory on the way is followed through a symlink. Each file is written
/// atomically, so a failure leaves no partial file. Names that are not
/// UTF-8 or that repeat are refused before anything is written.
pub fn extract(
    source: &dyn EntrySource,
    dir: impl AsRef<Path>,
    options: &ExtractOptions,
) -> Result<u64> {
    let dir = dir.as_ref();
    binfmt_core::extract::create_dir(dir).in_file(&dir.display().to_string())?;
    source.extract_to(dir, options)
}

fn extract_entries<S: EntrySource + ?Sized>(
    source: &S,
    dir: &Path,
    options: &ExtractOptions,
) -> Result<u64> {
    let file = source.file();
    let entries = source.list_to_read()?;
    check_names_carry(file, &entries)?;
    let inputs = binfmt_core::atomic::Inputs::new(&source.inputs());
    let ahead = Prefetch::new(source, &entries);
    for (written, entry) in (1..).zip(&entries) {
        ahead.before(&entry.name);
        let target = binfmt_core::extract::safe_target(dir, &entry.name).in_file(file)?;
        if let Some(input) = inputs.named_by(&target) {
            return Err(Error::CannotHold {
                file: file.to_owned(),
                name: entry.name.clone(),
                why: format!(
                    "would be written over {}, which is being read",
                    input.display()
                ),
            });
        }
        let mut out = binfmt_core::AtomicFile::create(&target).in_file(file)?;
        std::io::copy(&mut source.open(&entry.name)?, &mut out)
            .in_file(file)
            .map_err(|error| error.in_entry(&entry.name))?;
        out.commit().in_file(file)?;
        if let Some(progress) = options.progress {
            progress(written, entries.len() as u64);
        }
    }
    Ok(entries.len() as u64)
}

/// Reading a remote file's entries in a known order, announces them a
/// window at a time ([`EntrySource::prefetch`]): at most
/// [`Prefetch::WINDOW_BYTES`] or [`Prefetch::WINDOW_ENTRIES`] ahead, so the
/// source's memory cache keeps what was fetched until it is read.
pub(crate) struct Prefetch<'a, S: EntrySource + ?Sized = dyn EntrySource + 'a> {
    source: &'a S,
    entries: &'a [Entry],
    /// Where each name is in `entries`; empty for a local file.
    position: HashMap<&'a str, usize>,
    /// The entries announced last: `(start, end)`.
    window: Cell<(usize, usize)>,
}

impl<'a, S: EntrySource + ?Sized> Prefetch<'a, S> {
    const WINDOW_BYTES: u64 = 16 << 20;
    const WINDOW_ENTRIES: usize = 1024;

    /// Windows over `entries`, when `source` is remote.
    pub(crate) fn new(source: &'a S, entries: &'a [Entry]) -> Self {
        let position = if source.stats().is_some() {
            entries
                .iter()
                .enumerate()
                .map(|(i, entry)| (entry.name.as_str(), i))
                .collect()
        } else {
            HashMap::new()
        };
        Self {
            source,
            entries,
            position,
            window: Cell::new((0, 0)),
        }
    }

    /// Called before the entry `name` is read: announces the window
    /// starting at it unless it is in the last one.
    pub(crate) fn before(&self, name: &str) {
        let Some(&start) = self.position.get(name) else {
            return;
        };
        let (from, to) = self.window.get();
        if (from..to).contains(&start) {
            return;
        }
        let mut bytes = 0u64;
        let names: Vec<&str> = self
            .entries
            .iter()
            .skip(start)
            .take(Self::WINDOW_ENTRIES)
            .take_while(|entry| {
                let first = bytes == 0;
                bytes = bytes.saturating_add(entry.size);
                first || bytes <= Self::WINDOW_BYTES
            })
            .map(|entry| entry.name.as_str())
            .collect();
        self.source.prefetch(&names);
        self.window.set((start, start + names.len()));
    }
}
