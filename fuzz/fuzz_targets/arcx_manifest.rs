//! ARCX archives built from structure: strings, files, chunks and blocks
//! chosen by the fuzzer (repeated chunks, shared and aliased blocks,
//! overlapping ranges, lying sizes), laid out byte-exactly in both dialects
//! with valid checksums, then read: every file, then verify; then the
//! one-path lookup of every file's path against the full open.
#![no_main]

use arbitrary::Arbitrary;
use binfmt_tests::build::arcx::{Archive, Block, Chunk, Codec, File};

#[path = "../../tests/exercise.rs"]
mod exercise;

#[derive(Debug, Arbitrary)]
struct FuzzBlock {
    data: Vec<u8>,
    zstd: bool,
    size: Option<u16>,
    alias_of: Option<u8>,
}

#[derive(Debug, Arbitrary)]
struct FuzzChunk {
    file: u8,
    file_offset: u16,
    size: u16,
    block: u8,
    block_offset: u16,
}

#[derive(Debug, Arbitrary)]
struct FuzzFile {
    dir: u8,
    name: u8,
    size: u16,
    /// The real SHA-256 of the chunks' bytes, or an arbitrary one.
    honest: bool,
    chunks: Vec<u8>,
    mode: u16,
    mtime: u32,
    kind: u8,
}

#[derive(Debug, Arbitrary)]
struct FuzzArchive {
    strings: Vec<String>,
    files: Vec<FuzzFile>,
    chunks: Vec<FuzzChunk>,
    blocks: Vec<FuzzBlock>,
    total_files: Option<u8>,
    /// Zero bytes after the manifest's tables; 255 pads past the 16 MiB
    /// budget a small manifest gets (rarely: each such run takes ~20 ms).
    padding: u8,
}

libfuzzer_sys::fuzz_target!(|input: FuzzArchive| {
    let blocks: Vec<Block> = input
        .blocks
        .into_iter()
        .take(16)
        .map(|b| Block {
            codec: if b.zstd { Codec::Zstd } else { Codec::Store },
            size: b.size.map(u64::from),
            alias_of: b.alias_of.map(usize::from),
            data: b.data,
        })
        .collect();
    let chunks: Vec<Chunk> = input
        .chunks
        .into_iter()
        .take(64)
        .map(|c| Chunk {
            file: u64::from(c.file),
            file_offset: u64::from(c.file_offset),
            size: u64::from(c.size),
            block: u64::from(c.block),
            block_offset: u64::from(c.block_offset),
        })
        .collect();
    let files: Vec<File> = input
        .files
        .into_iter()
        .take(64)
        .map(|f| {
            let ids: Vec<u64> = f.chunks.iter().take(16).map(|&id| u64::from(id)).collect();
            let mut bytes = Vec::new();
            for &id in &ids {
                if let Some(chunk) = chunks.get(id as usize)
                    && let Some(block) = blocks.get(chunk.block as usize)
                {
                    let start = (chunk.block_offset as usize).min(block.data.len());
                    let end = (start + chunk.size as usize).min(block.data.len());
                    bytes.extend_from_slice(&block.data[start..end]);
                }
            }
            File {
                dir: u64::from(f.dir),
                name: u64::from(f.name),
                size: if f.honest { bytes.len() as u64 } else { u64::from(f.size) },
                sha256: if f.honest {
                    binfmt_tests::build::arcx::sha256(&bytes)
                } else {
                    [f.size as u8; 32]
                },
                chunks: ids,
                mode: u64::from(f.mode),
                mtime_ns: u64::from(f.mtime),
                kind: f.kind % 4,
            }
        })
        .collect();
    let archive = Archive {
        strings: input
            .strings
            .into_iter()
            .take(32)
            .map(String::into_bytes)
            .collect(),
        files,
        chunks,
        blocks,
        total_files: input.total_files.map(u32::from),
        header_manifest_offset: None,
        manifest_padding: match input.padding {
            255 => 17 << 20,
            bytes => usize::from(bytes) << 4,
        },
    };
    // Every file's path as the strings make it, found or not.
    let string = |id: u64| {
        archive
            .strings
            .get(id as usize)
            .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
            .unwrap_or_default()
    };
    let paths: Vec<String> = archive
        .files
        .iter()
        .map(|file| match (string(file.dir), string(file.name)) {
            (dir, name) if dir.is_empty() => name,
            (dir, name) => format!("{dir}/{name}"),
        })
        .collect();
    for bytes in [archive.spec(), archive.cli()] {
        let _ = exercise::read_arcx(bytes.clone());
        exercise::compare_arcx_lookup(&bytes, &paths);
    }
});
