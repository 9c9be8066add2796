//! Writing an index file while its shards are still being scanned.
//!
//! The file's layout puts the rows last:
//!
//! ```text
//! 0          header (HEADER_SIZE bytes)
//! HEADER     extension block  (n_ext names joined by '\n')
//! off_crash  crash-stem block (n_crash stems joined by '\n')
//! off_arr    rows, ROW_SIZE bytes each, in merge order
//! ```
//!
//! Once the first shard is merged, the rows' place is known unless a later
//! shard brings a new extension or a crash stem (both rare: WebDataset
//! shards share their extensions, and a crash stem needs two stems with one
//! 64-bit hash). So each merged shard's rows are written at once, at
//! `off_arr` as it stands, with crash id 0, while later shards are still
//! being scanned; at the end only the last shards' rows, the header and the
//! blocks are left to write. If the rows' place moved, or a row got a crash
//! id, every region is written again at its final place: the file is the
//! same bytes either way (the regions only grow, so the rewrite covers
//! everything written before).

use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use binfmt_core::layout::IntoBytes;
use binfmt_core::{AtomicFile, IoResultExt};

use crate::error::Result;
use crate::format::{HEADER_SIZE, ROW_SIZE, Row};

/// An index file being written as its shards are merged: see the module
/// docs. Dropped without [`IndexFile::finish`], it leaves nothing behind.
#[derive(Debug)]
pub struct IndexFile {
    file: AtomicFile,
    /// Where the rows written so far start, and how many extensions the
    /// extension block had then; `None` before the first merge.
    placed: Option<(u64, usize)>,
    /// Row pieces (one per merged shard) written so far, and their rows.
    pieces_written: usize,
    rows_written: u64,
    /// A later shard brought a new extension: rows wait for the end.
    moved: bool,
}

impl IndexFile {
    /// Starts the index that replaces `path` on [`IndexFile::finish`].
    pub fn create(path: impl AsRef<Path>) -> Result<Self> {
        Ok(Self {
            file: AtomicFile::create(path)?,
            placed: None,
            pieces_written: 0,
            rows_written: 0,
            moved: false,
        })
    }

    /// Writes the row pieces (one per merged shard) not yet written, at
    /// the place they have if no new extension or crash stem shows later;
    /// `extensions` are the index's extensions so far.
    pub(super) fn rows_merged(&mut self, extensions: &[String], pieces: &[Vec<Row>]) -> Result<()> {
        if self.moved {
            return Ok(());
        }
        let (off_arr, known) = *self.placed.get_or_insert_with(|| {
            (
                u64::from(HEADER_SIZE) + extension_block_len(extensions),
                extensions.len(),
            )
        });
        if extensions.len() != known {
            self.moved = true;
            return Ok(());
        }
        self.write_rows(pieces, off_arr)
    }

    /// Writes every row piece not yet written, from `off_arr`. (From one
    /// thread: Linux serializes writes to one file, and 57.6 MB went no
    /// faster from 4 or 16 writers.)
    fn write_rows(&mut self, pieces: &[Vec<Row>], off_arr: u64) -> Result<()> {
        let destination = self.file.destination().to_owned();
        for piece in pieces.get(self.pieces_written..).unwrap_or_default() {
            if piece.is_empty() {
                continue;
            }
            let at = off_arr + self.rows_written * u64::from(ROW_SIZE);
            self.file
                .seek(SeekFrom::Start(at))
                .with_path(&destination)?;
            self.file
                .write_all(piece.as_bytes())
                .with_path(&destination)?;
            self.rows_written += piece.len() as u64;
        }
        self.pieces_written = pieces.len();
        Ok(())
    }

    /// Writes the regions before the rows (`head`: header, extension
    /// block, crash-stem block, the rows from `off_arr`) and whatever rows
    /// are not yet in place, then renames the file into place. Rows are
    /// rewritten whole if their place moved or `crash_free` is false.
    pub(super) fn finish_with(
        mut self,
        head: [&[u8]; 3],
        off_arr: u64,
        crash_free: bool,
        pieces: &[Vec<Row>],
    ) -> Result<()> {
        let destination = self.file.destination().to_owned();
        let in_place =
            !self.moved && crash_free && self.placed.is_none_or(|(placed, _)| placed == off_arr);
        if !in_place {
            (self.pieces_written, self.rows_written) = (0, 0);
        }
        self.file.seek(SeekFrom::Start(0)).with_path(&destination)?;
        for part in head {
            self.file.write_all(part).with_path(&destination)?;
        }
        self.write_rows(pieces, off_arr)?;
        self.file.commit()?;
        Ok(())
    }
}

/// The length of the extension block of `names`.
fn extension_block_len(names: &[String]) -> u64 {
    let text: usize = names.iter().map(String::len).sum();
    (text + names.len().saturating_sub(1)) as u64
}
