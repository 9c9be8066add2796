//! The manifest's decoder: the visitor of the table walker
//! ([`crate::tables`]) that keeps every row, and the checks and repairs
//! each dialect needs once the tables are read.

use binfmt_core::Error;
use binfmt_core::alloc::{reserve, vec_with_capacity};

use super::records::{BlockRecord, ChunkRecord, Config, check_file_offset};
use super::{FileRow, Manifest, Strings, block_users};
use crate::format::Dialect;
use crate::tables::{self, ChunkRow, ChunkRows, FileRecord, Visit};

impl Manifest {
    /// Reads the spec dialect's manifest body (see [`crate::tables`]).
    pub(crate) fn decode_spec_body(body: &[u8]) -> Result<Self, Error> {
        let mut decoder = Decoder::default();
        let config = tables::walk_spec(body, &mut decoder)?;
        let file_offsets = std::mem::take(&mut decoder.file_offsets);
        let manifest = decoder.finish(config);
        manifest.check_file_offsets(&file_offsets)?;
        Ok(manifest)
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
