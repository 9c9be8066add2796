//! Writing archives.
//!
//! [`Packer`] writes to any `Write + Seek` (the header, written last, holds
//! the manifest's offset) and takes files one at a time as readers, in
//! pieces of at most one chunk, so memory stays bounded by the blocks in
//! flight whatever the file sizes. Files smaller than the block size
//! (1 MiB) share blocks, in order, up to that size; larger files are cut
//! into chunks of the chunk size (1 MiB), one block each. Each block is
//! compressed as its own task, at most 4 per thread in flight, and written
//! in order as soon as the blocks before it are, so the archive is the
//! same for any thread count and no thread waits for a batch's slowest
//! block. A block that does not shrink
//! is stored. Nothing depends on the clock: the creation timestamp is 0.
//! Block buffers, read and compressed, go back to a bounded pool of spares
//! once written, so a long pack does not fault in fresh memory per block.

use std::cell::RefCell;
use std::collections::HashSet;
use std::io::{IoSlice, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::thread;

use binfmt_core::AtomicFile;
use binfmt_core::layout::{IntoBytes, U32, U64};
use sha2::{Digest, Sha256};

use crate::error::{ArcxError, Result};
use crate::format::{
    Codec, Dialect, FOOTER_MAGIC, Footer, HEADER_MAGIC, HEADER_SIZE, Header, MANIFEST_MAGIC,
    VERSION, crc32,
};
use crate::manifest::{
    Attributes, BlockRecord, ChunkRecord, Config, FileKind, Manifest, ManifestBuilder,
};

/// Why the arcx-cli dialect leaves an empty directory out.
pub(crate) const NO_CLI_DIRECTORY: &str = "an empty directory: the arcx-cli dialect holds regular files only (arcx 0.3.0 would extract it as an empty regular file)";

/// Why the arcx-cli dialect leaves a symlink out.
pub(crate) const NO_CLI_SYMLINK: &str = "a symlink: the arcx-cli dialect holds regular files only (arcx 0.3.0 would extract it as a regular file holding the target)";

/// How to pack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PackOptions {
    /// Which layout to write.
    pub dialect: Dialect,
    /// zstd level for blocks (default 3).
    pub level: i32,
    /// Files smaller than this share blocks of up to this size (default
    /// [`DEFAULT_BLOCK_SIZE`], 1 MiB; at most 16 MiB, the largest shared
    /// block readers accept).
    pub block_size: usize,
    /// Larger files are cut into chunks of this size, one block each
    /// (default 1 MiB; never below `block_size`).
    pub chunk_size: usize,
    /// Threads compressing blocks; `None` uses one per core.
    pub jobs: Option<usize>,
}

impl Default for PackOptions {
    fn default() -> Self {
        Self {
            dialect: Dialect::Spec,
            level: 3,
            block_size: DEFAULT_BLOCK_SIZE,
            chunk_size: 1 << 20,
            jobs: None,
        }
    }
}

impl PackOptions {
    /// These options writing `dialect`.
    pub fn dialect(mut self, dialect: Dialect) -> Self {
        self.dialect = dialect;
        self
    }

    /// These options with zstd level `level`.
    pub fn level(mut self, level: i32) -> Self {
        self.level = level;
        self
    }

    /// These options with shared blocks of up to `bytes`.
    pub fn block_size(mut self, bytes: usize) -> Self {
        self.block_size = bytes;
        self
    }

    /// These options with large-file chunks of `bytes`.
    pub fn chunk_size(mut self, bytes: usize) -> Self {
        self.chunk_size = bytes;
        self
    }

    /// These options compressing on `jobs` threads.
    pub fn jobs(mut self, jobs: Option<usize>) -> Self {
        self.jobs = jobs;
        self
    }
}

/// The default shared block size: 1 MiB, as `arcx` 0.3.0's own blocks.
/// Each block's zstd frame starts with no context, so small blocks cost
/// size on text (256 KiB: +10-12% over `tar | zstd -3` of the same tree;
/// 1 MiB: +1.7-2.9%), while `get` of a small file decodes its block
/// (docs/benchmarks.md, the `arcx-text` table).
pub const DEFAULT_BLOCK_SIZE: usize = 1 << 20;

/// The largest shared block a packer writes: what readers accept by default.
const MAX_SHARED_BLOCK: usize = 16 << 20;

/// The zstd level of the manifest (what the `arcx` tool uses).
const MANIFEST_LEVEL: i32 = 9;

/// Blocks pushed and not yet written, per compressing thread.
const IN_FLIGHT_PER_THREAD: usize = 4;

/// Spare block buffers: handed back by the block writer once a block is
/// written, taken by the packer for the next block and by the compressors
/// for their output. At most `limit` are kept.
#[derive(Debug, Clone)]
struct Spares {
    buffers: Arc<Mutex<Vec<Vec<u8>>>>,
    limit: usize,
}

impl Spares {
    fn new(limit: usize) -> Self {
        Self {
            buffers: Arc::new(Mutex::new(Vec::new())),
            limit,
        }
    }

    /// An empty buffer, with the capacity of a spare when there is one.
    fn take(&self) -> Vec<u8> {
        let spare = self
            .buffers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        spare.unwrap_or_default()
    }

    fn give(&self, mut buffer: Vec<u8>) {
        buffer.clear();
        let mut buffers = self.buffers.lock().unwrap_or_else(PoisonError::into_inner);
        if buffers.len() < self.limit && buffer.capacity() > 0 {
            buffers.push(buffer);
        }
    }
}

/// What the block writer hands back: the output, the blocks it wrote, and
/// where the data region ends.
#[derive(Debug)]
struct Written<W> {
    out: W,
    blocks: Vec<BlockRecord>,
    offset: u64,
}

/// A block compressed (or stored), with its decompressed size and the
/// CRC32 of its stored bytes, computed by the thread that compressed it.
type Compressed = (Codec, Vec<u8>, u32, u32);

/// Compresses blocks in parallel and writes them in order on a background
/// thread, while the caller reads and hashes the next ones. Each block is
/// its own task on the compression threads, taken in the order pushed; the
/// writer thread writes each as soon as every block before it is written,
/// so no thread waits for a batch's slowest block and writing overlaps
/// compressing. At most `in_flight` blocks are pushed and not yet written
/// (the caller waits for a slot), so memory stays bounded.
#[derive(Debug)]
struct BlockWriter<W> {
    /// Compressed blocks, with their ids, to the writer thread.
    results: Option<mpsc::Sender<(u64, std::io::Result<Compressed>)>>,
    /// One message per block pushed and not yet written: a slot.
    slots: Option<mpsc::SyncSender<()>>,
    thread: Option<thread::JoinHandle<Result<Written<W>>>>,
    pool: Option<Arc<rayon::ThreadPool>>,
    level: i32,
    sent: u64,
    spares: Spares,
}

impl<W: Write + Send + 'static> BlockWriter<W> {
    fn start(out: W, level: i32, jobs: Option<usize>) -> Result<Self> {
        let pool = match jobs {
            Some(jobs) => Some(Arc::new(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(jobs.max(1))
                    .build()
                    .map_err(|error| {
                        ArcxError::Core(binfmt_core::Error::io(
                            "arcx compression threads",
                            std::io::Error::other(error),
                        ))
                    })?,
            )),
            None => None,
        };
        let threads = pool
            .as_ref()
            .map_or_else(rayon::current_num_threads, |pool| {
                pool.current_num_threads()
            });
        let in_flight = (IN_FLIGHT_PER_THREAD * threads).max(8);
        // Each block in flight: its input and its output.
        let spares = Spares::new(2 * in_flight);
        let (results, received) = mpsc::channel();
        let (slots, freed) = mpsc::sync_channel::<()>(in_flight);
        let thread = thread::Builder::new()
            .name("arcx-block-writer".into())
            .spawn({
                let spares = spares.clone();
                move || write_blocks(out, received, freed, &spares)
            })
            .map_err(|error| binfmt_core::Error::io("arcx block writer thread", error))?;
        Ok(Self {
            results: Some(results),
            slots: Some(slots),
            thread: Some(thread),
            pool,
            level,
            sent: 0,
            spares,
        })
    }

    /// The id the next block pushed will get.
    fn next_id(&self) -> u64 {
        self.sent
    }

    /// Queues `data` for compression as the next block, once a slot is
    /// free.
    fn push(&mut self, data: Vec<u8>) -> Result<()> {
        let slot = self.slots.as_ref().is_some_and(take_slot);
        let Some(results) = self.results.clone().filter(|_| slot) else {
            // The writer stopped: its result says why.
            return self.join().map(|_| ());
        };
        let (id, level, spares) = (self.sent, self.level, self.spares.clone());
        self.sent += 1;
        let task = move || {
            let compressed = compress_block(data, level, &spares);
            // A writer that stopped wants no more blocks.
            let _ = results.send((id, compressed));
        };
        match &self.pool {
            Some(pool) => pool.spawn_fifo(task),
            None => rayon::spawn_fifo(task),
        }
        Ok(())
    }

    fn join(&mut self) -> Result<Written<W>> {
        self.results = None;
        self.slots = None;
        match self.thread.take().map(join_helping) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(binfmt_core::Error::io(
                "arcx block writer thread",
                std::io::Error::other("the thread panicked"),
            )
            .into()),
            None => Err(binfmt_core::Error::io(
                "arcx block writer thread",
                std::io::Error::other("already finished"),
            )
            .into()),
        }
    }

    fn finish(mut self) -> Result<Written<W>> {
        let written = self.join()?;
        if written.blocks.len() as u64 != self.sent {
            return Err(binfmt_core::Error::io(
                "arcx block writer thread",
                std::io::Error::other(format!(
                    "{} blocks pushed, {} written",
                    self.sent,
                    written.blocks.len()
                )),
            )
            .into());
        }
        Ok(written)
    }
}

/// A block writer dropped unfinished (a packer given up on, or failed)
/// waits for its thread, so the output it owns is dropped before the drop
/// returns: an [`AtomicFile`]'s temporary file is gone, not left to vanish
/// some time later.
impl<W> Drop for BlockWriter<W> {
    fn drop(&mut self) {
        self.results = None;
        self.slots = None;
        if let Some(thread) = self.thread.take() {
            // Its result (the output, or why it stopped) is not wanted.
            let _ = join_helping(thread);
        }
    }
}

/// Takes a slot for one more block in flight, waiting for the writer to
/// free one; false if the writer stopped. On a thread of a rayon pool
/// (which may be the one compressing, when the packer runs inside it), it
/// runs that pool's waiting tasks meanwhile instead of blocking them out.
fn take_slot(slots: &mpsc::SyncSender<()>) -> bool {
    loop {
        match slots.try_send(()) {
            Ok(()) => return true,
            Err(mpsc::TrySendError::Disconnected(())) => return false,
            Err(mpsc::TrySendError::Full(())) => match rayon::yield_now() {
                None => return slots.send(()).is_ok(),
                Some(rayon::Yield::Executed) => {}
                Some(rayon::Yield::Idle) => thread::sleep(std::time::Duration::from_micros(50)),
            },
        }
    }
}

/// Joins the writer thread; on a rayon pool's thread, runs that pool's
/// tasks until the writer is done (it waits for the compression tasks).
fn join_helping<T>(thread: thread::JoinHandle<T>) -> thread::Result<T> {
    while !thread.is_finished() {
        match rayon::yield_now() {
            None => break,
            Some(rayon::Yield::Executed) => {}
            Some(rayon::Yield::Idle) => thread::sleep(std::time::Duration::from_micros(50)),
        }
    }
    thread.join()
}

/// The block writer thread: blocks as their compression finishes, written
/// in id order (those that finish early wait in `waiting`), each freeing a
/// slot once written. Ends when the packer and every compression task have
/// let go of the channel.
fn write_blocks<W: Write>(
    mut out: W,
    received: mpsc::Receiver<(u64, std::io::Result<Compressed>)>,
    freed: mpsc::Receiver<()>,
    spares: &Spares,
) -> Result<Written<W>> {
    let io = |error| ArcxError::Core(binfmt_core::Error::io("archive output", error));
    let mut blocks = Vec::new();
    let mut offset = HEADER_SIZE as u64;
    let mut waiting = std::collections::BTreeMap::new();
    for (id, compressed) in received {
        let compressed = compressed.map_err(|error| {
            ArcxError::Core(binfmt_core::Error::io("zstd block compression", error))
        })?;
        waiting.insert(id, compressed);
        while let Some((codec, bytes, size, checksum)) = waiting.remove(&(blocks.len() as u64)) {
            let stored_size = u32::try_from(bytes.len())
                .map_err(|_| ArcxError::TooLarge("a block over 4 GiB"))?;
            binfmt_core::io::write_all_vectored(
                &mut out,
                &mut [
                    IoSlice::new(&stored_size.to_le_bytes()),
                    IoSlice::new(&bytes),
                ],
            )
            .map_err(io)?;
            blocks.push(BlockRecord {
                codec,
                offset,
                stored_size,
                size,
                checksum,
            });
            offset += 4 + u64::from(stored_size);
            spares.give(bytes);
            // The packer may push one more.
            let _ = freed.try_recv();
        }
    }
    Ok(Written {
        out,
        blocks,
        offset,
    })
}

/// A block's stored form: zstd when that is smaller, the bytes themselves
/// otherwise; with its decompressed size. Each thread keeps one zstd
/// context; the buffer not kept goes back to `spares`.
fn compress_block(data: Vec<u8>, level: i32, spares: &Spares) -> std::io::Result<Compressed> {
    thread_local! {
        static COMPRESSOR: RefCell<Option<(i32, zstd::bulk::Compressor<'static>)>> = const { RefCell::new(None) };
    }
    let size = u32::try_from(data.len()).map_err(std::io::Error::other)?;
    let mut compressed = spares.take();
    compressed.reserve(zstd::zstd_safe::compress_bound(data.len()));
    COMPRESSOR.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.as_ref().is_none_or(|(cached, _)| *cached != level) {
            *cell = Some((level, zstd::bulk::Compressor::new(level)?));
        }
        match cell.as_mut() {
            Some((_, compressor)) => compressor.compress_to_buffer(&data, &mut compressed),
            None => Err(std::io::Error::other("no zstd context")),
        }
    })?;
    Ok(if compressed.len() < data.len() {
        spares.give(data);
        let checksum = crc32(&compressed);
        (Codec::Zstd, compressed, size, checksum)
    } else {
        spares.give(compressed);
        let checksum = crc32(&data);
        (Codec::Store, data, size, checksum)
    })
}

/// Builds an archive entry by entry, into any `Write + Seek`.
///
/// # Examples
///
/// ```
/// use binfmt_arcx::{Archive, PackOptions, Packer};
///
/// let mut packer = Packer::new(std::io::Cursor::new(Vec::new()), PackOptions::default())?;
/// packer.add("notes/a.txt", &mut &b"first"[..])?;
/// packer.add("notes/b.txt", &mut &b"second"[..])?;
/// let (out, summary) = packer.finish()?;
/// assert_eq!(summary.files, 2);
///
/// let archive = Archive::new(out.into_inner())?;
/// assert_eq!(archive.read("notes/b.txt")?, b"second");
/// # Ok::<(), binfmt_arcx::ArcxError>(())
/// ```
#[derive(Debug)]
pub struct Packer<W> {
    blocks: BlockWriter<W>,
    options: PackOptions,
    manifest: ManifestBuilder,
    paths: HashSet<String>,
    /// The shared block being filled with small files, and its chunks.
    small: Vec<u8>,
    small_chunks: Vec<u32>,
    bytes_in: u64,
}

impl Packer<AtomicFile> {
    /// Starts an archive that replaces `destination` when finished (see
    /// [`Packer::commit`]).
    pub fn create(destination: impl AsRef<Path>, options: PackOptions) -> Result<Self> {
        Self::new(AtomicFile::create(destination)?, options)
    }

    /// Finishes the archive and puts it in place.
    pub fn commit(self) -> Result<PackSummary> {
        let (out, summary) = self.finish()?;
        out.commit()?;
        Ok(summary)
    }
}

impl<W: Write + Seek + Send + 'static> Packer<W> {
    /// Starts an archive written to `out` (from its current position 0).
    pub fn new(mut out: W, options: PackOptions) -> Result<Self> {
        out.write_all(&[0; HEADER_SIZE])
            .map_err(|error| binfmt_core::Error::io("archive output", error))?;
        let block_size = options.block_size.clamp(1, MAX_SHARED_BLOCK);
        let chunk_size = options.chunk_size.max(block_size);
        Ok(Self {
            blocks: BlockWriter::start(out, options.level, options.jobs)?,
            options: PackOptions {
                block_size,
                chunk_size,
                ..options
            },
            manifest: ManifestBuilder::new(Config::new(
                chunk_size as u64,
                block_size as u64,
                u64::try_from(options.level).unwrap_or(0),
            )),
            paths: HashSet::new(),
            small: Vec::new(),
            small_chunks: Vec::new(),
            bytes_in: 0,
        })
    }

    /// Adds a regular file (mode 0o644, time 0), read from `data` to its
    /// end, at `path` inside the archive; returns its size.
    pub fn add(&mut self, path: &str, data: &mut impl Read) -> Result<u64> {
        self.add_with(path, Attributes::default(), data)
    }

    /// Adds an entry with `attributes`: a regular file read from `data`, or
    /// a symlink whose target `data` holds. Directories go through
    /// [`Packer::add_directory`].
    pub fn add_with(
        &mut self,
        path: &str,
        attributes: Attributes,
        data: &mut impl Read,
    ) -> Result<u64> {
        if attributes.kind == FileKind::Directory {
            return Err(ArcxError::BadInputPath {
                path: path.to_owned(),
                why: "a directory holds no bytes: use add_directory",
            });
        }
        if attributes.kind == FileKind::Symlink {
            self.check_cli_kind(path, NO_CLI_SYMLINK)?;
        }
        self.check_new_path(path)?;
        let block_size = self.options.block_size;
        let input = |error| ArcxError::Core(binfmt_core::Error::io(path, error));
        let mut piece = self.blocks.spares.take();
        read_piece_into(data, block_size, &mut piece).map_err(input)?;
        if piece.len() < block_size {
            // The whole file fits in less than a block: share a block.
            let sha256 = Sha256::digest(&piece).into();
            let added = self.push_small(path, attributes, &piece, sha256);
            self.blocks.spares.give(piece);
            return added;
        }
        self.push_large(path, attributes, piece, data)
    }

    /// Adds a regular file or symlink whose bytes (fewer than the block
    /// size) were read and hashed already, by [`read_small`] on another
    /// thread; returns its size.
    pub(crate) fn add_small(
        &mut self,
        path: &str,
        attributes: Attributes,
        small: &SmallFile,
    ) -> Result<u64> {
        self.check_new_path(path)?;
        self.push_small(path, attributes, &small.data, small.sha256)
    }

    /// Whether `size` bytes go into a shared block (and [`read_small`]
    /// applies).
    pub(crate) fn is_small(&self, size: u64) -> bool {
        size < self.options.block_size as u64
    }

    fn push_small(
        &mut self,
        path: &str,
        attributes: Attributes,
        piece: &[u8],
        sha256: [u8; 32],
    ) -> Result<u64> {
        let block_size = self.options.block_size;
        let file_id = self.manifest.file_count();
        let first_chunk = self.manifest.chunk_count();
        if self.small.len() + piece.len() > block_size {
            self.flush_small()?;
        }
        let id = self.manifest.push_chunk(ChunkRecord {
            file: file_id,
            block: u32::MAX,
            offset: self.small.len() as u32,
            size: piece.len() as u32,
        })?;
        self.small_chunks.push(id);
        self.small.extend_from_slice(piece);
        let size = piece.len() as u64;
        let last_chunk = self.manifest.chunk_count();
        self.manifest
            .push_file(path, size, sha256, first_chunk..last_chunk, attributes)
            .map_err(ArcxError::Manifest)?;
        self.bytes_in += size;
        Ok(size)
    }

    /// A large file: chunks of `chunk_size`, the first one (`piece`, a
    /// block's worth read already) included.
    fn push_large(
        &mut self,
        path: &str,
        attributes: Attributes,
        mut piece: Vec<u8>,
        data: &mut impl Read,
    ) -> Result<u64> {
        let input = |error| ArcxError::Core(binfmt_core::Error::io(path, error));
        let file_id = self.manifest.file_count();
        let first_chunk = self.manifest.chunk_count();
        let (block_size, chunk_size) = (self.options.block_size, self.options.chunk_size);
        let mut hasher = Sha256::new();
        let mut size = 0u64;
        read_piece_into(data, chunk_size - block_size, &mut piece).map_err(input)?;
        while !piece.is_empty() {
            hasher.update(&piece);
            let block = u32::try_from(self.blocks.next_id())
                .map_err(|_| ArcxError::TooLarge("more than 2^32 blocks"))?;
            self.manifest.push_chunk(ChunkRecord {
                file: file_id,
                block,
                offset: 0,
                size: piece.len() as u32,
            })?;
            size += piece.len() as u64;
            self.blocks.push(piece)?;
            piece = self.blocks.spares.take();
            read_piece_into(data, chunk_size, &mut piece).map_err(input)?;
        }
        let last_chunk = self.manifest.chunk_count();
        self.manifest
            .push_file(
                path,
                size,
                hasher.finalize().into(),
                first_chunk..last_chunk,
                attributes,
            )
            .map_err(ArcxError::Manifest)?;
        self.bytes_in += size;
        Ok(size)
    }

    /// Adds an empty directory.
    pub fn add_directory(&mut self, path: &str, mode: u32, mtime_ns: i64) -> Result<()> {
        self.check_cli_kind(path, NO_CLI_DIRECTORY)?;
        self.check_new_path(path)?;
        let chunks = self.manifest.chunk_count();
        self.manifest
            .push_file(
                path,
                0,
                Sha256::digest([]).into(),
                chunks..chunks,
                Attributes::new(FileKind::Directory, mode, mtime_ns),
            )
            .map_err(ArcxError::Manifest)
    }

    /// The arcx-cli dialect holds regular files only: `arcx` 0.3.0 ignores
    /// the kind byte and extracts every entry as a regular file, so a
    /// directory or symlink would come out as a junk file (`why`).
    fn check_cli_kind(&self, path: &str, why: &'static str) -> Result<()> {
        if self.options.dialect == Dialect::ArcxCli {
            return Err(ArcxError::BadInputPath {
                path: path.to_owned(),
                why,
            });
        }
        Ok(())
    }

    /// Paths an archive can hold and every reader can extract: relative,
    /// no empty, `.` or `..` component, no NUL, no backslash, no trailing
    /// `/`, and not a path added before.
    fn check_new_path(&mut self, path: &str) -> Result<()> {
        binfmt_core::extract::check_relative_name(path).map_err(|why| ArcxError::BadInputPath {
            path: path.to_owned(),
            why,
        })?;
        if self.manifest.file_count() == u32::MAX {
            return Err(ArcxError::TooLarge("more than 2^32 files"));
        }
        if !self.paths.insert(path.to_owned()) {
            return Err(ArcxError::BadInputPath {
                path: path.to_owned(),
                why: "added twice",
            });
        }
        Ok(())
    }

    fn flush_small(&mut self) -> Result<()> {
        if self.small_chunks.is_empty() {
            return Ok(());
        }
        let id = u32::try_from(self.blocks.next_id())
            .map_err(|_| ArcxError::TooLarge("more than 2^32 blocks"))?;
        for &chunk in &self.small_chunks {
            self.manifest.set_block(chunk, id);
        }
        self.small_chunks.clear();
        let data = std::mem::replace(&mut self.small, self.blocks.spares.take());
        self.blocks.push(data)
    }

    /// Writes the manifest, footer and header; returns the output (at its
    /// end) and what was packed.
    pub fn finish(mut self) -> Result<(W, PackSummary)> {
        self.flush_small()?;
        let Written {
            mut out,
            blocks,
            offset,
        } = self.blocks.finish()?;
        let manifest = self.manifest.finish(blocks);
        let archive_size = write_tail(&mut out, &manifest, self.options.dialect, offset)?;
        let summary = PackSummary {
            files: manifest.len() as u64,
            bytes_in: self.bytes_in,
            blocks: manifest.blocks().len() as u64,
            archive_size,
            skipped: Vec::new(),
        };
        Ok((out, summary))
    }
}

/// Writes the manifest of `dialect` at `manifest_offset` (where the blocks
/// end, the output's position), then the footer, then the header over the
/// output's first 80 bytes; leaves the output at its end and returns the
/// archive's size. What [`Packer::finish`] and [`crate::Merger::finish`]
/// both end with.
pub(crate) fn write_tail<W: Write + Seek>(
    out: &mut W,
    manifest: &Manifest,
    dialect: Dialect,
    manifest_offset: u64,
) -> Result<u64> {
    let io = |error| ArcxError::Core(binfmt_core::Error::io("archive output", error));
    let zstd = |bytes: &[u8]| zstd::bulk::compress(bytes, MANIFEST_LEVEL).map_err(io);
    let files =
        u32::try_from(manifest.len()).map_err(|_| ArcxError::TooLarge("more than 2^32 files"))?;
    let (index_offset, footer, header_tail) = match dialect {
        Dialect::Spec => {
            let body = manifest.encode_spec_body().map_err(ArcxError::Manifest)?;
            let region = [&MANIFEST_MAGIC[..], &zstd(&body)?].concat();
            out.write_all(&region).map_err(io)?;
            let footer = Footer {
                magic: FOOTER_MAGIC,
                manifest_offset: U64::new(manifest_offset),
                field_16: U64::new(region.len() as u64),
                field_24: U32::new(files),
                field_28: U32::new(crc32(&region)),
                field_32: U64::new(0),
            };
            (0, footer, false)
        }
        Dialect::ArcxCli => {
            let raw = manifest.encode_cli_raw();
            let compressed = zstd(&raw)?;
            let region = if compressed.len() < raw.len() {
                [&[1u8][..], &compressed].concat()
            } else {
                [&[0u8][..], &raw].concat()
            };
            let length = u32::try_from(region.len())
                .map_err(|_| ArcxError::TooLarge("a manifest over 4 GiB"))?;
            // The manifest, then the copy the tool calls the index.
            for _ in 0..2 {
                out.write_all(&length.to_le_bytes()).map_err(io)?;
                out.write_all(&region).map_err(io)?;
            }
            let index_offset = manifest_offset + 4 + region.len() as u64;
            let footer = Footer {
                magic: FOOTER_MAGIC,
                manifest_offset: U64::new(manifest_offset),
                field_16: U64::new(index_offset),
                field_24: U32::new(0),
                field_28: U32::new(0),
                field_32: U64::new(0),
            };
            (index_offset, footer, true)
        }
    };
    out.write_all(footer.as_bytes()).map_err(io)?;
    let archive_size = out.stream_position().map_err(io)?;
    let mut header = Header {
        magic: HEADER_MAGIC,
        version_major: U32::new(VERSION.0),
        version_minor: U32::new(VERSION.1),
        manifest_offset: U64::new(manifest_offset),
        data_offset: U64::new(HEADER_SIZE as u64),
        index_offset: U64::new(index_offset),
        flags: U64::new(0),
        creation_timestamp: U64::new(0),
        tail_0: U64::new(0),
        tail_1: U64::new(0),
        tail_2: U64::new(0),
    };
    if header_tail {
        header.tail_0 = U64::new((u64::from(VERSION.0) << 16) | u64::from(VERSION.1));
        let crc = crc32(header.as_bytes().get(..72).unwrap_or_default());
        header.tail_2 = U64::new(u64::from(crc));
    }
    out.seek(SeekFrom::Start(0)).map_err(io)?;
    out.write_all(header.as_bytes()).map_err(io)?;
    out.seek(SeekFrom::Start(archive_size)).map_err(io)?;
    Ok(archive_size)
}

/// A small file read and hashed ahead of the packer, on another thread.
#[derive(Debug)]
pub(crate) struct SmallFile {
    data: Vec<u8>,
    sha256: [u8; 32],
}

/// Reads and hashes the file at `path` when it holds fewer than
/// `block_size` bytes (`None` when it has grown since it was listed: the
/// packer then streams it). `listed` is its size when listed, room made
/// for up front.
pub(crate) fn read_small(
    path: &std::path::Path,
    listed: u64,
    block_size: usize,
) -> Result<Option<SmallFile>> {
    let source = binfmt_core::FileSource::open(path)?;
    let mut file = source.file();
    let room = usize::try_from(listed).map_or(block_size, |listed| listed.min(block_size));
    let mut data = Vec::with_capacity(room);
    read_rest_into(&mut file, block_size, &mut data)
        .map_err(|error| ArcxError::Core(binfmt_core::Error::io(path, error)))?;
    if data.len() >= block_size {
        return Ok(None);
    }
    let sha256 = Sha256::digest(&data).into();
    Ok(Some(SmallFile { data, sha256 }))
}

/// Up to `len` more bytes from `data` (fewer only at its end), appended
/// to `piece`, with room for them made first (at most 1 MiB up front).
fn read_piece_into(data: &mut impl Read, len: usize, piece: &mut Vec<u8>) -> std::io::Result<()> {
    piece.reserve(len.min(1 << 20));
    read_rest_into(data, len, piece)
}

/// Up to `len` more bytes from `data` appended to `piece`, growing it only
/// as they come.
fn read_rest_into(data: &mut impl Read, len: usize, piece: &mut Vec<u8>) -> std::io::Result<()> {
    data.take(len as u64).read_to_end(piece)?;
    Ok(())
}

/// What packing did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PackSummary {
    /// Entries stored.
    pub files: u64,
    /// Their bytes.
    pub bytes_in: u64,
    /// Blocks written.
    pub blocks: u64,
    /// The archive's size.
    pub archive_size: u64,
    /// What a directory walk did not store, and why.
    pub skipped: Vec<Skipped>,
}

/// Something a directory walk did not store, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Skipped {
    /// Its path on disk.
    pub path: PathBuf,
    /// Why it was not stored.
    pub why: &'static str,
}
