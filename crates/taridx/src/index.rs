//! Reading an index: [`Index::open`] checks the header and decodes the two
//! text blocks (work independent of the number of rows) and hands out the
//! rows in place; [`Index::verify`] walks every row.

use std::collections::HashSet;
use std::path::Path;

use binfmt_core::ByteSource;
use binfmt_core::layout::Record;

use crate::error::{Result, TaridxError};
use crate::format::{FLAG_CONTIGUOUS, HEADER_SIZE, Header, MAGIC, ROW_SIZE, Row, VERSION_MAJOR};

/// A `.taridx` file whose header and blocks have been checked.
#[derive(Debug)]
pub struct Index<S = ByteSource> {
    source: S,
    version: (u16, u16),
    n_stems: u64,
    contiguous: bool,
    off_arr: u64,
    n_rows: u64,
    extensions: Vec<String>,
    crash_stems: Vec<String>,
}

impl Index<ByteSource> {
    /// Opens and checks the index at `path`, memory-mapped when possible.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::new(ByteSource::open(path)?)
    }
}

impl<S: AsRef<[u8]>> Index<S> {
    /// Checks the index held in `source`: every MUST and SHOULD of the
    /// format's reader requirements except the per-row ones, which
    /// [`Index::verify`] adds.
    pub fn new(source: S) -> Result<Self> {
        let bytes = source.as_ref();
        let len = bytes.len() as u64;
        let header = Header::ref_at(bytes, 0).map_err(|_| TaridxError::TruncatedHeader { len })?;
        if header.magic != MAGIC {
            return Err(TaridxError::BadMagic {
                found: header.magic.escape_ascii().to_string(),
            });
        }
        let (major, minor) = (header.major.get(), header.minor.get());
        if major != VERSION_MAJOR {
            return Err(TaridxError::IncompatibleVersion { major, minor });
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
        // off_crash <= off_arr <= len, so both blocks lie inside the file.
        let block =
            |start: u64, end: u64| bytes.get(start as usize..end as usize).unwrap_or_default();
        let extensions = decode_block(
            block(u64::from(HEADER_SIZE), off_crash),
            "extension",
            header.n_ext.get(),
        )?;
        if extensions.len() as u64 != u64::from(header.n_ext.get()) {
            return Err(TaridxError::ExtensionCountMismatch {
                header: header.n_ext.get(),
                decoded: extensions.len() as u64,
            });
        }
        let crash_stems = decode_block(
            block(off_crash, off_arr),
            "crash-stem",
            header.n_crash.get(),
        )?;
        if crash_stems.len() as u64 != u64::from(header.n_crash.get()) {
            return Err(TaridxError::CrashCountMismatch {
                header: header.n_crash.get(),
                decoded: crash_stems.len() as u64,
            });
        }
        Ok(Self {
            version: (major, minor),
            n_stems: header.n_stems.get(),
            contiguous: header.flags & FLAG_CONTIGUOUS != 0,
            off_arr,
            n_rows,
            extensions,
            crash_stems,
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

    /// Whether the header says rows are contiguous by `(keyhash, crashid)`.
    pub fn is_contiguous(&self) -> bool {
        self.contiguous
    }

    /// Extension names, indexed by extid.
    pub fn extensions(&self) -> &[String] {
        &self.extensions
    }

    /// Crash stems: entry `i` has crash id `i + 1`.
    pub fn crash_stems(&self) -> &[String] {
        &self.crash_stems
    }

    /// The crash id of `stem`: its position in the crash table plus one, or
    /// 0 when it is not there (the canonical stem of its hash).
    pub fn crash_id(&self, stem: &str) -> u32 {
        self.crash_stems
            .iter()
            .position(|crash| crash == stem)
            .map_or(0, |index| index as u32 + 1)
    }

    /// The rows, viewed in place.
    pub fn rows(&self) -> &[Row] {
        // `new` proved the row region is exactly n_rows whole rows.
        Row::slice_at(self.source.as_ref(), self.off_arr, self.n_rows).unwrap_or_default()
    }

    /// The storage the index reads from.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// Walks every row: extension and crash ids in range, the header's
    /// `n_stems` and contiguity flag true of the rows, and, when the shard
    /// sizes are given (in fid order), every fid in range and every payload
    /// inside its shard.
    pub fn verify(&self, shard_lens: Option<&[u64]>) -> Result<()> {
        let n_ext = self.extensions.len() as u32;
        let n_crash = self.crash_stems.len() as u32;
        for (row_number, row) in self.rows().iter().enumerate() {
            let row_number = row_number as u64;
            let extid = row.extid.get();
            if u32::from(extid) >= n_ext {
                return Err(TaridxError::ExtidOutOfRange {
                    row: row_number,
                    extid,
                    n_ext,
                });
            }
            let crashid = row.crashid.get();
            if crashid > n_crash {
                return Err(TaridxError::CrashidOutOfRange {
                    row: row_number,
                    crashid,
                    n_crash,
                });
            }
            if let Some(lens) = shard_lens {
                let fid = row.fid.get();
                let shard_len = *lens
                    .get(usize::from(fid))
                    .ok_or(TaridxError::FidOutOfRange {
                        row: row_number,
                        fid,
                        shards: lens.len(),
                    })?;
                let (offset, size) = (row.offset.get(), row.size.get());
                let end = offset
                    .checked_add(crate::tar::BLOCK)
                    .and_then(|start| start.checked_add(size));
                if end.is_none_or(|end| end > shard_len) {
                    return Err(TaridxError::PayloadPastShard {
                        row: row_number,
                        fid,
                        offset,
                        size,
                        shard_len,
                    });
                }
            }
        }
        let distinct = self
            .rows()
            .iter()
            .map(Row::key)
            .collect::<HashSet<_>>()
            .len() as u64;
        if distinct != self.n_stems {
            return Err(TaridxError::StemCountMismatch {
                header: self.n_stems,
                actual: distinct,
            });
        }
        let actual = rows_contiguous(self.rows(), distinct);
        if actual != self.contiguous {
            return Err(TaridxError::ContiguityFlagWrong {
                flag: self.contiguous,
                actual,
            });
        }
        Ok(())
    }
}

/// Whether rows form exactly one run per key: fewer than two rows always
/// do; otherwise the number of runs of equal `(keyhash, crashid)` must equal
/// the number of distinct keys (the reference's rule).
pub fn rows_contiguous(rows: &[Row], distinct_keys: u64) -> bool {
    if rows.len() < 2 {
        return true;
    }
    let runs = 1 + rows
        .windows(2)
        .filter(|pair| matches!(pair, [a, b] if a.key() != b.key()))
        .count() as u64;
    runs == distinct_keys
}

/// Splits a block into its `\n`-separated entries. An empty block is no
/// entries, or one empty entry (the extension of members without a dot)
/// when the header counts exactly one.
fn decode_block(bytes: &[u8], block: &'static str, count: u32) -> Result<Vec<String>> {
    let text = std::str::from_utf8(bytes).map_err(|_| TaridxError::BlockNotUtf8 { block })?;
    if text.is_empty() {
        return Ok(if count == 1 {
            vec![String::new()]
        } else {
            Vec::new()
        });
    }
    Ok(text.split('\n').map(str::to_owned).collect())
}
