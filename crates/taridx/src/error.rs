//! Everything reading, verifying, building or writing TARIDX can fail with.
//!
//! Failures every format shares (bad magic, an unsupported version, a
//! truncated file, a range out of bounds, an overflow, a file that is not
//! regular, I/O on a path) are [`binfmt_core::Error`] values, carried by
//! [`TaridxError::Core`]. The other variants name what is wrong and where:
//! the field and the values that disagree, the row, the shard and the byte
//! offset of the tar header at fault.

use std::io;
use std::path::PathBuf;

use crate::tar_problem::TarProblem;

/// `Result` with [`TaridxError`].
pub type Result<T, E = TaridxError> = std::result::Result<T, E>;

/// A TARIDX failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaridxError {
    /// `hdr_size` is not 64.
    #[error("hdr_size is {found}, expected 64")]
    BadHeaderSize {
        /// The value in the header.
        found: u16,
    },

    /// `rec_size` is not 32.
    #[error("rec_size is {found}, expected 32")]
    BadRecordSize {
        /// The value in the header.
        found: u16,
    },

    /// `off_crash` points into the header.
    #[error("off_crash {off_crash} is inside the 64-byte header")]
    CrashBlockInHeader {
        /// The value in the header.
        off_crash: u64,
    },

    /// `off_arr` is before `off_crash`.
    #[error("off_arr {off_arr} is before off_crash {off_crash}")]
    RowsBeforeCrashBlock {
        /// Where the crash block starts.
        off_crash: u64,
        /// Where the rows start.
        off_arr: u64,
    },

    /// `off_arr` is past the end of the file.
    #[error("off_arr {off_arr} is past the end of the {len}-byte file")]
    RowsPastEnd {
        /// Where the rows start.
        off_arr: u64,
        /// The file's size.
        len: u64,
    },

    /// The row region is not a whole number of 32-byte rows.
    #[error("the row region is {bytes} bytes, not a multiple of 32")]
    RaggedRows {
        /// The region's size.
        bytes: u64,
    },

    /// The row region holds a different number of rows than `n_rows` says.
    #[error("n_rows is {header} but the row region holds {actual} rows")]
    RowCountMismatch {
        /// `n_rows`.
        header: u64,
        /// Rows in the region.
        actual: u64,
    },

    /// The extension or crash-stem block is not UTF-8.
    #[error("the {block} block is not UTF-8 (at byte {offset} of the file)")]
    BlockNotUtf8 {
        /// `"extension"` or `"crash-stem"`.
        block: &'static str,
        /// The file offset of the first invalid byte.
        offset: u64,
    },

    /// `n_ext` disagrees with the extension block.
    #[error("n_ext is {header} but the extension block holds {decoded}")]
    ExtensionCountMismatch {
        /// `n_ext`.
        header: u32,
        /// Entries in the block.
        decoded: u64,
    },

    /// `n_crash` disagrees with the crash-stem block.
    #[error("n_crash is {header} but the crash-stem block holds {decoded}")]
    CrashCountMismatch {
        /// `n_crash`.
        header: u32,
        /// Entries in the block.
        decoded: u64,
    },

    /// A row's extension id is not below `n_ext`.
    #[error("row {row}: extid {extid} is out of range (n_ext {n_ext})")]
    ExtidOutOfRange {
        /// The row number.
        row: u64,
        /// Its extension id.
        extid: u16,
        /// The number of extensions.
        n_ext: u32,
    },

    /// A row's crash id is above `n_crash`.
    #[error("row {row}: crashid {crashid} is out of range (n_crash {n_crash})")]
    CrashidOutOfRange {
        /// The row number.
        row: u64,
        /// Its crash id.
        crashid: u32,
        /// The number of crash stems.
        n_crash: u32,
    },

    /// A row's shard id is not below the number of shards.
    #[error("row {row}: fid {fid} is out of range ({shards} shards)")]
    FidOutOfRange {
        /// The row number.
        row: u64,
        /// Its shard id.
        fid: u16,
        /// The number of shards.
        shards: usize,
    },

    /// A regular file of a shard that no row covers: after the shard's last
    /// row, or anywhere in a shard without rows. The index is stale: it
    /// does not account for every member of its shards
    /// ([`crate::Index::check_coverage`]).
    #[error(
        "shard {}: the regular file {name:?} at byte {offset} has no row: the index does not cover its shards (stale: index the fold again)",
        shard.display()
    )]
    UncoveredMember {
        /// The shard.
        shard: PathBuf,
        /// Its shard id.
        fid: u16,
        /// The offset of the member's header.
        offset: u64,
        /// Its name as tar reads it (U+FFFD for bytes that are not UTF-8).
        name: String,
    },

    /// A row's member (header and payload) reaches past the end of its shard.
    #[error(
        "row {row}: payload at {offset} + 512 + {size} runs past the end of shard {fid} ({shard_len} bytes)"
    )]
    PayloadPastShard {
        /// The row number.
        row: u64,
        /// Its shard id.
        fid: u16,
        /// Its header offset.
        offset: u64,
        /// Its payload size.
        size: u64,
        /// The shard's size.
        shard_len: u64,
    },

    /// The tar header a row points at does not describe the row's member.
    #[error(
        "row {row}: shard {} at byte {offset}: {problem} (were the shards changed after the index was written? \
         binfmt taridx status tells; indexing again mends it)",
        shard.display()
    )]
    RowMismatch {
        /// The row number.
        row: u64,
        /// The shard.
        shard: PathBuf,
        /// The row's header offset.
        offset: u64,
        /// What disagrees.
        problem: Box<RowProblem>,
    },

    /// Two rows point at the same tar member.
    #[error("rows {first} and {second} both point at the member at byte {offset} of shard {fid}")]
    RowsShareMember {
        /// The earlier row.
        first: u64,
        /// The later row.
        second: u64,
        /// The shard id.
        fid: u16,
        /// The header offset.
        offset: u64,
    },

    /// Two rows' members (header and payload) overlap in one shard.
    #[error(
        "rows {first} and {second} overlap in shard {fid}: the member at byte {second_offset} starts inside the one at byte {first_offset}"
    )]
    MembersOverlap {
        /// The row whose member starts first.
        first: u64,
        /// The row whose member starts inside it.
        second: u64,
        /// The shard id.
        fid: u16,
        /// Where the first member's header is.
        first_offset: u64,
        /// Where the second member's header is.
        second_offset: u64,
    },

    /// The payload sizes of all rows add up to more than 64 bits hold.
    #[error("the rows' payload sizes add up to more than 2^64 bytes (at row {row})")]
    TotalOverflow {
        /// The row whose size overflowed the sum.
        row: u64,
    },

    /// The contiguity flag says one thing, the rows another.
    #[error("flags bit 0 says rows are {} but they are {}", contiguity(*flag), contiguity(*actual))]
    ContiguityFlagWrong {
        /// What the flag says.
        flag: bool,
        /// What the rows are.
        actual: bool,
    },

    /// `n_stems` disagrees with the distinct `(keyhash, crashid)` keys of the rows.
    #[error("n_stems is {header} but the rows hold {actual} distinct (keyhash, crashid) keys")]
    StemCountMismatch {
        /// `n_stems`.
        header: u64,
        /// Distinct keys in the rows.
        actual: u64,
    },

    /// A tar shard is corrupt or truncated.
    #[error("shard {}: {problem} at byte {offset}", shard.display())]
    Shard {
        /// The shard.
        shard: PathBuf,
        /// The byte offset of the header at fault.
        offset: u64,
        /// What is wrong.
        problem: TarProblem,
    },

    /// A member of a shard that a writer refuses (its name cannot be
    /// indexed), located.
    #[error("shard {}: the member at byte {offset}: {source}", shard.display())]
    InShard {
        /// The shard.
        shard: PathBuf,
        /// The byte offset of the member's header.
        offset: u64,
        /// What is refused.
        source: Box<TaridxError>,
    },

    /// A shard is a compressed tar, which cannot be read by offset.
    #[error("{} is {compression}-compressed; TARIDX needs uncompressed tar (decompress it first)", shard.display())]
    CompressedShard {
        /// The shard.
        shard: PathBuf,
        /// `gzip`, `zstd`, `bzip2` or `xz`.
        compression: &'static str,
    },

    /// More shards than a u16 fid can number.
    #[error("{count} shards: a taridx fid is 16 bits, so at most 65536 shards")]
    TooManyShards {
        /// How many there are.
        count: usize,
    },

    /// More extensions than a u16 extid can number.
    #[error("{count} extensions: a taridx extid is 16 bits, so at most 65536")]
    TooManyExtensions {
        /// How many there are (or the header claims).
        count: u64,
    },

    /// An index's shards are not where they are looked for: no shard list
    /// beside it and no shard named by a fold naming.
    #[error(
        "no shards found for {}: looked for {looked}; an index finds its shards beside it \
         (with its .shards.json, if it has one): move it back, or name their directory \
         (taridx get --shards DIR; Dataset(index, shards=[...]))",
        index.display()
    )]
    NoShards {
        /// The index (or where it would be).
        index: PathBuf,
        /// Where the shards were looked for.
        looked: String,
    },

    /// A shard pattern that names no shard, or is not a pattern.
    #[error("shard pattern {pattern:?}: {why}")]
    Pattern {
        /// The pattern, after brace expansion.
        pattern: String,
        /// What is wrong.
        why: String,
    },

    /// A fold's shards are named two ways at once (`t-0.tar` and
    /// `t.0.tar`), and neither is glzn's.
    #[error(
        "fold {fold:?} has shards named both {namings}: index them by a list or a pattern (binfmt taridx index 'PATTERN' -o OUT.taridx)"
    )]
    AmbiguousShards {
        /// The fold.
        fold: String,
        /// The namings found.
        namings: String,
    },

    /// A dataset operation needs rows grouped by sample.
    #[error("rows are not contiguous by (keyhash, crashid): use enforce_contiguous() first")]
    NotContiguous,

    /// No sample has every extension `filter_extensions` asked for.
    #[error("no sample has all of the extensions {required:?}")]
    NoStemHasAll {
        /// The extensions asked for.
        required: Vec<String>,
    },

    /// `filter_extensions` asked for an extension the index does not know.
    #[error("unknown extensions {unknown:?}; the index has {known:?}")]
    UnknownExtensions {
        /// Those not in the index.
        unknown: Vec<String>,
        /// Those in the index.
        known: Vec<String>,
    },

    /// A name a writer refuses: readers or extractors would refuse it or
    /// read it as something else.
    #[error("refused member name {name:?}: {why}")]
    BadName {
        /// The name.
        name: String,
        /// Why.
        why: &'static str,
    },

    /// A writer was given the same member name twice.
    #[error("member name {name:?} was already written")]
    DuplicateName {
        /// The name.
        name: String,
    },

    /// One sample was given the same extension twice, or an extension a
    /// member name cannot carry.
    #[error("sample {key:?}: {why}")]
    BadSample {
        /// The sample key.
        key: String,
        /// Why.
        why: String,
    },

    /// A member's reader gave a different number of bytes than declared.
    #[error("member {name:?}: declared {declared} bytes, its reader gave {actual}")]
    SizeMismatch {
        /// The member name.
        name: String,
        /// The size declared.
        declared: u64,
        /// The bytes the reader gave (counted up to one past the declared size).
        actual: u64,
    },

    /// An output would overwrite one of the inputs.
    #[error("{}: is {}, an input: binfmt never writes its output over what it reads", output.display(), input.display())]
    OutputIsInput {
        /// The output path.
        output: PathBuf,
        /// The input it is.
        input: PathBuf,
    },

    /// A fold being written already has shards.
    #[error("shards of fold {fold:?} already exist ({}); remove them or choose another place", shard.display())]
    FoldExists {
        /// The fold.
        fold: String,
        /// One of its shards.
        shard: PathBuf,
    },

    /// A foreign index (wids shard list, DALI `.idx`, ratarmount SQLite)
    /// that does not follow its format, or does not fit the shards.
    #[error("{}: {why}", file.display())]
    Foreign {
        /// The file.
        file: PathBuf,
        /// What is wrong.
        why: String,
    },

    /// A shared failure: bad magic, unsupported version, truncation, out of
    /// bounds, overflow, limit, not a regular file, I/O on a path.
    #[error(transparent)]
    Core(#[from] binfmt_core::Error),
}

/// What disagrees between a row and the tar header at its offset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RowProblem {
    /// The offset is not on a 512-byte block boundary, where tar headers are.
    #[error("not on a 512-byte block boundary")]
    Misaligned,
    /// The block there is not a tar header (its checksum does not match).
    #[error("no tar header there (checksum mismatch)")]
    NotAHeader,
    /// The header is not a regular file.
    #[error("the header is not a regular file (typeflag {typeflag:?})")]
    NotAFile {
        /// The type flag, as a character.
        typeflag: char,
    },
    /// The header's size field does not parse.
    #[error("{0}")]
    Tar(TarProblem),
    /// A regular file sits between the previous row's member in the shard
    /// (or the shard's start) and this row's header: the index omits it.
    #[error(
        "the regular file {name:?} at byte {at}, between the previous row's member and this row's header, has no row (the index omits a member)"
    )]
    OmittedMember {
        /// Where its header is.
        at: u64,
        /// Its name as tar reads it.
        name: String,
    },
    /// A block between the previous row's member and this row's header is
    /// not a tar header.
    #[error("no tar header at byte {at}, between the previous row's member and this row's header")]
    GapNotAHeader {
        /// Where the block is.
        at: u64,
    },
    /// An end-of-archive block comes before this row's header.
    #[error("an end-of-archive block at byte {at} comes before this row's header")]
    GapEndsArchive {
        /// Where the block is.
        at: u64,
    },
    /// An entry between the previous row's member and this row's header
    /// runs past the header (tar would read the header as its data).
    #[error("the entry at byte {at} ({size} bytes of data) runs past this row's header")]
    GapOverrunsHeader {
        /// Where the entry's header is.
        at: u64,
        /// Its data size.
        size: u64,
    },
    /// The row before this one in the shard does not describe its member,
    /// so where this row's records start is unknown.
    #[error("the previous member in the shard (row {row}, header at byte {offset}): {problem}")]
    Predecessor {
        /// The previous row.
        row: u64,
        /// Its header offset.
        offset: u64,
        /// What is wrong with it.
        problem: Box<RowProblem>,
    },
    /// The member's size is not the row's.
    #[error("the member has {member} bytes, the row says {row}")]
    Size {
        /// The member's size.
        member: u64,
        /// The row's size.
        row: u64,
    },
    /// The member's key does not hash to the row's keyhash.
    #[error("member {name:?} has key {key:?}, whose hash is not the row's keyhash")]
    Key {
        /// The member's full name.
        name: String,
        /// Its key.
        key: String,
    },
    /// The member's extension is not the row's.
    #[error("member {name:?} has extension {member:?}, the row says {row:?}")]
    Extension {
        /// The member's full name.
        name: String,
        /// Its extension.
        member: String,
        /// The row's extension.
        row: String,
    },
    /// The row's crash id does not belong to the member's key.
    #[error("member {name:?}: the row's crashid {row} is not its key's ({expected})")]
    CrashId {
        /// The member's full name.
        name: String,
        /// The row's crash id.
        row: u32,
        /// The key's crash id in the index.
        expected: u32,
    },
}

impl TaridxError {
    /// The error inside an `io::Error` that a member reader returned, or
    /// a plain I/O error wrapped (named after `path`).
    pub fn from_io(error: io::Error, path: impl Into<PathBuf>) -> Self {
        binfmt_core::carry::take(error)
            .unwrap_or_else(|error| Self::Core(binfmt_core::Error::io(path, error)))
    }

    /// Turns the error into an `io::Error` that [`TaridxError::from_io`]
    /// recovers ([`binfmt_core::carry`]).
    pub fn into_io(self) -> io::Error {
        binfmt_core::carry::into_io(self)
    }
}

fn contiguity(contiguous: bool) -> &'static str {
    if contiguous {
        "contiguous"
    } else {
        "not contiguous"
    }
}
