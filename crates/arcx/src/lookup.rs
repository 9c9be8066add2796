//! Finding one path without decoding the whole manifest: the table walker
//! (`tables.rs`) reads every row, checking its layout, but this visitor
//! keeps only the rows of the file asked for, its chunks and its blocks,
//! and builds no path index.
//!
//! What the full open checks (`check.rs`) is checked here for everything
//! the file's bytes depend on, with the same errors (`spec/arcx.md`,
//! "Reading one file"):
//!
//! - every block's rules (in the data region, in order, not overlapping,
//!   sizes within the limits), for every block;
//! - the path appears once: the walk goes on after the first match, and a
//!   second one is an error;
//! - the file's chunks exist, name the file, lie inside their blocks,
//!   which exist, and overlap no chunk of the same blocks (the chunks of
//!   those blocks are kept as the walk meets them when the chunk rows name
//!   their blocks in ascending order, as writers lay them out; otherwise
//!   the chunk table is read a second time for them); spec: each
//!   starts in the file where the ones before it end;
//! - the file's own rules (`check::check_file`): its name, one piece of a
//!   shared block or whole blocks of its own, sizes adding up, a directory
//!   without bytes.
//!
//! Rules about other files (a chunk no file lists, a chunk another file
//! lists twice, another path twice, shared blocks revisited in file order)
//! say nothing about this file's bytes and are left to the full open.

use binfmt_core::Error;

use crate::check::{self, check_block, check_file, check_in_block, check_listed, check_overlaps};
use crate::error::{ArcxError, Result};
use crate::format::{Dialect, HEADER_SIZE};
use crate::limits::Limits;
use crate::manifest::{
    Attributes, BlockRecord, ChunkRecord, Config, Manifest, PathRef, check_file_offset,
};
use crate::tables::{self, ChunkRow, ChunkRows, FileRecord, Visit};

/// The manifest holding only the file at `path`, from the decompressed
/// manifest `body`, with the checks above; `None` when no file has that
/// path. `data_end`: where the data region ends (the manifest's offset).
pub(crate) fn find(
    dialect: Dialect,
    body: &[u8],
    path: &str,
    data_end: u64,
    limits: &Limits,
) -> Result<Option<Manifest>> {
    let mut lookup = Lookup {
        path,
        data_end,
        limits,
        strings: 0,
        candidates: Vec::new(),
        files: 0,
        found: None,
        rows: None,
        run: Vec::new(),
        run_wanted: false,
        sorted: true,
        neighbours: Vec::new(),
        chunks: Vec::new(),
        wanted: Vec::new(),
        blocks: Vec::new(),
        previous_end: HEADER_SIZE as u64,
        failed: None,
    };
    let walked = match dialect {
        Dialect::ArcxCli => tables::walk_cli(body, &mut lookup),
        _ => tables::walk_spec(body, &mut lookup),
    };
    let config = match (walked, lookup.failed.take()) {
        (_, Some(failed)) => return Err(failed),
        (Err(error), None) => return Err(ArcxError::Manifest(error)),
        (Ok(config), None) => config,
    };
    lookup.finish(dialect, config)
}

/// A string that may be part of the path: its directory (`dir`: the
/// path starts with it and a `/`, or it is empty) or its name (`name`: the
/// path ends with it).
#[derive(Debug, Clone, Copy)]
struct Candidate<'a> {
    id: u32,
    string: &'a str,
    dir: bool,
    name: bool,
}

/// The file found, as its row gave it.
#[derive(Debug)]
struct Found<'a> {
    id: u32,
    dir: &'a str,
    name: &'a str,
    size: u64,
    sha256: [u8; 32],
    attributes: Attributes,
    chunk_ids: Vec<u32>,
}

#[derive(Debug)]
struct Lookup<'a, 'p> {
    path: &'p str,
    data_end: u64,
    limits: &'p Limits,
    /// How many strings have been read, and those that may be part of the path.
    strings: u32,
    candidates: Vec<Candidate<'a>>,
    files: usize,
    found: Option<Found<'a>>,
    /// The chunk table, to read again for the chunks of the file's blocks
    /// when they are not found in one reading (`sorted`).
    rows: Option<ChunkRows<'a>>,
    /// The last rows read, all of one block: id and chunk.
    run: Vec<(u32, ChunkRecord)>,
    /// Whether `run` holds one of the file's chunks.
    run_wanted: bool,
    /// Whether the chunk rows so far name their blocks in ascending order:
    /// then the chunks of each block are one run of rows, and the runs
    /// holding the file's chunks are all the chunks of its blocks.
    sorted: bool,
    /// Those runs, in table order.
    neighbours: Vec<(u32, ChunkRecord)>,
    /// The file's chunks: id and row.
    chunks: Vec<(u32, ChunkRow)>,
    /// The ids of the blocks the file's chunks name, ascending.
    wanted: Vec<u32>,
    /// The file's blocks: id and record, ascending by id.
    blocks: Vec<(u32, BlockRecord)>,
    /// Where the last block read ends.
    previous_end: u64,
    /// A rule of `check.rs` that failed during the walk.
    failed: Option<ArcxError>,
}

impl<'a> Lookup<'a, '_> {
    fn candidate(&self, id: u32) -> Option<&Candidate<'a>> {
        self.candidates
            .binary_search_by_key(&id, |candidate| candidate.id)
            .ok()
            .and_then(|at| self.candidates.get(at))
    }

    /// Whether directory string `dir` and name string `name` make the path.
    fn is_path(&self, dir: u32, name: u32) -> Option<(&'a str, &'a str)> {
        let dir = self.candidate(dir).filter(|c| c.dir)?.string;
        let name = self.candidate(name).filter(|c| c.name)?.string;
        PathRef::new(dir, name).is(self.path).then_some((dir, name))
    }

    /// Stops the walk on a rule of `check.rs`.
    fn fail(&mut self, error: ArcxError) -> Error {
        let stop = Error::corrupt("manifest", error.to_string());
        self.failed = Some(error);
        stop
    }

    /// The checks that need the whole walk, and the manifest of one file.
    fn finish(mut self, dialect: Dialect, config: Config) -> Result<Option<Manifest>> {
        let Some(found) = self.found.take() else {
            return Ok(None);
        };
        let path = PathRef::new(found.dir, found.name);
        let what = || format!("file {path}");
        // The chunks of the file's blocks, the file's own among them.
        let mut users = vec![0u32; self.blocks.len()];
        let mut neighbours: Vec<ChunkRecord> = Vec::new();
        let mut neighbour_ids: Vec<u32> = Vec::new();
        let mut add = |id: u32, chunk: ChunkRecord| {
            if let Ok(at) = self
                .blocks
                .binary_search_by_key(&chunk.block, |&(id, _)| id)
            {
                if let Some(count) = users.get_mut(at) {
                    *count = count.saturating_add(1);
                }
                neighbours.push(chunk);
                neighbour_ids.push(id);
            }
        };
        if self.sorted {
            for &(id, chunk) in &self.neighbours {
                add(id, chunk);
            }
        } else if let Some(mut rows) = self.rows.take() {
            while let Some((id, row)) = rows.next().map_err(ArcxError::Manifest)? {
                add(id, row.chunk);
            }
        }
        let users_of = |block: u32| {
            self.blocks
                .binary_search_by_key(&block, |&(id, _)| id)
                .ok()
                .and_then(|at| users.get(at).copied())
                .unwrap_or(0)
        };
        let record = |block: u32| {
            self.blocks
                .binary_search_by_key(&block, |&(id, _)| id)
                .ok()
                .and_then(|at| self.blocks.get(at))
                .map(|&(_, record)| record)
        };
        if dialect == Dialect::ArcxCli {
            for chunk in neighbours.iter_mut() {
                chunk.offset = Manifest::cli_offset(chunk.offset, users_of(chunk.block));
            }
            for (_, row) in self.chunks.iter_mut() {
                row.chunk.offset =
                    Manifest::cli_offset(row.chunk.offset, users_of(row.chunk.block));
            }
        }
        for (&id, chunk) in neighbour_ids.iter().zip(&neighbours) {
            check_in_block(id, chunk, record(chunk.block).as_ref())?;
        }
        // A block that does not exist holds no neighbours.
        for (id, row) in &self.chunks {
            check_in_block(*id, &row.chunk, record(row.chunk.block).as_ref())?;
        }
        check_overlaps(&neighbours, |at| {
            neighbour_ids.get(at as usize).copied().unwrap_or(at)
        })?;
        let mut position = 0u64;
        for (id, row) in &self.chunks {
            if let Some(stored) = row.file_offset {
                check_file_offset(*id, stored, position, path).map_err(ArcxError::Manifest)?;
            }
            position = position.saturating_add(u64::from(row.chunk.size));
        }
        let listed: Vec<(u32, ChunkRecord)> = self
            .chunks
            .iter()
            .map(|&(id, row)| (id, row.chunk))
            .collect();
        let manifest = Manifest::one_file(
            config,
            (found.dir, found.name),
            (found.id, self.files),
            found.size,
            found.sha256,
            found.attributes,
            listed.iter().map(|&(_, chunk)| chunk).collect(),
            self.blocks.clone(),
        )
        .map_err(ArcxError::Manifest)?;
        let file = manifest
            .file(0)
            .ok_or_else(|| check::corrupt(what(), "not found".into()))?;
        let mut next = listed.iter();
        for &id in &found.chunk_ids {
            let chunk = match next.next() {
                Some((listed_id, chunk)) if *listed_id == id => Some(chunk),
                _ => None,
            };
            check_listed(file, id, chunk)?;
        }
        check_file(
            file,
            |block| manifest.block(block).copied(),
            users_of,
            self.limits,
            &mut None,
        )?;
        Ok(Some(manifest))
    }
}

impl Lookup<'_, '_> {
    /// The chunk rows of one block end: kept if one is the file's.
    fn end_run(&mut self) {
        if self.run_wanted {
            self.neighbours.append(&mut self.run);
        }
        self.run.clear();
        self.run_wanted = false;
    }
}

impl<'a> Visit<'a> for Lookup<'a, '_> {
    fn strings(&mut self, _count: usize, _bytes: usize) -> std::result::Result<(), Error> {
        Ok(())
    }

    fn string(&mut self, string: &'a [u8]) -> std::result::Result<(), Error> {
        let id = self.strings;
        self.strings = self.strings.saturating_add(1);
        let path = self.path.as_bytes();
        // Bytes first (the last byte, then the rest): most strings are
        // other files' names, which neither start nor end the path.
        let name = string
            .last()
            .is_none_or(|last| path.last() == Some(last) && path.ends_with(string));
        let dir = string.is_empty()
            || (path.get(string.len()) == Some(&b'/') && path.starts_with(string));
        if dir || name {
            // Only a string that may be part of the path is checked for
            // UTF-8 here; the others are the full open's (spec/arcx.md,
            // "Reading one file").
            self.candidates.push(Candidate {
                id,
                string: tables::utf8(string)?,
                dir,
                name,
            });
        }
        Ok(())
    }

    fn files(&mut self, count: usize) -> std::result::Result<(), Error> {
        self.files = count;
        Ok(())
    }

    fn file(&mut self, id: u32, file: FileRecord<'a, '_>) -> std::result::Result<(), Error> {
        let Some((dir, name)) = self.is_path(file.dir, file.name) else {
            return Ok(());
        };
        if self.found.is_some() {
            let error = check::corrupt(format!("file {}", self.path), "appears twice".into());
            return Err(self.fail(error));
        }
        let mut chunk_ids = Vec::new();
        binfmt_core::alloc::reserve(&mut chunk_ids, file.chunk_ids.len(), "file chunk lists")?;
        chunk_ids.extend_from_slice(file.chunk_ids);
        self.found = Some(Found {
            id,
            dir,
            name,
            size: file.size,
            sha256: *file.sha256,
            attributes: file.attributes,
            chunk_ids,
        });
        Ok(())
    }

    fn chunks(&mut self, rows: &ChunkRows<'a>) -> std::result::Result<(), Error> {
        self.rows = Some(rows.clone());
        Ok(())
    }

    fn chunk(&mut self, id: u32, row: ChunkRow) -> std::result::Result<(), Error> {
        // The file's chunk ids are increasing: the next one wanted is the
        // first not yet met.
        let wanted = self
            .found
            .as_ref()
            .and_then(|found| found.chunk_ids.get(self.chunks.len()))
            .copied();
        let block = row.chunk.block;
        if let Some(last) = self.run.last().map(|(_, chunk)| chunk.block)
            && last != block
        {
            self.sorted &= last < block;
            self.end_run();
        }
        if self.sorted && self.found.is_some() {
            self.run.push((id, row.chunk));
        }
        if wanted == Some(id) {
            self.chunks.push((id, row));
            self.run_wanted = true;
        }
        Ok(())
    }

    fn blocks(&mut self, _count: usize) -> std::result::Result<(), Error> {
        self.end_run();
        let mut wanted: Vec<u32> = self.chunks.iter().map(|(_, row)| row.chunk.block).collect();
        wanted.sort_unstable();
        wanted.dedup();
        self.wanted = wanted;
        Ok(())
    }

    fn block(&mut self, id: u32, block: BlockRecord) -> std::result::Result<(), Error> {
        let mut previous_end = self.previous_end;
        if let Err(error) = check_block(id, &block, &mut previous_end, self.data_end, self.limits) {
            return Err(self.fail(error));
        }
        self.previous_end = previous_end;
        if self.wanted.binary_search(&id).is_ok() {
            self.blocks.push((id, block));
        }
        Ok(())
    }
}
