//! Writing archives.
//!
//! [`Packer`] takes files one at a time as readers, in pieces of at most one
//! chunk, so memory stays bounded by a batch of blocks whatever the file
//! sizes. Files smaller than the block size (256 KiB) share blocks, in
//! order, up to that size; larger files are cut into chunks of the chunk
//! size (1 MiB), one block each.
//! Blocks are compressed in parallel a batch at a time and written in order,
//! so the archive is the same for any thread count. A block that does not
//! shrink is stored. Nothing depends on the clock: the creation timestamp is
//! 0.

use std::cell::RefCell;
use std::fs::{self, File};
use std::io::{IoSlice, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread;

use binfmt_core::layout::{IntoBytes, U32, U64};
use binfmt_core::{AtomicFile, IoResultExt};
use rayon::prelude::*;
use sha2::{Digest, Sha256};

use crate::error::{ArcxError, Result};
use crate::format::{
    Codec, Dialect, FOOTER_MAGIC, Footer, HEADER_MAGIC, HEADER_SIZE, Header, MANIFEST_MAGIC,
    VERSION, crc32,
};
use crate::manifest::{BlockRecord, ChunkRecord, Config, FileRecord, Manifest};

/// How to pack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PackOptions {
    /// Which layout to write.
    pub dialect: Dialect,
    /// zstd level for blocks (default 3).
    pub level: i32,
    /// Files smaller than this share blocks of up to this size (default
    /// 256 KiB).
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
            block_size: 256 << 10,
            chunk_size: 1 << 20,
            jobs: None,
        }
    }
}

/// The zstd level of the manifest (what the `arcx` tool uses).
const MANIFEST_LEVEL: i32 = 9;

/// Blocks a batch holds before it is compressed, per compressing thread.
const BATCH_PER_THREAD: usize = 4;

/// What the block writer hands back: the file, the blocks it wrote, and
/// where the data region ends.
#[derive(Debug)]
struct Written {
    out: AtomicFile,
    blocks: Vec<BlockRecord>,
    offset: u64,
}

/// Compresses blocks in parallel and writes them in order on a background
/// thread, while the caller reads and hashes the next batch. At most two
/// batches are in flight, so memory stays bounded.
#[derive(Debug)]
struct BlockWriter {
    sender: Option<mpsc::SyncSender<Vec<Vec<u8>>>>,
    thread: Option<thread::JoinHandle<Result<Written>>>,
    batch: Vec<Vec<u8>>,
    batch_len: usize,
    sent: u64,
}

impl BlockWriter {
    fn start(out: AtomicFile, level: i32, jobs: Option<usize>) -> Result<Self> {
        let pool = match jobs {
            Some(jobs) => Some(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(jobs.max(1))
                    .build()
                    .map_err(|error| {
                        binfmt_core::Error::corrupt("thread pool", error.to_string())
                    })?,
            ),
            None => None,
        };
        let threads = pool.as_ref().map_or_else(
            rayon::current_num_threads,
            rayon::ThreadPool::current_num_threads,
        );
        let (sender, receiver) = mpsc::sync_channel::<Vec<Vec<u8>>>(1);
        let thread = thread::Builder::new()
            .name("arcx-block-writer".into())
            .spawn(move || write_blocks(out, receiver, level, pool))
            .map_err(|error| binfmt_core::Error::io("<arcx block writer>", error))?;
        Ok(Self {
            sender: Some(sender),
            thread: Some(thread),
            batch: Vec::new(),
            batch_len: (BATCH_PER_THREAD * threads).max(8),
            sent: 0,
        })
    }

    /// The id the next block pushed will get.
    fn next_id(&self) -> u64 {
        self.sent + self.batch.len() as u64
    }

    fn push(&mut self, data: Vec<u8>) -> Result<()> {
        self.batch.push(data);
        if self.batch.len() >= self.batch_len {
            self.send()?;
        }
        Ok(())
    }

    fn send(&mut self) -> Result<()> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let batch = std::mem::take(&mut self.batch);
        self.sent += batch.len() as u64;
        let delivered = self
            .sender
            .as_ref()
            .is_some_and(|sender| sender.send(batch).is_ok());
        if delivered {
            Ok(())
        } else {
            // The writer stopped: its result says why.
            self.join().map(|_| ())
        }
    }

    fn join(&mut self) -> Result<Written> {
        self.sender = None;
        match self.thread.take().map(thread::JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => {
                Err(binfmt_core::Error::corrupt("arcx block writer", "the thread panicked").into())
            }
            None => {
                Err(binfmt_core::Error::corrupt("arcx block writer", "already finished").into())
            }
        }
    }

    fn finish(mut self) -> Result<Written> {
        self.send()?;
        self.join()
    }
}

/// The block writer thread: each batch compressed in parallel, then written
/// in order.
fn write_blocks(
    mut out: AtomicFile,
    batches: mpsc::Receiver<Vec<Vec<u8>>>,
    level: i32,
    pool: Option<rayon::ThreadPool>,
) -> Result<Written> {
    let destination = out.destination().to_owned();
    let mut blocks = Vec::new();
    let mut offset = HEADER_SIZE as u64;
    for batch in batches {
        let compress = || {
            batch
                .into_par_iter()
                .map(|data| compress_block(data, level))
                .collect::<std::io::Result<Vec<_>>>()
        };
        let stored = match &pool {
            Some(pool) => pool.install(compress),
            None => compress(),
        }
        .with_path(Path::new("<zstd>"))?;
        for (codec, bytes, size) in stored {
            let stored_size = u32::try_from(bytes.len()).map_err(|_| ArcxError::BadInputPath {
                path: destination.display().to_string(),
                why: "a block exceeds 4 GiB",
            })?;
            binfmt_core::io::write_all_vectored(
                &mut out,
                &mut [
                    IoSlice::new(&stored_size.to_le_bytes()),
                    IoSlice::new(&bytes),
                ],
            )
            .with_path(&destination)?;
            blocks.push(BlockRecord {
                codec,
                offset,
                stored_size: u64::from(stored_size),
                size,
                checksum: crc32(&bytes),
            });
            offset += 4 + u64::from(stored_size);
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
/// context.
fn compress_block(data: Vec<u8>, level: i32) -> std::io::Result<(Codec, Vec<u8>, u64)> {
    thread_local! {
        static COMPRESSOR: RefCell<Option<(i32, zstd::bulk::Compressor<'static>)>> = const { RefCell::new(None) };
    }
    let compressed = COMPRESSOR.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.as_ref().is_none_or(|(cached, _)| *cached != level) {
            *cell = Some((level, zstd::bulk::Compressor::new(level)?));
        }
        match cell.as_mut() {
            Some((_, compressor)) => compressor.compress(&data),
            None => Err(std::io::Error::other("no zstd context")),
        }
    })?;
    let size = data.len() as u64;
    Ok(if compressed.len() < data.len() {
        (Codec::Zstd, compressed, size)
    } else {
        (Codec::Store, data, size)
    })
}

/// Builds an archive file by file.
#[derive(Debug)]
pub struct Packer {
    blocks: BlockWriter,
    destination: PathBuf,
    options: PackOptions,
    manifest: Manifest,
    /// The shared block being filled with small files, and its chunks.
    small: Vec<u8>,
    small_chunks: Vec<usize>,
    bytes_in: u64,
}

impl Packer {
    /// Starts an archive that will replace `destination` when finished.
    pub fn create(destination: impl AsRef<Path>, options: PackOptions) -> Result<Self> {
        let destination = destination.as_ref().to_owned();
        let mut out = AtomicFile::create(&destination)?;
        out.write_all(&[0; HEADER_SIZE]).with_path(&destination)?;
        let block_size = options.block_size.max(1);
        let chunk_size = options.chunk_size.max(block_size);
        Ok(Self {
            blocks: BlockWriter::start(out, options.level, options.jobs)?,
            destination,
            options: PackOptions {
                block_size,
                chunk_size,
                ..options
            },
            manifest: Manifest {
                config: Config {
                    chunk_size: chunk_size as u64,
                    small_file_threshold: block_size as u64,
                    codec_default: "zstd".into(),
                    zstd_level: u64::try_from(options.level).unwrap_or(0),
                    compression_mode: "balanced".into(),
                },
                files: Vec::new(),
                chunks: Vec::new(),
                blocks: Vec::new(),
            },
            small: Vec::new(),
            small_chunks: Vec::new(),
            bytes_in: 0,
        })
    }

    /// Adds a file, read from `data` to its end, at `path` inside the archive.
    pub fn add(&mut self, path: &str, data: &mut impl Read) -> Result<u64> {
        check_input_path(path)?;
        let file_id = self.manifest.files.len() as u64;
        let block_size = self.options.block_size;
        let mut hasher = Sha256::new();
        let mut chunks = Vec::new();
        let mut size = 0u64;
        let mut piece = read_piece(data, block_size).with_path(Path::new(path))?;
        if piece.len() < block_size {
            // The whole file fits in less than a block: share a block.
            if self.small.len() + piece.len() > block_size {
                self.flush_small()?;
            }
            hasher.update(&piece);
            size = piece.len() as u64;
            chunks.push(self.manifest.chunks.len() as u64);
            self.small_chunks.push(self.manifest.chunks.len());
            self.manifest.chunks.push(ChunkRecord {
                file_id,
                file_offset: 0,
                size,
                block_id: u64::MAX,
                block_offset: self.small.len() as u64,
            });
            self.small.extend_from_slice(&piece);
        } else {
            // A large file: chunks of `chunk_size`, the first one included.
            let chunk_size = self.options.chunk_size;
            let mut rest = read_piece(data, chunk_size - block_size).with_path(Path::new(path))?;
            piece.append(&mut rest);
            while !piece.is_empty() {
                hasher.update(&piece);
                chunks.push(self.manifest.chunks.len() as u64);
                self.manifest.chunks.push(ChunkRecord {
                    file_id,
                    file_offset: size,
                    size: piece.len() as u64,
                    block_id: self.next_block_id(),
                    block_offset: 0,
                });
                size += piece.len() as u64;
                self.push_block(piece)?;
                piece = read_piece(data, chunk_size).with_path(Path::new(path))?;
            }
        }
        self.manifest.files.push(FileRecord {
            path: path.to_owned(),
            size,
            sha256: hasher.finalize().into(),
            chunks,
        });
        self.bytes_in += size;
        Ok(size)
    }

    /// The id the next block pushed will get.
    fn next_block_id(&self) -> u64 {
        self.blocks.next_id()
    }

    fn flush_small(&mut self) -> Result<()> {
        if self.small_chunks.is_empty() {
            return Ok(());
        }
        let id = self.next_block_id();
        for &chunk in &self.small_chunks {
            if let Some(chunk) = self.manifest.chunks.get_mut(chunk) {
                chunk.block_id = id;
            }
        }
        self.small_chunks.clear();
        let data = std::mem::take(&mut self.small);
        self.push_block(data)
    }

    fn push_block(&mut self, data: Vec<u8>) -> Result<()> {
        self.blocks.push(data)
    }

    /// Writes the manifest, footer and header, and puts the archive in place.
    pub fn finish(mut self) -> Result<PackSummary> {
        self.flush_small()?;
        let Written {
            mut out,
            blocks,
            offset,
        } = self.blocks.finish()?;
        self.manifest.blocks = blocks;
        let destination = self.destination;
        let manifest_offset = offset;
        let io =
            |error: std::io::Error| ArcxError::Core(binfmt_core::Error::io(&destination, error));
        let zstd = |bytes: &[u8]| zstd::bulk::compress(bytes, MANIFEST_LEVEL).map_err(io);
        let files =
            u32::try_from(self.manifest.files.len()).map_err(|_| ArcxError::BadInputPath {
                path: destination.display().to_string(),
                why: "more than 2^32 files",
            })?;
        let (index_offset, footer, header_tail) = match self.options.dialect {
            Dialect::Spec => {
                let body = self
                    .manifest
                    .encode_spec_body()
                    .map_err(ArcxError::Manifest)?;
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
                (0, footer, None)
            }
            Dialect::ArcxCli => {
                let raw = self.manifest.encode_cli_raw();
                let compressed = zstd(&raw)?;
                let region = if compressed.len() < raw.len() {
                    [&[1u8][..], &compressed].concat()
                } else {
                    [&[0u8][..], &raw].concat()
                };
                let length = u32::try_from(region.len()).map_err(|_| ArcxError::BadInputPath {
                    path: destination.display().to_string(),
                    why: "the manifest exceeds 4 GiB",
                })?;
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
                (index_offset, footer, Some(()))
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
        if header_tail.is_some() {
            header.tail_0 = U64::new((u64::from(VERSION.0) << 16) | u64::from(VERSION.1));
            let crc = crc32(header.as_bytes().get(..72).unwrap_or_default());
            header.tail_2 = U64::new(u64::from(crc));
        }
        out.seek(SeekFrom::Start(0)).map_err(io)?;
        out.write_all(header.as_bytes()).map_err(io)?;
        let summary = PackSummary {
            files: self.manifest.files.len() as u64,
            bytes_in: self.bytes_in,
            blocks: self.manifest.blocks.len() as u64,
            archive_size,
            skipped: Vec::new(),
        };
        out.commit()?;
        Ok(summary)
    }
}

/// Up to `len` bytes from `data` (fewer only at its end).
fn read_piece(data: &mut impl Read, len: usize) -> std::io::Result<Vec<u8>> {
    let mut piece = Vec::with_capacity(len.min(1 << 20));
    data.take(len as u64).read_to_end(&mut piece)?;
    Ok(piece)
}

/// Paths an archive can hold and every reader can extract: relative, with
/// no empty, `.` or `..` component, no NUL and no backslash.
fn check_input_path(path: &str) -> Result<()> {
    binfmt_core::extract::check_relative_name(path).map_err(|why| ArcxError::BadInputPath {
        path: path.to_owned(),
        why,
    })
}

/// What packing did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PackSummary {
    /// Files stored.
    pub files: u64,
    /// Their bytes.
    pub bytes_in: u64,
    /// Blocks written.
    pub blocks: u64,
    /// The archive's size.
    pub archive_size: u64,
    /// What the directory walk did not store, and why.
    pub skipped: Vec<Skipped>,
}

/// A regular file found by [`walk`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputFile {
    /// Its path inside the archive: relative, `/`-separated.
    pub inner: String,
    /// Its path on disk.
    pub path: PathBuf,
}

/// Something [`walk`] did not take, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub path: PathBuf,
    pub why: &'static str,
}

/// What a directory walk found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Walk {
    pub files: Vec<InputFile>,
    pub skipped: Vec<Skipped>,
}

/// The regular files under `dir`, sorted component by component (so `a/b`
/// comes before `a.txt`), and what was skipped: symlinks (never followed),
/// other non-regular files, and names that are not UTF-8 or hold a
/// backslash. Empty directories leave no trace: the format stores files only.
pub fn walk(dir: &Path) -> Result<Walk> {
    let mut walk = Walk::default();
    let mut stack = vec![(String::new(), dir.to_path_buf())];
    while let Some((prefix, directory)) = stack.pop() {
        let entries: Vec<fs::DirEntry> = fs::read_dir(&directory)
            .with_path(&directory)?
            .collect::<std::io::Result<_>>()
            .with_path(&directory)?;
        for entry in entries {
            let path = entry.path();
            let file_type = entry.file_type().with_path(&path)?;
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                walk.skipped.push(Skipped {
                    path,
                    why: "name is not UTF-8",
                });
                continue;
            };
            let inner = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            if file_type.is_symlink() {
                walk.skipped.push(Skipped {
                    path,
                    why: "symlink (not followed)",
                });
            } else if file_type.is_dir() {
                stack.push((inner, path));
            } else if !file_type.is_file() {
                walk.skipped.push(Skipped {
                    path,
                    why: "not a regular file",
                });
            } else if inner.contains('\\') {
                walk.skipped.push(Skipped {
                    path,
                    why: "backslash in the name",
                });
            } else {
                walk.files.push(InputFile { inner, path });
            }
        }
    }
    walk.files
        .sort_by(|a, b| path_order(&a.inner).cmp(&path_order(&b.inner)));
    walk.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(walk)
}

/// Sorts paths component by component, so `a/b` comes before `a.txt`.
fn path_order(path: &str) -> Vec<&str> {
    path.split('/').collect()
}

/// Packs the regular files under `dir` into `destination`; `on_bytes` is
/// called with each file's size as it is stored, for progress.
pub fn pack_dir(
    dir: &Path,
    destination: &Path,
    options: PackOptions,
    on_bytes: impl Fn(u64),
) -> Result<PackSummary> {
    let walk = walk(dir)?;
    let mut packer = Packer::create(destination, options)?;
    for file in &walk.files {
        let mut reader = File::open(&file.path).with_path(&file.path)?;
        let size = packer.add(&file.inner, &mut reader)?;
        on_bytes(size);
    }
    let mut summary = packer.finish()?;
    summary.skipped = walk.skipped;
    Ok(summary)
}

/// The total size of the files a walk found, for progress bars.
pub fn walked_size(walk: &Walk) -> u64 {
    walk.files
        .iter()
        .filter_map(|file| fs::metadata(&file.path).ok())
        .map(|metadata| metadata.len())
        .sum()
}
