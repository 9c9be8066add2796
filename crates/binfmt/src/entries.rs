//! One view of every format: named entries that can be listed, read and
//! verified.
//!
//! | format | entries |
//! |---|---|
//! | TARIDX (+ its shards) | the fold's tar members, by full member name, read through the index |
//! | ARCX | files, by path |
//! | KAST | keys; an entry's bytes are the array's little-endian bytes |
//! | PAR4 | the entries of a root `HashMap<String, Vec<u8>>` (inline or bucketed); any other PAR4 file has no named entries |
//! | tar | not opened here: index it with `binfmt taridx index` first |

use std::cell::OnceCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::sniff::{Format, sniff};

/// One entry of a listing.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Entry {
    /// The entry's name (path, member name, key).
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
    /// What the format says about its type, where it says anything (the
    /// kastore element type).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    /// The stored name is not UTF-8: `name` shows it with U+FFFD in place
    /// of the bad bytes, so it cannot be carried to another file unchanged.
    #[serde(skip_serializing_if = "is_false")]
    pub name_not_utf8: bool,
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// Refuses entries whose names cannot be carried to another file or a
/// directory unchanged: a stored name that is not UTF-8, or a name that
/// appears twice (only one of the two could be kept, and reading by name
/// gives the first).
pub(crate) fn check_names_carry(entries: &[Entry]) -> Result<(), String> {
    let mut seen = std::collections::HashSet::with_capacity(entries.len());
    for entry in entries {
        if entry.name_not_utf8 {
            return Err(format!(
                "entry {:?}: its stored name is not UTF-8, and writing it elsewhere would change it",
                entry.name
            ));
        }
        if !seen.insert(entry.name.as_str()) {
            return Err(format!(
                "entry {:?} appears twice, and only one could be written",
                entry.name
            ));
        }
    }
    Ok(())
}

/// A file of any supported format, seen as named entries.
pub trait EntrySource {
    /// The file's format.
    fn format(&self) -> Format;
    /// Every entry, in the file's order.
    fn list(&self) -> Result<Vec<Entry>, String>;
    /// The bytes of the entry called `name`.
    fn read(&self, name: &str) -> Result<Vec<u8>, String>;
    /// Checks everything the format can check.
    fn verify(&self) -> Result<(), String>;
}

/// Opens `path` as named entries, whatever its format.
pub fn open(path: &Path) -> Result<Box<dyn EntrySource>, String> {
    let failed = |error: &dyn std::fmt::Display| crate::about(path, error);
    match sniff(path).map_err(|e| failed(&e))? {
        Format::Arcx => Ok(Box::new(
            binfmt_arcx::Archive::open(path).map_err(|e| failed(&e))?,
        )),
        Format::Kast => Ok(Box::new(
            binfmt_kastore::Store::open(path).map_err(|e| failed(&e))?,
        )),
        Format::Par4 => Ok(Box::new(Par4Entries::open(path)?)),
        Format::Taridx => Ok(Box::new(FoldEntries::open(path)?)),
        Format::Tar => Err(format!(
            "{}: a tar file: index it with `binfmt taridx index` to read it as entries",
            path.display()
        )),
        Format::Unknown => Err(format!("{}: not a format binfmt reads", path.display())),
    }
}

/// Writes every entry of `source` to a file under `dir` named by the entry,
/// one entry in memory at a time, and returns how many were written.
///
/// Names go through [`binfmt_core::extract::safe_target`]: one that would
/// land outside `dir` (absolute, `..`, empty components) is refused, and no
/// directory on the way is followed through a symlink. Each file is written
/// atomically, so a failure leaves no partial file. Names that are not
/// UTF-8 or that repeat are refused before anything is written.
pub fn extract(source: &dyn EntrySource, dir: &Path) -> Result<usize, String> {
    extract_with_progress(source, dir, &|_, _| {})
}

/// [`extract`], calling `progress(entries written, entries in all)` after
/// each entry.
pub fn extract_with_progress(
    source: &dyn EntrySource,
    dir: &Path,
    progress: &dyn Fn(u64, u64),
) -> Result<usize, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let entries = source.list()?;
    check_names_carry(&entries)?;
    for (written, entry) in (1..).zip(&entries) {
        let target =
            binfmt_core::extract::safe_target(dir, &entry.name).map_err(|e| e.to_string())?;
        let bytes = source.read(&entry.name)?;
        let mut out = binfmt_core::AtomicFile::create(&target).map_err(|e| e.to_string())?;
        std::io::Write::write_all(&mut out, &bytes)
            .map_err(|e| format!("{}: {e}", target.display()))?;
        out.commit().map_err(|e| e.to_string())?;
        progress(written, entries.len() as u64);
    }
    Ok(entries.len())
}

impl EntrySource for binfmt_arcx::Archive {
    fn format(&self) -> Format {
        Format::Arcx
    }

    fn list(&self) -> Result<Vec<Entry>, String> {
        Ok(self
            .files()
            .iter()
            .map(|file| Entry {
                name_not_utf8: false,
                name: file.path.clone(),
                size: file.size,
                kind: None,
            })
            .collect())
    }

    fn read(&self, name: &str) -> Result<Vec<u8>, String> {
        binfmt_arcx::Archive::read(self, name).map_err(|e| e.to_string())
    }

    fn verify(&self) -> Result<(), String> {
        binfmt_arcx::Archive::verify(self).map_err(|e| e.to_string())
    }
}

impl EntrySource for binfmt_kastore::Store {
    fn format(&self) -> Format {
        Format::Kast
    }

    fn list(&self) -> Result<Vec<Entry>, String> {
        Ok(self
            .items()
            .map(|item| Entry {
                name: String::from_utf8_lossy(item.key()).into_owned(),
                name_not_utf8: std::str::from_utf8(item.key()).is_err(),
                size: item.le_bytes().len() as u64,
                kind: Some(item.item_type().name()),
            })
            .collect())
    }

    fn read(&self, name: &str) -> Result<Vec<u8>, String> {
        self.get(name)
            .map(|item| item.le_bytes().to_vec())
            .map_err(|e| e.to_string())
    }

    fn verify(&self) -> Result<(), String> {
        // Opening checked every descriptor; touching every array checks the
        // bytes are there.
        self.items().for_each(|item| {
            std::hint::black_box(item.le_bytes());
        });
        Ok(())
    }
}

/// A PAR4 file whose root is a `HashMap<String, Vec<u8>>`.
struct Par4Entries {
    file: binfmt_parcode::ParFile,
    path: PathBuf,
    /// The whole map, once a listing has decoded it (a value's size is
    /// only known decoded); reads are then lookups instead of decoding the
    /// entry a second time.
    loaded: OnceCell<HashMap<String, Vec<u8>>>,
}

impl Par4Entries {
    fn open(path: &Path) -> Result<Self, String> {
        let file = binfmt_parcode::ParFile::open(path).map_err(|e| crate::about(path, &e))?;
        Ok(Self {
            file,
            path: path.to_owned(),
            loaded: OnceCell::new(),
        })
    }

    fn map(&self) -> Result<&HashMap<String, Vec<u8>>, String> {
        if let Some(map) = self.loaded.get() {
            return Ok(map);
        }
        let root = self.file.root().map_err(|e| e.to_string())?;
        let map = binfmt_parcode::LazyMap::<String, Vec<u8>>::new(root)
            .and_then(|map| map.load())
            .map_err(|e| format!("{}: the root is not a HashMap<String, Vec<u8>>, so the file has no named entries ({e}); `binfmt par4 inspect` shows its chunk tree", self.path.display()))?;
        Ok(self.loaded.get_or_init(|| map))
    }
}

impl EntrySource for Par4Entries {
    fn format(&self) -> Format {
        Format::Par4
    }

    fn list(&self) -> Result<Vec<Entry>, String> {
        let mut entries: Vec<Entry> = self
            .map()?
            .iter()
            .map(|(name, bytes)| Entry {
                name_not_utf8: false,
                name: name.clone(),
                size: bytes.len() as u64,
                kind: None,
            })
            .collect();
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }

    fn read(&self, name: &str) -> Result<Vec<u8>, String> {
        let value = match self.loaded.get() {
            Some(map) => map.get(name).cloned(),
            // One entry of a file not listed: decode just that entry.
            None => {
                let root = self.file.root().map_err(|e| e.to_string())?;
                binfmt_parcode::LazyMap::<String, Vec<u8>>::new(root)
                    .and_then(|map| map.get(name))
                    .map_err(|e| e.to_string())?
            }
        };
        value.ok_or_else(|| format!("no entry {name:?}"))
    }

    fn verify(&self) -> Result<(), String> {
        self.file.verify().map(|_| ()).map_err(|e| e.to_string())
    }
}

/// A TARIDX index with its fold's shards beside it, its rows named by the
/// tar members' full names. Opening reads the index only; shards are opened
/// as rows need them, a bounded number at a time.
struct FoldEntries {
    dataset: binfmt_taridx::Dataset,
}

impl FoldEntries {
    fn open(path: &Path) -> Result<Self, String> {
        let failed = |e: &dyn std::fmt::Display| crate::about(path, e);
        let fold = path
            .file_stem()
            .and_then(|stem| stem.to_str())
            .ok_or_else(|| failed(&"the index file name has no fold name"))?;
        let root = path
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        let shards = binfmt_taridx::fold_shards(&root, fold).map_err(|e| failed(&e))?;
        let dataset = binfmt_taridx::Dataset::open(path, &shards).map_err(|e| failed(&e))?;
        Ok(Self { dataset })
    }
}

impl EntrySource for FoldEntries {
    fn format(&self) -> Format {
        Format::Taridx
    }

    fn list(&self) -> Result<Vec<Entry>, String> {
        // Full member names (GNU long names and pax paths included) come
        // from each row's tar header, checked against the row.
        self.dataset
            .rows()
            .iter()
            .map(|row| {
                let member = self.dataset.member_info(row).map_err(|e| e.to_string())?;
                Ok(Entry {
                    name: member.name,
                    name_not_utf8: member.name_not_utf8,
                    size: member.size,
                    kind: None,
                })
            })
            .collect()
    }

    fn read(&self, name: &str) -> Result<Vec<u8>, String> {
        let row = self
            .dataset
            .find(name)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("no member {name:?}"))?;
        self.dataset.read(&row).map_err(|e| e.to_string())
    }

    fn verify(&self) -> Result<(), String> {
        self.dataset.verify().map(|_| ()).map_err(|e| e.to_string())
    }
}
