//! Merging archives: one archive from part archives, each part's
//! compressed blocks copied byte for byte, never decompressed and
//! compressed again.
//!
//! ```text
//! part 0   │ header │ P0.b0 │ P0.b1 │ P0.b2 │ manifest 0 │ footer │
//! part 1   │ header │ P1.b0 │ P1.b1 │ manifest 1 │ footer │
//!
//! merged   │ header (80) │ P0.b0 │ P0.b1 │ P0.b2 │ P1.b0 │ P1.b1 │ manifest │ footer (40) │
//!                          └ each block as stored: u32 stored size | stored bytes ┘
//! ```
//!
//! Blocks go in part order, then each part's block order; only blocks some
//! entry uses are copied. The manifest is rebuilt: files in part order,
//! then each part's own order, the file ids and chunk ids renumbered from
//! 0, each chunk pointing at its block's new id at the same offset inside
//! the decompressed block; sizes, SHA-256s, kinds, modes and times as the
//! part holds them. The header, manifest and footer are written as
//! [`crate::Packer::finish`] writes them, so the same parts in the same
//! order give the same bytes.
//!
//! Nothing in a part is trusted: the part is an [`Archive`] (its manifest
//! checked when opened), its header is checked, and every block copied is
//! checked as it passes, in pieces of at most 1 MiB (memory holds one
//! piece, never a whole part or a whole block): its size prefix against
//! the manifest's stored size, the CRC32 of its stored bytes, and its
//! decompressed size (a zstd block is decompressed into a scratch buffer and
//! the output counted, then dropped). See `spec/arcx.md`, "Merging".

use std::collections::HashMap;
use std::fmt;
use std::io::{Seek, Write};
use std::path::{Path, PathBuf};

use binfmt_core::{AtomicFile, Source, SourceExt};

use crate::block::{MAX_WINDOW_LOG, data_error, zstd_step};
pub use crate::error::MergePart;
use crate::error::{ArcxError, Result};
use crate::format::{Codec, Dialect, HEADER_SIZE};
use crate::manifest::{BlockRecord, ChunkRecord, Config, FileKind, ManifestBuilder};
use crate::reader::Archive;
use crate::writer::{NO_CLI_DIRECTORY, NO_CLI_SYMLINK, PackOptions, PackSummary, write_tail};

/// Stored bytes of a block read, checked and written at once.
const PIECE: usize = 1 << 20;

/// Decompressed bytes produced at once when a zstd block's size is checked.
const SCRATCH: usize = 128 << 10;

/// Stored bytes announced to a part's source at once
/// ([`Source::will_read`]), so a remote part is fetched in large requests.
const ANNOUNCE: u64 = 32 << 20;

/// How to merge.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MergeOptions {
    /// The dialect to write. `None` (the default): the first part's (the
    /// spec dialect when there are no parts). Every part must be of the
    /// dialect written.
    pub dialect: Option<Dialect>,
}

impl MergeOptions {
    /// These options writing `dialect` (and refusing parts of another).
    pub fn dialect(mut self, dialect: Dialect) -> Self {
        self.dialect = Some(dialect);
        self
    }
}

/// Builds one archive from part archives, part by part, into any
/// `Write + Seek` (the header, written last, holds the manifest's offset).
///
/// A part refused before any of its blocks is written (another dialect or
/// other settings, a path another part holds, a path a packer would refuse,
/// a bad header) leaves the merger as it was; a part refused while its
/// blocks are copied (a block whose bytes disagree with its record) leaves
/// it unusable: every later call fails. A merger dropped unfinished, or
/// failed, leaves nothing at a destination given to [`Merger::create`].
///
/// # Examples
///
/// ```
/// use std::io::Cursor;
/// use binfmt_arcx::{Archive, MergeOptions, Merger, PackOptions, Packer};
///
/// // Two parts, as two workers would pack them.
/// let part = |path: &str, data: &[u8]| -> binfmt_arcx::Result<Archive<Vec<u8>>> {
///     let mut packer = Packer::new(Cursor::new(Vec::new()), PackOptions::default())?;
///     packer.add(path, &mut &data[..])?;
///     Archive::new(packer.finish()?.0.into_inner())
/// };
/// let (a, b) = (part("a.txt", b"first")?, part("b.txt", b"second")?);
///
/// let mut merger = Merger::new(Cursor::new(Vec::new()), MergeOptions::default())?;
/// merger.append(&a)?;
/// merger.append(&b)?;
/// let (out, summary) = merger.finish()?;
/// assert_eq!((summary.files, summary.blocks), (2, 2));
///
/// let merged = Archive::new(out.into_inner())?;
/// assert_eq!(merged.read("b.txt")?, b"second");
/// merged.verify()?;
/// # Ok::<(), binfmt_arcx::ArcxError>(())
/// ```
pub struct Merger<W> {
    out: W,
    options: MergeOptions,
    /// The dialect and manifest, set by the first part.
    merged: Option<(Dialect, ManifestBuilder)>,
    blocks: Vec<BlockRecord>,
    /// Where the next block goes.
    offset: u64,
    /// Every path merged so far, and the part holding it.
    paths: HashMap<String, usize>,
    /// The parts merged so far, by index.
    parts: Vec<PathBuf>,
    bytes_in: u64,
    /// The part that failed half copied, and why: the merger cannot go on.
    broken: Option<(MergePart, String)>,
    piece: Vec<u8>,
    scratch: Vec<u8>,
    context: Option<zstd::zstd_safe::DCtx<'static>>,
}

impl<W> fmt::Debug for Merger<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Merger")
            .field("parts", &self.parts)
            .field("blocks", &self.blocks.len())
            .field("offset", &self.offset)
            .field("broken", &self.broken)
            .finish()
    }
}

impl Merger<AtomicFile> {
    /// Starts an archive that replaces `destination` when finished (see
    /// [`Merger::commit`]).
    pub fn create(destination: impl AsRef<Path>, options: MergeOptions) -> Result<Self> {
        Self::new(AtomicFile::create(destination)?, options)
    }

    /// Finishes the archive and puts it in place.
    pub fn commit(self) -> Result<PackSummary> {
        let (out, summary) = self.finish()?;
        out.commit()?;
        Ok(summary)
    }
}

impl<W: Write + Seek> Merger<W> {
    /// Starts an archive written to `out` (from its current position 0).
    pub fn new(mut out: W, options: MergeOptions) -> Result<Self> {
        out.write_all(&[0; HEADER_SIZE]).map_err(output_error)?;
        Ok(Self {
            out,
            options,
            merged: None,
            blocks: Vec::new(),
            offset: HEADER_SIZE as u64,
            paths: HashMap::new(),
            parts: Vec::new(),
            bytes_in: 0,
            broken: None,
            piece: Vec::new(),
            scratch: Vec::new(),
            context: None,
        })
    }

    /// The part the next [`Merger::append`] takes, named by `name`.
    fn next_part(&self, name: &Path) -> MergePart {
        MergePart {
            index: self.parts.len(),
            name: name.to_owned(),
        }
    }

    /// Appends every entry of `part`, after those of the parts before it:
    /// its used blocks copied as stored, each checked as it passes.
    /// Returns the number of entries appended. Errors about the part are
    /// [`ArcxError::Part`] (naming it) around the reason, except a path
    /// an earlier part holds: [`ArcxError::DuplicatePath`], naming both.
    pub fn append<S: Source>(&mut self, part: &Archive<S>) -> Result<u64> {
        if let Some((part, why)) = &self.broken {
            return Err(stopped(part, why));
        }
        let name = self.next_part(part.source().name());
        let wrap = |error: ArcxError| match error {
            ArcxError::DuplicatePath { .. } => error,
            error => ArcxError::Part {
                part: name.clone(),
                source: Box::new(error),
            },
        };
        // Nothing is written until the part is known to fit.
        let plan = self.plan(part, &name).map_err(wrap)?;
        let appended = self.copy(part, &plan).map_err(wrap);
        if let Err(ArcxError::Part { part, source }) = &appended {
            self.broken = Some((part.clone(), source.to_string()));
        }
        appended
    }

    /// The checks made before anything of `part` is written, and the new id
    /// of each block it uses.
    fn plan<S: Source>(&self, part: &Archive<S>, name: &MergePart) -> Result<Plan> {
        part.check_header()?;
        let dialect = match &self.merged {
            Some((dialect, _)) => *dialect,
            None => self.options.dialect.unwrap_or(part.dialect()),
        };
        if part.dialect() != dialect {
            return Err(mismatch("dialect", dialect.name(), part.dialect().name()));
        }
        if let Some((_, manifest)) = &self.merged {
            check_config(manifest.config(), part.manifest().config())?;
        }
        let files = self.paths.len() as u64 + part.len() as u64;
        if files > u64::from(u32::MAX) {
            return Err(ArcxError::TooLarge("more than 2^32 files"));
        }
        for file in part.files() {
            let path = file.path().to_string();
            binfmt_core::extract::check_relative_name(&path).map_err(|why| {
                ArcxError::BadInputPath {
                    path: path.clone(),
                    why,
                }
            })?;
            if dialect == Dialect::ArcxCli {
                let why = match file.attributes().kind {
                    FileKind::Directory => Some(NO_CLI_DIRECTORY),
                    FileKind::Symlink => Some(NO_CLI_SYMLINK),
                    _ => None,
                };
                if let Some(why) = why {
                    return Err(ArcxError::BadInputPath { path, why });
                }
            }
            if let Some(&first) = self.paths.get(&path) {
                return Err(ArcxError::DuplicatePath {
                    path,
                    first: MergePart {
                        index: first,
                        name: self.parts.get(first).cloned().unwrap_or_default(),
                    },
                    second: name.clone(),
                });
            }
        }
        let mut new_ids = vec![None; part.manifest().blocks().len()];
        for chunk in part.manifest().chunks() {
            if let Some(id) = new_ids.get_mut(chunk.block as usize) {
                *id = Some(0);
            }
        }
        for (next, id) in (self.blocks.len() as u64..).zip(new_ids.iter_mut().flatten()) {
            *id = u32::try_from(next).map_err(|_| ArcxError::TooLarge("more than 2^32 blocks"))?;
        }
        Ok(Plan { dialect, new_ids })
    }

    /// Copies `part`'s used blocks and adds its files to the manifest.
    fn copy<S: Source>(&mut self, part: &Archive<S>, plan: &Plan) -> Result<u64> {
        let source = part.source();
        let used: Vec<(u32, BlockRecord)> = part
            .manifest()
            .blocks()
            .iter()
            .enumerate()
            .filter(|(id, _)| plan.new_ids.get(*id).copied().flatten().is_some())
            .map(|(id, block)| (id as u32, *block))
            .collect();
        let mut announced = 0;
        for (k, (id, block)) in used.iter().enumerate() {
            if k == announced {
                announced = announce(source, &used, k);
            }
            self.copy_block(source, *id, block)?;
        }
        let (_, manifest) = self.merged.get_or_insert_with(|| {
            (
                plan.dialect,
                ManifestBuilder::new(part.manifest().config().clone()),
            )
        });
        let index = self.parts.len();
        for file in part.files() {
            let file_id = manifest.file_count();
            let first_chunk = manifest.chunk_count();
            for chunk in file.chunks() {
                let block = plan
                    .new_ids
                    .get(chunk.block as usize)
                    .copied()
                    .flatten()
                    .ok_or_else(|| data_error(chunk.block, "no such block"))?;
                manifest.push_chunk(ChunkRecord {
                    file: file_id,
                    block,
                    offset: chunk.offset,
                    size: chunk.size,
                })?;
            }
            let path = file.path().to_string();
            manifest
                .push_file(
                    &path,
                    file.size(),
                    *file.sha256(),
                    first_chunk..manifest.chunk_count(),
                    file.attributes(),
                )
                .map_err(ArcxError::Manifest)?;
            self.bytes_in += file.size();
            self.paths.insert(path, index);
        }
        self.parts.push(source.name().to_owned());
        Ok(part.len() as u64)
    }

    /// Copies block `id` of a part, as stored, checking it on the way: the
    /// size prefix, the CRC32 of the stored bytes, and the decompressed
    /// size.
    fn copy_block<S: Source>(&mut self, source: &S, id: u32, block: &BlockRecord) -> Result<()> {
        let prefix = u32::from_le_bytes(source.array_at::<4>(block.offset, "block size prefix")?);
        if prefix != block.stored_size {
            return Err(data_error(
                id,
                format!(
                    "size prefix {prefix} disagrees with the manifest's {}",
                    block.stored_size
                ),
            ));
        }
        let mut check = BlockCheck::new(id, block, self.context.take())?;
        self.out
            .write_all(&prefix.to_le_bytes())
            .map_err(output_error)?;
        let stored = u64::from(block.stored_size);
        let mut done = 0u64;
        while done < stored {
            let n = (stored - done).min(PIECE as u64) as usize;
            self.piece.resize(n, 0);
            source.fill_at(block.offset + 4 + done, &mut self.piece, "block")?;
            check.feed(&self.piece, &mut self.scratch);
            self.out.write_all(&self.piece).map_err(output_error)?;
            done += n as u64;
        }
        self.context = check.finish(&mut self.scratch)?;
        self.blocks.push(BlockRecord {
            offset: self.offset,
            ..*block
        });
        self.offset = self.offset + 4 + stored;
        Ok(())
    }

    /// Writes the manifest, footer and header; returns the output (at its
    /// end) and what was merged. With no parts, the archive is empty, of
    /// the dialect asked for (spec by default), recording a default
    /// packer's settings.
    pub fn finish(mut self) -> Result<(W, PackSummary)> {
        if let Some((part, why)) = &self.broken {
            return Err(stopped(part, why));
        }
        let (dialect, manifest) = match self.merged.take() {
            Some(merged) => merged,
            None => {
                let defaults = PackOptions::default();
                let config = Config::new(
                    defaults.chunk_size as u64,
                    defaults.block_size as u64,
                    u64::try_from(defaults.level).unwrap_or(0),
                );
                (
                    self.options.dialect.unwrap_or_default(),
                    ManifestBuilder::new(config),
                )
            }
        };
        let manifest = manifest.finish(std::mem::take(&mut self.blocks));
        let archive_size = write_tail(&mut self.out, &manifest, dialect, self.offset)?;
        let summary = PackSummary {
            files: manifest.len() as u64,
            bytes_in: self.bytes_in,
            blocks: manifest.blocks().len() as u64,
            archive_size,
            skipped: Vec::new(),
        };
        Ok((self.out, summary))
    }
}

/// Merges `parts`, in order, into `out`: [`Merger::append`] for each, then
/// [`Merger::finish`]. Parts may be archives or references to them, so
/// they can be opened one at a time (an iterator that opens each) or all
/// at once (`[&a, &b]`).
///
/// # Examples
///
/// ```
/// use std::io::Cursor;
/// use binfmt_arcx::{Archive, MergeOptions, PackOptions, Packer, merge};
///
/// let dir = tempfile::tempdir()?;
/// let mut parts = Vec::new();
/// for (k, rows) in [[("a/1.txt", "one"), ("a/2.txt", "two")], [("b/3.txt", "three"), ("b/4.txt", "four")]]
///     .iter()
///     .enumerate()
/// {
///     let path = dir.path().join(format!("part-{k}.arcx"));
///     let mut packer = Packer::create(&path, PackOptions::default())?;
///     for (name, text) in rows {
///         packer.add(name, &mut text.as_bytes())?;
///     }
///     packer.commit()?;
///     parts.push(path);
/// }
///
/// // All parts open at once here; `Merger::append` takes them one at a time.
/// let opened = parts.iter().map(|path| Archive::open(path));
/// let opened: Vec<Archive> = opened.collect::<Result<_, _>>()?;
/// let (out, summary) = merge(&opened, Cursor::new(Vec::new()), MergeOptions::default())?;
/// assert_eq!(summary.files, 4);
///
/// let merged = Archive::new(out.into_inner())?;
/// let names: Vec<String> = merged.files().map(|file| file.path().to_string()).collect();
/// assert_eq!(names, ["a/1.txt", "a/2.txt", "b/3.txt", "b/4.txt"]);
/// assert_eq!(merged.read("b/3.txt")?, b"three");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn merge<S, A, W>(
    parts: impl IntoIterator<Item = A>,
    out: W,
    options: MergeOptions,
) -> Result<(W, PackSummary)>
where
    S: Source,
    A: std::borrow::Borrow<Archive<S>>,
    W: Write + Seek,
{
    let mut merger = Merger::new(out, options)?;
    for part in parts {
        merger.append(part.borrow())?;
    }
    merger.finish()
}

/// What [`Merger::plan`] found: the dialect written, and the new id of
/// each of the part's blocks that some chunk uses.
#[derive(Debug)]
struct Plan {
    dialect: Dialect,
    new_ids: Vec<Option<u32>>,
}

/// Announces the stored bytes of `used` blocks from `from` on, up to
/// [`ANNOUNCE`] bytes (at least one block), to `source`; returns the index
/// of the first block not announced.
fn announce<S: Source>(source: &S, used: &[(u32, BlockRecord)], from: usize) -> usize {
    let mut ranges: Vec<std::ops::Range<u64>> = Vec::new();
    let mut bytes = 0u64;
    let mut end = from;
    for (_, block) in used.get(from..).unwrap_or_default() {
        if bytes >= ANNOUNCE {
            break;
        }
        bytes += block.end() - block.offset;
        end += 1;
        match ranges.last_mut() {
            Some(last) if last.end == block.offset => last.end = block.end(),
            _ => ranges.push(block.offset..block.end()),
        }
    }
    source.will_read(&ranges);
    end
}

/// A block's checks, fed its stored bytes piece by piece: the CRC32, and
/// what a zstd frame decompresses to (counted, not kept).
struct BlockCheck {
    id: u32,
    block: BlockRecord,
    crc: crc32fast::Hasher,
    /// The decompression context (made for the first zstd block, then
    /// kept for the next ones).
    context: Option<zstd::zstd_safe::DCtx<'static>>,
    produced: u64,
    frame_done: bool,
    /// Why the zstd frame is wrong, once found: decoding stops there, and
    /// the CRC32 goes on, so a corrupt block is named as that first.
    failed: Option<ArcxError>,
}

impl BlockCheck {
    /// The checks of block `id`; `context` is a decompression context to
    /// reuse, if one is at hand.
    fn new(
        id: u32,
        block: &BlockRecord,
        context: Option<zstd::zstd_safe::DCtx<'static>>,
    ) -> Result<Self> {
        let zstd = |code| {
            data_error(
                id,
                format!("zstd: {}", zstd::zstd_safe::get_error_name(code)),
            )
        };
        let context = match block.codec {
            Codec::Store => context,
            Codec::Zstd => {
                let mut context = match context {
                    Some(context) => context,
                    None => zstd::zstd_safe::DCtx::try_create()
                        .ok_or_else(|| data_error(id, "zstd: no memory for a decoder"))?,
                };
                context
                    .reset(zstd::zstd_safe::ResetDirective::SessionOnly)
                    .map_err(zstd)?;
                context
                    .set_parameter(zstd::zstd_safe::DParameter::WindowLogMax(MAX_WINDOW_LOG))
                    .map_err(zstd)?;
                Some(context)
            }
        };
        Ok(Self {
            id,
            block: *block,
            crc: crc32fast::Hasher::new(),
            context,
            produced: 0,
            frame_done: false,
            failed: None,
        })
    }

    /// Takes the next stored bytes.
    fn feed(&mut self, input: &[u8], scratch: &mut Vec<u8>) {
        self.crc.update(input);
        if self.block.codec == Codec::Store {
            self.produced += input.len() as u64;
        } else if self.failed.is_none()
            && let Err(error) = self.decode(input, scratch)
        {
            self.failed = Some(error);
        }
    }

    /// Runs `input` through the zstd decoder, counting its output; stops
    /// as soon as the output passes the block's size.
    fn decode(&mut self, input: &[u8], scratch: &mut Vec<u8>) -> Result<()> {
        scratch.resize(SCRATCH, 0);
        let id = self.id;
        let Some(context) = &mut self.context else {
            return Ok(());
        };
        let mut read = 0;
        loop {
            let rest = input.get(read..).unwrap_or_default();
            if self.frame_done {
                if !rest.is_empty() {
                    return Err(data_error(id, "bytes after the zstd frame"));
                }
                return Ok(());
            }
            let step = zstd_step(context, rest, scratch, id)?;
            read += step.read;
            self.produced += step.written as u64;
            self.frame_done = step.frame_done;
            if self.produced > u64::from(self.block.size) {
                return Err(data_error(
                    id,
                    format!(
                        "decompresses beyond the {} bytes the manifest says",
                        self.block.size
                    ),
                ));
            }
            // All input taken and the output not full: zstd has nothing
            // more to give until more input comes.
            if read >= input.len() && step.written < scratch.len() {
                return Ok(());
            }
        }
    }

    /// The end-of-block checks: the CRC32 right, the frame complete, the
    /// size right. Hands back the decompression context for the next block.
    fn finish(mut self, scratch: &mut Vec<u8>) -> Result<Option<zstd::zstd_safe::DCtx<'static>>> {
        let id = self.id;
        let found = self.crc.clone().finalize();
        if found != self.block.checksum {
            return Err(ArcxError::BlockChecksum {
                block: id,
                expected: self.block.checksum,
                found,
            });
        }
        if let Some(error) = self.failed.take() {
            return Err(error);
        }
        if self.block.codec == Codec::Zstd && !self.frame_done {
            // Output zstd held back, or the frame's end mark.
            self.decode(&[], scratch)?;
            if !self.frame_done {
                return Err(data_error(id, "zstd: the frame is incomplete"));
            }
        }
        if self.produced != u64::from(self.block.size) {
            return Err(data_error(
                id,
                format!(
                    "decompresses to {} bytes, the manifest says {}",
                    self.produced, self.block.size
                ),
            ));
        }
        Ok(self.context)
    }
}

impl fmt::Debug for BlockCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlockCheck")
            .field("id", &self.id)
            .field("produced", &self.produced)
            .finish()
    }
}

/// A part whose `setting` is `found` where the merge writes `expected`.
fn mismatch(
    setting: &'static str,
    expected: impl fmt::Display,
    found: impl fmt::Display,
) -> ArcxError {
    ArcxError::MergeMismatch {
        setting,
        expected: expected.to_string(),
        found: found.to_string(),
    }
}

/// Requires a part's settings to be the merged archive's.
fn check_config(merged: &Config, part: &Config) -> Result<()> {
    if merged.chunk_size != part.chunk_size {
        return Err(mismatch("chunk size", merged.chunk_size, part.chunk_size));
    }
    if merged.small_file_threshold != part.small_file_threshold {
        return Err(mismatch(
            "block size (small file threshold)",
            merged.small_file_threshold,
            part.small_file_threshold,
        ));
    }
    if merged.zstd_level != part.zstd_level {
        return Err(mismatch("zstd level", merged.zstd_level, part.zstd_level));
    }
    if merged.codec_default != part.codec_default {
        return Err(mismatch(
            "default codec",
            &merged.codec_default,
            &part.codec_default,
        ));
    }
    if merged.compression_mode != part.compression_mode {
        return Err(mismatch(
            "compression mode",
            &merged.compression_mode,
            &part.compression_mode,
        ));
    }
    Ok(())
}

fn output_error(error: std::io::Error) -> ArcxError {
    ArcxError::Core(binfmt_core::Error::io("archive output", error))
}

/// The error of a merger used after `part` failed half copied.
fn stopped(part: &MergePart, why: &str) -> ArcxError {
    ArcxError::MergeStopped {
        part: part.clone(),
        why: why.to_owned(),
    }
}
