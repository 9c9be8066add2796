//! The table walker: reads a decompressed manifest of either dialect row by
//! row (layouts in [`crate::manifest`]), checks its layout, and hands each
//! row to a [`Visit`]or. Two visitors share it: the whole manifest's
//! decoder (`manifest/decode.rs`), which keeps every row, and the one-path lookup
//! (`lookup.rs`), which keeps only the rows of the file asked for.
//!
//! What the walker checks, for every row it reads whatever the visitor
//! keeps: every count against the bytes that remain, ids 0, 1, 2, ...,
//! string indices inside the string table, a file's
//! chunk ids strictly increasing, ids and sizes inside blocks within 32
//! bits, block offsets without overflow, known codecs and kind bytes, and
//! (spec) an attribute table with one entry per file. Strings are UTF-8:
//! each visitor checks that ([`utf8`]) for the strings it keeps.

use binfmt_core::alloc::reserve;
use binfmt_core::{ByteReader, Error};

use crate::format::{Codec, Dialect, MANIFEST_MAGIC};
use crate::manifest::{Attributes, BlockRecord, ChunkRecord, Config, FileKind};

/// One file row as the walker reads it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FileRecord<'a, 's> {
    /// Index of its directory string.
    pub dir: u32,
    /// Index of its name string.
    pub name: u32,
    /// Its size in bytes.
    pub size: u64,
    /// The SHA-256 of its bytes.
    pub sha256: &'a [u8; 32],
    /// Its metadata (spec: from the attribute table, read beside the
    /// file table; defaults without one).
    pub attributes: Attributes,
    /// Its chunk ids, strictly increasing.
    pub chunk_ids: &'s [u32],
}

/// One chunk row: the chunk, and (spec) where it starts in its file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChunkRow {
    /// The chunk; `offset` as stored (arcx-cli: see `Manifest::repair_cli_offsets`).
    pub chunk: ChunkRecord,
    /// Spec only: the stored position of the chunk in its file.
    pub file_offset: Option<u64>,
}

/// What a walk hands the rows it reads to, table by table, in order.
pub(crate) trait Visit<'a> {
    /// The string table holds `count` strings in at most `bytes` bytes.
    fn strings(&mut self, count: usize, bytes: usize) -> Result<(), Error>;
    /// The next string, its bytes as stored: the visitor checks they are
    /// UTF-8 ([`utf8`]) for the strings it keeps.
    fn string(&mut self, string: &'a [u8]) -> Result<(), Error>;
    /// The file table holds `count` files.
    fn files(&mut self, count: usize) -> Result<(), Error>;
    /// File `id`.
    fn file(&mut self, id: u32, file: FileRecord<'a, '_>) -> Result<(), Error>;
    /// The chunk table, before its rows are read: a visitor may keep
    /// `rows` to read them again.
    fn chunks(&mut self, rows: &ChunkRows<'a>) -> Result<(), Error>;
    /// Chunk `id`.
    fn chunk(&mut self, id: u32, row: ChunkRow) -> Result<(), Error>;
    /// The block table holds `count` blocks.
    fn blocks(&mut self, count: usize) -> Result<(), Error>;
    /// Block `id`.
    fn block(&mut self, id: u32, block: BlockRecord) -> Result<(), Error>;
}

/// The chunk table's rows, read one at a time; a copy reads them again.
#[derive(Debug, Clone)]
pub(crate) struct ChunkRows<'a> {
    reader: ByteReader<'a>,
    dialect: Dialect,
    count: usize,
    next: usize,
    id: u64,
}

impl<'a> ChunkRows<'a> {
    /// The dialect the rows are in.
    pub(crate) fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// How many chunks the table holds.
    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// The next chunk and its id, or `None` after the last.
    pub(crate) fn next(&mut self) -> Result<Option<(u32, ChunkRow)>, Error> {
        if self.next >= self.count {
            return Ok(None);
        }
        let index = self.next;
        let reader = &mut self.reader;
        self.id = self.id.wrapping_add(reader.varint("chunk id")?);
        check_id(self.id, index, "chunk")?;
        let file = narrow(reader.varint("chunk file id")?, "chunk file id")?;
        let row = match self.dialect {
            Dialect::ArcxCli => {
                let offset = reader.varint("chunk offset")?;
                let size = narrow(reader.varint("chunk size")?, "chunk size")?;
                let block = narrow(reader.varint("chunk block id")?, "chunk block id")?;
                ChunkRow {
                    chunk: ChunkRecord {
                        file,
                        block,
                        // Kept as written; see `Manifest::repair_cli_offsets`.
                        offset: u32::try_from(offset).unwrap_or(u32::MAX),
                        size,
                    },
                    file_offset: None,
                }
            }
            _ => {
                let file_offset = reader.varint("chunk file offset")?;
                let size = narrow(reader.varint("chunk size")?, "chunk size")?;
                let block = narrow(reader.varint("chunk block id")?, "chunk block id")?;
                let offset = narrow(reader.varint("chunk block offset")?, "chunk block offset")?;
                ChunkRow {
                    chunk: ChunkRecord {
                        file,
                        block,
                        offset,
                        size,
                    },
                    file_offset: Some(file_offset),
                }
            }
        };
        self.next += 1;
        // Counts are bounded by bytes, so ids fit 32 bits.
        Ok(Some((index as u32, row)))
    }
}

/// Walks a spec dialect manifest body (sections: config, strings, files,
/// chunks, blocks, optional attributes). Bytes after the fields this reader
/// knows, inside a section or after the last one, are ignored (room for
/// minor-version additions).
pub(crate) fn walk_spec<'a>(body: &'a [u8], visit: &mut impl Visit<'a>) -> Result<Config, Error> {
    let mut sections = Sections(ByteReader::new(body));
    let config_bytes = sections.required("config section")?;
    let config: Config = rmp_serde::from_slice(config_bytes.rest())
        .map_err(|error| Error::corrupt("config section", error.to_string()))?;

    let mut strings = sections.required("string table")?;
    let string_count = walk_strings(&mut strings, visit)?;

    let mut files = sections.required("file table")?;
    let file_count = files.count(37, "file count")?;
    // The attribute table comes last but is read beside the file table,
    // row for row, so every file row is whole when it is handed on (a
    // listing can then print it without keeping it).
    let mut attributes = attribute_table(sections.clone(), file_count)?;
    visit.files(file_count)?;
    let mut chunk_ids = Vec::new();
    for id in 0..file_count {
        check_id(files.varint("file id")?, id, "file")?;
        let dir = string_id(string_count, files.varint("file directory")?)?;
        let name = string_id(string_count, files.varint("file name")?)?;
        let size = files.varint("file size")?;
        let sha256 = sha256(&mut files)?;
        read_chunk_ids(&mut files, &mut chunk_ids, id)?;
        let attributes = match &mut attributes {
            Some(table) => {
                let mode = read_mode(table)?;
                let mtime_ns = table.varint_signed("file mtime")?;
                let kind = read_kind(table, id)?;
                Attributes {
                    kind,
                    mode,
                    mtime_ns,
                }
            }
            None => Attributes::default(),
        };
        let row = FileRecord {
            dir,
            name,
            size,
            sha256,
            attributes,
            chunk_ids: &chunk_ids,
        };
        visit.file(id as u32, row)?;
    }

    let mut chunks = sections.required("chunk table")?;
    let count = chunks.count(6, "chunk count")?;
    walk_chunks(chunks, Dialect::Spec, count, visit)?;

    let mut blocks = sections.required("block table")?;
    let count = blocks.count(13, "block count")?;
    visit.blocks(count)?;
    let mut offset = 0u64;
    let mut block_id = 0u64;
    for index in 0..count {
        block_id = block_id.wrapping_add(blocks.varint("block id")?);
        check_id(block_id, index, "block")?;
        let codec_len = blocks.varint("block codec length")?;
        let codec = match blocks.bytes_u64(codec_len, "block codec")? {
            b"zstd" => Codec::Zstd,
            b"store" => Codec::Store,
            other => {
                return Err(Error::corrupt(
                    format!("block {index}"),
                    format!("unknown codec {:?}", other.escape_ascii().to_string()),
                ));
            }
        };
        offset = block_offset(offset, blocks.varint("block offset")?, index)?;
        let block = BlockRecord {
            codec,
            offset,
            stored_size: narrow(
                blocks.varint("block compressed size")?,
                "block compressed size",
            )?,
            size: narrow(blocks.varint("block size")?, "block size")?,
            checksum: blocks.u32("block checksum")?,
        };
        visit.block(index as u32, block)?;
    }

    Ok(config)
}

/// The attribute table after the chunk and block tables (`sections` at the
/// chunk table), its count checked against the files': a reader at its
/// first row, or `None` when the body has none.
fn attribute_table<'a>(
    mut sections: Sections<'a>,
    file_count: usize,
) -> Result<Option<ByteReader<'a>>, Error> {
    sections.required("chunk table")?;
    sections.required("block table")?;
    let Some(mut attributes) = sections.next("attribute table")? else {
        return Ok(None);
    };
    let count = attributes.count(3, "attribute count")?;
    if count != file_count {
        return Err(Error::corrupt(
            "attribute table",
            format!("{count} entries for {file_count} files"),
        ));
    }
    Ok(Some(attributes))
}

/// Walks an arcx-cli dialect raw manifest (`MFv2`, version, config,
/// strings, files, chunks, blocks).
pub(crate) fn walk_cli<'a>(raw: &'a [u8], visit: &mut impl Visit<'a>) -> Result<Config, Error> {
    let mut reader = ByteReader::new(raw);
    let magic = reader.array::<4>("manifest magic")?;
    if magic != MANIFEST_MAGIC {
        return Err(Error::bad_magic("manifest", 0, &MANIFEST_MAGIC, &magic));
    }
    let version = reader.u8("manifest version")?;
    if version != 1 {
        return Err(Error::UnsupportedVersion {
            what: "arcx manifest".into(),
            found: version.to_string(),
            supported: "version 1".into(),
        });
    }
    let config_len = reader.varint("config length")?;
    let config_at = reader.offset();
    let mut config_reader = ByteReader::at(reader.bytes_u64(config_len, "config")?, config_at);
    let chunk_size = config_reader.varint("chunk size")?;
    let small_file_threshold = config_reader.varint("small file threshold")?;
    let codec = config_reader.u8("codec")?;
    let zstd_level = config_reader.varint("zstd level")?;
    let mode = config_reader.u8("mode")?;
    let config = Config {
        chunk_size,
        small_file_threshold,
        codec_default: if codec == 1 { "zstd" } else { "store" }.to_owned(),
        zstd_level,
        compression_mode: if mode == 1 { "balanced" } else { "fast" }.to_owned(),
    };
    let string_count = walk_strings(&mut reader, visit)?;
    let count = reader.count(42, "file count")?;
    visit.files(count)?;
    let mut chunk_ids = Vec::new();
    for id in 0..count {
        check_id(reader.varint("file id")?, id, "file")?;
        let dir = string_id(string_count, reader.varint("file directory")?)?;
        let name = string_id(string_count, reader.varint("file name")?)?;
        let size = reader.varint("file size")?;
        let mode = read_mode(&mut reader)?;
        let mtime_ns = i64::try_from(reader.varint("file mtime")?).unwrap_or(i64::MAX);
        let kind = read_kind(&mut reader, id)?;
        let sha256 = sha256(&mut reader)?;
        read_chunk_ids(&mut reader, &mut chunk_ids, id)?;
        reader.u8("file codec hint")?;
        reader.varint_signed("file pack id")?;
        let row = FileRecord {
            dir,
            name,
            size,
            sha256,
            attributes: Attributes {
                kind,
                mode,
                mtime_ns,
            },
            chunk_ids: &chunk_ids,
        };
        visit.file(id as u32, row)?;
    }
    let count = reader.count(5, "chunk count")?;
    reader = walk_chunks(reader, Dialect::ArcxCli, count, visit)?;
    let count = reader.count(13, "block count")?;
    visit.blocks(count)?;
    let (mut block_id, mut offset) = (0u64, 0u64);
    for index in 0..count {
        block_id = block_id.wrapping_add(reader.varint("block id")?);
        check_id(block_id, index, "block")?;
        let codec = if reader.u8("block codec")? == 1 {
            Codec::Zstd
        } else {
            Codec::Store
        };
        offset = block_offset(offset, reader.varint("block offset")?, index)?;
        let stored_size = narrow(
            reader.varint("block compressed size")?,
            "block compressed size",
        )?;
        let size = narrow(reader.varint("block size")?, "block size")?;
        let checksum = u64::from_be_bytes(reader.array::<8>("block checksum")?);
        let checksum = u32::try_from(checksum).map_err(|_| {
            Error::corrupt(
                format!("block {index}"),
                "checksum is not a zero-extended CRC32",
            )
        })?;
        let block = BlockRecord {
            codec,
            offset,
            stored_size,
            size,
            checksum,
        };
        visit.block(index as u32, block)?;
    }
    Ok(config)
}

/// Hands the chunk table's `count` rows at the front of `reader` to
/// `visit`; returns the reader after them.
fn walk_chunks<'a>(
    reader: ByteReader<'a>,
    dialect: Dialect,
    count: usize,
    visit: &mut impl Visit<'a>,
) -> Result<ByteReader<'a>, Error> {
    let mut rows = ChunkRows {
        reader,
        dialect,
        count,
        next: 0,
        id: 0,
    };
    visit.chunks(&rows)?;
    while let Some((id, row)) = rows.next()? {
        visit.chunk(id, row)?;
    }
    Ok(rows.reader)
}

/// Hands each string of the table at the front of `reader` to `visit`;
/// returns how many there are.
fn walk_strings<'a>(
    reader: &mut ByteReader<'a>,
    visit: &mut impl Visit<'a>,
) -> Result<usize, Error> {
    let count = reader.count(1, "string count")?;
    // The section's size bounds the strings' bytes.
    visit.strings(count, reader.remaining())?;
    for _ in 0..count {
        let len = reader.varint("string length")?;
        visit.string(reader.bytes_u64(len, "string")?)?;
    }
    Ok(count)
}

/// A string of the string table, which must be UTF-8.
pub(crate) fn utf8(bytes: &[u8]) -> Result<&str, Error> {
    std::str::from_utf8(bytes).map_err(|_| Error::corrupt("string table", "a string is not UTF-8"))
}

/// The spec body's sections, each a varint length and its bytes.
#[derive(Clone)]
struct Sections<'a>(ByteReader<'a>);

impl<'a> Sections<'a> {
    /// The next section, or `None` at the end of the body.
    fn next(&mut self, what: &'static str) -> Result<Option<ByteReader<'a>>, Error> {
        if self.0.is_empty() {
            return Ok(None);
        }
        let len = self.0.varint(what)?;
        let at = self.0.offset();
        Ok(Some(ByteReader::at(self.0.bytes_u64(len, what)?, at)))
    }

    /// The next section, which must be there.
    fn required(&mut self, what: &'static str) -> Result<ByteReader<'a>, Error> {
        let at = self.0.offset();
        self.next(what)?.ok_or_else(|| Error::Truncated {
            what: what.into(),
            offset: at,
            needed: 1,
            available: 0,
        })
    }
}

fn sha256<'a>(reader: &mut ByteReader<'a>) -> Result<&'a [u8; 32], Error> {
    let bytes = reader.bytes(32, "file sha256")?;
    bytes
        .first_chunk::<32>()
        .ok_or_else(|| Error::corrupt("file sha256", "short"))
}

/// A block's offset: the previous one plus a stored difference.
fn block_offset(previous: u64, delta: u64, index: usize) -> Result<u64, Error> {
    previous
        .checked_add(delta)
        .ok_or_else(|| Error::corrupt(format!("block {index}"), "offset overflows"))
}

fn check_id(found: u64, expected: usize, what: &'static str) -> Result<(), Error> {
    if found == expected as u64 {
        Ok(())
    } else {
        Err(Error::corrupt(
            format!("{what} table"),
            format!("entry {expected} has id {found}; ids must be 0, 1, 2, ..."),
        ))
    }
}

/// A value that must fit in 32 bits (ids, and sizes inside a block).
fn narrow(value: u64, what: &'static str) -> Result<u32, Error> {
    u32::try_from(value).map_err(|_| Error::LimitExceeded {
        what: what.into(),
        value,
        limit: u64::from(u32::MAX),
    })
}

fn string_id(strings: usize, index: u64) -> Result<u32, Error> {
    if index < strings as u64 {
        Ok(index as u32)
    } else {
        Err(Error::corrupt(
            "file table",
            format!("string index {index} is past the {strings}-entry string table"),
        ))
    }
}

fn read_mode(reader: &mut ByteReader<'_>) -> Result<u32, Error> {
    let mode = reader.varint("file mode")?;
    u32::try_from(mode).map_err(|_| Error::corrupt("file mode", format!("{mode:#o} is not a mode")))
}

fn read_kind(reader: &mut ByteReader<'_>, file: usize) -> Result<FileKind, Error> {
    let byte = reader.u8("file kind")?;
    FileKind::from_byte(byte).ok_or_else(|| {
        Error::corrupt(
            format!("file {file}"),
            format!("unknown kind byte {byte} (0 file, 1 directory, 2 symlink)"),
        )
    })
}

/// A file's chunk ids into `ids` (cleared first): strictly increasing (a
/// chunk listed twice in a file would repeat its bytes).
fn read_chunk_ids(
    reader: &mut ByteReader<'_>,
    ids: &mut Vec<u32>,
    file: usize,
) -> Result<(), Error> {
    let count = reader.count(1, "file chunk count")?;
    ids.clear();
    reserve(ids, count, "file chunk lists")?;
    let mut id = 0u64;
    for position in 0..count {
        let delta = reader.varint("file chunk")?;
        if position > 0 && delta == 0 {
            return Err(Error::corrupt(
                format!("file {file}"),
                format!("chunk {id} is listed twice"),
            ));
        }
        id = id
            .checked_add(delta)
            .ok_or_else(|| Error::corrupt(format!("file {file}"), "chunk id overflows"))?;
        ids.push(narrow(id, "file chunk id")?);
    }
    Ok(())
}
