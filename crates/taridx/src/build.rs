//! Building an index from tar shards, byte-identical to the reference iTar
//! indexer for shards of plain regular files.
//!
//! Shards are scanned in parallel (headers only, read 1 MiB at a time; each
//! member's key and extension split and its key hashed, names borrowed from
//! the header, keys kept in one arena per shard); each shard's rows are
//! then merged in fid order as soon as the shards before it are, exactly as
//! the reference walks them, so ids come out the same whatever the thread
//! count:
//!
//! - key and extension by the [`KeyRule`] (glzn's by default: the stem is
//!   the name after its last `/`, up to the first `.`; the extension the
//!   rest, lower-cased); keyhash = xxh64 of the key's UTF-8, seed 0;
//! - extension ids and crash ids are given in first-seen order;
//! - the first stem seen with a hash is canonical (crash id 0); each other
//!   stem with that hash gets the next crash id;
//! - `n_stems` counts distinct stems; flag bit 0 is set when the rows form
//!   one run per `(keyhash, crashid)`.
//!
//! The work left once the last shard is scanned is kept small, since no
//! thread count shortens it: the merging thread writes each merged shard's
//! rows into the index file at once ([`IndexFile`]) and merges the shards'
//! stems sorted by hash as they come (`stems`), so the end merges the last
//! shard, gives crash ids in one pass over what is sorted, and writes the
//! header (contiguity counted from the stems' runs, not the rows).

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

use binfmt_core::layout::{IntoBytes, U16, U32, U64};
use binfmt_core::{AtomicFile, FileSource, IoResultExt};
use xxhash_rust::xxh3::Xxh3DefaultBuilder;

use crate::error::{Result, TaridxError};
use crate::fold_names::{fold_index_path, fold_shards};
use crate::format::{
    FLAG_CONTIGUOUS, FLAG_WEBDATASET_KEYS, HEADER_SIZE, Header, MAGIC, ROW_SIZE, Row,
    VERSION_MAJOR, VERSION_MINOR, VERSION_MINOR_WEBDATASET_KEYS,
};
use crate::keys::{KeyAndExtension, KeyRule, keyhash, lowercase};
use crate::tar::{self, Member};
use stems::Stems;

/// A member with its name split and its stem hashed: the per-member work
/// that does not depend on other members.
#[derive(Debug)]
struct Prepared {
    offset: u64,
    size: u64,
    split: KeyAndExtension,
    key: u64,
}

impl Prepared {
    fn new(member: Member, rule: KeyRule) -> Self {
        let split = rule.split_bytes(&member.name);
        let key = keyhash(&split.key);
        Self {
            offset: member.offset,
            size: member.size,
            split,
            key,
        }
    }
}

/// Rows in the pieces they were made in: one per scanned shard, so merging
/// a shard moves none of its rows (copying them into one growing table was
/// a third of the merging thread's work, on the path every other thread
/// waits for at the end).
#[derive(Debug, Default)]
struct Rows {
    pieces: Vec<Vec<Row>>,
    len: usize,
}

impl Rows {
    fn len(&self) -> usize {
        self.len
    }

    fn push(&mut self, row: Row) {
        match self.pieces.last_mut() {
            Some(last) => last.push(row),
            None => self.pieces.push(vec![row]),
        }
        self.len += 1;
    }

    fn append(&mut self, piece: Vec<Row>) {
        self.len += piece.len();
        self.pieces.push(piece);
    }

    /// Rows `start..end` (clamped to the rows there are), piece by piece.
    fn range_mut(&mut self, start: usize, end: usize) -> impl Iterator<Item = &mut Row> {
        let mut first = 0;
        self.pieces.iter_mut().flat_map(move |piece| {
            let (from, to) = (start.saturating_sub(first), end.saturating_sub(first));
            first += piece.len();
            let to = to.min(piece.len());
            piece.get_mut(from.min(to)..to).unwrap_or_default()
        })
    }

    /// The rows as one slice, joining the pieces first if there are several.
    fn as_slice(&mut self) -> &[Row] {
        if self.pieces.len() > 1 {
            let joined = self.pieces.concat();
            self.pieces = vec![joined];
        }
        self.pieces.first().map_or(&[], Vec::as_slice)
    }
}

/// Rows with their runs of stems and the extensions their `extid`s
/// index: one scanned shard's (ids the shard's own), or the whole index's.
#[derive(Debug, Default)]
struct RowTable {
    rows: Rows,
    stems: Stems,
    extensions: Extensions,
}

impl RowTable {
    /// Adds the row of the member at `offset` of shard `fid`, crash id
    /// still 0; `name` names the member in an error.
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        fid: u16,
        offset: u64,
        size: u64,
        stem: &str,
        extension: &str,
        key: u64,
        name: impl FnOnce() -> String,
    ) -> Result<()> {
        check_extension(extension, name)?;
        let extid = self.extensions.id(extension)?;
        self.stems.note(key, stem, self.rows.len() as u64);
        self.rows.push(Row {
            fid: U16::new(fid),
            offset: U64::new(offset),
            size: U64::new(size),
            extid: U16::new(extid),
            crashid: U32::new(0),
            keyhash: U64::new(key),
        });
        Ok(())
    }

    /// Appends `other`'s rows, their extension ids made this table's.
    fn append(&mut self, other: Self) -> Result<()> {
        self.append_deferring(other, false)
    }

    /// [`Self::append`], the merge of the stems by hash deferred to the
    /// end when `defer` ([`Stems::append`]).
    fn append_deferring(&mut self, other: Self, defer: bool) -> Result<()> {
        let Self {
            rows,
            stems,
            extensions,
        } = other;
        let global: Vec<u16> = extensions
            .names
            .iter()
            .map(|extension| self.extensions.id(extension))
            .collect::<Result<_>>()?;
        self.stems.append(&stems, self.rows.len() as u64, defer);
        // Shards of one dataset usually list their extensions in the same
        // order: then the ids are already the index's (no pass over rows).
        let same_ids = global.iter().copied().eq(0..global.len() as u16);
        for mut piece in rows.pieces {
            if !same_ids {
                for row in &mut piece {
                    let local = usize::from(row.extid.get());
                    row.extid = U16::new(global.get(local).copied().unwrap_or_default());
                }
            }
            self.rows.append(piece);
        }
        Ok(())
    }
}

/// Extensions in first-seen order, each with its id (its place).
#[derive(Debug, Default)]
struct Extensions {
    names: Vec<String>,
    ids: HashMap<String, u16, Xxh3DefaultBuilder>,
}

impl Extensions {
    /// The id of `extension`, the next one when it is new.
    fn id(&mut self, extension: &str) -> Result<u16> {
        if let Some(&id) = self.ids.get(extension) {
            return Ok(id);
        }
        let id = u16::try_from(self.names.len()).map_err(|_| TaridxError::TooManyExtensions {
            count: self.names.len() as u64 + 1,
        })?;
        self.ids.insert(extension.to_owned(), id);
        self.names.push(extension.to_owned());
        Ok(id)
    }
}

/// Scans shard `fid` at `path`, reading it 1 MiB at a time: its rows, with
/// the shard's own extension ids.
fn scan_shard(fid: u16, path: &Path, rule: KeyRule) -> Result<RowTable> {
    let source = FileSource::open(path)?;
    let mut table = RowTable::default();
    tar::scan_with(&source, |offset, size, name| {
        let name = String::from_utf8_lossy(name);
        let (stem, extension) = rule.split_parts(&name);
        let extension = lowercase(extension);
        table
            .push(fid, offset, size, stem, &extension, keyhash(stem), || {
                name.clone().into_owned()
            })
            .map_err(|error| TaridxError::InShard {
                shard: path.to_owned(),
                offset,
                source: Box::new(error),
            })
    })?;
    // Here, on the scanning thread, rather than at the end on one.
    table.stems.sort_by_hash()?;
    Ok(table)
}

/// Refuses an extension the index's extension block (one per line) cannot
/// hold: written, it would make the index unreadable.
fn check_extension(extension: &str, name: impl FnOnce() -> String) -> Result<()> {
    if extension.contains('\n') {
        return Err(TaridxError::BadName {
            name: name(),
            why: "its extension holds a newline, which the index's extension block (one extension per line) cannot hold",
        });
    }
    Ok(())
}

/// The state of an index being built, member by member.
///
/// Every distinct stem is either the canonical stem of its hash or has a
/// crash id, never both, so the number of distinct stems is the number of
/// canonical stems plus the number of crash stems.
///
/// # Examples
///
/// ```
/// use binfmt_taridx::{IndexBuilder, KeyRule, tar::Member};
///
/// let mut builder = IndexBuilder::new(KeyRule::WebDataset);
/// builder.add(0, Member { offset: 0, size: 4, name: b"cat/1.jpg".to_vec() })?;
/// builder.add(0, Member { offset: 1024, size: 4, name: b"dog/1.jpg".to_vec() })?;
/// let bytes: Vec<u8> = builder.write_to(Vec::new())?;
/// assert_eq!(binfmt_taridx::Index::new(bytes)?.n_stems(), 2);
/// # Ok::<(), binfmt_taridx::TaridxError>(())
/// ```
#[derive(Debug, Default)]
pub struct IndexBuilder {
    rule: KeyRule,
    table: RowTable,
    /// Distinct stems and crash stems, as of the last [`Self::resolve`].
    n_stems: u64,
    crash_stems: Vec<String>,
    /// Rows whose crash ids are given: all of them after `resolve`.
    resolved_rows: usize,
}

impl IndexBuilder {
    /// An empty index whose keys follow `rule`.
    pub fn new(rule: KeyRule) -> Self {
        Self {
            rule,
            ..Self::default()
        }
    }

    /// Adds the row of one member of shard `fid`.
    pub fn add(&mut self, fid: u16, member: Member) -> Result<()> {
        let prepared = Prepared::new(member, self.rule);
        self.add_prepared(fid, prepared)
    }

    fn add_prepared(&mut self, fid: u16, member: Prepared) -> Result<()> {
        let Prepared {
            offset,
            size,
            split,
            key,
        } = member;
        self.table
            .push(fid, offset, size, &split.key, &split.extension, key, || {
                format!("{}.{}", split.key, split.extension)
            })
    }

    /// Gives the rows added since the last call their crash ids (every
    /// call looks at all stems: ids follow first-seen order, so earlier
    /// rows keep theirs).
    fn resolve(&mut self) -> Result<()> {
        let table = &mut self.table;
        if self.resolved_rows == table.rows.len() {
            return Ok(());
        }
        let stems::CrashIds {
            distinct: n_stems,
            crash_stems,
            crash_rows,
        } = table.stems.crash_ids(table.rows.len())?;
        for (rows, id) in crash_rows {
            for row in table.rows.range_mut(rows.start, rows.end) {
                row.crashid = U32::new(id);
            }
        }
        self.n_stems = n_stems;
        self.crash_stems = crash_stems;
        self.resolved_rows = table.rows.len();
        Ok(())
    }

    /// The rows so far, with their crash ids.
    pub fn rows(&mut self) -> Result<&[Row]> {
        self.resolve()?;
        Ok(self.table.rows.as_slice())
    }

    /// Writes the index to `out` and returns it.
    pub fn write_to<W: Write>(&mut self, mut out: W) -> Result<W> {
        self.parts()?
            .write(&mut out)
            .map_err(|error| binfmt_core::Error::io("<index output>", error))?;
        Ok(out)
    }

    /// The index file's bytes.
    pub fn to_bytes(&mut self) -> Result<Vec<u8>> {
        Ok(self.parts()?.each().collect::<Vec<_>>().concat())
    }

    fn parts(&mut self) -> Result<Parts<'_>> {
        self.resolve()?;
        let extension_block = self.table.extensions.names.join("\n");
        let crash_block = self.crash_stems.join("\n");
        let n_stems = self.n_stems;
        let off_crash = u64::from(HEADER_SIZE) + extension_block.len() as u64;
        let off_arr = off_crash + crash_block.len() as u64;
        // Rows of one stem share (keyhash, crashid) and different stems
        // differ in one of them, so the rows' runs are the stems' runs.
        let row_runs = self.table.stems.runs.len() as u64 - self.table.stems.continued;
        let contiguous = self.table.rows.len() < 2 || row_runs == n_stems;
        let webdataset = self.rule == KeyRule::WebDataset;
        let mut flags = if contiguous { FLAG_CONTIGUOUS } else { 0 };
        if webdataset {
            flags |= FLAG_WEBDATASET_KEYS;
        }
        let header = Header {
            magic: MAGIC,
            major: U16::new(VERSION_MAJOR),
            minor: U16::new(if webdataset {
                VERSION_MINOR_WEBDATASET_KEYS
            } else {
                VERSION_MINOR
            }),
            rec_size: U16::new(ROW_SIZE),
            hdr_size: U16::new(HEADER_SIZE),
            n_stems: U64::new(n_stems),
            n_rows: U64::new(self.table.rows.len() as u64),
            n_ext: U32::new(self.table.extensions.names.len() as u32),
            n_crash: U32::new(self.crash_stems.len() as u32),
            off_crash: U64::new(off_crash),
            off_arr: U64::new(off_arr),
            flags,
            reserved: [0; 7],
        };
        Ok(Parts {
            header,
            extension_block,
            crash_block,
            rows: &self.table.rows.pieces,
        })
    }

    /// Writes the index to `path` atomically.
    pub fn write_file(&mut self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let parts = self.parts()?;
        let mut file = AtomicFile::create(path)?;
        parts.write(&mut file).with_path(path)?;
        file.commit()?;
        Ok(())
    }
}

impl IndexFile {
    /// Gives the rows of `builder` (the one [`index_shards_into`] returned
    /// for this file) their crash ids, writes what is left (everything, if
    /// the rows' place moved or a row's crash id is not 0) and renames the
    /// file into place.
    pub fn finish(self, builder: &mut IndexBuilder) -> Result<()> {
        let parts = builder.parts()?;
        let head = [
            parts.header.as_bytes(),
            parts.extension_block.as_bytes(),
            parts.crash_block.as_bytes(),
        ];
        let crash_free = parts.header.n_crash.get() == 0;
        self.finish_with(head, parts.header.off_arr.get(), crash_free, parts.rows)
    }
}

/// An index written to any `Write`: rows added member by member, the file
/// written by [`IndexWriter::finish`], which returns the writer (the index
/// needs every row before its header, so nothing is written until then).
///
/// # Examples
///
/// ```
/// use binfmt_taridx::{IndexWriter, KeyRule, tar::Member};
///
/// let mut writer = IndexWriter::new(Vec::new(), KeyRule::Glzn);
/// writer.add(0, Member { offset: 0, size: 3, name: b"s/000001.jpg".to_vec() })?;
/// let bytes: Vec<u8> = writer.finish()?;
/// assert_eq!(binfmt_taridx::Index::new(bytes)?.num_rows(), 1);
/// # Ok::<(), binfmt_taridx::TaridxError>(())
/// ```
#[derive(Debug)]
pub struct IndexWriter<W: Write> {
    out: W,
    builder: IndexBuilder,
}

impl<W: Write> IndexWriter<W> {
    /// An index for `out` whose keys follow `rule`.
    pub fn new(out: W, rule: KeyRule) -> Self {
        Self {
            out,
            builder: IndexBuilder::new(rule),
        }
    }

    /// Adds the row of one member of shard `fid`.
    pub fn add(&mut self, fid: u16, member: Member) -> Result<()> {
        self.builder.add(fid, member)
    }

    /// Writes the index and returns the writer.
    pub fn finish(mut self) -> Result<W> {
        self.builder.write_to(self.out)
    }
}

/// The four regions of an index file, in order.
struct Parts<'a> {
    header: Header,
    extension_block: String,
    crash_block: String,
    rows: &'a [Vec<Row>],
}

impl Parts<'_> {
    fn each(&self) -> impl Iterator<Item = &[u8]> {
        [
            self.header.as_bytes(),
            self.extension_block.as_bytes(),
            self.crash_block.as_bytes(),
        ]
        .into_iter()
        .chain(self.rows.iter().map(|piece| piece.as_bytes()))
    }

    fn write(&self, out: &mut impl Write) -> std::io::Result<()> {
        self.each().try_for_each(|part| out.write_all(part))
    }
}

/// Options for indexing shards.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct IndexOptions {
    /// Threads scanning shards; `None` uses rayon's default (one per core).
    pub jobs: Option<usize>,
    /// How member names become keys (glzn's rule by default).
    pub key_rule: KeyRule,
}

impl IndexOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets [`IndexOptions::jobs`].
    #[must_use]
    pub fn jobs(mut self, jobs: Option<usize>) -> Self {
        self.jobs = jobs;
        self
    }

    /// Sets [`IndexOptions::key_rule`].
    #[must_use]
    pub fn key_rule(mut self, key_rule: KeyRule) -> Self {
        self.key_rule = key_rule;
        self
    }
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
    index_shards_then(shards, options, on_shard_done, |_| Ok(()))
}

/// Indexes `shards` as [`index_shards`] does, writing each merged shard's
/// rows into `file` while the later shards are still being scanned; then
/// [`IndexFile::finish`] writes the rest. The bytes are those of
/// [`IndexBuilder::write_file`]; the work left once the last shard is
/// scanned is the last shards' rows, the header and a rename.
///
/// # Examples
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let shard = dir.path().join("s-000000.tar");
/// # let mut tar = binfmt_taridx::TarWriter::new(std::fs::File::create(&shard)?);
/// # tar.append_bytes("s/000001.jpg", b"jpeg")?;
/// # tar.finish()?;
/// use binfmt_taridx::{IndexFile, IndexOptions, index_shards_into};
///
/// let path = dir.path().join("s.taridx");
/// let mut file = IndexFile::create(&path)?;
/// let mut builder = index_shards_into(&[shard], IndexOptions::new(), || {}, &mut file)?;
/// file.finish(&mut builder)?;
/// assert_eq!(binfmt_taridx::Index::open(&path)?.num_rows(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn index_shards_into(
    shards: &[PathBuf],
    options: IndexOptions,
    on_shard_done: impl Fn() + Sync,
    file: &mut IndexFile,
) -> Result<IndexBuilder> {
    index_shards_then(shards, options, on_shard_done, |builder| {
        let table = &builder.table;
        file.rows_merged(&table.extensions.names, &table.rows.pieces)
    })
}

/// [`index_shards`], calling `merged_one` on the merging thread after each
/// shard is merged.
fn index_shards_then(
    shards: &[PathBuf],
    options: IndexOptions,
    on_shard_done: impl Fn() + Sync,
    mut merged_one: impl FnMut(&IndexBuilder) -> Result<()>,
) -> Result<IndexBuilder> {
    if shards.len() > usize::from(u16::MAX) + 1 {
        return Err(TaridxError::TooManyShards {
            count: shards.len(),
        });
    }
    let rule = options.key_rule;
    let count = shards.len();
    let scan_one = |fid: usize| -> Result<RowTable> {
        let path = shards
            .get(fid)
            .ok_or(TaridxError::TooManyShards { count })?;
        let fid = u16::try_from(fid).map_err(|_| TaridxError::TooManyShards { count })?;
        let shard = scan_shard(fid, path, rule)?;
        on_shard_done();
        Ok(shard)
    };
    let threads = options
        .jobs
        .unwrap_or_else(rayon::current_num_threads)
        .clamp(1, count.max(1));
    let mut builder = IndexBuilder::new(rule);
    if threads == 1 {
        // One thread: each shard scanned, then merged, in turn.
        for fid in 0..count {
            builder.table.append(scan_one(fid)?)?;
            merged_one(&builder)?;
        }
        return Ok(builder);
    }
    // Threads take shards in fid order; this thread merges each as soon as
    // every shard before it is merged, so merging overlaps scanning and a
    // shard's rows are freed once merged.
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let (sender, receiver) = mpsc::channel::<(usize, Result<RowTable>)>();
    std::thread::scope(|scope| -> Result<IndexBuilder> {
        for _ in 0..threads {
            let sender = sender.clone();
            let (next, failed, scan_one) = (&next, &failed, &scan_one);
            scope.spawn(move || {
                while !failed.load(Ordering::Relaxed) {
                    let fid = next.fetch_add(1, Ordering::Relaxed);
                    if fid >= count {
                        break;
                    }
                    let scanned = scan_one(fid);
                    if scanned.is_err() {
                        failed.store(true, Ordering::Relaxed);
                    }
                    if sender.send((fid, scanned)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(sender);
        let mut waiting: BTreeMap<usize, Result<RowTable>> = BTreeMap::new();
        let mut merged = 0;
        let outcome = (|| {
            while merged < count {
                match waiting.remove(&merged) {
                    Some(scanned) => {
                        // Shards scanned meanwhile: when the next two are
                        // there, this thread is behind the scanners (one
                        // is common: shards are scanned side by side).
                        while let Ok((fid, scanned)) = receiver.try_recv() {
                            waiting.insert(fid, scanned);
                        }
                        let behind = waiting.contains_key(&(merged + 1))
                            && waiting.contains_key(&(merged + 2));
                        builder.table.append_deferring(scanned?, behind)?;
                        merged += 1;
                        merged_one(&builder)?;
                    }
                    None => match receiver.recv() {
                        Ok((fid, scanned)) => {
                            waiting.insert(fid, scanned);
                        }
                        // Every thread stopped early: one failed; its error
                        // is among those waiting, the first in fid order.
                        Err(_) => match waiting.into_values().find(Result::is_err) {
                            Some(Err(error)) => return Err(error),
                            _ => {
                                return Err(TaridxError::TooManyShards { count });
                            }
                        },
                    },
                }
            }
            Ok(())
        })();
        if outcome.is_err() {
            failed.store(true, Ordering::Relaxed);
        }
        outcome.map(|()| std::mem::take(&mut builder))
    })
}

/// Runs `work` on a pool of `jobs` threads (at least one); when no pool can
/// be made, on the calling thread (same result: the thread count never
/// changes what is computed).
pub(crate) fn with_threads<T: Send>(jobs: usize, work: impl FnOnce() -> T + Send) -> T {
    match rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .build()
    {
        Ok(pool) => pool.install(work),
        Err(_) => work(),
    }
}

/// Indexes `shards` and writes the index to `output` atomically, refusing
/// an output that is one of the shards; records the shards beside it
/// ([`crate::record_shards`]: a shard list unless glzn's names find them).
pub fn write_index(
    shards: &[PathBuf],
    output: impl AsRef<Path>,
    options: IndexOptions,
    on_shard_done: impl Fn() + Sync,
) -> Result<()> {
    let output = output.as_ref();
    crate::shards::check_not_input(output, shards)?;
    crate::shards::check_not_input(crate::shard_list_path(output), shards)?;
    let mut file = IndexFile::create(output)?;
    let mut builder = index_shards_into(shards, options, on_shard_done, &mut file)?;
    file.finish(&mut builder)?;
    crate::shard_list::record_shards(output, shards)
}

/// Indexes the shards of `fold` in `root` and writes `ROOT/FOLD.taridx`;
/// returns its path. A corrupt or truncated shard leaves no index behind.
pub fn index_fold(
    root: impl AsRef<Path>,
    fold: &str,
    options: IndexOptions,
    on_shard_done: impl Fn() + Sync,
) -> Result<PathBuf> {
    let root = root.as_ref();
    let shards = fold_shards(root, fold)?;
    let path = fold_index_path(root, fold);
    crate::shards::check_not_input(&path, &shards)?;
    crate::shards::check_not_input(crate::shard_list_path(&path), &shards)?;
    let mut file = IndexFile::create(&path)?;
    let mut builder = index_shards_into(&shards, options, on_shard_done, &mut file)?;
    file.finish(&mut builder)?;
    crate::shard_list::record_shards(&path, &shards)?;
    Ok(path)
}

mod stems;
mod stream;
#[cfg(test)]
mod tests;

pub use stream::IndexFile;
