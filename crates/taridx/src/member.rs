//! Reading one member through its row, after checking that the tar header
//! at the row's offset describes that member.
//!
//! ```text
//!        lookback window (one read)                    the row's offset
//!  ... ┌──────────────┬───────────────┬──────────────┬──────────────────┬────────────┐
//!      │ pax header x │ pax records   │ (GNU L, ...) │ ustar header     │ payload    │
//!      │ (512)        │ (padded)      │              │ (512): checked   │ (size)     │
//!  ... └──────────────┴───────────────┴──────────────┴──────────────────┴────────────┘
//! ```
//!
//! The header must have a valid checksum and be a regular file; the name is
//! the real one: a pax `path` or GNU long name in the records that end right
//! before the header ([`crate::tar::preceding_records`]), else the header's
//! own. The lookback window is 4 KiB and is read together with the header;
//! when no record is found there and the header's own name does not fit the
//! row, it is widened once to the largest record the scanner accepts
//! ([`crate::tar::MAX_METADATA_SIZE`]).

use std::io::{self, Read};
use std::sync::Arc;

use binfmt_core::{Source, SourceExt};

use crate::error::{RowProblem, TaridxError};
use crate::format::Row;
use crate::tar::{self, BLOCK, BLOCK_SIZE, HeaderBlock};

/// The lookback read with every header: room for a pax header with a few
/// kilobytes of records.
pub(crate) const NEAR_LOOKBACK: u64 = 8 * BLOCK;

/// The widest lookback: a header and the largest metadata record.
pub(crate) const FAR_LOOKBACK: u64 = tar::MAX_METADATA_SIZE.next_multiple_of(BLOCK) + 2 * BLOCK;

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

/// Reads the header at `row`'s offset with `lookback` bytes before it (one
/// read) and returns what it says; the caller compares it with the row.
pub(crate) fn check_member_with<S: Source + ?Sized>(
    shard: &S,
    row: &Row,
    lookback: u64,
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
    let start = offset - offset.min(lookback);
    let header_end = offset + BLOCK;
    let window = shard.bytes_at(start, header_end - start, "tar header")?;
    let (before, header) = window.split_at(window.len() - BLOCK_SIZE);
    let Some(header) = header.first_chunk::<BLOCK_SIZE>() else {
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
    let preceding = tar::preceding_records(before)
        .map_err(|problem| Failure::Problem(RowProblem::Tar(problem)))?;
    let member_size = match preceding.size {
        Some(size) => size,
        None => header
            .size()
            .map_err(|problem| Failure::Problem(RowProblem::Tar(problem)))?,
    };
    let from_record = preceding.name.is_some();
    let name = preceding
        .name
        .unwrap_or_else(|| tar::normalize(&header.path()).to_vec());
    Ok(MemberInfo {
        name_not_utf8: std::str::from_utf8(&name).is_err(),
        name: String::from_utf8_lossy(&name).into_owned(),
        size: member_size,
        from_record,
        first_block: offset - preceding.records_len as u64,
        metadata: header.metadata(),
    })
}

/// [`check_member_with`] with the near lookback.
pub(crate) fn check_member<S: Source + ?Sized>(
    shard: &S,
    row: &Row,
) -> Result<MemberInfo, Failure> {
    check_member_with(shard, row, NEAR_LOOKBACK)
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
    shard: Arc<dyn Source>,
    info: MemberInfo,
    start: u64,
    position: u64,
    end: u64,
}

impl MemberReader {
    pub(crate) fn new(shard: Arc<dyn Source>, row: &Row, info: MemberInfo) -> Self {
        let start = row.payload_offset();
        Self {
            shard,
            start,
            position: start,
            end: start + info.size,
            info,
        }
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
        self.end - self.position
    }

    /// The whole payload, borrowed, when the shard is in memory (a map).
    pub fn as_slice(&self) -> Option<&[u8]> {
        let bytes = self.shard.in_memory()?;
        let start = usize::try_from(self.start).ok()?;
        let end = usize::try_from(self.end).ok()?;
        bytes.get(start..end)
    }

    /// The whole payload in a buffer: reserved by the size checked against
    /// the shard, filled by reading.
    pub fn into_vec(mut self) -> crate::Result<Vec<u8>> {
        let capacity = usize::try_from(self.remaining()).unwrap_or(0);
        let mut bytes = Vec::with_capacity(capacity);
        self.read_to_end(&mut bytes)
            .map_err(|error| TaridxError::from_io(error, self.shard.name()))?;
        Ok(bytes)
    }
}

impl Read for MemberReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = usize::try_from(self.remaining())
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let Some(buf) = buf.get_mut(..n) else {
            return Ok(0);
        };
        if n == 0 {
            return Ok(0);
        }
        self.shard
            .fill_at(self.position, buf, "tar member payload")
            .map_err(|error| TaridxError::Core(error).into_io())?;
        self.position += n as u64;
        Ok(n)
    }
}
