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

use std::collections::HashMap;
use std::fmt;

use binfmt_core::Error;
use binfmt_core::alloc::{reserve, vec_with_capacity};
use binfmt_core::varint;
use serde::{Deserialize, Serialize};

use crate::format::{Codec, Dialect, MANIFEST_MAGIC};
use crate::tables::{self, ChunkRow, ChunkRows, FileRecord, Visit};

/// Archive-level settings, as the spec's MessagePack config section holds them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Config {
    /// The chunk size of large files.
    pub chunk_size: u64,
    /// Files below this size share blocks of up to this size.
    pub small_file_threshold: u64,
    /// `"zstd"` or `"store"`.
    pub codec_default: String,
    /// The zstd level blocks were compressed with.
    pub zstd_level: u64,
    /// `"balanced"` or `"fast"`.
    pub compression_mode: String,
}

impl Config {
    /// The settings a packer records.
    pub fn new(chunk_size: u64, small_file_threshold: u64, zstd_level: u64) -> Self {
        Self {
            chunk_size,
            small_file_threshold,
            codec_default: "zstd".into(),
            zstd_level,
            compression_mode: "balanced".into(),
        }
    }
}

/// What an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum FileKind {
    /// A regular file: its bytes are the content.
    #[default]
    File,
    /// A directory (only empty ones are stored); no bytes.
    Directory,
    /// A symbolic link: its bytes are the link's target.
    Symlink,
}

impl FileKind {
    /// The kind byte.
    pub fn byte(self) -> u8 {
        match self {
            Self::File => 0,
            Self::Directory => 1,
            Self::Symlink => 2,
        }
    }

    /// The kind with this byte.
    pub fn from_byte(byte: u8) -> Option<Self> {
        match byte {
            0 => Some(Self::File),
            1 => Some(Self::Directory),
            2 => Some(Self::Symlink),
            _ => None,
        }
    }

    /// `file`, `directory` or `symlink`.
    pub fn name(self) -> &'static str {
        match self {
            Self::File => "file",
            Self::Directory => "directory",
            Self::Symlink => "symlink",
        }
    }
}

/// An entry's metadata: what it is, its permission bits and its
/// modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Attributes {
    /// What the entry is.
    pub kind: FileKind,
    /// Permission bits (`0o7777` at most; extraction never restores setuid,
    /// setgid or sticky bits).
    pub mode: u32,
    /// Modification time, nanoseconds since the Unix epoch.
    pub mtime_ns: i64,
}

impl Default for Attributes {
    /// A regular file, 0o644, time 0: what archives without metadata hold.
    fn default() -> Self {
        Self {
            kind: FileKind::File,
            mode: 0o644,
            mtime_ns: 0,
        }
    }
}

impl Attributes {
    /// Attributes of a `kind` entry with `mode` (masked to `0o7777`) and
    /// `mtime_ns`.
    pub fn new(kind: FileKind, mode: u32, mtime_ns: i64) -> Self {
        Self {
            kind,
            mode: mode & 0o7777,
            mtime_ns,
        }
    }
}

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

/// One contiguous piece of a file, inside one block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChunkRecord {
    /// The file it belongs to.
    pub file: u32,
    /// The block that holds it.
    pub block: u32,
    /// Where it starts in the decompressed block.
    pub offset: u32,
    /// Its size.
    pub size: u32,
}

/// One block of the data region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BlockRecord {
    /// How the payload is stored.
    pub codec: Codec,
    /// Where the block's 4-byte size prefix starts.
    pub offset: u64,
    /// Bytes after the size prefix.
    pub stored_size: u32,
    /// Bytes after decompression.
    pub size: u32,
    /// CRC32 of the stored bytes.
    pub checksum: u32,
}

impl BlockRecord {
    /// Where the block ends (after its stored bytes).
    pub fn end(&self) -> u64 {
        self.offset + 4 + u64::from(self.stored_size)
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

/// A path as its stored directory and name, shown joined by `/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathRef<'a> {
    dir: &'a str,
    name: &'a str,
}

impl<'a> PathRef<'a> {
    /// The path `dir`/`name` (`name` alone when `dir` is empty).
    pub(crate) fn new(dir: &'a str, name: &'a str) -> Self {
        Self { dir, name }
    }

    /// The directory part (empty for a top-level entry).
    pub fn dir(&self) -> &'a str {
        self.dir
    }

    /// The last component.
    pub fn name(&self) -> &'a str {
        self.name
    }

    /// Whether this is `path`, without building the joined string.
    pub fn is(&self, path: &str) -> bool {
        if self.dir.is_empty() {
            return path == self.name;
        }
        path.len() == self.dir.len() + 1 + self.name.len()
            && path.starts_with(self.dir)
            && path.as_bytes().get(self.dir.len()) == Some(&b'/')
            && path.ends_with(self.name)
    }

    /// The hash the path index uses: the name's hash seeded with the
    /// directory's, so no joined string is built.
    pub(crate) fn hash(&self) -> u64 {
        split_hash(self.dir, self.name)
    }
}

fn split_hash(dir: &str, name: &str) -> u64 {
    let seed = if dir.is_empty() {
        0
    } else {
        xxhash_rust::xxh3::xxh3_64(dir.as_bytes())
    };
    xxhash_rust::xxh3::xxh3_64_with_seed(name.as_bytes(), seed)
}

impl fmt::Display for PathRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.dir.is_empty() {
            f.write_str(self.dir)?;
            f.write_str("/")?;
        }
        f.write_str(self.name)
    }
}

/// The hash of a path given as one string, the same as [`PathRef`]'s (split
/// at the last `/`, as paths are stored: names hold no `/`).
pub(crate) fn path_hash(path: &str) -> u64 {
    let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
    split_hash(dir, name)
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
        PathRef {
            dir: self.manifest.strings.get(self.row.dir),
            name: self.manifest.strings.get(self.row.name),
        }
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

fn put(out: &mut Vec<u8>, value: u64) {
    varint::encode_u64(value, out);
}

fn put_strings(out: &mut Vec<u8>, strings: &Strings) {
    put(out, strings.len() as u64);
    for id in 0..strings.len() as u32 {
        let s = strings.get(id);
        put(out, s.len() as u64);
        out.extend_from_slice(s.as_bytes());
    }
}

/// Chunk ids as the first, then differences (ids are in ascending order).
fn put_deltas(out: &mut Vec<u8>, ids: &[u32]) {
    put(out, ids.len() as u64);
    let mut previous = 0;
    for &id in ids {
        put(out, u64::from(id.wrapping_sub(previous)));
        previous = id;
    }
}

fn section(out: &mut Vec<u8>, body: &[u8]) {
    put(out, body.len() as u64);
    out.extend_from_slice(body);
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

impl Manifest {
    /// The spec dialect's manifest body, before compression.
    pub(crate) fn encode_spec_body(&self) -> Result<Vec<u8>, Error> {
        let mut out = Vec::new();
        let config = rmp_serde::to_vec_named(&self.config)
            .map_err(|error| Error::corrupt("config section", error.to_string()))?;
        section(&mut out, &config);
        let mut body = Vec::new();
        put_strings(&mut body, &self.strings);
        section(&mut out, &body);

        body.clear();
        put(&mut body, self.files.len() as u64);
        for file in self.files() {
            put(&mut body, u64::from(file.index));
            put(&mut body, u64::from(file.row.dir));
            put(&mut body, u64::from(file.row.name));
            put(&mut body, file.row.size);
            body.extend_from_slice(&file.row.sha256);
            put_deltas(&mut body, file.chunk_ids());
        }
        section(&mut out, &body);

        body.clear();
        put(&mut body, self.chunks.len() as u64);
        let mut file_offsets = vec![0u64; self.files.len()];
        for (chunk_id, chunk) in self.chunks.iter().enumerate() {
            let file_offset = file_offsets.get_mut(chunk.file as usize);
            put(&mut body, u64::from(chunk_id != 0));
            put(&mut body, u64::from(chunk.file));
            put(&mut body, file_offset.as_deref().copied().unwrap_or(0));
            if let Some(offset) = file_offset {
                *offset += u64::from(chunk.size);
            }
            put(&mut body, u64::from(chunk.size));
            put(&mut body, u64::from(chunk.block));
            put(&mut body, u64::from(chunk.offset));
        }
        section(&mut out, &body);

        body.clear();
        put(&mut body, self.blocks.len() as u64);
        let mut previous_offset = 0;
        for (block_id, block) in self.blocks.iter().enumerate() {
            put(&mut body, u64::from(block_id != 0));
            put(&mut body, block.codec.name().len() as u64);
            body.extend_from_slice(block.codec.name().as_bytes());
            put(&mut body, block.offset.wrapping_sub(previous_offset));
            previous_offset = block.offset;
            put(&mut body, u64::from(block.stored_size));
            put(&mut body, u64::from(block.size));
            body.extend_from_slice(&block.checksum.to_le_bytes());
        }
        section(&mut out, &body);

        body.clear();
        put(&mut body, self.files.len() as u64);
        for file in &self.files {
            put(&mut body, u64::from(file.mode));
            varint::encode_i64(file.mtime_ns, &mut body);
            body.push(file.kind.byte());
        }
        section(&mut out, &body);
        Ok(out)
    }

    /// Reads the spec dialect's manifest body (see [`crate::tables`]).
    pub(crate) fn decode_spec_body(body: &[u8]) -> Result<Self, Error> {
        let mut decoder = Decoder::default();
        let config = tables::walk_spec(body, &mut decoder)?;
        let file_offsets = std::mem::take(&mut decoder.file_offsets);
        let manifest = decoder.finish(config);
        manifest.check_file_offsets(&file_offsets)?;
        Ok(manifest)
    }

    /// The arcx-cli dialect's raw manifest (`MFv2` ...), before framing.
    pub(crate) fn encode_cli_raw(&self) -> Vec<u8> {
        let mut out = MANIFEST_MAGIC.to_vec();
        out.push(1);
        let mut config = Vec::new();
        put(&mut config, self.config.chunk_size);
        put(&mut config, self.config.small_file_threshold);
        config.push(u8::from(self.config.codec_default == "zstd"));
        put(&mut config, self.config.zstd_level);
        config.push(u8::from(self.config.compression_mode == "balanced"));
        section(&mut out, &config);
        put_strings(&mut out, &self.strings);

        let users = block_users(&self.chunks, self.blocks.len());
        put(&mut out, self.files.len() as u64);
        for file in self.files() {
            put(&mut out, u64::from(file.index));
            put(&mut out, u64::from(file.row.dir));
            put(&mut out, u64::from(file.row.name));
            put(&mut out, file.row.size);
            put(&mut out, u64::from(file.row.mode));
            put(&mut out, u64::try_from(file.row.mtime_ns).unwrap_or(0));
            out.push(file.row.kind.byte());
            out.extend_from_slice(&file.row.sha256);
            put_deltas(&mut out, file.chunk_ids());
            let mut blocks = file.chunks().map(|chunk| chunk.block as usize);
            let packed = file
                .chunks()
                .next()
                .is_some_and(|chunk| users.get(chunk.block as usize).is_some_and(|&n| n > 1));
            if packed || file.row.chunks_len == 0 {
                // The tool's codec hint and pack id for packed small files.
                out.push(0);
                varint::encode_i64(0, &mut out);
            } else {
                let zstd = blocks.any(|block| {
                    self.blocks
                        .get(block)
                        .is_some_and(|b| b.codec == Codec::Zstd)
                });
                out.push(if zstd { 2 } else { 1 });
                varint::encode_i64(-1, &mut out);
            }
        }
        put(&mut out, self.chunks.len() as u64);
        for (chunk_id, chunk) in self.chunks.iter().enumerate() {
            put(&mut out, u64::from(chunk_id != 0));
            put(&mut out, u64::from(chunk.file));
            // The tool's reader slices the block at this offset.
            put(&mut out, u64::from(chunk.offset));
            put(&mut out, u64::from(chunk.size));
            put(&mut out, u64::from(chunk.block));
        }
        put(&mut out, self.blocks.len() as u64);
        let mut previous_offset = 0;
        for (block_id, block) in self.blocks.iter().enumerate() {
            put(&mut out, u64::from(block_id != 0));
            out.push(u8::from(block.codec == Codec::Zstd));
            put(&mut out, block.offset.wrapping_sub(previous_offset));
            previous_offset = block.offset;
            put(&mut out, u64::from(block.stored_size));
            put(&mut out, u64::from(block.size));
            out.extend_from_slice(&u64::from(block.checksum).to_be_bytes());
        }
        out
    }

    /// Reads the arcx-cli dialect's raw manifest (`MFv2` ...).
    pub(crate) fn decode_cli_raw(raw: &[u8]) -> Result<Self, Error> {
        let mut decoder = Decoder::default();
        let config = tables::walk_cli(raw, &mut decoder)?;
        let mut manifest = decoder.finish(config);
        manifest.repair_cli_offsets();
        Ok(manifest)
    }

    /// The tool writes a large file's chunk offsets as positions in the
    /// file, while it (and this reader) take them as positions in the block.
    /// A block holding a single chunk starts that chunk at 0; only blocks
    /// shared by several chunks need the stored offset.
    fn repair_cli_offsets(&mut self) {
        let users = block_users(&self.chunks, self.blocks.len());
        for chunk in &mut self.chunks {
            let users = users.get(chunk.block as usize).copied().unwrap_or(0);
            chunk.offset = Self::cli_offset(chunk.offset, users);
        }
    }

    /// Where an arcx-cli chunk stored at `offset` starts in its block,
    /// which `users` chunks use (see `repair_cli_offsets`).
    pub(crate) fn cli_offset(offset: u32, users: u32) -> u32 {
        if users == 1 { 0 } else { offset }
    }

    /// The spec dialect stores where each chunk starts in its file: it must
    /// be where the file's previous chunks end.
    fn check_file_offsets(&self, file_offsets: &[u64]) -> Result<(), Error> {
        for file in self.files() {
            let mut position = 0u64;
            for &id in file.chunk_ids() {
                let (Some(chunk), Some(&stored)) =
                    (self.chunks.get(id as usize), file_offsets.get(id as usize))
                else {
                    // A missing chunk is reported by `validate`.
                    continue;
                };
                check_file_offset(id, stored, position, file.path())?;
                position = position.saturating_add(u64::from(chunk.size));
            }
        }
        Ok(())
    }
}

/// The visitor that keeps every row: the whole manifest.
#[derive(Debug, Default)]
struct Decoder {
    strings: Strings,
    files: Vec<FileRow>,
    chunk_ids: Vec<u32>,
    chunks: Vec<ChunkRecord>,
    /// Spec: each chunk's stored position in its file.
    file_offsets: Vec<u64>,
    blocks: Vec<BlockRecord>,
}

impl Decoder {
    fn finish(self, config: Config) -> Manifest {
        Manifest {
            config,
            strings: self.strings,
            files: self.files,
            chunk_ids: self.chunk_ids,
            chunks: self.chunks,
            blocks: self.blocks,
            selection: None,
        }
    }
}

impl<'a> Visit<'a> for Decoder {
    fn strings(&mut self, count: usize, bytes: usize) -> Result<(), Error> {
        self.strings.ends = vec_with_capacity(count, "string table")?;
        self.strings
            .bytes
            .try_reserve_exact(bytes)
            .map_err(|_| Error::OutOfMemory {
                what: "string table".into(),
                bytes: bytes as u64,
            })
    }

    fn string(&mut self, string: &'a [u8]) -> Result<(), Error> {
        self.strings.push(tables::utf8(string)?).map(|_| ())
    }

    fn files(&mut self, count: usize) -> Result<(), Error> {
        self.files = vec_with_capacity(count, "file table")?;
        // Most files have one chunk: room for that many, grown if needed.
        self.chunk_ids = vec_with_capacity(count, "file chunk lists")?;
        Ok(())
    }

    fn file(&mut self, _id: u32, file: FileRecord<'a, '_>) -> Result<(), Error> {
        let chunks_start = u32::try_from(self.chunk_ids.len())
            .map_err(|_| Error::corrupt("file table", "more than 2^32 chunk references"))?;
        reserve(
            &mut self.chunk_ids,
            file.chunk_ids.len(),
            "file chunk lists",
        )?;
        self.chunk_ids.extend_from_slice(file.chunk_ids);
        self.files.push(FileRow::new(
            (file.dir, file.name),
            (chunks_start, file.chunk_ids.len() as u32),
            file.size,
            *file.sha256,
            file.attributes,
        ));
        Ok(())
    }

    fn chunks(&mut self, rows: &ChunkRows<'a>) -> Result<(), Error> {
        self.chunks = vec_with_capacity(rows.len(), "chunk table")?;
        if rows.dialect() == Dialect::Spec {
            self.file_offsets = vec_with_capacity(rows.len(), "chunk table")?;
        }
        Ok(())
    }

    fn chunk(&mut self, _id: u32, row: ChunkRow) -> Result<(), Error> {
        self.chunks.push(row.chunk);
        if let Some(offset) = row.file_offset {
            self.file_offsets.push(offset);
        }
        Ok(())
    }

    fn blocks(&mut self, count: usize) -> Result<(), Error> {
        self.blocks = vec_with_capacity(count, "block table")?;
        Ok(())
    }

    fn block(&mut self, _id: u32, block: BlockRecord) -> Result<(), Error> {
        self.blocks.push(block);
        Ok(())
    }
}

/// The spec dialect's rule for chunk `id` of file `path`: its stored
/// position in the file is where the file's earlier chunks end.
pub(crate) fn check_file_offset(
    id: u32,
    stored: u64,
    position: u64,
    path: PathRef<'_>,
) -> Result<(), Error> {
    if stored == position {
        return Ok(());
    }
    Err(Error::corrupt(
        format!("chunk {id}"),
        format!(
            "starts at {stored} in file {path} but the file's earlier chunks end at {position}"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample() -> Manifest {
        let mut builder = ManifestBuilder::new(Config::new(262_144, 262_144, 3));
        let chunk = |file, block, offset, size| ChunkRecord {
            file,
            block,
            offset,
            size,
        };
        builder.push_chunk(chunk(0, 0, 0, 3)).unwrap();
        builder
            .push_file("a/b.txt", 3, [1; 32], 0..1, Attributes::default())
            .unwrap();
        builder.push_chunk(chunk(1, 0, 3, 2)).unwrap();
        builder
            .push_file(
                "a/c.txt",
                2,
                [2; 32],
                1..2,
                Attributes::new(FileKind::File, 0o755, 1_700_000_000_000_000_000),
            )
            .unwrap();
        builder.push_chunk(chunk(2, 1, 0, 6)).unwrap();
        builder.push_chunk(chunk(2, 2, 0, 4)).unwrap();
        builder
            .push_file("big", 10, [3; 32], 2..4, Attributes::default())
            .unwrap();
        builder
            .push_file(
                "empty-dir",
                0,
                [4; 32],
                4..4,
                Attributes::new(FileKind::Directory, 0o700, 5),
            )
            .unwrap();
        let block = |codec, offset, stored_size, size, checksum| BlockRecord {
            codec,
            offset,
            stored_size,
            size,
            checksum,
        };
        builder.finish(vec![
            block(Codec::Zstd, 80, 10, 5, 0xdead_beef),
            block(Codec::Store, 94, 6, 6, 7),
            block(Codec::Store, 104, 4, 4, 8),
        ])
    }

    #[test]
    fn both_encodings_round_trip() {
        let manifest = sample();
        assert_eq!(
            Manifest::decode_spec_body(&manifest.encode_spec_body().unwrap()).unwrap(),
            manifest
        );
        assert_eq!(
            Manifest::decode_cli_raw(&manifest.encode_cli_raw()).unwrap(),
            manifest
        );
    }

    #[test]
    fn paths_are_interned_and_compared_without_joining() {
        let manifest = sample();
        assert_eq!(manifest.strings.len(), 6);
        let paths: Vec<String> = manifest.files().map(|f| f.path().to_string()).collect();
        assert_eq!(paths, ["a/b.txt", "a/c.txt", "big", "empty-dir"]);
        let first = manifest.file(0).unwrap().path();
        assert!(first.is("a/b.txt"));
        assert!(!first.is("a/c.txt") && !first.is("a.b.txt") && !first.is("b.txt"));
        assert_eq!(first.hash(), path_hash("a/b.txt"));
        assert_eq!(manifest.file(2).unwrap().path().hash(), path_hash("big"));
    }

    #[test]
    fn every_truncation_of_a_body_is_an_error() {
        let manifest = sample();
        let spec = manifest.encode_spec_body().unwrap();
        // The attribute section is optional: the body cut right before it
        // reads as the same files with default attributes; any other cut fails.
        let accepted: Vec<usize> = (0..spec.len())
            .filter(|&cut| Manifest::decode_spec_body(&spec[..cut]).is_ok())
            .collect();
        assert_eq!(accepted.len(), 1, "{accepted:?}");
        let plain = Manifest::decode_spec_body(&spec[..accepted[0]]).unwrap();
        assert!(
            plain
                .files()
                .all(|f| f.attributes() == Attributes::default())
        );
        assert_eq!(plain.files.len(), manifest.files.len());
        let cli = manifest.encode_cli_raw();
        for cut in 0..cli.len() {
            assert!(
                Manifest::decode_cli_raw(&cli[..cut]).is_err(),
                "cli cut {cut}"
            );
        }
    }

    #[test]
    fn hostile_counts_are_refused_before_allocating() {
        let mut body = Vec::new();
        section(
            &mut body,
            &rmp_serde::to_vec_named(&sample().config).unwrap(),
        );
        let mut strings = Vec::new();
        varint::encode_u64(1 << 60, &mut strings);
        section(&mut body, &strings);
        assert!(matches!(
            Manifest::decode_spec_body(&body),
            Err(Error::CountTooLarge { .. })
        ));
    }
}
