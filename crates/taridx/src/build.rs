//! Building an index from tar shards, byte-identical to the reference iTar
//! indexer for shards of plain regular files.
//!
//! Shards are scanned in parallel (headers only); their members are then
//! merged in fid order, one after another, exactly as the reference walks
//! them, so ids come out the same whatever the thread count:
//!
//! - stem = the name after its last `/`, up to the first `.`; extension =
//!   the rest, lower-cased; keyhash = xxh64 of the stem's UTF-8, seed 0;
//! - extension ids and crash ids are given in first-seen order;
//! - the first stem seen with a hash is canonical (crash id 0); each other
//!   stem with that hash gets the next crash id;
//! - `n_stems` counts distinct stems; flag bit 0 is set when the rows form
//!   one run per `(keyhash, crashid)`.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use binfmt_core::layout::{IntoBytes, U16, U32, U64};
use binfmt_core::{AtomicFile, ByteSource, IoResultExt};
use rayon::prelude::*;
use xxhash_rust::xxh3::Xxh3DefaultBuilder;
use xxhash_rust::xxh64::xxh64;

use crate::error::{Result, TaridxError};
use crate::format::{
    FLAG_CONTIGUOUS, HEADER_SIZE, Header, MAGIC, ROW_SIZE, Row, VERSION_MAJOR, VERSION_MINOR,
};
use crate::index::rows_contiguous;
use crate::tar::{self, Member};

/// A member name split as the reference splits it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StemAndExtension {
    /// The basename up to its first `.`.
    pub stem: String,
    /// The rest of the basename after that `.`, lower-cased; empty when
    /// there is no `.`.
    pub extension: String,
}

/// Splits a member name (bytes, decoded as UTF-8 with invalid sequences
/// replaced, as the reference decodes them).
pub fn split_name(name: &[u8]) -> StemAndExtension {
    let name = String::from_utf8_lossy(name);
    let base = name.rsplit('/').next().unwrap_or_default();
    let (stem, extension) = base.split_once('.').unwrap_or((base, ""));
    StemAndExtension {
        stem: stem.to_owned(),
        extension: extension.to_lowercase(),
    }
}

/// The key hash of a stem.
pub fn keyhash(stem: &str) -> u64 {
    xxh64(stem.as_bytes(), 0)
}

/// A member with its name split and its stem hashed: the per-member work
/// that does not depend on other members, done while shards are scanned.
#[derive(Debug)]
struct Prepared {
    offset: u64,
    size: u64,
    split: StemAndExtension,
    key: u64,
}

impl Prepared {
    fn new(member: Member) -> Self {
        let split = split_name(&member.name);
        let key = keyhash(&split.stem);
        Self {
            offset: member.offset,
            size: member.size,
            split,
            key,
        }
    }
}

/// The state of an index being built, member by member.
///
/// Every distinct stem is either the canonical stem of its hash or has a
/// crash id, never both, so the number of distinct stems is the number of
/// canonical stems plus the number of crash stems.
#[derive(Debug, Default)]
pub struct IndexBuilder {
    rows: Vec<Row>,
    extension_ids: HashMap<String, u16, Xxh3DefaultBuilder>,
    extensions: Vec<String>,
    canonical: HashMap<u64, String, Xxh3DefaultBuilder>,
    crash_ids: HashMap<String, u32, Xxh3DefaultBuilder>,
    crash_stems: Vec<String>,
}

impl IndexBuilder {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the row of one member of shard `fid`.
    pub fn add(&mut self, fid: u16, member: Member) -> Result<()> {
        self.add_prepared(fid, Prepared::new(member))
    }

    fn add_prepared(&mut self, fid: u16, member: Prepared) -> Result<()> {
        let Prepared {
            offset,
            size,
            split,
            key,
        } = member;
        let StemAndExtension { stem, extension } = split;
        let extid = match self.extension_ids.get(&extension) {
            Some(&id) => id,
            None => {
                let id = u16::try_from(self.extensions.len())
                    .map_err(|_| TaridxError::TooManyExtensions)?;
                self.extension_ids.insert(extension.clone(), id);
                self.extensions.push(extension);
                id
            }
        };
        let crashid = match self.canonical.get(&key) {
            None => {
                self.canonical.insert(key, stem);
                0
            }
            Some(canonical) if *canonical == stem => 0,
            Some(_) => match self.crash_ids.get(&stem) {
                Some(&id) => id,
                None => {
                    let id = self.crash_stems.len() as u32 + 1;
                    self.crash_ids.insert(stem.clone(), id);
                    self.crash_stems.push(stem);
                    id
                }
            },
        };
        self.rows.push(Row {
            fid: U16::new(fid),
            offset: U64::new(offset),
            size: U64::new(size),
            extid: U16::new(extid),
            crashid: U32::new(crashid),
            keyhash: U64::new(key),
        });
        Ok(())
    }

    /// The rows so far.
    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// The index file's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let extension_block = self.extensions.join("\n");
        let crash_block = self.crash_stems.join("\n");
        let n_stems = (self.canonical.len() + self.crash_stems.len()) as u64;
        let off_crash = u64::from(HEADER_SIZE) + extension_block.len() as u64;
        let off_arr = off_crash + crash_block.len() as u64;
        let contiguous = rows_contiguous(&self.rows, n_stems);
        let header = Header {
            magic: MAGIC,
            major: U16::new(VERSION_MAJOR),
            minor: U16::new(VERSION_MINOR),
            rec_size: U16::new(ROW_SIZE),
            hdr_size: U16::new(HEADER_SIZE),
            n_stems: U64::new(n_stems),
            n_rows: U64::new(self.rows.len() as u64),
            n_ext: U32::new(self.extensions.len() as u32),
            n_crash: U32::new(self.crash_stems.len() as u32),
            off_crash: U64::new(off_crash),
            off_arr: U64::new(off_arr),
            flags: if contiguous { FLAG_CONTIGUOUS } else { 0 },
            reserved: [0; 7],
        };
        [
            header.as_bytes(),
            extension_block.as_bytes(),
            crash_block.as_bytes(),
            self.rows.as_bytes(),
        ]
        .concat()
    }

    /// Writes the index to `path` atomically.
    pub fn write_file(&self, path: &Path) -> Result<()> {
        let mut file = AtomicFile::create(path)?;
        file.write_all(&self.to_bytes()).with_path(path)?;
        file.commit()?;
        Ok(())
    }
}

/// Options for indexing shards.
#[derive(Debug, Clone, Copy, Default)]
pub struct IndexOptions {
    /// Threads scanning shards; `None` uses rayon's default (one per core).
    pub jobs: Option<usize>,
}

/// Indexes `shards` (fid = position in the slice), scanning them in
/// parallel. `on_shard_done` is called once per scanned shard, from any
/// thread, for progress reporting. The result does not depend on the
/// thread count.
pub fn index_shards(
    shards: &[PathBuf],
    options: IndexOptions,
    on_shard_done: impl Fn() + Sync,
) -> Result<IndexBuilder> {
    if shards.len() > usize::from(u16::MAX) + 1 {
        return Err(TaridxError::TooManyShards {
            count: shards.len(),
        });
    }
    let scan_one = |path: &PathBuf| -> Result<Vec<Prepared>> {
        let shard = ByteSource::open(path)?;
        let members = tar::scan(&shard).map_err(|(offset, problem)| TaridxError::Shard {
            shard: path.clone(),
            offset,
            problem,
        })?;
        let prepared = members.into_iter().map(Prepared::new).collect();
        on_shard_done();
        Ok(prepared)
    };
    let scan_all = || shards.par_iter().map(scan_one).collect::<Result<Vec<_>>>();
    let scanned = match options.jobs {
        Some(jobs) => rayon::ThreadPoolBuilder::new()
            .num_threads(jobs.max(1))
            .build()
            .map_err(|error| binfmt_core::Error::corrupt("thread pool", error.to_string()))?
            .install(scan_all)?,
        None => scan_all()?,
    };
    let mut builder = IndexBuilder::new();
    builder.rows.reserve(scanned.iter().map(Vec::len).sum());
    for (fid, members) in scanned.into_iter().enumerate() {
        let fid = u16::try_from(fid).map_err(|_| TaridxError::TooManyShards {
            count: shards.len(),
        })?;
        for member in members {
            builder.add_prepared(fid, member)?;
        }
    }
    Ok(builder)
}

/// The shards of `fold` in `root` by the reference's convention: files
/// `{fold}_{shard}.tar` whose `{shard}` has no `_`, sorted by `{shard}`.
/// An empty `root` (the parent of a bare file name) is the current directory.
pub fn fold_shards(root: &Path, fold: &str) -> Result<Vec<PathBuf>> {
    let root = if root.as_os_str().is_empty() {
        Path::new(".")
    } else {
        root
    };
    let entries = std::fs::read_dir(root).with_path(root)?;
    let prefix = format!("{fold}_");
    let mut shards = Vec::new();
    for entry in entries {
        let entry = entry.with_path(root)?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(shard) = name
            .strip_prefix(&prefix)
            .and_then(|rest| rest.strip_suffix(".tar"))
        else {
            continue;
        };
        if !shard.contains('_') {
            shards.push((shard.to_owned(), entry.path()));
        }
    }
    if shards.is_empty() {
        return Err(TaridxError::NoShards {
            root: root.to_owned(),
            fold: fold.to_owned(),
        });
    }
    shards.sort();
    Ok(shards.into_iter().map(|(_, path)| path).collect())
}

/// The index path of `fold` in `root`: `ROOT/FOLD.taridx`.
pub fn fold_index_path(root: &Path, fold: &str) -> PathBuf {
    root.join(format!("{fold}.taridx"))
}

/// Indexes the shards of `fold` in `root` and writes `ROOT/FOLD.taridx`;
/// returns its path. A corrupt or truncated shard leaves no index behind.
pub fn index_fold(
    root: &Path,
    fold: &str,
    options: IndexOptions,
    on_shard_done: impl Fn() + Sync,
) -> Result<PathBuf> {
    let shards = fold_shards(root, fold)?;
    let builder = index_shards(&shards, options, on_shard_done)?;
    let path = fold_index_path(root, fold);
    builder.write_file(&path)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_as_the_reference_splits_them() {
        let split = |name: &[u8]| {
            let StemAndExtension { stem, extension } = split_name(name);
            (stem, extension)
        };
        assert_eq!(split(b"a/b/000123.JPG"), ("000123".into(), "jpg".into()));
        assert_eq!(
            split(b"x.seg.Mask.PNG"),
            ("x".into(), "seg.mask.png".into())
        );
        assert_eq!(split(b"dir.v2/noext"), ("noext".into(), String::new()));
        assert_eq!(split(b".hidden"), (String::new(), "hidden".into()));
        assert_eq!(split(b"caf\xff.txt"), ("caf\u{fffd}".into(), "txt".into()));
    }

    #[test]
    fn keyhash_is_xxh64_seed_0() {
        // xxh64("", 0) is the well-known empty-input digest.
        assert_eq!(keyhash(""), 0xef46_db37_51d8_e999);
    }

    fn member(name: &str, offset: u64) -> Member {
        Member {
            offset,
            size: 1,
            name: name.as_bytes().to_vec(),
        }
    }

    #[test]
    fn ids_in_first_seen_order_and_contiguity() {
        let mut builder = IndexBuilder::new();
        for (i, name) in ["a.jpg", "a.json", "b.json", "b.jpg", "a.txt"]
            .iter()
            .enumerate()
        {
            builder.add(0, member(name, i as u64 * 1024)).unwrap();
        }
        let extids: Vec<u16> = builder.rows().iter().map(|r| r.extid.get()).collect();
        assert_eq!(extids, [0, 1, 1, 0, 2]);
        let bytes = builder.to_bytes();
        let index = crate::Index::new(bytes).unwrap();
        assert_eq!(index.extensions(), ["jpg", "json", "txt"]);
        assert_eq!(index.n_stems(), 2);
        // a, a, b, b, a: three runs for two stems.
        assert!(!index.is_contiguous());
        index.verify(None).unwrap();
    }

    #[test]
    fn colliding_stems_get_crash_ids_in_first_seen_order() {
        let mut builder = IndexBuilder::new();
        for (i, name) in [
            "first.jpg",
            "second.jpg",
            "first.txt",
            "third.jpg",
            "second.txt",
        ]
        .iter()
        .enumerate()
        {
            let mut prepared = Prepared::new(member(name, i as u64 * 1024));
            prepared.key = 42;
            builder.add_prepared(0, prepared).unwrap();
        }
        let crashids: Vec<u32> = builder.rows().iter().map(|r| r.crashid.get()).collect();
        assert_eq!(crashids, [0, 1, 0, 2, 1]);
        let index = crate::Index::new(builder.to_bytes()).unwrap();
        assert_eq!(index.crash_stems(), ["second", "third"]);
        assert_eq!(index.crash_id("third"), 2);
        assert_eq!(index.crash_id("first"), 0);
        assert_eq!(index.n_stems(), 3);
        index.verify(None).unwrap();
    }
}
