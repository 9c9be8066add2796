//! Using an index: samples, lookups by stem, extension filters and payload
//! bytes, over an index and its memory-mapped shards.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use binfmt_core::{ByteSource, FileSource, SourceExt};

use crate::build::{fold_index_path, fold_shards, keyhash, split_name};
use crate::error::{Result, TaridxError};
use crate::format::Row;
use crate::index::{Index, rows_contiguous};
use crate::tar::{BLOCK_SIZE, HeaderBlock};

/// One tar shard, mapped for zero-copy payloads and open for positional reads.
#[derive(Debug)]
struct Shard {
    map: ByteSource,
    file: FileSource,
}

/// An index with its shards: the rows of a fold as samples.
///
/// A sample is the run of rows sharing a `(keyhash, crashid)` key, in row
/// order; sample access needs contiguous rows (see
/// [`Dataset::enforce_contiguous`]). Filters and reordering change this
/// dataset's view of the rows, never the index file.
#[derive(Debug)]
pub struct Dataset {
    index: Index,
    shards: Vec<Shard>,
    view: Option<Vec<Row>>,
    contiguous: bool,
    sample_starts: OnceLock<Vec<usize>>,
}

impl Dataset {
    /// Opens `ROOT/FOLD.taridx` and the shards `ROOT/FOLD_*.tar` by the
    /// fold convention.
    pub fn open_fold(root: impl AsRef<Path>, fold: &str) -> Result<Self> {
        let root = root.as_ref();
        Self::open(fold_index_path(root, fold), &fold_shards(root, fold)?)
    }

    /// Opens an index and its shards, given in fid order.
    pub fn open(index: impl AsRef<Path>, shards: &[PathBuf]) -> Result<Self> {
        let index = Index::open(index)?;
        let shards = shards
            .iter()
            .map(|path| {
                Ok(Shard {
                    map: ByteSource::open(path)?,
                    file: FileSource::open(path)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let contiguous = index.is_contiguous();
        Ok(Self {
            index,
            shards,
            view: None,
            contiguous,
            sample_starts: OnceLock::new(),
        })
    }

    /// The index file.
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// The rows of this dataset's view: the index's rows, filtered or
    /// reordered by the calls made so far.
    pub fn rows(&self) -> &[Row] {
        self.view.as_deref().unwrap_or_else(|| self.index.rows())
    }

    /// Checks every row against the shards: ids in range, payloads inside
    /// their shards, and the header's counts and flag.
    pub fn verify(&self) -> Result<()> {
        let lens: Vec<u64> = self
            .shards
            .iter()
            .map(|shard| binfmt_core::Source::len(&shard.file))
            .collect();
        self.index.verify(Some(&lens))
    }

    /// The number of rows.
    pub fn num_rows(&self) -> usize {
        self.rows().len()
    }

    /// Whether the rows form one run per `(keyhash, crashid)`.
    pub fn is_contiguous(&self) -> bool {
        self.contiguous
    }

    /// Reorders the rows so that each sample is one run: a stable sort by
    /// `(keyhash, crashid)`, as the reference's `enforce_contiguous` does.
    pub fn enforce_contiguous(&mut self) {
        if self.contiguous {
            return;
        }
        let mut rows = self.rows().to_vec();
        rows.sort_by_key(Row::key);
        self.set_view(rows, true);
    }

    /// The number of samples (distinct `(keyhash, crashid)` keys). Needs
    /// contiguous rows.
    pub fn num_samples(&self) -> Result<usize> {
        Ok(self.sample_starts()?.len())
    }

    /// The rows of sample `i`, or `None` past the last sample. Needs
    /// contiguous rows.
    pub fn sample(&self, i: usize) -> Result<Option<&[Row]>> {
        let starts = self.sample_starts()?;
        let Some(&start) = starts.get(i) else {
            return Ok(None);
        };
        let end = starts.get(i + 1).copied().unwrap_or(self.num_rows());
        Ok(self.rows().get(start..end))
    }

    fn sample_starts(&self) -> Result<&[usize]> {
        if !self.contiguous {
            return Err(TaridxError::NotContiguous);
        }
        Ok(self.sample_starts.get_or_init(|| {
            let rows = self.rows();
            (0..rows.len())
                .filter(|&i| i == 0 || rows.get(i - 1).map(Row::key) != rows.get(i).map(Row::key))
                .collect()
        }))
    }

    /// The rows of `stem`: those with its hash and its crash id (0 unless
    /// the crash table lists it). A stem that is not indexed but shares a
    /// hash with one that is would match that one's rows;
    /// [`Dataset::lookup_verified`] rules that out.
    pub fn lookup(&self, stem: &str) -> Vec<Row> {
        let key = (keyhash(stem), self.index.crash_id(stem));
        self.rows()
            .iter()
            .filter(|row| row.key() == key)
            .copied()
            .collect()
    }

    /// [`Dataset::lookup`], keeping only rows whose tar header names `stem`.
    pub fn lookup_verified(&self, stem: &str) -> Result<Vec<Row>> {
        let mut rows = Vec::new();
        for row in self.lookup(stem) {
            if split_name(&self.member_name(&row)?).stem == stem {
                rows.push(row);
            }
        }
        Ok(rows)
    }

    /// Keeps only the rows of the `required` extensions, and only for stems
    /// that have all of them, as the reference's `filter_extensions` does.
    /// Extensions the index does not know are an error; an empty list keeps
    /// everything.
    pub fn filter_extensions(&mut self, required: &[&str]) -> Result<()> {
        if required.is_empty() {
            return Ok(());
        }
        let known = self.index.extensions();
        let unknown: Vec<String> = required
            .iter()
            .filter(|e| !known.iter().any(|k| k == *e))
            .map(|e| e.to_string())
            .collect();
        if !unknown.is_empty() {
            return Err(TaridxError::UnknownExtensions {
                unknown,
                known: known.to_vec(),
            });
        }
        let wanted: HashSet<u16> = known
            .iter()
            .enumerate()
            .filter(|(_, k)| required.contains(&k.as_str()))
            .map(|(id, _)| id as u16)
            .collect();
        let mut per_key: std::collections::HashMap<(u64, u32), HashSet<u16>> =
            std::collections::HashMap::new();
        for row in self.rows() {
            if wanted.contains(&row.extid.get()) {
                per_key
                    .entry(row.key())
                    .or_default()
                    .insert(row.extid.get());
            }
        }
        let kept: Vec<Row> = self
            .rows()
            .iter()
            .filter(|row| {
                wanted.contains(&row.extid.get())
                    && per_key
                        .get(&row.key())
                        .is_some_and(|exts| exts.len() == wanted.len())
            })
            .copied()
            .collect();
        if kept.is_empty() {
            return Err(TaridxError::NoStemHasAll {
                required: required.iter().map(|e| e.to_string()).collect(),
            });
        }
        let distinct = kept.iter().map(Row::key).collect::<HashSet<_>>().len() as u64;
        let contiguous = rows_contiguous(&kept, distinct);
        self.set_view(kept, contiguous);
        Ok(())
    }

    fn set_view(&mut self, rows: Vec<Row>, contiguous: bool) {
        self.view = Some(rows);
        self.contiguous = contiguous;
        self.sample_starts = OnceLock::new();
    }

    /// The extension of a row.
    pub fn extension(&self, row: &Row) -> Option<&str> {
        self.index
            .extensions()
            .get(usize::from(row.extid.get()))
            .map(String::as_str)
    }

    fn shard(&self, row: &Row) -> Result<&Shard> {
        let fid = row.fid.get();
        self.shards
            .get(usize::from(fid))
            .ok_or(TaridxError::FidOutOfRange {
                row: 0,
                fid,
                shards: self.shards.len(),
            })
    }

    /// A row's payload, as a slice of the memory-mapped shard.
    pub fn payload(&self, row: &Row) -> Result<&[u8]> {
        let shard = self.shard(row)?;
        Ok(binfmt_core::range::slice_at(
            &shard.map,
            row.payload_offset(),
            row.size.get(),
            "payload",
        )?)
    }

    /// A row's payload, read from the shard by position.
    pub fn read_payload(&self, row: &Row) -> Result<Vec<u8>> {
        Ok(self
            .shard(row)?
            .file
            .bytes_at(row.payload_offset(), row.size.get(), "payload")?
            .into_owned())
    }

    /// The member name in a row's tar header (the ustar prefix and name;
    /// a GNU long name or pax path lives in the record before the header and
    /// is not seen here).
    pub fn member_name(&self, row: &Row) -> Result<Vec<u8>> {
        let shard = self.shard(row)?;
        let mut block = [0u8; BLOCK_SIZE];
        shard
            .file
            .fill_at(row.offset.get(), &mut block, "tar header")?;
        Ok(HeaderBlock::new(&block).path())
    }
}
