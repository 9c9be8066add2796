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

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use binfmt_core::{ByteSource, FileSource};

use crate::error::{Error, InFile, Result};
use crate::sniff::{Format, sniff};

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
    /// The entry called `name`, as a stream; the format's checks of its
    /// bytes run as it is read, the last one when it ends.
    fn open(&self, name: &str) -> Result<Box<dyn Read + Send + '_>>;
    /// Checks everything the format can check.
    fn verify(&self) -> Result<()>;

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

/// Opens `path` as named entries, whatever its format. Files are read by
/// offset, never mapped, so streaming an entry keeps memory bounded.
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
pub fn open(path: impl AsRef<Path>) -> Result<Box<dyn EntrySource>> {
    let path = path.as_ref();
    let file = path.display().to_string();
    match sniff(path).in_file(&file)? {
        Format::Arcx => Ok(Box::new(ArcxEntries {
            archive: binfmt_arcx::Archive::open(path).in_file(&file)?,
            file,
        })),
        Format::Kast => Ok(Box::new(KastEntries {
            store: binfmt_kastore::Store::new(FileSource::open(path).in_file(&file)?)
                .in_file(&file)?,
            file,
        })),
        Format::Par4 => Ok(Box::new(Par4Entries::open(path, file)?)),
        Format::Taridx => Ok(Box::new(FoldEntries::open(path, file)?)),
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
    for (written, entry) in (1..).zip(&entries) {
        let target = binfmt_core::extract::safe_target(dir, &entry.name).in_file(file)?;
        if binfmt_core::atomic::same_file(&target, Path::new(file)) {
            return Err(Error::CannotHold {
                file: file.to_owned(),
                name: entry.name.clone(),
                why: "would be written over the file being read".into(),
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

/// An ARCX archive: its files, with directories and symlinks listed by kind.
struct ArcxEntries {
    archive: binfmt_arcx::Archive,
    file: String,
}

impl EntrySource for ArcxEntries {
    fn format(&self) -> Format {
        Format::Arcx
    }

    fn file(&self) -> &str {
        &self.file
    }

    fn list(&self) -> Result<Vec<Entry>> {
        Ok(self
            .archive
            .files()
            .map(|file| Entry {
                kind: match file.attributes().kind {
                    binfmt_arcx::FileKind::Directory => Some("directory"),
                    binfmt_arcx::FileKind::Symlink => Some("symlink"),
                    _ => None,
                },
                ..Entry::new(file.path().to_string(), file.size())
            })
            .collect())
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

    fn extract_to(&self, dir: &Path, options: &ExtractOptions) -> Result<u64> {
        let arcx_options = binfmt_arcx::ExtractOptions::default().symlinks(options.symlinks);
        let summary = self
            .archive
            .extract_with_progress(dir, arcx_options, options.progress.unwrap_or(&|_, _| {}))
            .in_file(&self.file)?;
        Ok(summary.files + summary.directories + summary.symlinks)
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
    }))
}

/// A kastore file: its keys, each array's bytes as stored.
struct KastEntries<S = FileSource> {
    store: binfmt_kastore::Store<S>,
    file: String,
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
}

/// A PAR4 file whose root is a `HashMap<String, Vec<u8>>`.
struct Par4Entries {
    parfile: binfmt_parcode::ParFile,
    file: String,
    /// The whole map, once a listing has decoded it (a value's size is
    /// only known decoded); reads are then lookups instead of decoding the
    /// entry a second time.
    loaded: OnceLock<HashMap<String, Vec<u8>>>,
}

impl Par4Entries {
    fn open(path: &Path, file: String) -> Result<Self> {
        let parfile =
            binfmt_parcode::ParFile::new(ByteSource::open(path).in_file(&file)?).in_file(&file)?;
        Ok(Self {
            parfile,
            file,
            loaded: OnceLock::new(),
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

    fn map(&self) -> Result<&HashMap<String, Vec<u8>>> {
        if let Some(map) = self.loaded.get() {
            return Ok(map);
        }
        let root = self.parfile.root().in_file(&self.file)?;
        let map = binfmt_parcode::LazyMap::<String, Vec<u8>>::new(root)
            .and_then(|map| map.load())
            .map_err(|error| self.no_entries(&error))?;
        Ok(self.loaded.get_or_init(|| map))
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
            .iter()
            .map(|(name, bytes)| Entry::new(name.clone(), bytes.len() as u64))
            .collect();
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }

    fn open(&self, name: &str) -> Result<Box<dyn Read + Send + '_>> {
        let value = match self.loaded.get() {
            Some(map) => map.get(name).cloned(),
            // One entry of a file not listed: decode just that entry.
            None => {
                let root = self.parfile.root().in_file(&self.file)?;
                binfmt_parcode::LazyMap::<String, Vec<u8>>::new(root)
                    .and_then(|map| map.get(name))
                    .in_file(&self.file)?
            }
        };
        match value {
            Some(bytes) => Ok(Box::new(std::io::Cursor::new(bytes))),
            None => Err(Error::NotFound {
                file: self.file.clone(),
                name: name.to_owned(),
            }),
        }
    }

    fn verify(&self) -> Result<()> {
        self.parfile.verify().map(|_| ()).in_file(&self.file)
    }
}

/// A TARIDX index with its fold's shards beside it, its rows named by the
/// tar members' full names. Opening reads the index only; shards are opened
/// as rows need them, a bounded number at a time, and every member's tar
/// header is checked against its row before its bytes are read.
struct FoldEntries {
    dataset: binfmt_taridx::Dataset,
    file: String,
}

impl FoldEntries {
    fn open(path: &Path, file: String) -> Result<Self> {
        let fold = path
            .file_stem()
            .and_then(|stem| stem.to_str())
            .ok_or_else(|| Error::Unsupported {
                file: file.clone(),
                why: "the index file name has no fold name".into(),
            })?;
        let root = path
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        let shards = binfmt_taridx::fold_shards(&root, fold).in_file(&file)?;
        let dataset = binfmt_taridx::Dataset::open(path, &shards).in_file(&file)?;
        Ok(Self { dataset, file })
    }
}

impl EntrySource for FoldEntries {
    fn format(&self) -> Format {
        Format::Taridx
    }

    fn file(&self) -> &str {
        &self.file
    }

    fn list(&self) -> Result<Vec<Entry>> {
        // Full member names (GNU long names and pax paths included) come
        // from each row's tar header, checked against the row.
        self.dataset
            .rows()
            .iter()
            .map(|row| {
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
}
