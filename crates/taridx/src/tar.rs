//! Tar shards: header blocks, and the scan that lists a shard's regular
//! files without reading their payloads.
//!
//! ```text
//! header block (512 bytes)
//! offset  size  field
//!      0   100  name (NUL-terminated when shorter)
//!    124    12  size: octal digits, or GNU base-256 (first byte has bit 7 set)
//!    148     8  chksum: octal sum of all 512 bytes, this field counted as spaces
//!    156     1  typeflag: '0' or NUL file, '7' contiguous file, '5' directory,
//!               'x' pax record, 'g' global pax record, 'L' GNU long name, 'K' GNU long link
//!    257     6  magic "ustar\0" (POSIX) or "ustar " (GNU, followed by " \0")
//!    345   155  prefix (POSIX ustar only): the path is prefix + "/" + name
//! ```
//!
//! A member is its header block, then its payload padded to a multiple of
//! 512. An all-zero block ends the archive; what follows it is not read.
//! Which typeflags carry data, and which are members, follow GNU tar and
//! Python's tarfile ([`extent`]).

use std::borrow::Cow;
use std::ops::{ControlFlow, Range};

use binfmt_core::{Source, SourceExt};

use crate::error::TaridxError;
pub use crate::tar_problem::{MAX_METADATA_SIZE, TarProblem};

/// The size of a tar header block, and the unit payloads are padded to.
pub const BLOCK_SIZE: usize = 512;

/// [`BLOCK_SIZE`] as a file offset.
pub const BLOCK: u64 = BLOCK_SIZE as u64;

/// Where the `ustar` magic sits in a header block.
pub const USTAR_MAGIC_OFFSET: usize = 257;

/// The five bytes shared by the POSIX (`ustar\0`) and GNU (`ustar `) magics.
pub const USTAR_MAGIC: [u8; 5] = *b"ustar";

const NAME: Range<usize> = 0..100;
const SIZE: Range<usize> = 124..136;
const CHECKSUM: Range<usize> = 148..156;
const TYPEFLAG: usize = 156;
const MAGIC: Range<usize> = 257..263;
const PREFIX: Range<usize> = 345..500;

/// One 512-byte header block.
#[derive(Debug, Clone, Copy)]
pub struct HeaderBlock<'a>(&'a [u8; BLOCK_SIZE]);

impl<'a> HeaderBlock<'a> {
    /// Views a block.
    pub fn new(block: &'a [u8; BLOCK_SIZE]) -> Self {
        Self(block)
    }

    fn field(&self, range: Range<usize>) -> &'a [u8] {
        self.0.get(range).unwrap_or_default()
    }

    /// Whether every byte is zero: the end-of-archive marker. (A header's
    /// checksum field is never zero, so most blocks are decided by it.)
    pub fn is_zero(&self) -> bool {
        self.field(CHECKSUM).iter().all(|&b| b == 0) && self.0.iter().all(|&b| b == 0)
    }

    /// Whether the checksum field holds the sum of the block.
    pub fn checksum_is_valid(&self) -> bool {
        checksum_is_valid(self.0)
    }

    /// The type flag byte.
    pub fn typeflag(&self) -> u8 {
        self.0.get(TYPEFLAG).copied().unwrap_or(0)
    }

    /// The size field, octal or GNU base-256.
    pub fn size(&self) -> Result<u64, TarProblem> {
        parse_numeric(self.field(SIZE))
    }

    /// The mode, uid, gid and mtime fields (0 where one does not parse).
    pub fn metadata(&self) -> HeaderMetadata {
        let number = |range: Range<usize>| parse_numeric(self.field(range)).unwrap_or(0);
        HeaderMetadata {
            mode: number(100..108),
            uid: number(108..116),
            gid: number(116..124),
            mtime: number(136..148),
        }
    }

    /// The name the header itself holds: the POSIX ustar prefix and name
    /// joined by `/`, or the name field alone (GNU and v7 headers have no
    /// prefix field). GNU long names and pax paths are not seen here.
    pub fn path(&self) -> Vec<u8> {
        self.path_bytes().into_owned()
    }

    /// [`HeaderBlock::path`], borrowed from the block when there is no
    /// prefix to join.
    pub fn path_bytes(&self) -> Cow<'a, [u8]> {
        let name = until_nul(self.field(NAME));
        let prefix = until_nul(self.field(PREFIX));
        if self.field(MAGIC) == b"ustar\0" && !prefix.is_empty() {
            Cow::Owned([prefix, b"/", name].concat())
        } else {
            Cow::Borrowed(name)
        }
    }
}

/// The ownership, permission and time fields of a header.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HeaderMetadata {
    /// Permission bits (and any others the header stores).
    pub mode: u64,
    /// Owner id.
    pub uid: u64,
    /// Group id.
    pub gid: u64,
    /// Modification time, seconds since the epoch.
    pub mtime: u64,
}

/// Whether `block` stores the checksum of its own bytes. Accepts the
/// unsigned sum POSIX specifies and the signed sum some historic tars wrote.
/// An all-zero block (the end-of-archive marker) has no checksum and fails.
pub fn checksum_is_valid(block: &[u8; BLOCK_SIZE]) -> bool {
    let field = block.get(CHECKSUM).unwrap_or_default();
    let Some(stored) = parse_checksum_field(field) else {
        return false;
    };
    // The field counts as eight spaces: take its bytes out, put 8 × 32 in.
    let spaces = 8 * u32::from(b' ');
    let unsigned = byte_sum(block) - field.iter().map(|&b| u32::from(b)).sum::<u32>() + spaces;
    if stored == u64::from(unsigned) {
        return true;
    }
    let signed = block.iter().map(|&b| i32::from(b as i8)).sum::<i32>()
        - field.iter().map(|&b| i32::from(b as i8)).sum::<i32>()
        + spaces as i32;
    i64::try_from(stored).is_ok_and(|stored| stored == i64::from(signed))
}

/// The sum of a block's bytes, eight at a time: each 64-bit word adds its
/// even and odd bytes into four 16-bit lanes (64 words × 2 × 255 = 32,640
/// fits a lane), summed at the end. A few instructions per word, where a
/// byte-by-byte sum costs several per byte.
fn byte_sum(block: &[u8; BLOCK_SIZE]) -> u32 {
    const LOW_BYTES: u64 = 0x00ff_00ff_00ff_00ff;
    let lanes = block
        .chunks_exact(8)
        .map(|word| {
            let word = u64::from_le_bytes(word.try_into().unwrap_or_default());
            (word & LOW_BYTES) + ((word >> 8) & LOW_BYTES)
        })
        .fold(0u64, u64::wrapping_add);
    ((lanes & 0xffff) + ((lanes >> 16) & 0xffff) + ((lanes >> 32) & 0xffff) + (lanes >> 48)) as u32
}

/// Parses the checksum field: optional leading spaces, at least one octal
/// digit, then NUL or space terminators only.
fn parse_checksum_field(field: &[u8]) -> Option<u64> {
    let digits_start = field.iter().position(|&b| b != b' ')?;
    let rest = field.get(digits_start..)?;
    let digits_len = rest
        .iter()
        .position(|b| !(b'0'..=b'7').contains(b))
        .unwrap_or(rest.len());
    if digits_len == 0 || rest.get(digits_len..)?.iter().any(|&b| b != 0 && b != b' ') {
        return None;
    }
    octal(rest.get(..digits_len)?)
}

fn octal(digits: &[u8]) -> Option<u64> {
    digits.iter().try_fold(0u64, |value, &digit| {
        let digit = (b'0'..=b'7')
            .contains(&digit)
            .then(|| u64::from(digit - b'0'))?;
        value.checked_mul(8)?.checked_add(digit)
    })
}

/// Parses a numeric field: GNU base-256 when the first byte has bit 7 set,
/// otherwise octal digits surrounded by optional spaces and NULs (an empty
/// field is 0, as tar readers take it).
pub fn parse_numeric(field: &[u8]) -> Result<u64, TarProblem> {
    match field.first() {
        Some(&first) if first & 0x80 != 0 => {
            if first == 0xff {
                return Err(TarProblem::BadSize {
                    field: field.to_vec(),
                });
            }
            let rest = field.get(1..).unwrap_or_default();
            rest.iter()
                .try_fold(u64::from(first & 0x7f), |value, &byte| {
                    value.checked_mul(256)?.checked_add(u64::from(byte))
                })
                .ok_or_else(|| TarProblem::BadSize {
                    field: field.to_vec(),
                })
        }
        _ => {
            let trimmed = trim(field, |b| b == b' ' || b == 0);
            if trimmed.is_empty() {
                return Ok(0);
            }
            octal(trimmed).ok_or_else(|| TarProblem::BadSize {
                field: field.to_vec(),
            })
        }
    }
}

fn trim(bytes: &[u8], strip: impl Fn(u8) -> bool) -> &[u8] {
    let start = bytes.iter().position(|&b| !strip(b)).unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|&b| !strip(b))
        .map_or(start, |end| end + 1);
    bytes.get(start..end).unwrap_or_default()
}

fn until_nul(field: &[u8]) -> &[u8] {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    field.get(..end).unwrap_or_default()
}

/// A regular file found in a shard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Offset of the member's own header block; its payload starts 512 bytes later.
    pub offset: u64,
    /// Payload size in bytes.
    pub size: u64,
    /// The full member name as tar reads it: from a pax `path` record, a GNU
    /// long name, or the header, with leading `./` removed ([`normalize`]).
    pub name: Vec<u8>,
}

/// A member name as tar reads it: every leading `./` removed, as GNU tar
/// does when it extracts (`tar -C dir .` names members `./a.jpg`).
pub fn normalize(name: &[u8]) -> &[u8] {
    let mut name = name;
    while let Some(rest) = name.strip_prefix(b"./") {
        name = rest;
    }
    name
}

/// The compression a shard's first bytes announce, when they are not a tar
/// header: `gzip`, `zstd`, `bzip2` or `xz`.
pub fn compression(head: &[u8]) -> Option<&'static str> {
    const MAGICS: [(&[u8], &str); 4] = [
        (&[0x1f, 0x8b], "gzip"),
        (&[0x28, 0xb5, 0x2f, 0xfd], "zstd"),
        (b"BZh", "bzip2"),
        (&[0xfd, b'7', b'z', b'X', b'Z', 0], "xz"),
    ];
    MAGICS
        .iter()
        .find(|(magic, _)| head.starts_with(magic))
        .map(|&(_, name)| name)
}

/// Lists the regular-file members of a shard by reading header blocks and
/// skipping over payloads, which are never touched. Directories, links, pax
/// and GNU metadata records are not members; pax `path`/`size` and GNU long
/// names apply to the next header; what follows each header is read as GNU
/// tar and tarfile read it ([`extent`]). Stops at the first all-zero block or at
/// the end of the shard. Errors name the shard and the offset of the header
/// at fault; a compressed shard is named for what it is.
pub fn scan<S: Source + ?Sized>(shard: &S) -> crate::Result<Vec<Member>> {
    let mut members = Vec::new();
    scan_with(shard, |offset, size, name| {
        members.push(Member {
            offset,
            size,
            name: name.to_vec(),
        });
        Ok(())
    })?;
    Ok(members)
}

/// How much of a shard [`scan_with`] reads at once from a source that is
/// not in memory (at least [`MAX_METADATA_SIZE`], so a record fits).
pub const SCAN_WINDOW: usize = 1 << 20;

/// A shard seen through a window: borrowed when the source is in memory,
/// else read [`SCAN_WINDOW`] bytes at a time, so small members come in
/// large reads and large payloads are skipped.
struct Window<'s, S: ?Sized> {
    shard: &'s S,
    memory: Option<&'s [u8]>,
    buffer: Vec<u8>,
    start: u64,
}

impl<'s, S: Source + ?Sized> Window<'s, S> {
    fn new(shard: &'s S) -> Self {
        Self {
            shard,
            memory: shard.in_memory(),
            buffer: Vec::new(),
            start: 0,
        }
    }

    /// The `len` bytes at `offset` (at most [`SCAN_WINDOW`]), which the
    /// caller has checked lie within the shard.
    fn bytes(&mut self, offset: u64, len: usize, what: &'static str) -> crate::Result<&[u8]> {
        if let Some(memory) = self.memory {
            let range =
                binfmt_core::range::check_range(offset, len as u64, self.shard.len(), what)?;
            return Ok(memory.get(range).unwrap_or_default());
        }
        let inside = offset
            .checked_sub(self.start)
            .and_then(|at| usize::try_from(at).ok())
            .filter(|&at| {
                at.checked_add(len)
                    .is_some_and(|end| end <= self.buffer.len())
            });
        let at = match inside {
            Some(at) => at,
            None => {
                let available = self.shard.len().saturating_sub(offset);
                let fill = usize::try_from(available).map_or(SCAN_WINDOW, |a| a.min(SCAN_WINDOW));
                if fill < len {
                    binfmt_core::range::check_range(offset, len as u64, self.shard.len(), what)?;
                }
                self.buffer.resize(fill, 0);
                self.start = offset;
                self.shard.fill_at(offset, &mut self.buffer, what)?;
                0
            }
        };
        Ok(self.buffer.get(at..at + len).unwrap_or_default())
    }
}

/// What reading forward makes of an entry ([`extent`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file (`0`, NUL, `7`): a member, its payload follows.
    File,
    /// A pax (`x`, and Solaris `X`, which GNU tar and tarfile read as `x`)
    /// or GNU long-name (`L`) record, applied to the next header.
    Record,
    /// A global pax (`g`) or GNU long-link (`K`) record: its payload is
    /// skipped, nothing in it names a member.
    OtherRecord,
    /// A hard link (`1`) or directory (`5`), or a symlink, device or FIFO
    /// (`2`, `3`, `4`, `6`) of size 0: no data follows its header.
    NoData,
    /// A GNU dump directory (`D`) or volume label (`V`): not a member, its
    /// size skipped as data (GNU tar makes a directory, or nothing).
    Skipped,
}

/// What an entry is and how many bytes of data follow its header, as GNU
/// tar and Python's tarfile read an archive (spec/taridx.md §3.1). `size`
/// is the size in effect (a pax `size` record applied); `names` are the
/// header's own name and the full name (a pax `path` or GNU long name, or
/// the header's again).
///
/// GNU tar 1.34 and tarfile agree that a hard link or a directory carries
/// no data whatever its size field says: the block after it is the next
/// header. For a symlink, device or FIFO with a non-zero size, and for a
/// regular file with a non-zero size whose name ends in `/` (the full name
/// for GNU tar, a NUL-typed header's own name for tarfile), they do not
/// (GNU tar's listing skips the size, its extraction does not, tarfile
/// follows one or the other): such an entry is
/// [`TarProblem::AmbiguousExtent`], never read one way while another tool
/// reads it the other. A typeflag GNU tar does not know (nor `M`, a
/// continuation from another volume), which GNU tar and tarfile extract as
/// a regular file, is [`TarProblem::UnknownType`]: a member is never
/// left out.
pub fn extent(typeflag: u8, names: [&[u8]; 2], size: u64) -> Result<(EntryKind, u64), TarProblem> {
    let ambiguous = Err(TarProblem::AmbiguousExtent { typeflag, size });
    let [own, full] = names;
    match typeflag {
        b'x' | b'X' | b'L' => Ok((EntryKind::Record, size)),
        b'g' | b'K' => Ok((EntryKind::OtherRecord, size)),
        b'S' => Err(TarProblem::Sparse),
        b'1' | b'5' => Ok((EntryKind::NoData, 0)),
        b'2' | b'3' | b'4' | b'6' if size == 0 => Ok((EntryKind::NoData, 0)),
        b'2' | b'3' | b'4' | b'6' => ambiguous,
        // GNU tar makes a directory of a file whose full name ends in `/`;
        // tarfile only of a NUL-typed one whose header's own name does.
        b'0' | b'7' if size > 0 && full.ends_with(b"/") => ambiguous,
        0 if size > 0 && (own.ends_with(b"/") || full.ends_with(b"/")) => ambiguous,
        b'0' | 0 | b'7' => Ok((EntryKind::File, size)),
        b'D' | b'V' => Ok((EntryKind::Skipped, size)),
        _ => Err(TarProblem::UnknownType { typeflag }),
    }
}

/// Whether a header's typeflag makes it a metadata record, whose own size
/// field counts (a pax `size` record applies to the next header only).
pub(crate) fn is_record(typeflag: u8) -> bool {
    matches!(typeflag, b'L' | b'K' | b'x' | b'X' | b'g')
}

/// [`scan`] without collecting: calls `on_member(offset, size, name)` for
/// each regular file in order, the name borrowed (normalized, as in
/// [`Member::name`]). A source that is not in memory is read
/// [`SCAN_WINDOW`] bytes at a time.
pub fn scan_with<S: Source + ?Sized>(
    shard: &S,
    mut on_member: impl FnMut(u64, u64, &[u8]) -> crate::Result<()>,
) -> crate::Result<()> {
    walk(shard, 0, |offset, size, name| {
        on_member(offset, size, name).map(|()| ControlFlow::Continue(()))
    })
}

/// The first regular file whose header is at or after `start` (a block
/// boundary where an entry begins), read forward as [`scan`] reads, or
/// `None` when the archive ends first: an all-zero block (what follows it
/// is not read, as GNU tar and tarfile do not) or the end of the shard.
/// What coverage checks read after a shard's last row
/// ([`crate::Index::check_coverage`]): only the headers from `start` on.
pub fn first_member_from<S: Source + ?Sized>(
    shard: &S,
    start: u64,
) -> crate::Result<Option<Member>> {
    let mut first = None;
    walk(shard, start, |offset, size, name| {
        first = Some(Member {
            offset,
            size,
            name: name.to_vec(),
        });
        Ok(ControlFlow::Break(()))
    })?;
    Ok(first)
}

/// Reads entries from `offset` on until `on_member` breaks, an all-zero
/// block, or the end of the shard.
fn walk<S: Source + ?Sized>(
    shard: &S,
    mut offset: u64,
    mut on_member: impl FnMut(u64, u64, &[u8]) -> crate::Result<ControlFlow<()>>,
) -> crate::Result<()> {
    let failed = |offset, problem| TaridxError::Shard {
        shard: shard.name().to_owned(),
        offset,
        problem,
    };
    let len = shard.len();
    let mut window = Window::new(shard);
    let mut next_name: Option<Vec<u8>> = None;
    let mut next_size: Option<u64> = None;
    while offset < len {
        let available = len - offset;
        if available < BLOCK {
            return Err(failed(offset, TarProblem::TruncatedHeader { available }));
        }
        let bytes = window.bytes(offset, BLOCK_SIZE, "tar header")?;
        let Some(block) = bytes.first_chunk::<BLOCK_SIZE>() else {
            return Err(failed(offset, TarProblem::TruncatedHeader { available }));
        };
        let header = HeaderBlock::new(block);
        if header.is_zero() {
            break;
        }
        if !header.checksum_is_valid() {
            if offset == 0
                && let Some(compression) = compression(block)
            {
                return Err(TaridxError::CompressedShard {
                    shard: shard.name().to_owned(),
                    compression,
                });
            }
            return Err(failed(offset, TarProblem::BadChecksum));
        }
        let typeflag = header.typeflag();
        let header_size = header.size().map_err(|problem| failed(offset, problem))?;
        let size = if is_record(typeflag) {
            header_size
        } else {
            next_size.take().unwrap_or(header_size)
        };
        let (kind, data) = {
            let own = header.path_bytes();
            extent(typeflag, [&own, next_name.as_deref().unwrap_or(&own)], size)
        }
        .map_err(|problem| failed(offset, problem))?;
        let payload_start = offset + BLOCK;
        if data > len - payload_start {
            return Err(failed(
                offset,
                TarProblem::PayloadPastEnd {
                    size: data,
                    shard_len: len,
                },
            ));
        }
        match kind {
            EntryKind::Record => {
                if data > MAX_METADATA_SIZE {
                    return Err(failed(offset, TarProblem::MetadataTooLarge { size: data }));
                }
                // At most MAX_METADATA_SIZE (1 MiB): fits a usize and the window.
                let records = window.bytes(payload_start, data as usize, "tar metadata record")?;
                apply_record(typeflag, records, &mut next_name, &mut next_size)
                    .map_err(|problem| failed(offset, problem))?;
            }
            EntryKind::OtherRecord => {}
            EntryKind::File => {
                let flow = match next_name.take() {
                    Some(name) => on_member(offset, size, normalize(&name))?,
                    None => on_member(offset, size, normalize(&header.path_bytes()))?,
                };
                if flow.is_break() {
                    return Ok(());
                }
            }
            EntryKind::NoData | EntryKind::Skipped => next_name = None,
        }
        // The data fits, so its padded end is at most len + 511.
        offset = payload_start + data.next_multiple_of(BLOCK);
    }
    Ok(())
}

/// Applies one GNU long-name (`L`) or pax (`x`) record to the next header.
pub(crate) fn apply_record(
    typeflag: u8,
    data: &[u8],
    name: &mut Option<Vec<u8>>,
    size: &mut Option<u64>,
) -> Result<(), TarProblem> {
    if typeflag == b'L' {
        *name = Some(until_nul(data).to_vec());
        Ok(())
    } else {
        apply_pax(data, name, size)
    }
}

/// Applies the `path` and `size` keywords of pax records
/// (`"<len> <key>=<value>\n"`, where `<len>` counts the whole record);
/// `GNU.sparse.*` keywords make the member [`TarProblem::Sparse`].
fn apply_pax(
    records: &[u8],
    name: &mut Option<Vec<u8>>,
    size: &mut Option<u64>,
) -> Result<(), TarProblem> {
    apply_pax_records(records, name, size).map_err(|why| TarProblem::BadPax { why })?
}

fn apply_pax_records(
    records: &[u8],
    name: &mut Option<Vec<u8>>,
    size: &mut Option<u64>,
) -> Result<Result<(), TarProblem>, String> {
    let mut rest = records;
    while !rest.is_empty() {
        if rest.iter().all(|&b| b == 0) {
            break;
        }
        let space = rest
            .iter()
            .position(|&b| b == b' ')
            .ok_or("record without a length")?;
        let length: usize = std::str::from_utf8(rest.get(..space).unwrap_or_default())
            .ok()
            .and_then(|digits| digits.parse().ok())
            .ok_or("record length is not a number")?;
        let record = rest
            .get(..length)
            .ok_or_else(|| format!("record of {length} bytes overruns the header"))?;
        let body = record
            .get(space + 1..)
            .and_then(|body| body.strip_suffix(b"\n"))
            .ok_or("record does not end with a newline")?;
        let equals = body
            .iter()
            .position(|&b| b == b'=')
            .ok_or("record without '='")?;
        let (key, value) = (
            body.get(..equals).unwrap_or_default(),
            body.get(equals + 1..).unwrap_or_default(),
        );
        match key {
            _ if key.starts_with(b"GNU.sparse.") => return Ok(Err(TarProblem::Sparse)),
            b"path" => *name = Some(value.to_vec()),
            b"size" => {
                let parsed = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
                *size = Some(parsed.ok_or_else(|| {
                    format!(
                        "size {:?} is not a number",
                        value.escape_ascii().to_string()
                    )
                })?);
            }
            _ => {}
        }
        rest = rest.get(length..).unwrap_or_default();
    }
    Ok(Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ustar header for a regular file, checksum written as GNU tar does
    /// ("%06o\0 ").
    fn header(name: &str) -> [u8; BLOCK_SIZE] {
        let mut block = [0u8; BLOCK_SIZE];
        block[..name.len()].copy_from_slice(name.as_bytes());
        block[100..108].copy_from_slice(b"0000644\0");
        block[124..136].copy_from_slice(b"00000000005\0");
        block[156] = b'0';
        block[257..263].copy_from_slice(b"ustar\0");
        block[263..265].copy_from_slice(b"00");
        seal(&mut block);
        block
    }

    fn seal(block: &mut [u8; BLOCK_SIZE]) {
        block[148..156].fill(b' ');
        let sum: u32 = block.iter().map(|&b| u32::from(b)).sum();
        block[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    }

    #[test]
    fn accepts_a_correct_checksum() {
        assert!(checksum_is_valid(&header("a/b.jpg")));
    }

    #[test]
    fn accepts_other_terminator_styles() {
        let mut block = header("x.txt");
        // Written as "%06o\0 ", the sum has a leading zero to spare.
        let digits = std::str::from_utf8(&block[149..154]).unwrap().to_owned();
        // " 12345 \0"-style: a leading space, then space and NUL.
        block[148..156].copy_from_slice(format!(" {digits} \0").as_bytes());
        assert!(checksum_is_valid(&block));
    }

    #[test]
    fn rejects_a_flipped_byte() {
        let mut block = header("a/b.jpg");
        block[3] ^= 0x01;
        assert!(!checksum_is_valid(&block));
    }

    #[test]
    fn rejects_zero_blocks_and_garbage_fields() {
        assert!(!checksum_is_valid(&[0; BLOCK_SIZE]));
        let mut block = header("a");
        block[148..156].copy_from_slice(b"12x4567\0");
        assert!(!checksum_is_valid(&block));
        block[148..156].copy_from_slice(b"        ");
        assert!(!checksum_is_valid(&block));
    }

    #[test]
    fn accepts_the_signed_sum_of_historic_tars() {
        let mut block = header("\u{e9}t\u{e9}.txt");
        block[148..156].fill(b' ');
        let signed: i64 = block.iter().map(|&b| i64::from(b as i8)).sum();
        block[148..156].copy_from_slice(format!("{signed:06o}\0 ").as_bytes());
        assert!(checksum_is_valid(&block));
    }

    #[test]
    fn numeric_fields() {
        assert_eq!(parse_numeric(b"00000000005\0"), Ok(5));
        assert_eq!(parse_numeric(b"     17 \0\0\0\0"), Ok(15));
        assert_eq!(parse_numeric(&[0; 12]), Ok(0));
        // GNU base-256: 0x80 then big-endian bytes.
        let mut field = [0u8; 12];
        field[0] = 0x80;
        field[7..12].copy_from_slice(&[0x02, 0x00, 0x00, 0x00, 0x01]);
        assert_eq!(parse_numeric(&field), Ok(0x02_0000_0001));
        assert!(parse_numeric(&[0xff; 12]).is_err());
        assert!(parse_numeric(b"0000000009\0\0").is_err());
        let mut huge = [0xffu8; 12];
        huge[0] = 0x80;
        assert!(parse_numeric(&huge).is_err());
    }

    #[test]
    fn ustar_prefix_joins_the_name_only_for_posix_magic() {
        let mut block = header("file.txt");
        block[345..351].copy_from_slice(b"a/b/cc");
        seal(&mut block);
        assert_eq!(HeaderBlock::new(&block).path(), b"a/b/cc/file.txt");
        block[257..265].copy_from_slice(b"ustar  \0");
        assert_eq!(HeaderBlock::new(&block).path(), b"file.txt");
    }

    /// A pax record with its length prefix computed.
    fn record(key: &str, value: &[u8]) -> Vec<u8> {
        let body = [b" ", key.as_bytes(), b"=", value, b"\n"].concat();
        let mut length = body.len() + 1;
        if (length.to_string().len() + body.len()) != length {
            length = length.to_string().len() + body.len();
        }
        [length.to_string().as_bytes(), &body].concat()
    }

    #[test]
    fn pax_records() {
        let mut name = None;
        let mut size = None;
        let records = [
            record("path", b"dir/caf\xc3\xa9.jpg"),
            record("size", b"12345678"),
            record("mtime", b"1700000000"),
        ]
        .concat();
        apply_pax(&records, &mut name, &mut size).unwrap();
        assert_eq!(name.as_deref(), Some(&b"dir/caf\xc3\xa9.jpg"[..]));
        assert_eq!(size, Some(12_345_678));
        assert!(apply_pax(b"99 path=x\n", &mut name, &mut size).is_err());
        assert!(apply_pax(b"9 path=x", &mut name, &mut size).is_err());
        assert!(apply_pax(b"abc path=x\n", &mut name, &mut size).is_err());
        assert!(apply_pax(b"12 size=1x\n", &mut name, &mut size).is_err());
    }
}
