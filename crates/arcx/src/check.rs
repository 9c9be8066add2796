//! What a manifest must mean, checked once when an archive is opened, in
//! time O(n log n) in the number of files, chunks and blocks; afterwards
//! every read is bounded by the bytes it returns.
//!
//! Layout rules (every id points inside its table, every range inside the
//! data region) stop out-of-bounds reads. Meaning rules stop aliasing and
//! amplification: no byte of the archive is described twice, so reading
//! every file touches every block at most once (see [`check`]).

use std::collections::HashSet;

use binfmt_core::alloc::vec_with_capacity;

use crate::error::{ArcxError, Result};
use crate::format::{Codec, HEADER_SIZE};
use crate::limits::Limits;
use crate::manifest::{BlockRecord, ChunkRecord, FileEntry, FileKind, Manifest};

/// The archive's files by path: `(hash of the path, file index)`, sorted.
#[derive(Debug, Default)]
pub(crate) struct PathIndex {
    entries: Vec<(u64, u32)>,
}

impl PathIndex {
    /// The index of a manifest holding one file.
    pub(crate) fn one(manifest: &Manifest) -> Self {
        let entries = manifest
            .files()
            .take(1)
            .map(|file| (file.path().hash(), 0))
            .collect();
        Self { entries }
    }

    /// The file at `path`.
    pub(crate) fn find(&self, manifest: &Manifest, path: &str) -> Option<u32> {
        let hash = crate::manifest::path_hash(path);
        let first = self.entries.partition_point(|&(h, _)| h < hash);
        self.entries
            .get(first..)
            .unwrap_or_default()
            .iter()
            .take_while(|&&(h, _)| h == hash)
            .map(|&(_, index)| index)
            .find(|&index| {
                manifest
                    .file(index)
                    .is_some_and(|file| file.path().is(path))
            })
    }
}

pub(crate) fn corrupt(what: String, why: String) -> ArcxError {
    ArcxError::Manifest(binfmt_core::Error::corrupt(what, why))
}

/// Checks the manifest's references and meaning against the data region
/// `80 .. data_end`, and returns the path index.
///
/// - Blocks lie in the data region in ascending order without overlapping
///   (two block records never describe the same bytes); a stored block is
///   its size, a zstd block no larger than zstd can produce from its size;
///   sizes are within the limits.
/// - Every chunk lies inside its block; chunks of one block do not overlap;
///   every chunk belongs to exactly one file, the one it names, and appears
///   in that file's list once (lists are strictly increasing).
/// - Every file with a chunk in a block holding several chunks (shared by
///   small files) has only that chunk; a block holding one chunk is
///   exactly that chunk. So a file is one piece of a shared block, or
///   whole blocks of its own. A shared block larger than
///   `max_shared_block` is streamed, not decoded whole: its chunks lie in
///   it in file order.
/// - In file order, the shared blocks files start in never go back: a
///   reader keeping the last shared block decodes each block once.
/// - A file's chunks add up to its size (checked arithmetic); directories
///   hold no bytes; no path appears twice, and no name holds a `/`.
pub(crate) fn check(manifest: &Manifest, data_end: u64, limits: &Limits) -> Result<PathIndex> {
    check_blocks(manifest, data_end, limits)?;
    let users = check_chunks(manifest)?;
    check_files(manifest, &users, limits)?;
    index_paths(manifest)
}

fn check_blocks(manifest: &Manifest, data_end: u64, limits: &Limits) -> Result<()> {
    let mut previous_end = HEADER_SIZE as u64;
    for (id, block) in manifest.blocks().iter().enumerate() {
        check_block(id as u32, block, &mut previous_end, data_end, limits)?;
    }
    Ok(())
}

/// Block `id`'s rules: it lies in the data region `previous_end ..
/// data_end` (`previous_end`: where the block before it ends, updated), its
/// size within the limit, its stored size one its codec can give.
pub(crate) fn check_block(
    id: u32,
    block: &BlockRecord,
    previous_end: &mut u64,
    data_end: u64,
    limits: &Limits,
) -> Result<()> {
    let what = || format!("block {id}");
    if block.offset < *previous_end || block.end() > data_end {
        return Err(corrupt(
            what(),
            format!(
                "{} stored bytes at {} overlap the header or the previous block (which ends at {previous_end}), or pass the end of the data region ({data_end}); blocks are stored in order, each once",
                block.stored_size, block.offset
            ),
        ));
    }
    *previous_end = block.end();
    if u64::from(block.size) > limits.max_block_size {
        return Err(corrupt(
            what(),
            format!(
                "{} bytes exceed the {}-byte block limit",
                block.size, limits.max_block_size
            ),
        ));
    }
    let consistent = match block.codec {
        Codec::Store => block.stored_size == block.size,
        Codec::Zstd => u64::from(block.stored_size) <= zstd_bound(u64::from(block.size)),
    };
    if !consistent {
        return Err(corrupt(
            what(),
            format!(
                "{} stored bytes cannot hold {} bytes with codec {}",
                block.stored_size,
                block.size,
                block.codec.name()
            ),
        ));
    }
    Ok(())
}

/// The largest zstd frame of `size` bytes of input (ZSTD_compressBound).
fn zstd_bound(size: u64) -> u64 {
    let small = if size < 128 << 10 {
        ((128 << 10) - size) >> 11
    } else {
        0
    };
    size + (size >> 8) + small
}

/// Chunks inside their blocks, not overlapping, each in its file's list
/// exactly once; returns how many chunks each block holds.
fn check_chunks(manifest: &Manifest) -> Result<Vec<u32>> {
    let blocks = manifest.blocks();
    let mut users = vec![0u32; blocks.len()];
    for (id, chunk) in manifest.chunks().iter().enumerate() {
        check_in_block(id as u32, chunk, blocks.get(chunk.block as usize))?;
        if let Some(count) = users.get_mut(chunk.block as usize) {
            *count += 1;
        }
    }
    // Chunks of one block must not overlap. Writers store chunks in block
    // order, each after the one before: then comparing neighbours in id
    // order proves it without sorting. Otherwise sort (block, offset) and
    // compare neighbours. Empty chunks overlap nothing.
    if !in_block_order(manifest.chunks()) {
        check_overlaps(manifest.chunks(), |id| id)?;
    }
    // Every chunk in exactly one file's list: the file it names.
    let mut listed = vec![false; manifest.chunks().len()];
    for file in manifest.files() {
        for &id in file.chunk_ids() {
            check_listed(file, id, manifest.chunks().get(id as usize))?;
            if let Some(seen) = listed.get_mut(id as usize) {
                *seen = true;
            }
        }
    }
    if let Some(orphan) = listed.iter().position(|&seen| !seen) {
        return Err(corrupt(
            format!("chunk {orphan}"),
            "belongs to no file's chunk list".into(),
        ));
    }
    Ok(users)
}

/// Chunk `id` lies inside its block, which exists.
pub(crate) fn check_in_block(
    id: u32,
    chunk: &ChunkRecord,
    block: Option<&BlockRecord>,
) -> Result<()> {
    let block = block.ok_or_else(|| {
        corrupt(
            format!("chunk {id}"),
            format!("block {} does not exist", chunk.block),
        )
    })?;
    if u64::from(chunk.offset) + u64::from(chunk.size) > u64::from(block.size) {
        return Err(corrupt(
            format!("chunk {id}"),
            format!(
                "{} bytes at {} are outside block {} ({} bytes)",
                chunk.size, chunk.offset, chunk.block, block.size
            ),
        ));
    }
    Ok(())
}

/// Chunk `id`, which `file` lists, exists and names `file`.
pub(crate) fn check_listed(
    file: FileEntry<'_>,
    id: u32,
    chunk: Option<&ChunkRecord>,
) -> Result<()> {
    let chunk = chunk.ok_or_else(|| {
        corrupt(
            format!("file {}", file.path()),
            format!("chunk {id} does not exist"),
        )
    })?;
    if chunk.file != file.index() {
        return Err(ArcxError::ChunkReused {
            chunk: id,
            file: file.path().to_string(),
            owner: chunk.file,
        });
    }
    Ok(())
}

/// Whether the non-empty chunks, in id order, go forward through the
/// blocks, each starting at or after the end of the one before in the same
/// block (so none overlap).
fn in_block_order(chunks: &[ChunkRecord]) -> bool {
    let mut previous: Option<(u32, u64)> = None;
    for chunk in chunks.iter().filter(|c| c.size > 0) {
        let end = u64::from(chunk.offset) + u64::from(chunk.size);
        match previous {
            Some((block, previous_end))
                if chunk.block < block
                    || (chunk.block == block && u64::from(chunk.offset) < previous_end) =>
            {
                return false;
            }
            _ => previous = Some((chunk.block, end)),
        }
    }
    true
}

/// Chunks of one block do not overlap, whatever their order: sort
/// (block, offset) and compare neighbours. `chunks` are some or all of the
/// archive's; `id` gives the id of the chunk at a position.
pub(crate) fn check_overlaps(chunks: &[ChunkRecord], id: impl Fn(u32) -> u32) -> Result<()> {
    let mut order: Vec<u32> =
        vec_with_capacity(chunks.len(), "chunk order").map_err(ArcxError::Manifest)?;
    order.extend(
        (0..chunks.len() as u32).filter(|&at| chunks.get(at as usize).is_some_and(|c| c.size > 0)),
    );
    order.sort_unstable_by_key(|&at| chunks.get(at as usize).map(|c| (c.block, c.offset)));
    let chunk = |at: u32| chunks.get(at as usize).copied();
    for pair in order.windows(2) {
        let &[first, second] = pair else { continue };
        let (Some(a), Some(b)) = (chunk(first), chunk(second)) else {
            continue;
        };
        if a.block == b.block && u64::from(a.offset) + u64::from(a.size) > u64::from(b.offset) {
            return Err(ArcxError::ChunkOverlap {
                block: a.block,
                first: id(first),
                second: id(second),
            });
        }
    }
    Ok(())
}

/// The shared block the previous file's chunk lies in, and where it ends.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LastShared {
    block: u32,
    end: u64,
}

fn check_files(manifest: &Manifest, users: &[u32], limits: &Limits) -> Result<()> {
    let blocks = manifest.blocks();
    let mut last_shared: Option<LastShared> = None;
    for file in manifest.files() {
        check_file(
            file,
            |id| blocks.get(id as usize).copied(),
            |id| users.get(id as usize).copied().unwrap_or(0),
            limits,
            &mut last_shared,
        )?;
    }
    Ok(())
}

/// `file`'s rules: a name that is one component; one piece of a shared
/// block (`users`: how many chunks a block holds), starting at or after
/// `last_shared` (the shared block the previous file started in, updated),
/// or whole blocks of its own; chunks adding up to its size; no bytes in a
/// directory.
pub(crate) fn check_file(
    file: FileEntry<'_>,
    block: impl Fn(u32) -> Option<BlockRecord>,
    users: impl Fn(u32) -> u32,
    limits: &Limits,
    last_shared: &mut Option<LastShared>,
) -> Result<()> {
    let what = || format!("file {}", file.path());
    if file.path().name().is_empty() || file.path().name().contains('/') {
        return Err(corrupt(
            what(),
            "the name part is empty or holds a '/'".into(),
        ));
    }
    let mut total = 0u64;
    for chunk in file.chunks() {
        total = total
            .checked_add(u64::from(chunk.size))
            .ok_or_else(|| corrupt(what(), "chunk sizes overflow 64 bits".into()))?;
        let record = block(chunk.block);
        let shared = users(chunk.block) > 1;
        if shared {
            if file.chunk_ids().len() > 1 {
                return Err(corrupt(
                    what(),
                    format!(
                        "has {} chunks, one of them in block {} which other files share; a file in a shared block is that one piece",
                        file.chunk_ids().len(),
                        chunk.block
                    ),
                ));
            }
            if last_shared.is_some_and(|last| chunk.block < last.block) {
                return Err(ArcxError::SharedBlockRevisited {
                    file: file.path().to_string(),
                    block: chunk.block,
                });
            }
            // A shared block larger than `max_shared_block` is never
            // decoded whole but streamed once through its files' chunks,
            // so they must lie in it in file order.
            let large = record.is_some_and(|b| u64::from(b.size) > limits.max_shared_block);
            let end = u64::from(chunk.offset) + u64::from(chunk.size);
            if let Some(last) = last_shared.filter(|last| large && last.block == chunk.block)
                && u64::from(chunk.offset) < last.end
            {
                return Err(corrupt(
                    format!("file {}", file.path()),
                    format!(
                        "starts at {} in block {}, before the previous file's chunk ends ({}): a shared block over the {}-byte limit is streamed, so its chunks follow file order",
                        chunk.offset, chunk.block, last.end, limits.max_shared_block
                    ),
                ));
            }
            *last_shared = Some(LastShared {
                block: chunk.block,
                end,
            });
        } else if record.is_some_and(|b| chunk.offset != 0 || chunk.size != b.size) {
            return Err(corrupt(
                format!("block {}", chunk.block),
                format!(
                    "holds only chunk of file {} but the chunk is {} bytes at {}, not the whole block",
                    file.path(),
                    chunk.size,
                    chunk.offset
                ),
            ));
        }
    }
    if total != file.size() {
        return Err(corrupt(
            what(),
            format!("chunks hold {total} bytes, the file is {}", file.size()),
        ));
    }
    if file.attributes().kind == FileKind::Directory && file.size() != 0 {
        return Err(corrupt(what(), "a directory entry holds bytes".into()));
    }
    Ok(())
}

fn index_paths(manifest: &Manifest) -> Result<PathIndex> {
    let mut entries: Vec<(u64, u32)> =
        vec_with_capacity(manifest.len(), "path index").map_err(ArcxError::Manifest)?;
    entries.extend(
        manifest
            .files()
            .map(|file| (file.path().hash(), file.index())),
    );
    entries.sort_unstable();
    // Equal paths have equal hashes: compare the paths of each run of equal
    // hashes (almost always a run of one).
    let mut start = 0;
    while start < entries.len() {
        let hash = entries.get(start).map_or(0, |&(h, _)| h);
        let end = entries
            .get(start..)
            .unwrap_or_default()
            .iter()
            .position(|&(h, _)| h != hash)
            .map_or(entries.len(), |length| start + length);
        let run = entries.get(start..end).unwrap_or_default();
        if run.len() > 1 {
            let mut seen = HashSet::new();
            for &(_, index) in run {
                let path = manifest
                    .file(index)
                    .map(|file| file.path().to_string())
                    .unwrap_or_default();
                if !seen.insert(path.clone()) {
                    return Err(corrupt(format!("file {path}"), "appears twice".into()));
                }
            }
        }
        start = end;
    }
    Ok(PathIndex { entries })
}

#[cfg(test)]
mod tests {
    use super::{in_block_order, zstd_bound};
    use crate::manifest::ChunkRecord;

    fn chunk(block: u32, offset: u32, size: u32) -> ChunkRecord {
        ChunkRecord {
            file: 0,
            block,
            offset,
            size,
        }
    }

    #[test]
    fn chunks_going_forward_need_no_sort() {
        assert!(in_block_order(&[]));
        assert!(in_block_order(&[
            chunk(0, 0, 10),
            chunk(0, 10, 5),
            chunk(0, 99, 0),
            chunk(1, 0, 7),
            chunk(1, 20, 1),
        ]));
        // Overlapping, or going back, is left to the sorting check.
        assert!(!in_block_order(&[chunk(0, 0, 10), chunk(0, 9, 5)]));
        assert!(!in_block_order(&[chunk(0, 10, 5), chunk(0, 0, 5)]));
        assert!(!in_block_order(&[chunk(1, 0, 5), chunk(0, 0, 5)]));
    }

    #[test]
    fn zstd_bound_matches_the_library() {
        for size in [0usize, 1, 100, 128 << 10, (128 << 10) + 1, 1 << 20, 3 << 24] {
            assert_eq!(
                zstd_bound(size as u64),
                zstd::zstd_safe::compress_bound(size) as u64,
                "{size}"
            );
        }
    }
}
