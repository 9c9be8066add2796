//! The manifest: what every file, chunk and block is, in one model with an
//! encoding per dialect. Integers are LEB128 varints unless noted.
//!
//! **spec** (`MFv2` + zstd of the body; the body is five sections, each a
//! varint byte length and the bytes):
//!
//! ```text
//! 1 config   MessagePack map: chunk_size, small_file_threshold, codec_default, zstd_level, compression_mode
//! 2 strings  count, then (length, UTF-8 bytes) each: directories and file names, each once
//! 3 files    count, then per file: file_id, dir string, name string, size, sha256 (32 bytes),
//!            chunk count, chunk ids (the first, then differences)
//! 4 chunks   count, then per chunk: chunk_id difference, file_id, file_offset, size, block_id,
//!            block_offset (where the chunk starts inside its decompressed block)
//! 5 blocks   count, then per block: block_id difference, codec (length + "zstd" | "store"),
//!            offset difference, compressed_size, decompressed_size, CRC32 of the stored bytes (u32 LE)
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
//!            type byte (0), sha256 (32 bytes), chunk count, chunk id differences,
//!            codec hint byte, pack id (zigzag varint)
//! chunks     count, then per chunk: chunk_id difference, file_id, offset, size, block_id
//!            (offset: where the chunk starts in its block, as the tool's reader uses it)
//! blocks     count, then per block: block_id difference, codec byte (1 zstd, 0 store),
//!            offset difference, compressed_size, uncompressed_size,
//!            checksum (8 bytes: the CRC32 zero-extended to u64, big-endian)
//! ```

use std::collections::HashMap;

use binfmt_core::varint;
use binfmt_core::{ByteReader, Error};
use serde::{Deserialize, Serialize};

use crate::format::{Codec, MANIFEST_MAGIC};

/// Archive-level settings, as the spec's MessagePack config section holds them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Config {
    pub chunk_size: u64,
    pub small_file_threshold: u64,
    pub codec_default: String,
    pub zstd_level: u64,
    pub compression_mode: String,
}

/// One file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRecord {
    pub path: String,
    pub size: u64,
    pub sha256: [u8; 32],
    /// Chunk ids, in file order.
    pub chunks: Vec<u64>,
}

/// One contiguous piece of a file, inside one block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkRecord {
    pub file_id: u64,
    /// Where the chunk starts in its file.
    pub file_offset: u64,
    pub size: u64,
    pub block_id: u64,
    /// Where the chunk starts in its decompressed block.
    pub block_offset: u64,
}

/// One block of the data region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockRecord {
    pub codec: Codec,
    /// Where the block's 4-byte size prefix starts.
    pub offset: u64,
    /// Bytes after the size prefix.
    pub stored_size: u64,
    /// Bytes after decompression.
    pub size: u64,
    /// CRC32 of the stored bytes.
    pub checksum: u32,
}

/// The whole manifest; ids are positions in these lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    pub config: Config,
    pub files: Vec<FileRecord>,
    pub chunks: Vec<ChunkRecord>,
    pub blocks: Vec<BlockRecord>,
}

/// Paths split into directory and name, each distinct string once, in
/// first-seen order; returns the table and each path's (dir, name) indices.
fn string_table(files: &[FileRecord]) -> (Vec<&str>, Vec<(u64, u64)>) {
    let mut strings: Vec<&str> = Vec::new();
    let mut lookup: HashMap<&str, u64> = HashMap::new();
    let mut refs = Vec::with_capacity(files.len());
    for file in files {
        let (dir, name) = file.path.rsplit_once('/').unwrap_or(("", &file.path));
        let mut id = |s| {
            *lookup.entry(s).or_insert_with(|| {
                strings.push(s);
                strings.len() as u64 - 1
            })
        };
        let dir_id = id(dir);
        let name_id = id(name);
        refs.push((dir_id, name_id));
    }
    (strings, refs)
}

fn put(out: &mut Vec<u8>, value: u64) {
    varint::encode_u64(value, out);
}

fn put_strings(out: &mut Vec<u8>, strings: &[&str]) {
    put(out, strings.len() as u64);
    for s in strings {
        put(out, s.len() as u64);
        out.extend_from_slice(s.as_bytes());
    }
}

/// Chunk ids as the first, then differences (ids are in ascending order).
fn put_deltas(out: &mut Vec<u8>, ids: &[u64]) {
    put(out, ids.len() as u64);
    let mut previous = 0;
    for &id in ids {
        put(out, id.wrapping_sub(previous));
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
        if let Some(count) = users.get_mut(chunk.block_id as usize) {
            *count += 1;
        }
    }
    users
}

impl Manifest {
    /// The spec dialect's manifest body, before compression.
    pub fn encode_spec_body(&self) -> Result<Vec<u8>, Error> {
        let mut out = Vec::new();
        let config = rmp_serde::to_vec_named(&self.config)
            .map_err(|error| Error::corrupt("config section", error.to_string()))?;
        section(&mut out, &config);
        let (strings, refs) = string_table(&self.files);
        let mut body = Vec::new();
        put_strings(&mut body, &strings);
        section(&mut out, &body);

        body.clear();
        put(&mut body, self.files.len() as u64);
        for (file_id, (file, (dir, name))) in self.files.iter().zip(&refs).enumerate() {
            put(&mut body, file_id as u64);
            put(&mut body, *dir);
            put(&mut body, *name);
            put(&mut body, file.size);
            body.extend_from_slice(&file.sha256);
            put_deltas(&mut body, &file.chunks);
        }
        section(&mut out, &body);

        body.clear();
        put(&mut body, self.chunks.len() as u64);
        for (chunk_id, chunk) in self.chunks.iter().enumerate() {
            put(&mut body, u64::from(chunk_id != 0));
            put(&mut body, chunk.file_id);
            put(&mut body, chunk.file_offset);
            put(&mut body, chunk.size);
            put(&mut body, chunk.block_id);
            put(&mut body, chunk.block_offset);
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
            put(&mut body, block.stored_size);
            put(&mut body, block.size);
            body.extend_from_slice(&block.checksum.to_le_bytes());
        }
        section(&mut out, &body);
        Ok(out)
    }

    /// Reads the spec dialect's manifest body. Bytes after the fields this
    /// reader knows, inside a section or after the last one, are ignored
    /// (room for minor-version additions).
    pub fn decode_spec_body(body: &[u8]) -> Result<Self, Error> {
        let mut sections = ByteReader::new(body);
        let mut next = |what: &'static str| -> Result<ByteReader<'_>, Error> {
            let len = sections.varint(what)?;
            let at = sections.offset();
            Ok(ByteReader::at(sections.bytes_u64(len, what)?, at))
        };
        let config_bytes = next("config section")?;
        let config: Config = rmp_serde::from_slice(config_bytes.rest())
            .map_err(|error| Error::corrupt("config section", error.to_string()))?;

        let mut strings_section = next("string table")?;
        let strings = read_strings(&mut strings_section)?;

        let mut files_section = next("file table")?;
        let count = files_section.count(36, "file count")?;
        let mut files = Vec::with_capacity(count);
        for expected_id in 0..count {
            check_id(files_section.varint("file id")?, expected_id, "file")?;
            let path = join_path(
                &strings,
                files_section.varint("file directory")?,
                files_section.varint("file name")?,
            )?;
            let size = files_section.varint("file size")?;
            let sha256 = files_section.array::<32>("file sha256")?;
            let chunks = read_deltas(&mut files_section, "file chunk")?;
            files.push(FileRecord {
                path,
                size,
                sha256,
                chunks,
            });
        }

        let mut chunks_section = next("chunk table")?;
        let count = chunks_section.count(6, "chunk count")?;
        let mut chunks = Vec::with_capacity(count);
        let mut chunk_id = 0u64;
        for index in 0..count {
            chunk_id = chunk_id.wrapping_add(chunks_section.varint("chunk id")?);
            check_id(chunk_id, index, "chunk")?;
            chunks.push(ChunkRecord {
                file_id: chunks_section.varint("chunk file id")?,
                file_offset: chunks_section.varint("chunk file offset")?,
                size: chunks_section.varint("chunk size")?,
                block_id: chunks_section.varint("chunk block id")?,
                block_offset: chunks_section.varint("chunk block offset")?,
            });
        }

        let mut blocks_section = next("block table")?;
        let count = blocks_section.count(9, "block count")?;
        let mut blocks = Vec::with_capacity(count);
        let (mut block_id, mut offset) = (0u64, 0u64);
        for index in 0..count {
            block_id = block_id.wrapping_add(blocks_section.varint("block id")?);
            check_id(block_id, index, "block")?;
            let codec_len = blocks_section.varint("block codec length")?;
            let codec = match blocks_section.bytes_u64(codec_len, "block codec")? {
                b"zstd" => Codec::Zstd,
                b"store" => Codec::Store,
                other => {
                    return Err(Error::corrupt(
                        format!("block {index}"),
                        format!("unknown codec {:?}", other.escape_ascii().to_string()),
                    ));
                }
            };
            offset = offset
                .checked_add(blocks_section.varint("block offset")?)
                .ok_or_else(|| Error::corrupt(format!("block {index}"), "offset overflows"))?;
            blocks.push(BlockRecord {
                codec,
                offset,
                stored_size: blocks_section.varint("block compressed size")?,
                size: blocks_section.varint("block size")?,
                checksum: blocks_section.u32("block checksum")?,
            });
        }
        Ok(Self {
            config,
            files,
            chunks,
            blocks,
        })
    }

    /// The arcx-cli dialect's raw manifest (`MFv2` ...), before framing.
    pub fn encode_cli_raw(&self) -> Vec<u8> {
        let mut out = MANIFEST_MAGIC.to_vec();
        out.push(1);
        let mut config = Vec::new();
        put(&mut config, self.config.chunk_size);
        put(&mut config, self.config.small_file_threshold);
        config.push(u8::from(self.config.codec_default == "zstd"));
        put(&mut config, self.config.zstd_level);
        config.push(u8::from(self.config.compression_mode == "balanced"));
        section(&mut out, &config);
        let (strings, refs) = string_table(&self.files);
        put_strings(&mut out, &strings);

        let users = block_users(&self.chunks, self.blocks.len());
        let block_of = |chunk: u64| self.chunks.get(chunk as usize).map(|c| c.block_id as usize);
        put(&mut out, self.files.len() as u64);
        for (file_id, (file, (dir, name))) in self.files.iter().zip(&refs).enumerate() {
            put(&mut out, file_id as u64);
            put(&mut out, *dir);
            put(&mut out, *name);
            put(&mut out, file.size);
            put(&mut out, 0o644);
            put(&mut out, 0);
            out.push(0);
            out.extend_from_slice(&file.sha256);
            put_deltas(&mut out, &file.chunks);
            let packed = file
                .chunks
                .first()
                .and_then(|&c| block_of(c))
                .is_some_and(|block| users.get(block).is_some_and(|&n| n > 1));
            if packed || file.chunks.is_empty() {
                // The tool's codec hint and pack id for packed small files.
                out.push(0);
                varint::encode_i64(0, &mut out);
            } else {
                let zstd = file
                    .chunks
                    .iter()
                    .filter_map(|&c| block_of(c))
                    .any(|block| {
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
            put(&mut out, chunk.file_id);
            // The tool's reader slices the block at this offset.
            put(&mut out, chunk.block_offset);
            put(&mut out, chunk.size);
            put(&mut out, chunk.block_id);
        }
        put(&mut out, self.blocks.len() as u64);
        let mut previous_offset = 0;
        for (block_id, block) in self.blocks.iter().enumerate() {
            put(&mut out, u64::from(block_id != 0));
            out.push(u8::from(block.codec == Codec::Zstd));
            put(&mut out, block.offset.wrapping_sub(previous_offset));
            previous_offset = block.offset;
            put(&mut out, block.stored_size);
            put(&mut out, block.size);
            out.extend_from_slice(&u64::from(block.checksum).to_be_bytes());
        }
        out
    }

    /// Reads the arcx-cli dialect's raw manifest (`MFv2` ...).
    pub fn decode_cli_raw(raw: &[u8]) -> Result<Self, Error> {
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
        let config = Config {
            chunk_size: config_reader.varint("chunk size")?,
            small_file_threshold: config_reader.varint("small file threshold")?,
            codec_default: if config_reader.u8("codec")? == 1 {
                "zstd"
            } else {
                "store"
            }
            .to_owned(),
            zstd_level: config_reader.varint("zstd level")?,
            compression_mode: if config_reader.u8("mode")? == 1 {
                "balanced"
            } else {
                "fast"
            }
            .to_owned(),
        };
        let strings = read_strings(&mut reader)?;
        let count = reader.count(41, "file count")?;
        let mut files = Vec::with_capacity(count);
        for expected_id in 0..count {
            check_id(reader.varint("file id")?, expected_id, "file")?;
            let path = join_path(
                &strings,
                reader.varint("file directory")?,
                reader.varint("file name")?,
            )?;
            let size = reader.varint("file size")?;
            reader.varint("file mode")?;
            reader.varint("file mtime")?;
            reader.u8("file type")?;
            let sha256 = reader.array::<32>("file sha256")?;
            let chunks = read_deltas(&mut reader, "file chunk")?;
            reader.u8("file codec hint")?;
            reader.varint_signed("file pack id")?;
            files.push(FileRecord {
                path,
                size,
                sha256,
                chunks,
            });
        }
        let count = reader.count(5, "chunk count")?;
        let mut chunks = Vec::with_capacity(count);
        let mut chunk_id = 0u64;
        for index in 0..count {
            chunk_id = chunk_id.wrapping_add(reader.varint("chunk id")?);
            check_id(chunk_id, index, "chunk")?;
            let file_id = reader.varint("chunk file id")?;
            let offset = reader.varint("chunk offset")?;
            let size = reader.varint("chunk size")?;
            let block_id = reader.varint("chunk block id")?;
            chunks.push(ChunkRecord {
                file_id,
                file_offset: offset,
                size,
                block_id,
                block_offset: offset,
            });
        }
        let count = reader.count(13, "block count")?;
        let mut blocks = Vec::with_capacity(count);
        let (mut block_id, mut offset) = (0u64, 0u64);
        for index in 0..count {
            block_id = block_id.wrapping_add(reader.varint("block id")?);
            check_id(block_id, index, "block")?;
            let codec = if reader.u8("block codec")? == 1 {
                Codec::Zstd
            } else {
                Codec::Store
            };
            offset = offset
                .checked_add(reader.varint("block offset")?)
                .ok_or_else(|| Error::corrupt(format!("block {index}"), "offset overflows"))?;
            let stored_size = reader.varint("block compressed size")?;
            let size = reader.varint("block size")?;
            let checksum = u64::from_be_bytes(reader.array::<8>("block checksum")?);
            blocks.push(BlockRecord {
                codec,
                offset,
                stored_size,
                size,
                checksum: u32::try_from(checksum).map_err(|_| {
                    Error::corrupt(
                        format!("block {index}"),
                        "checksum is not a zero-extended CRC32",
                    )
                })?,
            });
        }
        let mut manifest = Self {
            config,
            files,
            chunks,
            blocks,
        };
        manifest.repair_cli_offsets();
        Ok(manifest)
    }

    /// The tool writes a large file's chunk offsets as positions in the
    /// file, while it (and this reader) take them as positions in the block.
    /// A block holding a single chunk starts that chunk at 0; only blocks
    /// shared by several chunks (packed small files) need the stored offset.
    /// Positions in the file are recomputed from the chunk order.
    fn repair_cli_offsets(&mut self) {
        let users = block_users(&self.chunks, self.blocks.len());
        for chunk in &mut self.chunks {
            if users.get(chunk.block_id as usize) == Some(&1) {
                chunk.block_offset = 0;
            }
        }
        for file in &self.files {
            let mut position = 0u64;
            for &id in &file.chunks {
                if let Some(chunk) = self.chunks.get_mut(id as usize) {
                    chunk.file_offset = position;
                    position = position.saturating_add(chunk.size);
                }
            }
        }
    }
}

fn read_strings<'a>(reader: &mut ByteReader<'a>) -> Result<Vec<&'a str>, Error> {
    let count = reader.count(1, "string count")?;
    let mut strings = Vec::with_capacity(count);
    for _ in 0..count {
        let len = reader.varint("string length")?;
        let bytes = reader.bytes_u64(len, "string")?;
        strings.push(
            std::str::from_utf8(bytes)
                .map_err(|_| Error::corrupt("string table", "a string is not UTF-8"))?,
        );
    }
    Ok(strings)
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

fn join_path(strings: &[&str], dir: u64, name: u64) -> Result<String, Error> {
    let get = |index: u64| {
        strings
            .get(usize::try_from(index).unwrap_or(usize::MAX))
            .copied()
            .ok_or_else(|| {
                Error::corrupt(
                    "file table",
                    format!(
                        "string index {index} is past the {}-entry string table",
                        strings.len()
                    ),
                )
            })
    };
    let (dir, name) = (get(dir)?, get(name)?);
    Ok(if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    })
}

fn read_deltas(reader: &mut ByteReader<'_>, what: &'static str) -> Result<Vec<u64>, Error> {
    let count = reader.count(1, what)?;
    let mut ids = Vec::with_capacity(count);
    let mut id = 0u64;
    for _ in 0..count {
        id = id
            .checked_add(reader.varint(what)?)
            .ok_or_else(|| Error::corrupt(what, "id overflows"))?;
        ids.push(id);
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Manifest {
        Manifest {
            config: Config {
                chunk_size: 262_144,
                small_file_threshold: 262_144,
                codec_default: "zstd".into(),
                zstd_level: 3,
                compression_mode: "balanced".into(),
            },
            files: vec![
                FileRecord {
                    path: "a/b.txt".into(),
                    size: 3,
                    sha256: [1; 32],
                    chunks: vec![0],
                },
                FileRecord {
                    path: "a/c.txt".into(),
                    size: 2,
                    sha256: [2; 32],
                    chunks: vec![1],
                },
                FileRecord {
                    path: "big".into(),
                    size: 10,
                    sha256: [3; 32],
                    chunks: vec![2, 3],
                },
            ],
            chunks: vec![
                ChunkRecord {
                    file_id: 0,
                    file_offset: 0,
                    size: 3,
                    block_id: 0,
                    block_offset: 0,
                },
                ChunkRecord {
                    file_id: 1,
                    file_offset: 0,
                    size: 2,
                    block_id: 0,
                    block_offset: 3,
                },
                ChunkRecord {
                    file_id: 2,
                    file_offset: 0,
                    size: 6,
                    block_id: 1,
                    block_offset: 0,
                },
                ChunkRecord {
                    file_id: 2,
                    file_offset: 6,
                    size: 4,
                    block_id: 2,
                    block_offset: 0,
                },
            ],
            blocks: vec![
                BlockRecord {
                    codec: Codec::Zstd,
                    offset: 80,
                    stored_size: 10,
                    size: 5,
                    checksum: 0xdead_beef,
                },
                BlockRecord {
                    codec: Codec::Store,
                    offset: 94,
                    stored_size: 6,
                    size: 6,
                    checksum: 7,
                },
                BlockRecord {
                    codec: Codec::Store,
                    offset: 104,
                    stored_size: 4,
                    size: 4,
                    checksum: 8,
                },
            ],
        }
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
    fn directories_are_stored_once() {
        let manifest = sample();
        let (strings, refs) = string_table(&manifest.files);
        assert_eq!(strings, ["a", "b.txt", "c.txt", "", "big"]);
        assert_eq!(refs, [(0, 1), (0, 2), (3, 4)]);
    }

    #[test]
    fn every_truncation_of_a_body_is_an_error() {
        let manifest = sample();
        let spec = manifest.encode_spec_body().unwrap();
        for cut in 0..spec.len() {
            assert!(
                Manifest::decode_spec_body(&spec[..cut]).is_err(),
                "spec cut {cut}"
            );
        }
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
