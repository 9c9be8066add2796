//! Reading one member through its row, after checking that the tar header
//! at the row's offset describes that member.
//!
//! ```text
//!  end of the previous row's member           the row's offset
//!  (or 0)   gap: read forward, as tar does    │
//!  ┌──────────────┬───────────────┬───────────┼──────────────────┬────────────┐
//!  │ pax header x │ pax records   │ (GNU L..) │ ustar header     │ payload    │
//!  │ (512)        │ (padded)      │           │ (512): checked   │ (size)     │
//!  └──────────────┴───────────────┴───────────┴──────────────────┴────────────┘
//! ```
//!
//! The header must have a valid checksum and be a regular file; the name is
//! the real one: a pax `path` or GNU long name in the records of the gap
//! between the previous row's member in the same shard and the header, read
//! forward from the gap's start as tar reads them, else the header's own.
//! The gap must hold only records and entries that are not regular files
//! (a regular file there is a member the index omits), and must end exactly
//! at the row's header. Bytes inside another member's payload are never
//! read as records. A gap of up to 4 KiB is read together with the header,
//! in one read.

use std::borrow::Cow;
use std::io::{self, Read, Seek, SeekFrom};
use std::sync::Arc;

use binfmt_core::{Source, SourceExt, SourceRange};

use crate::error::{RowProblem, TaridxError};
use crate::format::Row;
use crate::tar::{self, BLOCK, BLOCK_SIZE, EntryKind, HeaderBlock, MAX_METADATA_SIZE};

/// The gap read in one piece with the header: room for a pax header with a
/// few kilobytes of records.
pub(crate) const NEAR_LOOKBACK: u64 = 8 * BLOCK;

/// What the tar header at a row's offset says about its member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberInfo {
    /// The full member name as tar reads it (U+FFFD for bytes that are not UTF-8).
    pub name: String,
    /// Whether the stored name is not UTF-8.
    pub name_not_utf8: bool,
    /// The payload size.
    pub size: u64,
    /// Whether the name came from a pax or GNU long-name record.
    pub from_record: bool,
    /// Where the member's first block is: its first pax or GNU record, or
    /// its header.
    pub first_block: u64,
    /// The header's mode, owner and time fields.
    pub metadata: tar::HeaderMetadata,
}

/// Why a member check failed before the row's own fields were compared.
#[derive(Debug)]
pub(crate) enum Failure {
    Problem(RowProblem),
    PastEnd { shard_len: u64 },
    Core(binfmt_core::Error),
}

impl From<binfmt_core::Error> for Failure {
    fn from(error: binfmt_core::Error) -> Self {
        Self::Core(error)
    }
}

impl From<RowProblem> for Failure {
    fn from(problem: RowProblem) -> Self {
        Self::Problem(problem)
    }
}

impl Failure {
    /// The error, located at row `number` of `shard`.
    pub(crate) fn at<S: Source + ?Sized>(self, shard: &S, number: u64, row: &Row) -> TaridxError {
        match self {
            Self::Problem(problem) => TaridxError::RowMismatch {
                row: number,
                shard: shard.name().to_owned(),
                offset: row.offset.get(),
                problem: Box::new(problem),
            },
            Self::PastEnd { shard_len } => TaridxError::PayloadPastShard {
                row: number,
                fid: row.fid.get(),
                offset: row.offset.get(),
                size: row.size.get(),
                shard_len,
            },
            Self::Core(error) => TaridxError::Core(error),
        }
    }
}

/// The records tar applies to the next header, gathered forward.
#[derive(Debug, Default)]
struct Records {
    name: Option<Vec<u8>>,
    size: Option<u64>,
    /// Where the first record of the current run starts.
    first: Option<u64>,
}

/// Reads the gap `gap_start..row offset` forward and the header at the
/// row's offset (one read when the gap is under [`NEAR_LOOKBACK`]) and
/// returns what they say; the caller compares it with the row.
pub(crate) fn check_member<S: Source + ?Sized>(
    shard: &S,
    row: &Row,
    gap_start: u64,
) -> Result<MemberInfo, Failure> {
    let (offset, size) = (row.offset.get(), row.size.get());
    if offset % BLOCK != 0 {
        return Err(Failure::Problem(RowProblem::Misaligned));
    }
    let shard_len = shard.len();
    let member_end = offset
        .checked_add(BLOCK)
        .and_then(|start| start.checked_add(size));
    if member_end.is_none_or(|end| end > shard_len) {
        return Err(Failure::PastEnd { shard_len });
    }
    let gap_start = gap_start.min(offset);
    let header_end = offset + BLOCK;
    // One read for a short gap and the header; longer gaps are read header
    // by header, payloads skipped.
    let window_start = if offset - gap_start <= NEAR_LOOKBACK {
        gap_start
    } else {
        offset
    };
    let window = shard.bytes_at(window_start, header_end - window_start, "tar header")?;
    let read = |start: u64, len: u64, what: &'static str| -> Result<Cow<'_, [u8]>, Failure> {
        let inside = start
            .checked_sub(window_start)
            .and_then(|from| usize::try_from(from).ok())
            .zip(usize::try_from(len).ok())
            .and_then(|(from, len)| window.get(from..from.checked_add(len)?));
        match inside {
            Some(bytes) => Ok(Cow::Borrowed(bytes)),
            None => Ok(shard.bytes_at(start, len, what)?),
        }
    };
    let header_bytes = read(offset, BLOCK, "tar header")?;
    let Some(header) = header_bytes.first_chunk::<BLOCK_SIZE>() else {
        return Err(Failure::Problem(RowProblem::NotAHeader));
    };
    let header = HeaderBlock::new(header);
    if !header.checksum_is_valid() {
        return Err(Failure::Problem(RowProblem::NotAHeader));
    }
    if !matches!(header.typeflag(), b'0' | 0 | b'7') {
        return Err(Failure::Problem(RowProblem::NotAFile {
            typeflag: char::from(header.typeflag()),
        }));
    }
    let records = read_gap(gap_start, offset, &read)?;
    let member_size = match records.size {
        Some(size) => size,
        None => header.size().map_err(RowProblem::Tar)?,
    };
    // The row's entry must be read as a regular file by every tool.
    {
        let own = header.path_bytes();
        tar::extent(
            header.typeflag(),
            [&own, records.name.as_deref().unwrap_or(&own)],
            member_size,
        )
        .map_err(RowProblem::Tar)?;
    }
    let from_record = records.name.is_some();
    let name = match records.name {
        Some(name) => tar::normalize(&name).to_vec(),
        None => tar::normalize(&header.path()).to_vec(),
    };
    Ok(MemberInfo {
        name_not_utf8: std::str::from_utf8(&name).is_err(),
        name: String::from_utf8_lossy(&name).into_owned(),
        size: member_size,
        from_record,
        first_block: records.first.unwrap_or(offset),
        metadata: header.metadata(),
    })
}

/// Parses the entries of `start..end` as tar does: pax and GNU long-name
/// records gather for the next header, entries that are not regular files
/// are skipped by the data [`tar::extent`] gives them (and consume the
/// records before them). A
/// regular file, an end-of-archive block, a block that is not a header, or
/// an entry that runs past `end` is an error.
fn read_gap<'w>(
    start: u64,
    end: u64,
    read: &impl Fn(u64, u64, &'static str) -> Result<Cow<'w, [u8]>, Failure>,
) -> Result<Records, Failure> {
    let mut records = Records::default();
    let mut at = start;
    while at < end {
        let bytes = read(at, BLOCK, "tar header in a gap")?;
        let Some(block) = bytes.first_chunk::<BLOCK_SIZE>() else {
            return Err(RowProblem::GapNotAHeader { at }.into());
        };
        let header = HeaderBlock::new(block);
        if header.is_zero() {
            return Err(RowProblem::GapEndsArchive { at }.into());
        }
        if !header.checksum_is_valid() {
            return Err(RowProblem::GapNotAHeader { at }.into());
        }
        let typeflag = header.typeflag();
        let header_size = header.size().map_err(RowProblem::Tar)?;
        let size = if tar::is_record(typeflag) {
            header_size
        } else {
            records.size.take().unwrap_or(header_size)
        };
        let (kind, data) = {
            let own = header.path_bytes();
            tar::extent(
                typeflag,
                [&own, records.name.as_deref().unwrap_or(&own)],
                size,
            )
        }
        .map_err(RowProblem::Tar)?;
        let next = (at + BLOCK)
            .checked_add(data)
            .and_then(|end| end.checked_next_multiple_of(BLOCK));
        let Some(next) = next.filter(|&next| next <= end) else {
            return Err(RowProblem::GapOverrunsHeader { at, size: data }.into());
        };
        match kind {
            EntryKind::Record => {
                if data > MAX_METADATA_SIZE {
                    return Err(
                        RowProblem::Tar(tar::TarProblem::MetadataTooLarge { size: data }).into(),
                    );
                }
                let bytes = read(at + BLOCK, data, "tar metadata record")?;
                tar::apply_record(typeflag, &bytes, &mut records.name, &mut records.size)
                    .map_err(RowProblem::Tar)?;
                records.first.get_or_insert(at);
            }
            EntryKind::OtherRecord => {
                records.first.get_or_insert(at);
            }
            EntryKind::File => {
                let name = records.name.take().unwrap_or_else(|| header.path());
                return Err(RowProblem::OmittedMember {
                    at,
                    name: String::from_utf8_lossy(tar::normalize(&name)).into_owned(),
                }
                .into());
            }
            EntryKind::NoData | EntryKind::Skipped => records = Records::default(),
        }
        at = next;
    }
    Ok(records)
}

/// One member's payload as `std::io::Read`, handed out by
/// [`crate::Dataset::member`] after the member's tar header was checked
/// against its row. It holds its shard open (a shared handle), so it stays
/// valid when the dataset closes the shard to stay under its limit of open
/// files.
///
/// # Examples
///
/// ```no_run
/// use std::io::Read;
/// use binfmt_taridx::Dataset;
///
/// let dataset = Dataset::open_fold("shards", "train")?;
/// for row in dataset.lookup_verified("000123")? {
///     let mut member = dataset.member(&row)?;
///     let mut bytes = Vec::new();
///     member.read_to_end(&mut bytes).map_err(|e| binfmt_taridx::TaridxError::from_io(e, "shards"))?;
///     println!("{}: {} bytes", member.name(), bytes.len());
/// }
/// # Ok::<(), binfmt_taridx::TaridxError>(())
/// ```
#[derive(Debug)]
pub struct MemberReader {
    payload: SourceRange<Arc<dyn Source>>,
    info: MemberInfo,
}

impl MemberReader {
    /// The member's payload in `shard`, whose size was checked against the
    /// shard's length when its header was.
    pub(crate) fn new(shard: Arc<dyn Source>, row: &Row, info: MemberInfo) -> crate::Result<Self> {
        let payload =
            SourceRange::new(shard, row.payload_offset(), info.size, "tar member payload")?;
        Ok(Self { payload, info })
    }

    /// The member's full name, as tar reads it.
    pub fn name(&self) -> &str {
        &self.info.name
    }

    /// What the header said about the member.
    pub fn info(&self) -> &MemberInfo {
        &self.info
    }

    /// The payload size.
    pub fn size(&self) -> u64 {
        self.info.size
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> u64 {
        self.payload.remaining()
    }

    /// The whole payload, borrowed, when the shard is in memory (a map).
    pub fn as_slice(&self) -> Option<&[u8]> {
        self.payload.as_slice()
    }

    /// The whole payload in a buffer: reserved by the size checked against
    /// the shard, filled by reading.
    pub fn into_vec(mut self) -> crate::Result<Vec<u8>> {
        // The size was checked against the shard's length, but a sparse
        // shard can hold a member larger than memory: a reservation that
        // fails is an error naming it, never an abort.
        let capacity = usize::try_from(self.remaining()).unwrap_or(usize::MAX);
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(capacity).map_err(|_| {
            TaridxError::from(binfmt_core::Error::OutOfMemory {
                what: format!(
                    "member {:?} of {}",
                    self.info.name,
                    self.payload.source().name().display()
                )
                .into(),
                bytes: self.remaining(),
            })
        })?;
        self.read_to_end(&mut bytes)
            .map_err(|error| TaridxError::from_io(error, self.payload.source().name()))?;
        Ok(bytes)
    }
}

impl Read for MemberReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.payload
            .read_checked(buf)
            .map_err(|error| TaridxError::Core(error).into_io())
    }
}

impl Seek for MemberReader {
    /// Moves inside the payload (positions relative to its start); a
    /// position outside it is an `InvalidInput` error.
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        self.payload.seek(to)
    }
}
