//! Everything reading, verifying or building an index can fail with.

use std::path::PathBuf;

use crate::tar::TarProblem;

/// `Result` with [`TaridxError`].
pub type Result<T, E = TaridxError> = std::result::Result<T, E>;

/// A TARIDX failure. Index checks name the field and the values that
/// disagree; row checks name the row; shard problems name the shard and the
/// byte offset of the header at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaridxError {
    /// The file is shorter than the 64-byte header.
    #[error("truncated header: the file has {len} bytes, a taridx header is 64")]
    TruncatedHeader { len: u64 },

    /// The magic field is not `TARIDX\0\0`.
    #[error("not a taridx file: magic {found:?}")]
    BadMagic { found: String },

    /// A major version other than 1.
    #[error("incompatible taridx version {major}.{minor}: this reader reads major version 1")]
    IncompatibleVersion { major: u16, minor: u16 },

    /// `hdr_size` is not 64.
    #[error("hdr_size is {found}, expected 64")]
    BadHeaderSize { found: u16 },

    /// `rec_size` is not 32.
    #[error("rec_size is {found}, expected 32")]
    BadRecordSize { found: u16 },

    /// `off_crash` points into the header.
    #[error("off_crash {off_crash} is inside the 64-byte header")]
    CrashBlockInHeader { off_crash: u64 },

    /// `off_arr` is before `off_crash`.
    #[error("off_arr {off_arr} is before off_crash {off_crash}")]
    RowsBeforeCrashBlock { off_crash: u64, off_arr: u64 },

    /// `off_arr` is past the end of the file.
    #[error("off_arr {off_arr} is past the end of the {len}-byte file")]
    RowsPastEnd { off_arr: u64, len: u64 },

    /// The row region is not a whole number of 32-byte rows.
    #[error("the row region is {bytes} bytes, not a multiple of 32")]
    RaggedRows { bytes: u64 },

    /// The row region holds a different number of rows than `n_rows` says.
    #[error("n_rows is {header} but the row region holds {actual} rows")]
    RowCountMismatch { header: u64, actual: u64 },

    /// The extension or crash-stem block is not UTF-8.
    #[error("the {block} block is not UTF-8")]
    BlockNotUtf8 { block: &'static str },

    /// `n_ext` disagrees with the extension block.
    #[error("n_ext is {header} but the extension block holds {decoded}")]
    ExtensionCountMismatch { header: u32, decoded: u64 },

    /// `n_crash` disagrees with the crash-stem block.
    #[error("n_crash is {header} but the crash-stem block holds {decoded}")]
    CrashCountMismatch { header: u32, decoded: u64 },

    /// A row's extension id is not below `n_ext`.
    #[error("row {row}: extid {extid} is out of range (n_ext {n_ext})")]
    ExtidOutOfRange { row: u64, extid: u16, n_ext: u32 },

    /// A row's crash id is above `n_crash`.
    #[error("row {row}: crashid {crashid} is out of range (n_crash {n_crash})")]
    CrashidOutOfRange {
        row: u64,
        crashid: u32,
        n_crash: u32,
    },

    /// A row's shard id is not below the number of shards.
    #[error("row {row}: fid {fid} is out of range ({shards} shards)")]
    FidOutOfRange { row: u64, fid: u16, shards: usize },

    /// A row's payload reaches past the end of its shard.
    #[error(
        "row {row}: payload at {offset} + 512 + {size} runs past the end of shard {fid} ({shard_len} bytes)"
    )]
    PayloadPastShard {
        row: u64,
        fid: u16,
        offset: u64,
        size: u64,
        shard_len: u64,
    },

    /// The contiguity flag says one thing, the rows another.
    #[error("flags bit 0 says rows are {} but they are {}", contiguity(*flag), contiguity(*actual))]
    ContiguityFlagWrong { flag: bool, actual: bool },

    /// `n_stems` disagrees with the distinct `(keyhash, crashid)` keys of the rows.
    #[error("n_stems is {header} but the rows hold {actual} distinct (keyhash, crashid) keys")]
    StemCountMismatch { header: u64, actual: u64 },

    /// A tar shard is corrupt or truncated.
    #[error("shard {}: {problem} at byte {offset}", shard.display())]
    Shard {
        shard: PathBuf,
        offset: u64,
        problem: TarProblem,
    },

    /// More shards than a u16 fid can number.
    #[error("{count} shards: a taridx fid is 16 bits, so at most 65536 shards")]
    TooManyShards { count: usize },

    /// More extensions than a u16 extid can number.
    #[error("more than 65536 distinct extensions: a taridx extid is 16 bits")]
    TooManyExtensions,

    /// No shard follows the fold naming convention.
    #[error("no shards named {fold}_<shard>.tar in {}", root.display())]
    NoShards { root: PathBuf, fold: String },

    /// A dataset operation needs rows grouped by sample.
    #[error("rows are not contiguous by (keyhash, crashid): use enforce_contiguous() first")]
    NotContiguous,

    /// No sample has every extension `filter_extensions` asked for.
    #[error("no stem has all of the extensions {required:?}")]
    NoStemHasAll { required: Vec<String> },

    /// `filter_extensions` asked for an extension the index does not know.
    #[error("unknown extensions {unknown:?}; the index has {known:?}")]
    UnknownExtensions {
        unknown: Vec<String>,
        known: Vec<String>,
    },

    /// An I/O or lower-level failure.
    #[error(transparent)]
    Core(#[from] binfmt_core::Error),
}

fn contiguity(contiguous: bool) -> &'static str {
    if contiguous {
        "contiguous"
    } else {
        "not contiguous"
    }
}
