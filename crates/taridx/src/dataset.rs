//! Using an index: samples, lookups by key or by member name, extension
//! filters and member payloads, over an index and its shards.
//!
//! Opening a dataset reads the index, never a shard: shards are opened on
//! first use and at most [`DatasetOptions::open_shards`] stay open (least
//! recently used closed first), so a fold of any number of shards works
//! under any `ulimit -n`. Every read checks the tar header at the row's
//! offset first ([`Index::check_row`]), so a stale or crafted index never
//! returns another member's bytes; the gap before a member and its
//! predecessor's header are checked once while its shard is open
//! (spec/taridx.md §4.2, "Checked once while a shard is open").

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use binfmt_core::{ByteSource, Source, SourceExt, alloc};
use zerocopy::{FromZeros, IntoBytes};

use crate::checked::Checked;
use crate::error::{Result, TaridxError};
use crate::fold_names::{fold_index_path, fold_shards};
use crate::format::{ROW_SIZE, Row};
use crate::index::{Index, rows_contiguous};
use crate::keys::keyhash;
use crate::lookup::Lookup;
use crate::member::{MemberInfo, MemberReader};
use crate::scatter;
use crate::shard_list::find_shards;
use crate::shards::{DEFAULT_OPEN_SHARDS, OpenShards, ShardFiles, ShardSet};
use crate::tar::BLOCK_SIZE;
use crate::window::{WINDOW_LIMIT, Window};

/// How a dataset opens its shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct DatasetOptions {
    /// The most shards kept open at once (at least 1; default 64).
    pub open_shards: usize,
    /// Map shards (zero-copy payloads through [`MemberReader::as_slice`])
    /// instead of reading them by `pread` (the default: memory holds only
    /// what is read).
    pub map_shards: bool,
    /// [`Dataset::open_fold_with`] indexes a fold that has no index yet
    /// (glzn's `parse_if_missing`, for the one fold asked for), with these
    /// options, and writes its index. Off by default.
    pub index_if_missing: Option<crate::IndexOptions>,
}

impl Default for DatasetOptions {
    fn default() -> Self {
        Self {
            open_shards: DEFAULT_OPEN_SHARDS,
            map_shards: false,
            index_if_missing: None,
        }
    }
}

impl DatasetOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets [`DatasetOptions::open_shards`].
    #[must_use]
    pub fn open_shards(mut self, open_shards: usize) -> Self {
        self.open_shards = open_shards;
        self
    }

    /// Sets [`DatasetOptions::map_shards`].
    #[must_use]
    pub fn map_shards(mut self, map_shards: bool) -> Self {
        self.map_shards = map_shards;
        self
    }

    /// Sets [`DatasetOptions::index_if_missing`].
    #[must_use]
    pub fn index_if_missing(mut self, options: Option<crate::IndexOptions>) -> Self {
        self.index_if_missing = options;
        self
    }
}

/// An index with its shards: the rows of a fold as samples.
///
/// A sample is the run of rows sharing a `(keyhash, crashid)` key, in row
/// order; sample access needs contiguous rows (see
/// [`Dataset::enforce_contiguous`]). Filters and reordering change this
/// dataset's view of the rows, never the index file.
///
/// # Examples
///
/// ```no_run
/// use binfmt_taridx::Dataset;
///
/// let mut dataset = Dataset::open_fold("shards", "train")?;
/// dataset.filter_extensions(&["jpg", "cls"])?;
/// dataset.enforce_contiguous();
/// for row in dataset.sample(0)?.unwrap_or_default() {
///     let member = dataset.member(row)?;
///     println!("{}: {} bytes", member.name(), member.size());
/// }
/// # Ok::<(), binfmt_taridx::TaridxError>(())
/// ```
#[derive(Debug)]
pub struct Dataset<S = ByteSource> {
    index: Index<S>,
    shards: OpenShards,
    /// The rows when they are not viewed in place in the index: filtered,
    /// reordered, or read from a source that is not in memory.
    view: Option<Vec<Row>>,
    contiguous: bool,
    sample_starts: OnceLock<Vec<usize>>,
}

impl Dataset<ByteSource> {
    /// Opens `ROOT/FOLD.taridx` and its shards: those its shard list names,
    /// else `ROOT/FOLD_*.tar`, `FOLD-N.tar` or `FOLD.N.tar`
    /// ([`crate::find_shards`]).
    pub fn open_fold(root: impl AsRef<Path>, fold: &str) -> Result<Self> {
        Self::open_fold_with(root, fold, DatasetOptions::default())
    }

    /// [`Dataset::open_fold`] with options; with
    /// [`DatasetOptions::index_if_missing`], a fold without an index is
    /// indexed first.
    pub fn open_fold_with(
        root: impl AsRef<Path>,
        fold: &str,
        options: DatasetOptions,
    ) -> Result<Self> {
        let root = root.as_ref();
        let index = fold_index_path(root, fold);
        let shards = match options.index_if_missing {
            Some(index_options) if !index.exists() => {
                let shards = fold_shards(root, fold)?;
                crate::build::write_index(&shards, &index, index_options, || {})?;
                shards
            }
            _ => find_shards(&index)?,
        };
        Self::open_with(index, &shards, options)
    }

    /// Opens an index and its shards, given in fid order. No shard is
    /// opened until a row needs it.
    pub fn open(index: impl AsRef<Path>, shards: &[PathBuf]) -> Result<Self> {
        Self::open_with(index, shards, DatasetOptions::default())
    }

    /// [`Dataset::open`] with options.
    pub fn open_with(
        index: impl AsRef<Path>,
        shards: &[PathBuf],
        options: DatasetOptions,
    ) -> Result<Self> {
        let files = ShardFiles::new(shards.to_vec()).mapped(options.map_shards);
        Self::new(Index::open(index)?, files, options)
    }
}

/// The index's rows read into a buffer reserved by their count (a failed
/// reservation is [`binfmt_core::Error::OutOfMemory`], not an abort) and
/// filled by one read of the row region (the end of the file: opening
/// checked that it holds exactly `n_rows` rows).
fn read_rows<S: Source>(index: &Index<S>) -> Result<Vec<Row>> {
    let count = usize::try_from(index.num_rows()).unwrap_or(usize::MAX);
    let mut rows: Vec<Row> = alloc::vec_with_capacity(count, "taridx rows")?;
    rows.resize(count, Row::new_zeroed());
    let region = index.num_rows().saturating_mul(u64::from(ROW_SIZE));
    let offset = index.source().len().saturating_sub(region);
    index
        .source()
        .fill_at(offset, rows.as_mut_bytes(), "taridx rows")?;
    Ok(rows)
}

impl<S: Source> Dataset<S> {
    /// A dataset over an opened index and any set of shards. Rows are viewed
    /// in place when the index is in memory, read once otherwise.
    pub fn new(
        index: Index<S>,
        shards: impl ShardSet + 'static,
        options: DatasetOptions,
    ) -> Result<Self> {
        let view = match index.rows_in_memory() {
            Some(_) => None,
            None => {
                // Read once: the sorted view the member checks need is
                // built from this read, not a second one.
                let rows = read_rows(&index)?;
                index.seed_places(&rows)?;
                Some(rows)
            }
        };
        let contiguous = index.is_contiguous();
        // The cache reserves room for `open_shards` entries up front: never
        // more than there are shards to open.
        let open_shards = options.open_shards.min(shards.count()).max(1);
        Ok(Self {
            index,
            shards: OpenShards::new(Box::new(shards), open_shards),
            view,
            contiguous,
            sample_starts: OnceLock::new(),
        })
    }

    /// The index file.
    pub fn index(&self) -> &Index<S> {
        &self.index
    }

    /// The shards, and how many are open.
    pub fn shards(&self) -> &OpenShards {
        &self.shards
    }

    /// The rows of this dataset's view: the index's rows, filtered or
    /// reordered by the calls made so far.
    pub fn rows(&self) -> &[Row] {
        match &self.view {
            Some(rows) => rows,
            None => self.index.rows_in_memory().unwrap_or_default(),
        }
    }

    /// Checks the index ([`Index::verify`]) and every row against the tar
    /// header it points at; returns the total payload bytes.
    pub fn verify(&self) -> Result<u64> {
        self.index.verify(Some(self.shards.set()))
    }

    /// Checks that the index has a row for every member of every shard
    /// ([`Index::check_coverage`]): what a reader of the whole fold (a
    /// listing, an extraction, a conversion) runs first, so that no member
    /// is left out silently.
    pub fn check_coverage(&self) -> Result<()> {
        self.index.check_coverage(self.shards.set())
    }

    /// The number of rows.
    pub fn num_rows(&self) -> usize {
        self.rows().len()
    }

    /// Whether the rows form one run per `(keyhash, crashid)`.
    pub fn is_contiguous(&self) -> bool {
        self.contiguous
    }

    /// Reorders the rows so that each sample is one run: a stable sort by
    /// `(keyhash, crashid)`, as the reference's `enforce_contiguous` does.
    /// When the memory for the reordering cannot be had, the rows stay as
    /// they are (sample access then reports [`TaridxError::NotContiguous`]);
    /// [`Dataset::try_enforce_contiguous`] reports it instead.
    pub fn enforce_contiguous(&mut self) {
        let _ = self.try_enforce_contiguous();
    }

    /// [`Dataset::enforce_contiguous`], failing with
    /// [`binfmt_core::Error::OutOfMemory`] when the reordered rows (and the
    /// order, 8 bytes a row) do not fit in memory.
    pub fn try_enforce_contiguous(&mut self) -> Result<()> {
        if self.contiguous {
            return Ok(());
        }
        let rows = self.rows();
        // A stable sort by key: positions sorted by (key, position), so no
        // allocation is left to the sort itself.
        let mut order: Vec<usize> = alloc::vec_with_capacity(rows.len(), "taridx row order")?;
        order.extend(0..rows.len());
        order.sort_unstable_by_key(|&i| (rows.get(i).map(Row::key), i));
        let mut sorted: Vec<Row> = alloc::vec_with_capacity(rows.len(), "taridx rows")?;
        sorted.extend(order.iter().filter_map(|&i| rows.get(i).copied()));
        drop(order);
        self.set_view(sorted, true);
        Ok(())
    }

    /// The number of samples (distinct `(keyhash, crashid)` keys). Needs
    /// contiguous rows.
    pub fn num_samples(&self) -> Result<usize> {
        Ok(self.sample_starts()?.len())
    }

    /// The rows of sample `i`, or `None` past the last sample. Needs
    /// contiguous rows.
    pub fn sample(&self, i: usize) -> Result<Option<&[Row]>> {
        let starts = self.sample_starts()?;
        let Some(&start) = starts.get(i) else {
            return Ok(None);
        };
        let end = starts.get(i + 1).copied().unwrap_or(self.num_rows());
        Ok(self.rows().get(start..end))
    }

    fn sample_starts(&self) -> Result<&[usize]> {
        if !self.contiguous {
            return Err(TaridxError::NotContiguous);
        }
        if let Some(starts) = self.sample_starts.get() {
            return Ok(starts);
        }
        let rows = self.rows();
        let is_start =
            |&i: &usize| i == 0 || rows.get(i - 1).map(Row::key) != rows.get(i).map(Row::key);
        // Counted first: the table is reserved by what the rows hold, and
        // a failed reservation is an error, not an abort.
        let count = (0..rows.len()).filter(is_start).count();
        let mut starts: Vec<usize> = alloc::vec_with_capacity(count, "taridx sample starts")?;
        starts.extend((0..rows.len()).filter(is_start));
        Ok(self.sample_starts.get_or_init(|| starts))
    }

    /// The rows of sample `key` (a glzn stem, or a WebDataset key for
    /// indexes built with that rule): those with its hash and its crash id.
    /// Unchecked: a key that is not indexed but shares a hash with one that
    /// is would match that one's rows; [`Dataset::lookup_verified`] rules
    /// that out.
    pub fn lookup(&self, key: &str) -> Vec<Row> {
        let wanted = (keyhash(key), self.index.crash_id(key));
        self.rows()
            .iter()
            .filter(|row| row.key() == wanted)
            .copied()
            .collect()
    }

    /// [`Dataset::lookup`], each row checked against its tar header and kept
    /// only when the member's real name has this key.
    pub fn lookup_verified(&self, key: &str) -> Result<Vec<Row>> {
        let rule = self.index.key_rule();
        let mut rows = Vec::new();
        let candidates = self.lookup(key);
        // A sample's members are read after they are found: headers and
        // payloads in one request per shard.
        self.prefetch(&candidates);
        for row in candidates {
            if rule.split(&self.member_info(&row)?.name).key == key {
                rows.push(row);
            }
        }
        Ok(rows)
    }

    /// The row of the member named `name` (its full name as tar reads it,
    /// pax and GNU long names included): found through its key's rows, so
    /// only those members' headers are read.
    pub fn find(&self, name: &str) -> Result<Option<Row>> {
        let name = String::from_utf8_lossy(crate::tar::normalize(name.as_bytes())).into_owned();
        let candidates = self.candidates(&name);
        match candidates.as_slice() {
            // The one candidate is almost always read next: its header and
            // payload in one request.
            [only] => self.prefetch(std::slice::from_ref(only)),
            _ => self.prefetch_headers(&candidates),
        }
        for row in candidates {
            if self.member_info(&row)?.name == name {
                return Ok(Some(row));
            }
        }
        Ok(None)
    }

    /// The rows that may hold the member named `name`: those of its key
    /// and extension, unchecked ([`Dataset::find`] reads their headers to
    /// tell which one it is).
    pub fn candidates(&self, name: &str) -> Vec<Row> {
        let split = self.index.key_rule().split(name);
        self.lookup(&split.key)
            .into_iter()
            .filter(|row| self.extension(row) == Some(split.extension.as_str()))
            .collect()
    }

    /// Keeps only the rows of the `required` extensions, and only for
    /// samples that have all of them, as the reference's
    /// `filter_extensions` does. Extensions the index does not know are an
    /// error; an empty list keeps everything.
    pub fn filter_extensions(&mut self, required: &[&str]) -> Result<()> {
        if required.is_empty() {
            return Ok(());
        }
        let known = self.index.extensions();
        let unknown: Vec<String> = required
            .iter()
            .filter(|e| !known.iter().any(|k| k == *e))
            .map(|e| e.to_string())
            .collect();
        if !unknown.is_empty() {
            return Err(TaridxError::UnknownExtensions {
                unknown,
                known: known.to_vec(),
            });
        }
        let wanted: HashSet<u16> = known
            .iter()
            .enumerate()
            .filter(|(_, k)| required.contains(&k.as_str()))
            .map(|(id, _)| id as u16)
            .collect();
        let mut per_key: HashMap<(u64, u32), HashSet<u16>> = HashMap::new();
        for row in self.rows() {
            if wanted.contains(&row.extid.get()) {
                per_key
                    .entry(row.key())
                    .or_default()
                    .insert(row.extid.get());
            }
        }
        let kept: Vec<Row> = self
            .rows()
            .iter()
            .filter(|row| {
                wanted.contains(&row.extid.get())
                    && per_key
                        .get(&row.key())
                        .is_some_and(|exts| exts.len() == wanted.len())
            })
            .copied()
            .collect();
        if kept.is_empty() {
            return Err(TaridxError::NoStemHasAll {
                required: required.iter().map(|e| e.to_string()).collect(),
            });
        }
        let distinct = kept.iter().map(Row::key).collect::<HashSet<_>>().len() as u64;
        let contiguous = rows_contiguous(&kept, distinct);
        self.set_view(kept, contiguous);
        Ok(())
    }

    fn set_view(&mut self, rows: Vec<Row>, contiguous: bool) {
        self.view = Some(rows);
        self.contiguous = contiguous;
        self.sample_starts = OnceLock::new();
    }

    /// The extension of a row.
    pub fn extension(&self, row: &Row) -> Option<&str> {
        self.index.extension(row)
    }

    /// The row's number in the index, for messages (a search: only on
    /// failure paths).
    fn row_number(&self, row: &Row) -> u64 {
        self.rows()
            .iter()
            .position(|r| r == row)
            .map_or(u64::MAX, |at| at as u64)
    }

    /// The row's shard, with what its member checks established while it
    /// is open.
    fn shard(&self, row: &Row) -> Result<(Arc<dyn Source>, Arc<Checked>)> {
        let fid = row.fid.get();
        let count = self.shards.set().count();
        if usize::from(fid) >= count {
            return Err(TaridxError::FidOutOfRange {
                row: self.row_number(row),
                fid,
                shards: count,
            });
        }
        self.shards.get_checked(fid, || {
            self.index
                .places()
                .and_then(|places| places.shard_range(fid))
                .unwrap_or(0..0)
        })
    }

    /// Loads the tar headers of `rows` that sit in mapped shards into the
    /// processor's caches, every header's cache lines requested before any
    /// is waited for, so that checking a batch of zero-copy samples waits
    /// for memory once, not once per header. Only a hint: nothing is
    /// checked, an unopened or unmapped shard is skipped, and the reads
    /// that follow check everything as always.
    pub fn touch_headers(&self, rows: &[Row]) {
        const LINE: usize = 64;
        let mut sum = 0u8;
        let mut last: Option<(u16, Arc<dyn Source>)> = None;
        for row in rows {
            let fid = row.fid.get();
            let shard = match &last {
                Some((open, shard)) if *open == fid => Arc::clone(shard),
                _ => match self.shards.open_source(fid) {
                    Some(shard) => {
                        last = Some((fid, Arc::clone(&shard)));
                        shard
                    }
                    None => continue,
                },
            };
            if let Some(header) = shard.borrow_at(row.offset.get(), crate::tar::BLOCK_SIZE as u64) {
                for line in header.iter().step_by(LINE) {
                    sum = sum.wrapping_add(*line);
                }
            }
        }
        std::hint::black_box(sum);
    }

    /// Announces that `rows` (a sample's, say) will be read: each shard is
    /// told what checking and reading them takes (each member's
    /// predecessor header, the gap before it, its header and payload), so
    /// a source that pays per request (a remote shard) fetches a sample in
    /// one merged request instead of several per member. Local shards
    /// ignore it.
    pub fn prefetch(&self, rows: &[Row]) {
        self.announce_rows(rows, Self::member_end);
    }

    /// Announces that the tar headers of `rows` will be read
    /// ([`Dataset::member_info`], a listing): what checking each row reads,
    /// payloads left out, so a remote shard fetches them in a few merged
    /// requests, several at once.
    pub fn prefetch_headers(&self, rows: &[Row]) {
        self.announce_rows(rows, |row| {
            row.offset.get().saturating_add(BLOCK_SIZE as u64)
        });
    }

    /// Hands each shard the check ranges of its rows, the last one
    /// extended to `end(row)`.
    fn announce_rows(&self, rows: &[Row], end: impl Fn(&Row) -> u64) {
        let mut ranges: BTreeMap<u16, Vec<Range<u64>>> = BTreeMap::new();
        for row in rows {
            let [predecessor, mut own] = self.index.check_ranges(row);
            own.end = own.end.max(end(row));
            let shard = ranges.entry(row.fid.get()).or_default();
            shard.extend(
                [predecessor, own]
                    .into_iter()
                    .filter(|range| !range.is_empty()),
            );
        }
        for (fid, mut ranges) in ranges {
            ranges.sort_by_key(|range| range.start);
            self.announce(fid, ranges);
        }
    }

    /// Where a row's payload ends (as the row says; checked when read).
    fn member_end(row: &Row) -> u64 {
        row.payload_offset().saturating_add(row.size.get())
    }

    /// Hands `ranges` of shard `fid`, clamped to its length, to its
    /// [`Source::will_read`]; a shard that cannot be opened is left for the
    /// read to report.
    fn announce(&self, fid: u16, ranges: Vec<Range<u64>>) {
        if let Ok(shard) = self.shards.get(fid) {
            let len = shard.len();
            let ranges: Vec<Range<u64>> = ranges
                .into_iter()
                .map(|range| range.start.min(len)..range.end.min(len))
                .collect();
            shard.will_read(&ranges);
        }
    }

    /// What the tar header at the row's offset says, checked against the
    /// row ([`Index::check_row`]; its gap and predecessor once while its
    /// shard is open, spec/taridx.md §4.2).
    pub fn member_info(&self, row: &Row) -> Result<MemberInfo> {
        let (shard, checked) = self.shard(row)?;
        let lookup = self.index.look_up(row, &checked)?;
        self.index
            .check_looked_up(&*shard, row, &lookup, &checked)
            .map_err(|error| self.renumber(error, row))
    }

    /// A reader of the row's payload, after its tar header was checked
    /// against the row.
    pub fn member(&self, row: &Row) -> Result<MemberReader> {
        let (shard, checked) = self.shard(row)?;
        let lookup = self.index.look_up(row, &checked)?;
        let source = self.announce_run(shard, std::iter::once((row, &lookup)));
        self.checked_member(&source, row, &lookup, &checked)
    }

    /// Readers of the payloads of `rows` (a sample's), in their order,
    /// each member's tar header checked against its row first (as
    /// [`Dataset::member`] does). The rows of one shard are read together:
    /// what checking and reading them takes is announced to the shard in
    /// one call (a remote shard fetches it in one merged request), and when
    /// it spans at most 64 KiB of a shard that is not mapped, it is read in
    /// one request and the headers checked and payloads read from memory.
    pub fn sample_members(&self, rows: &[Row]) -> Result<Vec<MemberReader>> {
        let mut members: Vec<MemberReader> =
            alloc::vec_with_capacity(rows.len(), "taridx sample members")?;
        let mut rest = rows;
        while let Some(first) = rest.first() {
            let ShardRun {
                rows: run,
                tail,
                shard,
                checked,
                lookups,
            } = self.shard_run(rest, first)?;
            let source = self.announce_run(shard, run.iter().zip(&lookups));
            for (row, lookup) in run.iter().zip(&lookups) {
                members.push(self.checked_member(&source, row, lookup, &checked)?);
            }
            rest = tail;
        }
        Ok(members)
    }

    /// Reads the payloads of `rows` (a sample's, say) into `payloads`, one
    /// buffer per row, each as long as its row's size; every member's tar
    /// header is checked against its row first, as [`Dataset::sample_members`]
    /// does, and what each header said is returned. Members whose gaps were
    /// checked already (spec/taridx.md §4.2) and that span at most 64 KiB of
    /// a shard are read in one vectored request, headers into a scratch
    /// buffer and payloads straight into `payloads` (no second copy); the
    /// others through [`Dataset::sample_members`]. On an error the buffers
    /// hold no meaning.
    pub fn read_sample_into(
        &self,
        rows: &[Row],
        payloads: &mut [&mut [u8]],
    ) -> Result<Vec<MemberInfo>> {
        if rows.len() != payloads.len()
            || rows
                .iter()
                .zip(payloads.iter())
                .any(|(row, payload)| payload.len() as u64 != row.size.get())
        {
            return Err(TaridxError::from_io(
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "read_sample_into: one buffer per row, as long as its size",
                ),
                self.index.source().name(),
            ));
        }
        let mut infos = alloc::vec_with_capacity(rows.len(), "taridx sample members")?;
        let (mut rest, mut buffers) = (rows, payloads);
        while let Some(first) = rest.first() {
            let ShardRun {
                rows: run,
                tail,
                shard,
                checked,
                lookups,
            } = self.shard_run(rest, first)?;
            let (run_buffers, tail_buffers) = std::mem::take(&mut buffers).split_at_mut(run.len());
            let span = scatter::span(run, shard.len())
                .filter(|_| shard.in_memory().is_none() && lookups.iter().all(|l| l.known));
            if let Some(span) = span {
                shard.will_read(std::slice::from_ref(&span));
                let headers = scatter::Headers::read(&shard, span, run, run_buffers)
                    .map_err(|error| TaridxError::from_io(error, shard.name()))?;
                for (row, lookup) in run.iter().zip(&lookups) {
                    let info = self
                        .index
                        .check_looked_up(&headers, row, lookup, &checked)
                        .map_err(|error| self.renumber(error, row))?;
                    infos.push(info);
                }
            } else {
                let source = self.announce_run(shard, run.iter().zip(&lookups));
                for ((row, lookup), buffer) in run.iter().zip(&lookups).zip(run_buffers.iter_mut())
                {
                    let mut member = self.checked_member(&source, row, lookup, &checked)?;
                    std::io::Read::read_exact(&mut member, buffer)
                        .map_err(|error| TaridxError::from_io(error, source.name()))?;
                    infos.push(member.info().clone());
                }
            }
            rest = tail;
            buffers = tail_buffers;
        }
        Ok(infos)
    }

    /// The leading rows of `rows` (`first` is the first) that are in one
    /// shard, with the shard, what its checks established and each row's
    /// lookup; and the rows after them.
    fn shard_run<'r>(&self, rows: &'r [Row], first: &Row) -> Result<ShardRun<'r>> {
        let fid = first.fid.get();
        let count = rows.iter().take_while(|row| row.fid.get() == fid).count();
        let (run, tail) = rows.split_at(count);
        let (shard, checked) = self.shard(first)?;
        let lookups = run
            .iter()
            .map(|row| {
                self.index
                    .look_up_numbered(row, self.row_place(row), &checked)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(ShardRun {
            rows: run,
            tail,
            shard,
            checked,
            lookups,
        })
    }

    /// Announces to `shard` what checking and reading `rows` (of that
    /// shard) takes, and reads their headers and payloads in one request
    /// when they span little enough ([`Window`]): the source to read them
    /// from.
    fn announce_run<'r>(
        &self,
        shard: Arc<dyn Source>,
        rows: impl Iterator<Item = (&'r Row, &'r Lookup)>,
    ) -> Arc<dyn Source> {
        let len = shard.len();
        let mut hints: Vec<Range<u64>> = Vec::new();
        let mut span: Option<Range<u64>> = None;
        for (row, lookup) in rows {
            let [predecessor, own] = self.index.lookup_ranges(row, lookup, Self::member_end(row));
            span = Some(match span {
                Some(span) => span.start.min(own.start)..span.end.max(own.end),
                None => own.clone(),
            });
            hints.extend(
                [predecessor, own]
                    .into_iter()
                    .map(|range| range.start.min(len)..range.end.min(len))
                    .filter(|range| !range.is_empty()),
            );
        }
        hints.sort_by_key(|range| range.start);
        shard.will_read(&hints);
        match span.and_then(|span| Window::read(&shard, span.start, span.end)) {
            Some(window) => Arc::new(window),
            None => shard,
        }
    }

    /// The reader of `row` in `source`, after its check.
    fn checked_member(
        &self,
        source: &Arc<dyn Source>,
        row: &Row,
        lookup: &Lookup,
        checked: &Checked,
    ) -> Result<MemberReader> {
        let info = self
            .index
            .check_looked_up(&**source, row, lookup, checked)
            .map_err(|error| self.renumber(error, row))?;
        MemberReader::new(Arc::clone(source), row, info)
    }

    /// The number of `row` when it is one of [`Dataset::rows`] itself (a
    /// slice of them, as [`Dataset::sample`] lends), found by its address:
    /// a hint for the lookup, which checks it.
    fn row_place(&self, row: &Row) -> Option<usize> {
        let rows = self.rows();
        let size = std::mem::size_of::<Row>();
        let base = rows.as_ptr() as usize;
        let offset = (row as *const Row as usize).checked_sub(base)?;
        (offset % size == 0 && offset / size < rows.len()).then_some(offset / size)
    }

    /// The row's payload in a buffer ([`Dataset::member`], read to the end).
    pub fn read(&self, row: &Row) -> Result<Vec<u8>> {
        // A small member: a buffer of the row's size (at most 64 KiB, so
        // allocating before the check is bounded) filled by one vectored
        // read with its header (`read_sample_into`).
        if let Some(len) = usize::try_from(row.size.get())
            .ok()
            .filter(|&len| len as u64 <= WINDOW_LIMIT)
        {
            let mut bytes = vec![0u8; len];
            self.read_sample_into(std::slice::from_ref(row), &mut [&mut bytes])?;
            return Ok(bytes);
        }
        self.member(row)?.into_vec()
    }

    /// Puts the row's number into an error raised without it.
    fn renumber(&self, error: TaridxError, row: &Row) -> TaridxError {
        match error {
            TaridxError::RowMismatch {
                shard,
                offset,
                problem,
                ..
            } => TaridxError::RowMismatch {
                row: self.row_number(row),
                shard,
                offset,
                problem,
            },
            TaridxError::PayloadPastShard {
                fid,
                offset,
                size,
                shard_len,
                ..
            } => TaridxError::PayloadPastShard {
                row: self.row_number(row),
                fid,
                offset,
                size,
                shard_len,
            },
            other => other,
        }
    }
}

/// Rows of one shard read together ([`Dataset::shard_run`]).
struct ShardRun<'r> {
    rows: &'r [Row],
    tail: &'r [Row],
    shard: Arc<dyn Source>,
    checked: Arc<Checked>,
    lookups: Vec<Lookup>,
}
