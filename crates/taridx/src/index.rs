//! Reading an index: [`Index::new`] reads the header and the two text
//! blocks (nothing that grows with the number of rows) and hands out the
//! rows, borrowed in place when the source is in memory and read on demand
//! otherwise; [`Index::verify`] walks every row, and with the shards checks
//! every row against the tar header it points at and that no member of a
//! shard is left without a row ([`Index::check_coverage`]).
//!
//! Memory: the extension block becomes at most 65,536 strings (extids are
//! 16 bits, so a larger `n_ext` is refused before anything is decoded); the
//! crash-stem block stays as stored bytes, counted against `n_crash` before
//! anything else, and a lookup table of 8 bytes per crash stem is built the
//! first time a crash stem is looked up.

use std::borrow::Cow;
use std::collections::HashSet;
use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use binfmt_core::layout::{FromBytes, Record};
use binfmt_core::{ByteSource, Source, SourceExt};

use crate::error::{Result, RowProblem, TaridxError};
use crate::format::{
    FLAG_CONTIGUOUS, FLAG_WEBDATASET_KEYS, HEADER_SIZE, Header, MAGIC, ROW_SIZE, Row, VERSION_MAJOR,
};
use crate::keys::{KeyRule, keyhash};
use crate::member::{MemberInfo, check_member};
use crate::places::{Place, Places};

/// How a row's gap is read by [`Index::check_against`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum Gap {
    /// From the end of the row before it in its shard (its header checked
    /// unless trusted), or from the shard's start.
    After(Option<Place>, bool),
    /// Already checked while its shard is open: the row's header alone.
    Checked,
}
use crate::shards::ShardSet;

/// The most extensions an index can use: extids are 16 bits.
pub const MAX_EXTENSIONS: u64 = 1 << 16;

/// The largest size the 11 octal digits of a ustar size field hold.
const MAX_OCTAL_SIZE: u64 = 0o777_7777_7777;

/// Rows whose checks [`Index::verify`] announces to their shard at once.
const CHECK_WINDOW: usize = 1024;

/// A `.taridx` file whose header and blocks have been checked.
///
/// # Examples
///
/// ```
/// use binfmt_taridx::{Index, IndexBuilder, KeyRule, tar::Member};
///
/// let mut builder = IndexBuilder::new(KeyRule::Glzn);
/// builder.add(0, Member { offset: 0, size: 3, name: b"a/000001.jpg".to_vec() })?;
/// let bytes = builder.write_to(Vec::new())?;
///
/// let index = Index::new(bytes)?; // any binfmt_core::Source; Index::open maps a path
/// assert_eq!(index.extensions(), ["jpg"]);
/// assert_eq!(index.row(0)?.size.get(), 3);
/// index.verify(None)?;
/// # Ok::<(), binfmt_taridx::TaridxError>(())
/// ```
#[derive(Debug)]
pub struct Index<S = ByteSource> {
    source: S,
    version: (u16, u16),
    n_stems: u64,
    flags: u8,
    off_arr: u64,
    n_rows: u64,
    extensions: Vec<String>,
    crash: CrashBlock,
    /// The rows in shard order, built on the first member check.
    places: OnceLock<Places>,
}

/// The crash-stem block as stored, and the lookup table built on first use.
#[derive(Debug)]
struct CrashBlock {
    /// The block's bytes: a range of the source when it is in memory, a copy
    /// otherwise. Checked UTF-8.
    bytes: BlockBytes,
    count: u32,
    table: OnceLock<CrashTable>,
}

#[derive(Debug)]
enum BlockBytes {
    InSource(Range<usize>),
    Owned(String),
}

/// Line starts in crash-id order, and the same ids sorted by stem.
#[derive(Debug)]
struct CrashTable {
    starts: Vec<u32>,
    sorted: Vec<u32>,
}

impl Index<ByteSource> {
    /// Opens and checks the index at `path`, memory-mapped when possible.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::new(ByteSource::open(path)?)
    }
}

impl<S: Source> Index<S> {
    /// Checks the index held in `source`: every MUST and SHOULD of the
    /// format's reader requirements except the per-row ones, which
    /// [`Index::verify`] adds. Reads the 64-byte header and the two blocks
    /// (one read each), never the rows.
    pub fn new(source: S) -> Result<Self> {
        let len = source.len();
        if len < u64::from(HEADER_SIZE) {
            return Err(binfmt_core::Error::Truncated {
                what: "taridx header".into(),
                offset: 0,
                needed: HEADER_SIZE.into(),
                available: len,
            }
            .into());
        }
        // The header and, in most indexes, both blocks lie in the first 512
        // bytes: announced, a remote source fetches them in one request.
        source.will_read(std::slice::from_ref(&(0..len.min(512))));
        let header: Header = source.record_at(0)?;
        if header.magic != MAGIC {
            return Err(
                binfmt_core::Error::bad_magic("taridx header", 0, &MAGIC, &header.magic).into(),
            );
        }
        let (major, minor) = (header.major.get(), header.minor.get());
        if major != VERSION_MAJOR {
            return Err(binfmt_core::Error::UnsupportedVersion {
                what: "taridx".into(),
                found: format!("{major}.{minor}"),
                supported: "this reader reads major version 1".into(),
            }
            .into());
        }
        if header.hdr_size.get() != HEADER_SIZE {
            return Err(TaridxError::BadHeaderSize {
                found: header.hdr_size.get(),
            });
        }
        if header.rec_size.get() != ROW_SIZE {
            return Err(TaridxError::BadRecordSize {
                found: header.rec_size.get(),
            });
        }
        let (off_crash, off_arr) = (header.off_crash.get(), header.off_arr.get());
        if off_crash < u64::from(HEADER_SIZE) {
            return Err(TaridxError::CrashBlockInHeader { off_crash });
        }
        if off_arr < off_crash {
            return Err(TaridxError::RowsBeforeCrashBlock { off_crash, off_arr });
        }
        if off_arr > len {
            return Err(TaridxError::RowsPastEnd { off_arr, len });
        }
        let row_bytes = len - off_arr;
        if row_bytes % u64::from(ROW_SIZE) != 0 {
            return Err(TaridxError::RaggedRows { bytes: row_bytes });
        }
        let n_rows = row_bytes / u64::from(ROW_SIZE);
        if n_rows != header.n_rows.get() {
            return Err(TaridxError::RowCountMismatch {
                header: header.n_rows.get(),
                actual: n_rows,
            });
        }
        let n_ext = header.n_ext.get();
        if u64::from(n_ext) > MAX_EXTENSIONS {
            return Err(TaridxError::TooManyExtensions {
                count: n_ext.into(),
            });
        }
        // One read for both blocks, announced so that a remote source
        // fetches what the first 512 bytes did not hold and reads ahead no
        // further (into the rows, which `taridx info` never reads).
        let header_end = u64::from(HEADER_SIZE);
        source.will_read(std::slice::from_ref(&(header_end..off_arr)));
        let blocks = source.bytes_at(header_end, off_arr - header_end, "taridx blocks")?;
        let split = usize::try_from(off_crash - header_end).unwrap_or(usize::MAX);
        let (ext_bytes, crash_bytes) = blocks.split_at(split.min(blocks.len()));
        let ext_text = utf8(ext_bytes, "extension", header_end)?;
        let decoded = count_entries(ext_text, n_ext);
        if decoded != u64::from(n_ext) {
            return Err(TaridxError::ExtensionCountMismatch {
                header: n_ext,
                decoded,
            });
        }
        let extensions = split_entries(ext_text, n_ext).map(str::to_owned).collect();
        let n_crash = header.n_crash.get();
        let crash_text = utf8(crash_bytes, "crash-stem", off_crash)?;
        let decoded = count_entries(crash_text, n_crash);
        if decoded != u64::from(n_crash) {
            return Err(TaridxError::CrashCountMismatch {
                header: n_crash,
                decoded,
            });
        }
        let crash_len = crash_bytes.len();
        let bytes = match blocks {
            Cow::Borrowed(_) => {
                // Borrowed means the source is in memory: keep the range only.
                let start = usize::try_from(off_crash).unwrap_or(usize::MAX);
                BlockBytes::InSource(start..start + crash_len)
            }
            Cow::Owned(mut copy) => {
                // Keep the crash block of the one copy read, without a second.
                copy.drain(..split.min(copy.len()));
                BlockBytes::Owned(String::from_utf8(copy).map_err(|error| {
                    TaridxError::BlockNotUtf8 {
                        block: "crash-stem",
                        offset: off_crash + error.utf8_error().valid_up_to() as u64,
                    }
                })?)
            }
        };
        Ok(Self {
            version: (major, minor),
            n_stems: header.n_stems.get(),
            flags: header.flags,
            off_arr,
            n_rows,
            extensions,
            crash: CrashBlock {
                bytes,
                count: n_crash,
                table: OnceLock::new(),
            },
            places: OnceLock::new(),
            source,
        })
    }

    /// The format version, `(major, minor)`.
    pub fn version(&self) -> (u16, u16) {
        self.version
    }

    /// The number of distinct stems, as the header says.
    pub fn n_stems(&self) -> u64 {
        self.n_stems
    }

    /// The number of rows.
    pub fn num_rows(&self) -> u64 {
        self.n_rows
    }

    /// Whether the header says rows are contiguous by `(keyhash, crashid)`.
    pub fn is_contiguous(&self) -> bool {
        self.flags & FLAG_CONTIGUOUS != 0
    }

    /// The rule that made the keys (flag bit 1).
    pub fn key_rule(&self) -> KeyRule {
        if self.flags & FLAG_WEBDATASET_KEYS != 0 {
            KeyRule::WebDataset
        } else {
            KeyRule::Glzn
        }
    }

    /// Extension names, indexed by extid.
    pub fn extensions(&self) -> &[String] {
        &self.extensions
    }

    /// The extension of a row, if its extid is in range.
    pub fn extension(&self, row: &Row) -> Option<&str> {
        self.extensions
            .get(usize::from(row.extid.get()))
            .map(String::as_str)
    }

    fn crash_text(&self) -> &str {
        match &self.crash.bytes {
            BlockBytes::Owned(text) => text,
            BlockBytes::InSource(range) => self
                .source
                .in_memory()
                .and_then(|bytes| bytes.get(range.clone()))
                .and_then(|bytes| std::str::from_utf8(bytes).ok())
                .unwrap_or_default(),
        }
    }

    /// The number of crash stems.
    pub fn num_crash_stems(&self) -> u32 {
        self.crash.count
    }

    /// Crash stems in crash-id order: entry `i` has crash id `i + 1`.
    pub fn crash_stems(&self) -> impl Iterator<Item = &str> {
        split_entries(self.crash_text(), self.crash.count)
    }

    fn crash_table(&self) -> &CrashTable {
        self.crash.table.get_or_init(|| {
            let text = self.crash_text();
            // Offsets fit in u32: a block over 4 GiB has no table (lookups
            // then find nothing, and verify reports the rows).
            let count = self.crash.count as usize;
            let mut starts: Vec<u32> = Vec::new();
            if text.len() < u32::MAX as usize {
                // `count` was checked against the block's lines at open.
                starts.reserve_exact(count);
                starts.extend(
                    std::iter::once(0)
                        .chain(text.match_indices('\n').map(|(at, _)| at as u32 + 1))
                        .take(count),
                );
            }
            let mut sorted: Vec<u32> = Vec::with_capacity(starts.len());
            sorted.extend(0..starts.len() as u32);
            let table = CrashTable {
                starts,
                sorted: Vec::new(),
            };
            sorted.sort_unstable_by(|&a, &b| table.stem(text, a).cmp(table.stem(text, b)));
            CrashTable { sorted, ..table }
        })
    }

    /// The crash stem with crash id `id` (1-based).
    pub fn crash_stem(&self, id: u32) -> Option<&str> {
        let index = id.checked_sub(1)?;
        let table = self.crash_table();
        (index < table.starts.len() as u32).then(|| table.stem(self.crash_text(), index))
    }

    /// The crash id of `key`: its position in the crash table plus one, or
    /// 0 when it is not there (the canonical key of its hash).
    pub fn crash_id(&self, key: &str) -> u32 {
        if self.crash.count == 0 {
            return 0;
        }
        let table = self.crash_table();
        let text = self.crash_text();
        table
            .sorted
            .binary_search_by(|&index| table.stem(text, index).cmp(key))
            .ok()
            .and_then(|at| table.sorted.get(at))
            .map_or(0, |&index| index + 1)
    }

    /// Row `i`, read from the source (a 32-byte read when it is not in memory).
    pub fn row(&self, i: u64) -> Result<Row> {
        if i >= self.n_rows {
            return Err(binfmt_core::Error::OutOfBounds {
                what: "taridx row".into(),
                offset: i,
                len: 1,
                file_size: self.n_rows,
            }
            .into());
        }
        Ok(self
            .source
            .record_at(self.off_arr + i * u64::from(ROW_SIZE))?)
    }

    /// How many shards the rows point into: one more than the largest fid
    /// (reads the rows when they are not in memory).
    pub fn shard_count(&self) -> Result<usize> {
        Ok(self
            .rows()?
            .iter()
            .map(|row| usize::from(row.fid.get()) + 1)
            .max()
            .unwrap_or(0))
    }

    /// All rows: borrowed in place when the source is in memory, read in one
    /// request otherwise (32 bytes per row, the size of the row region).
    pub fn rows(&self) -> Result<Cow<'_, [Row]>> {
        let bytes = self.source.bytes_at(
            self.off_arr,
            self.n_rows * u64::from(ROW_SIZE),
            "taridx rows",
        )?;
        Ok(match bytes {
            Cow::Borrowed(bytes) => Cow::Borrowed(Row::slice_at(bytes, 0, self.n_rows)?),
            Cow::Owned(bytes) => Cow::Owned(
                bytes
                    .chunks_exact(usize::from(ROW_SIZE))
                    .filter_map(|chunk| Row::read_from_bytes(chunk).ok())
                    .collect(),
            ),
        })
    }

    /// The rows when the source is in memory, viewed in place.
    pub fn rows_in_memory(&self) -> Option<&[Row]> {
        let bytes = self.source.in_memory()?;
        Row::slice_at(bytes, self.off_arr, self.n_rows).ok()
    }

    /// The storage the index reads from.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// The rows in shard order (built once, 32 bytes per row), with the
    /// check that no two rows alias one member or overlap.
    pub(crate) fn places(&self) -> Result<&Places> {
        if let Some(places) = self.places.get() {
            return Ok(places);
        }
        let places = Places::new(&self.rows()?)?;
        Ok(self.places.get_or_init(|| places))
    }

    /// Builds the sorted view from `rows`, the index's rows already read
    /// (a source that is not in memory: no second read of the rows).
    pub(crate) fn seed_places(&self, rows: &[Row]) -> Result<()> {
        if self.places.get().is_none() {
            let places = Places::new(rows)?;
            let _ = self.places.set(places);
        }
        Ok(())
    }

    /// The bytes of its shard that checking `row` reads up to the end of
    /// its header, as hints for a source that pays per request: the
    /// predecessor's header and the gap from the predecessor's end (or
    /// the shard's start); a row that cannot be placed gets a lookback
    /// guess, and its read reports why.
    pub(crate) fn check_ranges(&self, row: &Row) -> [Range<u64>; 2] {
        let offset = row.offset.get();
        let header_end = offset.saturating_add(crate::tar::BLOCK);
        match self
            .places()
            .and_then(|places| places.before(row.fid.get(), offset))
        {
            Ok(Some(before)) => [
                before.offset..before.offset.saturating_add(crate::tar::BLOCK),
                before.padded_end().min(offset)..header_end,
            ],
            Ok(None) => [0..0, 0..header_end],
            Err(_) => [
                0..0,
                offset.saturating_sub(crate::member::NEAR_LOOKBACK)..header_end,
            ],
        }
    }

    /// Checks row `number` against the tar header it points at in `shard`
    /// ([`crate::Dataset::member`] does this before every read): see
    /// spec/taridx.md §4 for the rules. Returns the member's real name.
    ///
    /// The first check sorts the rows by shard and offset (once), and
    /// refuses an index whose rows alias one member or overlap.
    pub fn check_row<T: Source + ?Sized>(
        &self,
        shard: &T,
        number: u64,
        row: &Row,
    ) -> Result<MemberInfo> {
        self.check_row_with(shard, number, row, false)
    }

    /// [`Index::check_row`]; with `trust_predecessor`, the row before it in
    /// the shard is known to be right (verify checks rows in shard order).
    fn check_row_with<T: Source + ?Sized>(
        &self,
        shard: &T,
        number: u64,
        row: &Row,
        trust_predecessor: bool,
    ) -> Result<MemberInfo> {
        let before = self.places()?.before(row.fid.get(), row.offset.get())?;
        self.check_against(shard, number, row, Gap::After(before, trust_predecessor))
    }

    /// The checks of spec/taridx.md §4.2 of `row` against its member, the
    /// gap before it read as `gap` says.
    pub(crate) fn check_against<T: Source + ?Sized>(
        &self,
        shard: &T,
        number: u64,
        row: &Row,
        gap: Gap,
    ) -> Result<MemberInfo> {
        let located = |failure: crate::member::Failure| failure.at(shard, number, row);
        let mismatch = |problem| TaridxError::RowMismatch {
            row: number,
            shard: shard.name().to_owned(),
            offset: row.offset.get(),
            problem: Box::new(problem),
        };
        let gap_start = match gap {
            Gap::Checked => row.offset.get(),
            Gap::After(Some(before), trust_predecessor) => {
                if !trust_predecessor {
                    self.check_predecessor(shard, &before)
                        .map_err(|failure| match failure {
                            PredecessorFailure::Problem(problem) => {
                                mismatch(RowProblem::Predecessor {
                                    row: before.row,
                                    offset: before.offset,
                                    problem: Box::new(problem),
                                })
                            }
                            // A read that failed (a server's 500, a
                            // file gone) is that failure, never a verdict
                            // on the shard's bytes.
                            PredecessorFailure::Read(error) => error,
                        })?;
                }
                before.padded_end()
            }
            Gap::After(None, _) => 0,
        };
        let info = check_member(shard, row, gap_start).map_err(located)?;
        if info.size != row.size.get() {
            return Err(mismatch(RowProblem::Size {
                member: info.size,
                row: row.size.get(),
            }));
        }
        let split = self.key_rule().split(&info.name);
        if keyhash(&split.key) != row.keyhash.get() {
            return Err(mismatch(RowProblem::Key {
                name: info.name,
                key: split.key,
            }));
        }
        let row_extension = self.extension(row).unwrap_or_default();
        if split.extension != row_extension {
            return Err(mismatch(RowProblem::Extension {
                name: info.name,
                member: split.extension,
                row: row_extension.to_owned(),
            }));
        }
        let expected = self.crash_id(&split.key);
        if expected != row.crashid.get() {
            return Err(mismatch(RowProblem::CrashId {
                name: info.name,
                row: row.crashid.get(),
                expected,
            }));
        }
        Ok(info)
    }

    /// Checks that the row before another in its shard describes its
    /// member's extent: its header is a regular file whose size field is
    /// the row's size. A size that the 11 octal digits of the field cannot
    /// hold comes from a pax record, and that row is then checked in full
    /// (each such member holds 8 GiB of the shard, so this recursion is
    /// bounded by the shard's size / 8 GiB).
    fn check_predecessor<T: Source + ?Sized>(
        &self,
        shard: &T,
        before: &Place,
    ) -> std::result::Result<(), PredecessorFailure> {
        use PredecessorFailure::{Problem, Read};
        let bytes = shard
            .bytes_at(before.offset, crate::tar::BLOCK, "tar header")
            .map_err(|error| Read(TaridxError::from(error)))?;
        let Some(block) = bytes.first_chunk::<{ crate::tar::BLOCK_SIZE }>() else {
            return Err(Problem(RowProblem::NotAHeader));
        };
        let header = crate::tar::HeaderBlock::new(block);
        if !header.checksum_is_valid() {
            return Err(Problem(RowProblem::NotAHeader));
        }
        if !matches!(header.typeflag(), b'0' | 0 | b'7') {
            return Err(Problem(RowProblem::NotAFile {
                typeflag: char::from(header.typeflag()),
            }));
        }
        let field = header
            .size()
            .map_err(|error| Problem(RowProblem::Tar(error)))?;
        let size = before.size();
        if field == size {
            return Ok(());
        }
        if size > MAX_OCTAL_SIZE {
            let row = self.row(before.row).map_err(Read)?;
            return match self.check_row(shard, before.row, &row) {
                Ok(_) => Ok(()),
                Err(TaridxError::RowMismatch { problem, .. }) => Err(Problem(*problem)),
                Err(error) => Err(Read(error)),
            };
        }
        Err(Problem(RowProblem::Size {
            member: field,
            row: size,
        }))
    }

    /// Walks every row: extension and crash ids in range, no two rows on one
    /// member, no overlapping members, payload sizes that add up without
    /// overflow, and the header's `n_stems` and contiguity flag true of the
    /// rows. With `shards`, also every fid in range and every row checked
    /// against the tar header it points at ([`Index::check_row`]), shard by
    /// shard, each shard open only while its rows are checked, then every
    /// member of every shard covered by a row ([`Index::check_coverage`]).
    /// Returns the total payload bytes.
    ///
    /// Time is linear in the rows (plus a sort) and in the shard bytes
    /// between members (read once: the gaps do not overlap); memory is the
    /// sorted view, 32 bytes per row.
    pub fn verify(&self, shards: Option<&dyn ShardSet>) -> Result<u64> {
        let rows = self.rows()?;
        let n_ext = self.extensions.len() as u32;
        let n_crash = self.crash.count;
        let mut total = 0u64;
        for (number, row) in (0u64..).zip(rows.iter()) {
            let extid = row.extid.get();
            if u32::from(extid) >= n_ext {
                return Err(TaridxError::ExtidOutOfRange {
                    row: number,
                    extid,
                    n_ext,
                });
            }
            let crashid = row.crashid.get();
            if crashid > n_crash {
                return Err(TaridxError::CrashidOutOfRange {
                    row: number,
                    crashid,
                    n_crash,
                });
            }
            let (offset, size) = (row.offset.get(), row.size.get());
            total = total
                .checked_add(size)
                .ok_or(TaridxError::TotalOverflow { row: number })?;
            offset
                .checked_add(crate::tar::BLOCK)
                .and_then(|start| start.checked_add(size))
                .ok_or_else(|| binfmt_core::Error::Overflow {
                    what: format!("row {number} member").into(),
                    offset,
                    len: size,
                })?;
        }
        let places = self.places()?.sorted()?;
        let distinct = rows.iter().map(Row::key).collect::<HashSet<_>>().len() as u64;
        if distinct != self.n_stems {
            return Err(TaridxError::StemCountMismatch {
                header: self.n_stems,
                actual: distinct,
            });
        }
        let actual = rows_contiguous(rows.iter(), distinct);
        if actual != self.is_contiguous() {
            return Err(TaridxError::ContiguityFlagWrong {
                flag: self.is_contiguous(),
                actual,
            });
        }
        if let Some(shards) = shards {
            // Every fid first: a row in a shard that does not exist also
            // leaves a gap in the shard it should be in.
            if let Some(place) = places
                .iter()
                .find(|place| usize::from(place.fid) >= shards.count())
            {
                return Err(TaridxError::FidOutOfRange {
                    row: place.row,
                    fid: place.fid,
                    shards: shards.count(),
                });
            }
            let mut open: Option<(u16, Arc<dyn Source>)> = None;
            // Places up to here have had their checks announced.
            let mut announced = 0;
            for (
                at,
                &Place {
                    fid, row: number, ..
                },
            ) in places.iter().enumerate()
            {
                let shard = match &open {
                    Some((open_fid, shard)) if *open_fid == fid => Arc::clone(shard),
                    _ => {
                        let shard = shards.open(fid)?;
                        // A member past the shard's end first: it is the
                        // shard's last (members do not overlap), and would
                        // otherwise show as a member the rows before omit.
                        let last = places
                            .get(places.partition_point(|place| place.fid <= fid) - 1)
                            .filter(|last| last.end > shard.len());
                        if let Some(last) = last {
                            return Err(TaridxError::PayloadPastShard {
                                row: last.row,
                                fid,
                                offset: last.offset,
                                size: last.size(),
                                shard_len: shard.len(),
                            });
                        }
                        open = Some((fid, Arc::clone(&shard)));
                        shard
                    }
                };
                if at >= announced {
                    announced = at + self.announce_checks(&*shard, &rows, places.get(at..));
                }
                let row = rows.get(number as usize).copied().ok_or_else(|| {
                    binfmt_core::Error::corrupt("taridx rows", "row vanished during verify")
                })?;
                self.check_row_with(&*shard, number, &row, true)?;
            }
            self.check_coverage(shards)?;
        }
        Ok(total)
    }

    /// Tells `shard` what checking the next places (up to
    /// [`CHECK_WINDOW`], those in the shard of the first) reads when each
    /// predecessor is already checked: the gap before each member and its
    /// header. A remote shard then fetches them several requests at once
    /// instead of one after another. Returns how many places it covered.
    fn announce_checks<T: Source + ?Sized>(
        &self,
        shard: &T,
        rows: &[Row],
        places: Option<&[Place]>,
    ) -> usize {
        let places = places.unwrap_or_default();
        let Some(first) = places.first() else {
            return 0;
        };
        let window: Vec<&Place> = places
            .iter()
            .take(CHECK_WINDOW)
            .take_while(|place| place.fid == first.fid)
            .collect();
        let ranges: Vec<Range<u64>> = window
            .iter()
            .filter_map(|place| rows.get(usize::try_from(place.row).ok()?))
            .map(|row| {
                let [_, own] = self.check_ranges(row);
                own.start.min(shard.len())..own.end.min(shard.len())
            })
            .collect();
        shard.will_read(&ranges);
        window.len()
    }

    /// Checks that the rows account for every regular file of every shard:
    /// none after a shard's last row (up to its end-of-archive: an
    /// all-zero block or the end of the file) and none in a shard without
    /// rows; refuses the first one found with [`TaridxError::UncoveredMember`]
    /// (the members between rows are checked with each row,
    /// [`Index::check_row`]). With [`Index::verify`] and a row check on every
    /// member, an index passing it lists each member of its shards exactly
    /// once.
    ///
    /// Reads each shard's last row's member check ([`Index::check_row`]:
    /// its header and the gap before it), then only the tar headers after
    /// it (usually the two end-of-archive blocks); in a shard without rows,
    /// its headers up to its first member. The other rows are not checked
    /// here.
    /// Refuses rows that alias one member or overlap, and a fold of more
    /// shards than fids can number.
    pub fn check_coverage(&self, shards: &dyn ShardSet) -> Result<()> {
        let places = self.places()?;
        let count = shards.count();
        for fid in 0..count {
            let fid = u16::try_from(fid).map_err(|_| TaridxError::TooManyShards { count })?;
            let shard = shards.open(fid)?;
            // Read on from the shard's last row only once its member is
            // checked (§4.2): its end is then where tar's next entry starts.
            let start = match places.before(fid, u64::MAX)? {
                Some(last) => {
                    let row = self.row(last.row)?;
                    self.check_row(&*shard, last.row, &row)?;
                    last.padded_end()
                }
                None => 0,
            };
            if let Some(member) = crate::tar::first_member_from(&*shard, start)? {
                return Err(TaridxError::UncoveredMember {
                    shard: shards.name(fid),
                    fid,
                    offset: member.offset,
                    name: String::from_utf8_lossy(&member.name).into_owned(),
                });
            }
        }
        if let Some((shard, source)) = shards.unlisted()?
            && let Some(member) = crate::tar::first_member_from(&*source, 0)?
        {
            return Err(TaridxError::UncoveredMember {
                shard,
                fid: u16::try_from(count).unwrap_or(u16::MAX),
                offset: member.offset,
                name: String::from_utf8_lossy(&member.name).into_owned(),
            });
        }
        Ok(())
    }
}

/// Whether rows form exactly one run per key: fewer than two rows always
/// do; otherwise the number of runs of equal `(keyhash, crashid)` must equal
/// the number of distinct keys (the reference's rule).
pub fn rows_contiguous<'r>(rows: impl IntoIterator<Item = &'r Row>, distinct_keys: u64) -> bool {
    let mut keys = rows.into_iter().map(Row::key);
    let Some(mut last) = keys.next() else {
        return true;
    };
    let (mut rows, mut runs) = (1u64, 1u64);
    for key in keys {
        rows += 1;
        runs += u64::from(key != last);
        last = key;
    }
    rows < 2 || runs == distinct_keys
}

impl CrashTable {
    fn stem<'t>(&self, text: &'t str, index: u32) -> &'t str {
        let start = self.starts.get(index as usize).copied().unwrap_or(0) as usize;
        let rest = text.get(start..).unwrap_or_default();
        rest.split('\n').next().unwrap_or_default()
    }
}

fn utf8<'a>(bytes: &'a [u8], block: &'static str, offset: u64) -> Result<&'a str> {
    std::str::from_utf8(bytes).map_err(|error| TaridxError::BlockNotUtf8 {
        block,
        offset: offset + error.valid_up_to() as u64,
    })
}

/// The entries a block holds, counted without materialising them: an empty
/// block has none, except that an empty block counted as one is one empty
/// entry (the extension of members without a `.`); otherwise one more than
/// its newlines.
fn count_entries(text: &str, count: u32) -> u64 {
    if text.is_empty() {
        return u64::from(count == 1);
    }
    1 + memchr_count(text.as_bytes(), b'\n')
}

fn memchr_count(bytes: &[u8], needle: u8) -> u64 {
    bytes.iter().filter(|&&b| b == needle).count() as u64
}

/// The entries of a block (already counted by [`count_entries`]).
fn split_entries(text: &str, count: u32) -> impl Iterator<Item = &str> {
    let entries = if text.is_empty() { 0 } else { usize::MAX };
    text.split('\n').take(entries).chain(std::iter::repeat_n(
        "",
        usize::from(text.is_empty() && count == 1),
    ))
}

/// Why a predecessor's check failed: what its header says disagrees with
/// its row, or its header could not be read at all.
#[derive(Debug)]
enum PredecessorFailure {
    Problem(RowProblem),
    Read(TaridxError),
}
