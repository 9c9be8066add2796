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
//! in bounded pieces whatever their size.

use std::cell::Cell;
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use binfmt_core::{FileSource, Source};

use crate::error::{Error, InFile, Result};
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
}

impl Entry {
    /// An entry called `name` of `size` bytes.
    pub fn new(name: impl Into<String>, size: u64) -> Self {
        Self {
            name: name.into(),
            size,
            kind: None,
            name_not_utf8: false,
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
    /// What the file is called in messages: its path or URL.
    fn file(&self) -> &str;
    /// Every entry, in the file's order.
    fn list(&self) -> Result<Vec<Entry>>;
    /// Hands every entry to `visit`, in the file's order, stopping at the
    /// first error `visit` returns (reported as an I/O error of the file).
    /// A source opened with [`OpenOptions::listing`] hands them on as it
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
    /// The entry called `name`, as a stream; the format's checks of its
    /// bytes run as it is read, the last one when it ends.
    fn open(&self, name: &str) -> Result<Box<dyn Read + Send + '_>>;
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
        None
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

/// How [`open_with`] reaches files.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct OpenOptions {
    /// For `http://`, `https://` and `s3://` locations: caches, retries,
    /// S3 settings (`spec/remote.md`).
    pub remote: binfmt_remote::RemoteOptions,
    /// The one entry the caller will read, when it reads one: an ARCX
    /// archive then finds it without decoding the rest of its manifest
    /// ([`binfmt_arcx::Archive::open_one`]), fails to open when it is not
    /// there, and lists, reads and verifies that entry alone.
    pub only: Option<String>,
    /// The caller only lists or counts the entries
    /// ([`EntrySource::each_entry`]): an ARCX archive then walks its
    /// manifest without building its tables
    /// ([`binfmt_arcx::Listing`]), opening the whole archive only if
    /// something else is asked of it.
    pub listing: bool,
}

impl OpenOptions {
    /// These options for reading the entry called `name` alone.
    pub fn only(mut self, name: impl Into<String>) -> Self {
        self.only = Some(name.into());
        self
    }

    /// These options for listing or counting the entries alone.
    pub fn listing(mut self) -> Self {
        self.listing = true;
        self
    }

    /// These options reaching remote locations with `remote`.
    pub fn remote(mut self, remote: binfmt_remote::RemoteOptions) -> Self {
        self.remote = remote;
        self
    }
}

/// A file's bytes, local or remote, ready for a format's reader.
#[derive(Debug)]
pub struct Opened {
    /// What the location is called in messages: its path or URL.
    pub file: String,
    /// The bytes: a local file read by offset, or a remote object.
    pub source: Box<dyn Source>,
    /// The remote object, for its request counters and its siblings.
    pub remote: Option<Arc<binfmt_remote::RemoteSource>>,
}

impl Opened {
    /// What reading the location has cost so far, when it is remote.
    pub fn stats(&self) -> Option<binfmt_remote::Stats> {
        self.remote.as_ref().map(|remote| remote.stats())
    }
}

/// Whether `location` is a URL binfmt reads remotely (`http://`,
/// `https://`, `s3://`).
pub fn is_remote(location: impl AsRef<Path>) -> bool {
    location
        .as_ref()
        .to_str()
        .is_some_and(binfmt_remote::is_remote)
}

/// Opens the bytes at `location`: a local regular file (read by offset,
/// never mapped, so a file truncated underneath fails a read with an error
/// instead of ending the process with SIGBUS), or an `http://`, `https://`
/// or `s3://` URL read by range requests.
pub fn open_source(location: impl AsRef<Path>, options: &OpenOptions) -> Result<Opened> {
    let location = location.as_ref();
    let file = location.display().to_string();
    if let Some(url) = location.to_str().filter(|s| binfmt_remote::is_remote(s)) {
        let remote = Arc::new(
            binfmt_remote::RemoteSource::open(url, &options.remote)
                .map_err(binfmt_core::Error::from)
                .in_file(&file)?,
        );
        return Ok(Opened {
            file,
            source: Box::new(Arc::clone(&remote)),
            remote: Some(remote),
        });
    }
    Ok(Opened {
        source: Box::new(FileSource::open(location).in_file(&file)?),
        file,
        remote: None,
    })
}

/// Opens `location` (a path or a URL, see [`open_with`]) as named entries,
/// whatever its format, with default options.
///
/// # Examples
///
/// ```
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("a.txt"), b"alpha")?;
/// let archive = dir.path().join("a.arcx");
/// binfmt_arcx::pack_dir(dir.path(), &archive, Default::default(), |_| {})?;
///
/// let source = binfmt::open(&archive)?;
/// let names: Vec<String> = source.list()?.into_iter().map(|e| e.name).collect();
/// assert_eq!(names, ["a.txt"]);
/// let mut text = String::new();
/// std::io::Read::read_to_string(&mut source.open("a.txt")?, &mut text)?;
/// assert_eq!(text, "alpha");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn open(location: impl AsRef<Path>) -> Result<Box<dyn EntrySource>> {
    open_with(location, &OpenOptions::default())
}

/// Opens `location` as named entries, whatever its format. A local file is
/// read by offset (never mapped), so
/// streaming an entry keeps memory bounded; a URL is read by range requests, fetching only what each
/// operation needs (`spec/remote.md`): the format is told from the object's
/// last bytes when they say it (ARCX, PAR4), and a TARIDX index finds its
/// shards beside it by the fold convention.
pub fn open_with(
    location: impl AsRef<Path>,
    options: &OpenOptions,
) -> Result<Box<dyn EntrySource>> {
    let opened = open_source(location.as_ref(), options)?;
    let file = opened.file.clone();
    let format = if opened.remote.is_some() {
        crate::sniff::sniff_tail_first(&*opened.source)
    } else {
        crate::sniff::sniff_source(&*opened.source)
    }
    .in_file(&file)?;
    let Opened { source, remote, .. } = opened;
    match format {
        Format::Arcx => {
            // Reading needs the footer and the manifest only; a remote
            // archive leaves the header to `verify`, saving a request.
            let arcx_options = binfmt_arcx::OpenOptions::default().check_header(remote.is_none());
            if let Some(name) = &options.only {
                let one = binfmt_arcx::Archive::open_one(source, name, arcx_options).map_err(
                    |error| match error {
                        binfmt_arcx::ArcxError::NotFound { .. } => Error::NotFound {
                            file: file.clone(),
                            name: name.clone(),
                        },
                        other => Error::Arcx {
                            file: file.clone(),
                            source: other,
                        },
                    },
                )?;
                return Ok(Box::new(ArcxOne { one, file, remote }));
            }
            if options.listing {
                return Ok(Box::new(crate::listing::ArcxListing::open(
                    source,
                    file,
                    remote,
                    arcx_options,
                )?));
            }
            Ok(Box::new(ArcxEntries {
                archive: binfmt_arcx::Archive::with_options(source, arcx_options).in_file(&file)?,
                file,
                remote,
            }))
        }
        Format::Kast => Ok(Box::new(KastEntries {
            store: binfmt_kastore::Store::new(source).in_file(&file)?,
            file,
            remote,
        })),
        Format::Par4 => Ok(Box::new(Par4Entries::open(source, file, remote)?)),
        Format::Taridx => Ok(Box::new(FoldEntries::open(
            location.as_ref(),
            source,
            file,
            remote,
        )?)),
        Format::Tar => Err(Error::Unsupported {
            file,
            why: "a tar file: index it with `binfmt taridx index` to read it as entries".into(),
        }),
        Format::Unknown => Err(Error::Unsupported {
            file,
            why: "not a format binfmt reads".into(),
        }),
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
    std::fs::create_dir_all(dir)
        .map_err(|error| binfmt_core::Error::io(dir, error))
        .in_file(&dir.display().to_string())?;
    source.extract_to(dir, options)
}

fn extract_entries<S: EntrySource + ?Sized>(
    source: &S,
    dir: &Path,
    options: &ExtractOptions,
) -> Result<u64> {
    let file = source.file();
    let entries = source.list()?;
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

/// The entry of an ARCX file, directories and symlinks listed by kind.
pub(crate) fn arcx_entry(file: binfmt_arcx::FileEntry<'_>) -> Entry {
    Entry {
        kind: match file.attributes().kind {
            binfmt_arcx::FileKind::Directory => Some("directory"),
            binfmt_arcx::FileKind::Symlink => Some("symlink"),
            _ => None,
        },
        ..Entry::new(file.path().to_string(), file.size())
    }
}

/// An ARCX archive: its files, with directories and symlinks listed by kind.
pub(crate) struct ArcxEntries {
    pub(crate) archive: binfmt_arcx::Archive<Box<dyn Source>>,
    pub(crate) file: String,
    pub(crate) remote: Option<Arc<binfmt_remote::RemoteSource>>,
}

impl EntrySource for ArcxEntries {
    fn format(&self) -> Format {
        Format::Arcx
    }

    fn file(&self) -> &str {
        &self.file
    }

    fn list(&self) -> Result<Vec<Entry>> {
        Ok(self.archive.files().map(arcx_entry).collect())
    }

    fn open(&self, name: &str) -> Result<Box<dyn Read + Send + '_>> {
        match self.archive.find(name) {
            Some(file) => Ok(Box::new(self.archive.reader_for(file))),
            None => Err(Error::NotFound {
                file: self.file.clone(),
                name: name.to_owned(),
            }),
        }
    }

    fn verify(&self) -> Result<()> {
        self.archive.verify().map(|_| ()).in_file(&self.file)
    }

    fn prefetch(&self, names: &[&str]) {
        if self.remote.is_some() {
            self.archive
                .prefetch(names.iter().filter_map(|name| self.archive.find(name)));
        }
    }

    fn stats(&self) -> Option<binfmt_remote::Stats> {
        self.remote.as_ref().map(|remote| remote.stats())
    }

    fn extract_to(&self, dir: &Path, options: &ExtractOptions) -> Result<u64> {
        let arcx_options = binfmt_arcx::ExtractOptions::default().symlinks(options.symlinks);
        let summary = self
            .archive
            .extract_with_progress(dir, arcx_options, options.progress.unwrap_or(&|_, _| {}))
            .in_file(&self.file)?;
        Ok(summary.files + summary.directories + summary.symlinks)
    }
}

/// One file of an ARCX archive, opened by [`OpenOptions::only`]: the only
/// entry listed, read and verified.
struct ArcxOne {
    one: binfmt_arcx::OneFile<Box<dyn Source>>,
    file: String,
    remote: Option<Arc<binfmt_remote::RemoteSource>>,
}

impl EntrySource for ArcxOne {
    fn format(&self) -> Format {
        Format::Arcx
    }

    fn file(&self) -> &str {
        &self.file
    }

    fn list(&self) -> Result<Vec<Entry>> {
        Ok(vec![arcx_entry(self.one.file())])
    }

    fn open(&self, name: &str) -> Result<Box<dyn Read + Send + '_>> {
        if self.one.file().path().is(name) {
            Ok(Box::new(self.one.reader()))
        } else {
            Err(Error::NotFound {
                file: self.file.clone(),
                name: name.to_owned(),
            })
        }
    }

    /// Reads the entry: its blocks and its SHA-256.
    fn verify(&self) -> Result<()> {
        self.one.read().map(|_| ()).in_file(&self.file)
    }

    fn stats(&self) -> Option<binfmt_remote::Stats> {
        self.remote.as_ref().map(|remote| remote.stats())
    }
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
        file: name.to_owned(),
        remote: None,
    }))
}

/// A kastore file: its keys, each array's bytes as stored.
struct KastEntries<S = Box<dyn Source>> {
    store: binfmt_kastore::Store<S>,
    file: String,
    remote: Option<Arc<binfmt_remote::RemoteSource>>,
}

impl<S: binfmt_core::Source> KastEntries<S> {
    fn item(&self, name: &str) -> Result<binfmt_kastore::Item<'_>> {
        self.store.find(name).ok_or_else(|| Error::NotFound {
            file: self.file.clone(),
            name: name.to_owned(),
        })
    }
}

impl<S: binfmt_core::Source> EntrySource for KastEntries<S> {
    fn format(&self) -> Format {
        Format::Kast
    }

    fn file(&self) -> &str {
        &self.file
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
        Ok(Box::new(self.item(name)?.reader().in_file(&self.file)?))
    }

    fn verify(&self) -> Result<()> {
        // Opening checked every descriptor against the file's size: every
        // array's bytes are there.
        Ok(())
    }

    fn prefetch(&self, names: &[&str]) {
        if self.remote.is_some() {
            let ranges: Vec<std::ops::Range<u64>> = names
                .iter()
                .filter_map(|name| self.store.find(name))
                .map(|item| item.offset()..item.offset().saturating_add(item.byte_len()))
                .collect();
            self.store.source().will_read(&ranges);
        }
    }

    fn stats(&self) -> Option<binfmt_remote::Stats> {
        self.remote.as_ref().map(|remote| remote.stats())
    }
}

/// A PAR4 file whose root is a `HashMap<String, Vec<u8>>`, read through
/// its source: opening reads the global header and the root's trailer,
/// a listing each bucket's tables and each entry's key and length prefix,
/// a value only its bucket's tables and its own bytes (streamed).
struct Par4Entries {
    parfile: binfmt_parcode::ParFile<Box<dyn Source>>,
    file: String,
    remote: Option<Arc<binfmt_remote::RemoteSource>>,
}

impl Par4Entries {
    fn open(
        source: Box<dyn Source>,
        file: String,
        remote: Option<Arc<binfmt_remote::RemoteSource>>,
    ) -> Result<Self> {
        let parfile = binfmt_parcode::ParFile::new(source).in_file(&file)?;
        Ok(Self {
            parfile,
            file,
            remote,
        })
    }

    fn no_entries(&self, error: &binfmt_parcode::ParError) -> Error {
        Error::Unsupported {
            file: self.file.clone(),
            why: format!(
                "the root is not a HashMap<String, Vec<u8>>, so the file has no named entries ({error}); `binfmt par4 inspect` shows its chunk tree"
            ),
        }
    }

    /// The root as a map (reads nothing: the root was read at open).
    fn map(&self) -> Result<binfmt_parcode::LazyMap<'_, String, Vec<u8>>> {
        let root = self.parfile.root().in_file(&self.file)?;
        binfmt_parcode::LazyMap::new(root).map_err(|error| self.no_entries(&error))
    }
}

impl EntrySource for Par4Entries {
    fn format(&self) -> Format {
        Format::Par4
    }

    fn file(&self) -> &str {
        &self.file
    }

    fn list(&self) -> Result<Vec<Entry>> {
        let mut entries: Vec<Entry> = self
            .map()?
            .value_lens()
            .in_file(&self.file)?
            .into_iter()
            .map(|(name, size)| Entry::new(name, size))
            .collect();
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }

    fn open(&self, name: &str) -> Result<Box<dyn Read + Send + '_>> {
        match self.map()?.reader(name).in_file(&self.file)? {
            Some(reader) => Ok(Box::new(reader)),
            None => Err(Error::NotFound {
                file: self.file.clone(),
                name: name.to_owned(),
            }),
        }
    }

    fn verify(&self) -> Result<()> {
        self.parfile.verify().in_file(&self.file)?;
        self.parfile.verify_entries().in_file(&self.file)
    }

    fn prefetch(&self, names: &[&str]) {
        if self.remote.is_some()
            && let Ok(map) = self.map()
        {
            map.prefetch(names.iter().copied());
        }
    }

    fn stats(&self) -> Option<binfmt_remote::Stats> {
        self.remote.as_ref().map(|remote| remote.stats())
    }
}

/// A TARIDX index with its fold's shards beside it, its rows named by the
/// tar members' full names. Opening reads the index only; shards are opened
/// as rows need them, a bounded number at a time, and every member's tar
/// header is checked against its row before its bytes are read.
struct FoldEntries {
    dataset: binfmt_taridx::Dataset<Box<dyn Source>>,
    file: String,
    remote: Option<Arc<binfmt_remote::RemoteSource>>,
}

/// Opens the TARIDX index at `location` (a path or an `http://`,
/// `https://` or `s3://` URL) with its fold's shards beside it: the
/// `FOLD_*.tar` files in its directory; for a URL, the objects under the
/// same prefix (S3 lists them) or, where the server cannot list (plain
/// HTTP), `FOLD_0000.tar`, `FOLD_0001.tar`, ... as many as the rows point
/// into. Opening reads the index only; each shard is opened when a row
/// first needs it.
///
/// # Examples
///
/// ```no_run
/// let dataset = binfmt::open_dataset("https://example.org/data/train.taridx", &Default::default())?;
/// let rows = dataset.lookup("000123");
/// dataset.prefetch(&rows); // one request for the sample's members
/// for row in &rows {
///     let mut member = dataset.member(row)?;
///     std::io::copy(&mut member, &mut std::io::sink())?;
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn open_dataset(
    location: impl AsRef<Path>,
    options: &OpenOptions,
) -> Result<binfmt_taridx::Dataset<Box<dyn Source>>> {
    let opened = open_source(location.as_ref(), options)?;
    let file = opened.file.clone();
    fold_dataset(
        location.as_ref(),
        opened.source,
        &file,
        opened.remote.as_ref(),
    )
}

/// The dataset of the index at `location`, read through `source`.
fn fold_dataset(
    location: &Path,
    source: Box<dyn Source>,
    file: &str,
    remote: Option<&Arc<binfmt_remote::RemoteSource>>,
) -> Result<binfmt_taridx::Dataset<Box<dyn Source>>> {
    let fold = fold_of(location).ok_or_else(|| Error::Unsupported {
        file: file.to_owned(),
        why: "the index file name has no fold name (FOLD.taridx)".into(),
    })?;
    let index = binfmt_taridx::Index::new(source).in_file(file)?;
    let options = binfmt_taridx::DatasetOptions::default();
    match remote {
        None => {
            let root = location
                .parent()
                .filter(|parent| !parent.as_os_str().is_empty())
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
            let shards = binfmt_taridx::fold_shards(&root, &fold).in_file(file)?;
            binfmt_taridx::Dataset::new(index, binfmt_taridx::ShardFiles::new(shards), options)
        }
        Some(remote) => {
            let shards = RemoteShards::of(remote, &fold, &index).in_file(file)?;
            binfmt_taridx::Dataset::new(index, shards, options)
        }
    }
    .in_file(file)
}

impl FoldEntries {
    fn open(
        location: &Path,
        source: Box<dyn Source>,
        file: String,
        remote: Option<Arc<binfmt_remote::RemoteSource>>,
    ) -> Result<Self> {
        Ok(Self {
            dataset: fold_dataset(location, source, &file, remote.as_ref())?,
            file,
            remote,
        })
    }
}

/// The fold a `FOLD.taridx` location names.
fn fold_of(location: &Path) -> Option<String> {
    let name = location.to_str()?.rsplit('/').next()?;
    let fold = name.strip_suffix(".taridx")?;
    (!fold.is_empty()).then(|| fold.to_owned())
}

/// A remote fold's shards: siblings of its index, opened on first use.
#[derive(Debug)]
struct RemoteShards {
    index: Arc<binfmt_remote::RemoteSource>,
    names: Vec<String>,
    /// Where a shard past the rows' would be, when the directory could not
    /// be listed (plain HTTP): probed by coverage.
    next: Option<String>,
}

impl RemoteShards {
    fn of(
        index: &Arc<binfmt_remote::RemoteSource>,
        fold: &str,
        rows: &binfmt_taridx::Index<Box<dyn Source>>,
    ) -> binfmt_taridx::Result<Self> {
        let (names, next) = match index.list_siblings() {
            Ok(listed) => (
                binfmt_taridx::fold_shard_names(fold, listed.iter().map(|item| item.name.as_str())),
                None,
            ),
            Err(binfmt_remote::RemoteError::Unsupported { .. }) => {
                let count = rows.shard_count()?;
                let names = (0..count)
                    .map(|fid| format!("{fold}_{fid:04}.tar"))
                    .collect();
                (names, Some(format!("{fold}_{count:04}.tar")))
            }
            Err(error) => return Err(binfmt_core::Error::from(error).into()),
        };
        Ok(Self {
            index: Arc::clone(index),
            names,
            next,
        })
    }
}

impl binfmt_taridx::ShardSet for RemoteShards {
    fn count(&self) -> usize {
        self.names.len()
    }

    fn name(&self, fid: u16) -> PathBuf {
        let name = self.names.get(usize::from(fid)).map_or("?", String::as_str);
        let dir = self.index.url().rsplit_once('/').map_or("", |(dir, _)| dir);
        PathBuf::from(format!("{dir}/{name}"))
    }

    fn open(&self, fid: u16) -> binfmt_taridx::Result<Arc<dyn Source>> {
        let name = self.names.get(usize::from(fid)).ok_or_else(|| {
            binfmt_taridx::TaridxError::from(binfmt_core::Error::corrupt(
                "fold",
                format!("no shard {fid}"),
            ))
        })?;
        let shard = self.index.sibling(name).map_err(binfmt_core::Error::from)?;
        Ok(Arc::new(shard))
    }

    fn unlisted(&self) -> binfmt_taridx::Result<Option<(PathBuf, Arc<dyn Source>)>> {
        let Some(name) = &self.next else {
            return Ok(None);
        };
        match self.index.sibling(name) {
            Ok(shard) => {
                let url = shard.url().to_owned();
                Ok(Some((PathBuf::from(url), Arc::new(shard))))
            }
            Err(binfmt_remote::RemoteError::NotFound { .. }) => Ok(None),
            Err(error) => Err(binfmt_core::Error::from(error).into()),
        }
    }
}

impl EntrySource for FoldEntries {
    fn format(&self) -> Format {
        Format::Taridx
    }

    fn file(&self) -> &str {
        &self.file
    }

    fn inputs(&self) -> Vec<PathBuf> {
        let shards = self.dataset.shards().set();
        std::iter::once(PathBuf::from(&self.file))
            .chain(
                (0..shards.count()).filter_map(|fid| Some(shards.name(u16::try_from(fid).ok()?))),
            )
            .collect()
    }

    fn list(&self) -> Result<Vec<Entry>> {
        // Full member names (GNU long names and pax paths included) come
        // from each row's tar header, checked against the row; a remote
        // fold's headers are announced a window of rows at a time.
        const WINDOW: usize = 1024;
        // The whole fold: a member without a row would be left out silently.
        self.dataset.check_coverage().in_file(&self.file)?;
        let rows = self.dataset.rows();
        rows.iter()
            .enumerate()
            .map(|(i, row)| {
                if self.remote.is_some() && i % WINDOW == 0 {
                    let window = rows.get(i..).unwrap_or_default();
                    self.dataset
                        .prefetch_headers(window.get(..WINDOW).unwrap_or(window));
                }
                let member = self.dataset.member_info(row).in_file(&self.file)?;
                Ok(Entry {
                    name_not_utf8: member.name_not_utf8,
                    ..Entry::new(member.name, member.size)
                })
            })
            .collect()
    }

    fn open(&self, name: &str) -> Result<Box<dyn Read + Send + '_>> {
        let row = self
            .dataset
            .find(name)
            .in_file(&self.file)?
            .ok_or_else(|| Error::NotFound {
                file: self.file.clone(),
                name: name.to_owned(),
            })?;
        Ok(Box::new(self.dataset.member(&row).in_file(&self.file)?))
    }

    fn verify(&self) -> Result<()> {
        self.dataset.verify().map(|_| ()).in_file(&self.file)
    }

    fn prefetch(&self, names: &[&str]) {
        if self.remote.is_some() {
            // Unchecked candidates: reading their headers to pick one would
            // cost a request per name before the one merged fetch.
            let rows: Vec<binfmt_taridx::Row> = names
                .iter()
                .flat_map(|name| self.dataset.candidates(name))
                .collect();
            self.dataset.prefetch(&rows);
        }
    }

    fn stats(&self) -> Option<binfmt_remote::Stats> {
        self.remote.as_ref().map(|remote| remote.stats())
    }
}
