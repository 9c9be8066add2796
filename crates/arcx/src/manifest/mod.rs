//! The manifest: what every file, chunk and block is, in one compact model
//! with an encoding per dialect. Integers are LEB128 varints unless noted.
//!
//! **spec** (`MFv2` + zstd of the body; the body is sections, each a varint
//! byte length and the bytes):
//!
//! ```text
//! 1 config     MessagePack map: chunk_size, small_file_threshold, codec_default, zstd_level, compression_mode
//! 2 strings    count, then (length, UTF-8 bytes) each: directories and file names, each once
//! 3 files      count, then per file: file_id, dir string, name string, size, sha256 (32 bytes),
//!              chunk count, chunk ids (the first, then differences)
//! 4 chunks     count, then per chunk: chunk_id difference, file_id, file_offset, size, block_id,
//!              block_offset (where the chunk starts inside its decompressed block)
//! 5 blocks     count, then per block: block_id difference, codec (length + "zstd" | "store"),
//!              offset difference, compressed_size, decompressed_size, CRC32 of the stored bytes (u32 LE)
//! 6 attributes count (= files), then per file: mode, mtime_ns (zigzag), kind byte
//!              (0 file, 1 directory, 2 symlink); optional: without it every entry is a
//!              regular file, mode 0o644, mtime 0
//! ```
//!
//! **arcx-cli** (what `arcx` 0.3.0 writes: a u32 length, a flags byte, bit 0
//! meaning zstd, then the body):
//!
//! ```text
//! "MFv2", version byte 1, config length, config: chunk_size, small_file_threshold,
//!   codec byte (1 zstd), zstd_level, mode byte (1 balanced)
//! strings    as above
//! files      count, then per file: file_id, dir string, name string, size, mode, mtime_ns,
//!            kind byte (as above; the tool writes 0), sha256 (32 bytes), chunk count,
//!            chunk id differences, codec hint byte, pack id (zigzag varint)
//! chunks     count, then per chunk: chunk_id difference, file_id, offset, size, block_id
//!            (offset: where the chunk starts in its block, as the tool's reader uses it)
//! blocks     count, then per block: block_id difference, codec byte (1 zstd, 0 store),
//!            offset difference, compressed_size, uncompressed_size,
//!            checksum (8 bytes: the CRC32 zero-extended to u64, big-endian)
//! ```
//!
//! In memory a manifest takes a small constant per byte that describes it
//! (`spec/limits.md`): paths stay split into interned strings, chunk ids are
//! `u32`s in one arena, and sizes inside blocks are `u32`s (blocks are at most
//! 4 GiB).
//!
//! The parts, each pointing only down: `records.rs` (the settings, entry
//! kinds, chunk and block records and paths, which the table walker reads
//! rows into), the model here (interned strings, file rows, [`Manifest`] and
//! its builder), `decode.rs` (the walker's visitor that keeps every row) and
//! `encode.rs` (both dialects' bytes).

mod decode;
mod encode;
mod records;
#[cfg(test)]
mod tests;

use std::collections::HashMap;

use binfmt_core::Error;

pub use records::{Attributes, BlockRecord, ChunkRecord, Config, FileKind, PathRef};
pub(crate) use records::{check_file_offset, path_hash};

/// One file as stored: 72 bytes whatever its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileRow {
    dir: u32,
    name: u32,
    chunks_start: u32,
    chunks_len: u32,
    size: u64,
    mtime_ns: i64,
    mode: u32,
    kind: FileKind,
    sha256: [u8; 32],
}

impl FileRow {
    /// The row of file `dir`/`name` (string ids) whose chunk list is
    /// `chunks_len` ids from `chunks_start` of the chunk-id list.
    fn new(
        (dir, name): (u32, u32),
        (chunks_start, chunks_len): (u32, u32),
        size: u64,
        sha256: [u8; 32],
        attributes: Attributes,
    ) -> Self {
        Self {
            dir,
            name,
            chunks_start,
            chunks_len,
            size,
            mtime_ns: attributes.mtime_ns,
            mode: attributes.mode,
            kind: attributes.kind,
            sha256,
        }
    }
}

/// Interned strings: every string's bytes back to back, and where each ends.
/// Held as one `String` (validated as UTF-8 once, when pushed), so getting
/// a string is a bounds check on character boundaries, not a UTF-8 scan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Strings {
    bytes: String,
    ends: Vec<u32>,
}

impl Strings {
    fn get(&self, id: u32) -> &str {
        let index = id as usize;
        let start = match index.checked_sub(1) {
            Some(previous) => self.ends.get(previous).copied().unwrap_or(0),
            None => 0,
        };
        let end = self.ends.get(index).copied().unwrap_or(start);
        // Whole strings are pushed, so every end is a character boundary.
        self.bytes
            .get(start as usize..end as usize)
            .unwrap_or_default()
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    fn push(&mut self, string: &str) -> Result<u32, Error> {
        let id = u32::try_from(self.ends.len())
            .map_err(|_| Error::corrupt("string table", "more than 2^32 strings"))?;
        self.bytes
            .try_reserve(string.len())
            .map_err(|_| Error::OutOfMemory {
                what: "string table".into(),
                bytes: string.len() as u64,
            })?;
        self.bytes.push_str(string);
        let end = u32::try_from(self.bytes.len())
            .map_err(|_| Error::corrupt("string table", "more than 4 GiB of strings"))?;
        self.ends.push(end);
        Ok(id)
    }
}

/// One file of a manifest, borrowed from it.
#[derive(Debug, Clone, Copy)]
pub struct FileEntry<'a> {
    manifest: &'a Manifest,
    index: u32,
    row: &'a FileRow,
}

impl<'a> FileEntry<'a> {
    /// Its position in the archive (the file id).
    pub fn index(&self) -> u32 {
        self.index
    }

    /// Its path.
    pub fn path(&self) -> PathRef<'a> {
        PathRef::new(
            self.manifest.strings.get(self.row.dir),
            self.manifest.strings.get(self.row.name),
        )
    }

    /// Its size in bytes (for a symlink, the length of its target).
    pub fn size(&self) -> u64 {
        self.row.size
    }

    /// The SHA-256 of its bytes.
    pub fn sha256(&self) -> &'a [u8; 32] {
        &self.row.sha256
    }

    /// Its metadata.
    pub fn attributes(&self) -> Attributes {
        Attributes {
            kind: self.row.kind,
            mode: self.row.mode,
            mtime_ns: self.row.mtime_ns,
        }
    }

    /// Its chunk ids, in file order.
    pub fn chunk_ids(&self) -> &'a [u32] {
        let start = self.row.chunks_start as usize;
        self.manifest
            .chunk_ids
            .get(start..start + self.row.chunks_len as usize)
            .unwrap_or_default()
    }

    /// Its chunks, in file order.
    pub fn chunks(&self) -> impl ExactSizeIterator<Item = ChunkRecord> + use<'a> {
        let chunks = &self.manifest.chunks;
        self.chunk_ids()
            .iter()
            .map(move |&id| chunks.get(id as usize).copied().unwrap_or(EMPTY_CHUNK))
    }
}

/// What a missing chunk reads as; `Manifest::validate` proves every id exists.
const EMPTY_CHUNK: ChunkRecord = ChunkRecord {
    file: 0,
    block: 0,
    offset: 0,
    size: 0,
};

/// The whole manifest; ids are positions in its tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    config: Config,
    strings: Strings,
    files: Vec<FileRow>,
    chunk_ids: Vec<u32>,
    chunks: Vec<ChunkRecord>,
    blocks: Vec<BlockRecord>,
    /// Set when the manifest holds one file found by a lookup (`lookup.rs`).
    selection: Option<Box<Selection>>,
}

/// What a manifest holding one file of an archive keeps of the rest: its
/// chunks are renumbered from 0, its blocks keep their ids.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Selection {
    /// The file's id in the archive.
    file: u32,
    /// The id of each block held, ascending.
    blocks: Vec<u32>,
    /// How many files the archive holds.
    files: usize,
}

impl Manifest {
    /// A manifest holding only the file `dir`/`name` (file `id` of an
    /// archive of `files` files): its `chunks`, in file order, and the
    /// `blocks` they use, ascending by id.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn one_file(
        config: Config,
        (dir, name): (&str, &str),
        (id, files): (u32, usize),
        size: u64,
        sha256: [u8; 32],
        attributes: Attributes,
        chunks: Vec<ChunkRecord>,
        blocks: Vec<(u32, BlockRecord)>,
    ) -> Result<Self, Error> {
        let mut strings = Strings::default();
        let dir = strings.push(dir)?;
        let name = strings.push(name)?;
        let row = FileRow::new(
            (dir, name),
            (0, chunks.len() as u32),
            size,
            sha256,
            attributes,
        );
        let (ids, blocks) = blocks.into_iter().unzip();
        Ok(Self {
            config,
            strings,
            files: vec![row],
            chunk_ids: (0..chunks.len() as u32).collect(),
            chunks,
            blocks,
            selection: Some(Box::new(Selection {
                file: id,
                blocks: ids,
                files,
            })),
        })
    }

    /// Block `id`.
    pub fn block(&self, id: u32) -> Option<&BlockRecord> {
        match &self.selection {
            None => self.blocks.get(id as usize),
            Some(selection) => selection
                .blocks
                .binary_search(&id)
                .ok()
                .and_then(|at| self.blocks.get(at)),
        }
    }

    /// How many files the archive holds (more than this manifest when it
    /// holds one file found by a lookup).
    pub(crate) fn archive_files(&self) -> usize {
        self.selection
            .as_ref()
            .map_or(self.files.len(), |selection| selection.files)
    }

    /// The id of the file at position `index` of this manifest.
    fn file_id(&self, index: u32) -> u32 {
        self.selection
            .as_ref()
            .map_or(index, |selection| selection.file)
    }

    /// The archive's settings.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The number of files.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether the archive holds no files.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// File `index`.
    pub fn file(&self, index: u32) -> Option<FileEntry<'_>> {
        self.files.get(index as usize).map(|row| FileEntry {
            manifest: self,
            index: self.file_id(index),
            row,
        })
    }

    /// Every file, in archive order.
    pub fn files(&self) -> impl ExactSizeIterator<Item = FileEntry<'_>> + '_ {
        self.files.iter().enumerate().map(|(index, row)| FileEntry {
            manifest: self,
            // `Manifest` never holds more than 2^32 files.
            index: self.file_id(index as u32),
            row,
        })
    }

    /// Every chunk, by id.
    pub fn chunks(&self) -> &[ChunkRecord] {
        &self.chunks
    }

    /// Every block, by id.
    pub fn blocks(&self) -> &[BlockRecord] {
        &self.blocks
    }

    /// Heap bytes this manifest holds, for memory accounting.
    pub fn heap_size(&self) -> usize {
        self.strings.bytes.capacity()
            + self.strings.ends.capacity() * 4
            + self.files.capacity() * size_of::<FileRow>()
            + self.chunk_ids.capacity() * 4
            + self.chunks.capacity() * size_of::<ChunkRecord>()
            + self.blocks.capacity() * size_of::<BlockRecord>()
    }
}

/// Builds a manifest file by file, interning path strings in first-seen
/// order (directory, then name), as both dialects store them.
#[derive(Debug)]
pub(crate) struct ManifestBuilder {
    manifest: Manifest,
    interned: HashMap<String, u32>,
}

impl ManifestBuilder {
    pub(crate) fn new(config: Config) -> Self {
        Self {
            manifest: Manifest {
                config,
                strings: Strings::default(),
                files: Vec::new(),
                chunk_ids: Vec::new(),
                chunks: Vec::new(),
                blocks: Vec::new(),
                selection: None,
            },
            interned: HashMap::new(),
        }
    }

    fn intern(&mut self, string: &str) -> Result<u32, Error> {
        if let Some(&id) = self.interned.get(string) {
            return Ok(id);
        }
        let id = self.manifest.strings.push(string)?;
        self.interned.insert(string.to_owned(), id);
        Ok(id)
    }

    /// The settings the manifest records.
    pub(crate) fn config(&self) -> &Config {
        &self.manifest.config
    }

    /// The number of files added so far (the next file's id).
    pub(crate) fn file_count(&self) -> u32 {
        self.manifest.files.len() as u32
    }

    /// The number of chunks added so far (the next chunk's id).
    pub(crate) fn chunk_count(&self) -> u32 {
        self.manifest.chunks.len() as u32
    }

    /// Adds a chunk of the next file; its block is set later when unknown.
    pub(crate) fn push_chunk(&mut self, chunk: ChunkRecord) -> Result<u32, Error> {
        let id = u32::try_from(self.manifest.chunks.len())
            .map_err(|_| Error::corrupt("chunk table", "more than 2^32 chunks"))?;
        self.manifest.chunks.push(chunk);
        Ok(id)
    }

    /// Points chunk `id` at `block`.
    pub(crate) fn set_block(&mut self, id: u32, block: u32) {
        if let Some(chunk) = self.manifest.chunks.get_mut(id as usize) {
            chunk.block = block;
        }
    }

    /// Adds a file whose chunks are `chunks` (ids already pushed, in order).
    pub(crate) fn push_file(
        &mut self,
        path: &str,
        size: u64,
        sha256: [u8; 32],
        chunks: std::ops::Range<u32>,
        attributes: Attributes,
    ) -> Result<(), Error> {
        let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
        let dir = self.intern(dir)?;
        let name = self.intern(name)?;
        let chunks_start = u32::try_from(self.manifest.chunk_ids.len())
            .map_err(|_| Error::corrupt("file table", "more than 2^32 chunk references"))?;
        self.manifest.chunk_ids.extend(chunks.clone());
        self.manifest.files.push(FileRow::new(
            (dir, name),
            (chunks_start, chunks.len() as u32),
            size,
            sha256,
            attributes,
        ));
        Ok(())
    }

    pub(crate) fn finish(mut self, blocks: Vec<BlockRecord>) -> Manifest {
        self.manifest.blocks = blocks;
        self.manifest
    }
}

/// How many chunks use each block.
fn block_users(chunks: &[ChunkRecord], blocks: usize) -> Vec<u32> {
    let mut users = vec![0u32; blocks];
    for chunk in chunks {
        if let Some(count) = users.get_mut(chunk.block as usize) {
            *count = count.saturating_add(1);
        }
    }
    users
}
