//! The machine's limits: minimal programs doing the least work an
//! operation needs, timed in the same run as binfmt, so each row can say
//! how far binfmt is from what this machine allows.
//!
//! | operation | minimal program |
//! |---|---|
//! | TARIDX indexing | `read()` of each shard in 1 MiB chunks, every header's checksum summed and checked, payloads skipped by their size; then the index's row table (32 bytes a member) written to a temporary file renamed over the last one, as an indexer must |
//! | ARCX pack | read each file, SHA-256 it, zstd -3 it in 1 MiB groups, write the frames: on binfmt's thread count (`--threads`) and on one |
//! | ARCX extract | decompress 1 MiB groups (one context per thread), SHA-256 and create each file: over every core |
//! | ARCX get one file | a process of its own (`src/bin/arcx_get_floor.rs`, std and zstd only): read the footer and the manifest, decompress the manifest, read and decompress the file's block, write the file, told where each is |
//! | KAST read-all | `read()` of the whole file into fresh memory, then the same byte sum |
//!
//! None of them checks what a hostile file could break: they are the
//! floor, not a competitor.

use std::fs;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use sha2::{Digest, Sha256};

const CHUNK: usize = 1 << 20;

fn io(path: &Path) -> impl Fn(std::io::Error) -> String + '_ {
    move |e| format!("{}: {e}", path.display())
}

/// Runs `work` on a pool of `threads` threads.
pub fn with_threads<T: Send>(threads: usize, work: impl FnOnce() -> T + Send) -> Result<T, String> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()
        .map(|pool| pool.install(work))
        .map_err(|e| e.to_string())
}

/// Every tar header of `shards`, read in 1 MiB chunks and checksummed, on
/// `threads` threads (a shard per task); then a row per header written to
/// `out` the way an index is (a temporary file beside it, renamed over
/// it). The write is serial and in every indexer's run, so it is what keeps
/// two threads from indexing twice as fast as one. Returns the number of
/// headers.
pub fn tar_headers(shards: &[PathBuf], threads: usize, out: &Path) -> Result<u64, String> {
    let headers = with_threads(threads, || {
        shards
            .par_iter()
            .map(|shard| tar_headers_of(shard))
            .try_reduce(|| 0, |a, b| Ok(a + b))
    })??;
    let rows = usize::try_from(headers).map_err(|e| e.to_string())?;
    let temp = out.with_extension("partial");
    fs::write(
        &temp,
        vec![0u8; rows * usize::from(binfmt_taridx::format::ROW_SIZE)],
    )
    .map_err(io(&temp))?;
    fs::rename(&temp, out).map_err(io(out))?;
    Ok(headers)
}

fn tar_headers_of(path: &Path) -> Result<u64, String> {
    let mut file = fs::File::open(path).map_err(io(path))?;
    let mut buffer = vec![0u8; CHUNK];
    let (mut start, mut filled) = (0u64, 0usize);
    let mut offset = 0u64;
    let mut headers = 0;
    loop {
        let at = offset
            .checked_sub(start)
            .map(|d| d as usize)
            .filter(|&at| at + 512 <= filled);
        let at = match at {
            Some(at) => at,
            None => {
                file.seek(SeekFrom::Start(offset)).map_err(io(path))?;
                filled = 0;
                while let Some(rest) = buffer.get_mut(filled..).filter(|rest| !rest.is_empty()) {
                    let n = file.read(rest).map_err(io(path))?;
                    if n == 0 {
                        break;
                    }
                    filled += n;
                }
                start = offset;
                0
            }
        };
        let Some(block) = buffer.get(at..at + 512) else {
            return Ok(headers);
        };
        let field = block.get(148..156).unwrap_or_default();
        if field.iter().all(|&b| b == 0) {
            return Ok(headers);
        }
        let sum: u32 = block.iter().map(|&b| u32::from(b)).sum::<u32>()
            - field.iter().map(|&b| u32::from(b)).sum::<u32>()
            + 256;
        if u64::from(sum) != octal(field) {
            return Err(format!("{}: bad checksum at {offset}", path.display()));
        }
        let size = octal(block.get(124..136).unwrap_or_default());
        headers += 1;
        offset += 512 + size.next_multiple_of(512);
    }
}

fn octal(field: &[u8]) -> u64 {
    field
        .iter()
        .skip_while(|&&b| b == b' ')
        .take_while(|b| (b'0'..=b'7').contains(b))
        .fold(0, |value, &b| value * 8 + u64::from(b - b'0'))
}

/// The regular files under `root`, in a stable order, with their paths
/// relative to it.
pub fn files_under(root: &Path) -> Result<Vec<(PathBuf, PathBuf)>, String> {
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let mut entries: Vec<_> = fs::read_dir(&dir)
            .map_err(io(&dir))?
            .collect::<Result<_, _>>()
            .map_err(io(&dir))?;
        entries.sort_by_key(fs::DirEntry::file_name);
        for entry in entries {
            let kind = entry.file_type().map_err(io(&dir))?;
            let path = entry.path();
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file() {
                let relative = path
                    .strip_prefix(root)
                    .map_err(|e| e.to_string())?
                    .to_owned();
                files.push((path, relative));
            }
        }
    }
    Ok(files)
}

/// Groups of consecutive items of about [`CHUNK`] bytes (a large file alone).
fn groups<T>(items: &[T], size: impl Fn(&T) -> u64) -> Vec<&[T]> {
    let mut groups = Vec::new();
    let (mut from, mut bytes) = (0, 0u64);
    for (i, item) in items.iter().enumerate() {
        bytes += size(item);
        if bytes >= CHUNK as u64 {
            groups.extend(items.get(from..=i));
            (from, bytes) = (i + 1, 0);
        }
    }
    if from < items.len() {
        groups.extend(items.get(from..));
    }
    groups
}

/// Packing's floor: every file of `files` read, hashed and compressed
/// (zstd level 3, 1 MiB groups), the frames written to `out`, over
/// `threads` threads.
pub fn pack(files: &[(PathBuf, PathBuf)], out: &Path, threads: usize) -> Result<(), String> {
    let sizes: Vec<(&Path, u64)> = files
        .iter()
        .map(|(path, _)| Ok((path.as_path(), fs::metadata(path).map_err(io(path))?.len())))
        .collect::<Result<_, String>>()?;
    let frames: Vec<Vec<u8>> = with_threads(threads, || {
        groups(&sizes, |&(_, size)| size)
            .par_iter()
            .map_init(
                || zstd::bulk::Compressor::new(3),
                |compressor, group| {
                    let compressor = compressor.as_mut().map_err(|e| e.to_string())?;
                    let mut data = Vec::new();
                    for &(path, _) in group.iter() {
                        let start = data.len();
                        fs::File::open(path)
                            .and_then(|mut file| file.read_to_end(&mut data))
                            .map_err(io(path))?;
                        std::hint::black_box(Sha256::digest(data.get(start..).unwrap_or_default()));
                    }
                    compressor.compress(&data).map_err(|e| e.to_string())
                },
            )
            .collect::<Result<_, String>>()
    })??;
    let mut file = std::io::BufWriter::new(fs::File::create(out).map_err(io(out))?);
    for frame in &frames {
        file.write_all(frame).map_err(io(out))?;
    }
    file.flush().map_err(io(out))
}

/// Files compressed in 1 MiB groups, ready for [`extract`]: (group frame,
/// the files' relative paths and sizes).
pub type Packed = Vec<(Vec<u8>, Vec<(PathBuf, usize)>)>;

/// Compresses `files` for [`extract`] (not timed).
pub fn prepare_extract(files: &[(PathBuf, PathBuf)]) -> Result<Packed, String> {
    // Sizes first, then one group read at a time: holding the corpus whole
    // (2 GB at --scale 10x) would load the machine the timed runs share.
    let sizes: Vec<(&(PathBuf, PathBuf), u64)> = files
        .iter()
        .map(|file| Ok((file, fs::metadata(&file.0).map_err(io(&file.0))?.len())))
        .collect::<Result<_, String>>()?;
    groups(&sizes, |&(_, size)| size)
        .into_iter()
        .map(|group| {
            let mut data = Vec::new();
            let mut names = Vec::with_capacity(group.len());
            for ((path, relative), _) in group {
                let before = data.len();
                fs::File::open(path)
                    .and_then(|mut file| file.read_to_end(&mut data))
                    .map_err(io(path))?;
                names.push((relative.clone(), data.len() - before));
            }
            let frame = zstd::bulk::compress(&data, 3).map_err(|e| e.to_string())?;
            Ok((frame, names))
        })
        .collect()
}

/// Extraction's floor: every group decompressed (a context per thread),
/// each file hashed and created under `dir` (with its directories), over
/// `threads` threads.
pub fn extract(packed: &Packed, dir: &Path, threads: usize) -> Result<(), String> {
    with_threads(threads, || {
        packed.par_iter().try_for_each_init(
            || (zstd::bulk::Decompressor::new(), Vec::new()),
            |(decompressor, buffer), (frame, names)| -> Result<(), String> {
                let decompressor = decompressor.as_mut().map_err(|e| e.to_string())?;
                let total: usize = names.iter().map(|(_, size)| size).sum();
                buffer.clear();
                buffer.reserve(total);
                decompressor
                    .decompress_to_buffer(frame, buffer)
                    .map_err(|e| e.to_string())?;
                let mut at = 0;
                for (name, size) in names {
                    let data = buffer.get(at..at + size).unwrap_or_default();
                    at += size;
                    std::hint::black_box(Sha256::digest(data));
                    let path = dir.join(name);
                    if let Some(parent) = path.parent() {
                        fs::create_dir_all(parent).map_err(io(parent))?;
                    }
                    fs::write(&path, data).map_err(io(&path))?;
                }
                Ok(())
            },
        )
    })?
}

/// Reading a whole file into fresh memory with `read()`, then summing its
/// bytes: the floor of reading a store whole and touching every byte.
pub fn read_all(path: &Path) -> Result<u64, String> {
    let bytes = fs::read(path).map_err(io(path))?;
    Ok(bytes.iter().map(|&b| u64::from(b)).sum())
}
