//! Writing a fold: samples into tar shards that roll over at a number of
//! samples or of bytes, never splitting a sample, and the index built in
//! the same pass from what was written.
//!
//! ```text
//! DIR/FOLD_0000.tar   samples 0 .. k-1     each shard: at most max_samples samples and
//! DIR/FOLD_0001.tar   samples k .. m-1     at most max_bytes bytes (tar headers, padding and
//! ...                                      end blocks included), unless one sample alone is larger
//! DIR/FOLD.taridx     one row per member, byte-identical to indexing the shards afterwards
//! ```
//!
//! Members are written in the order given, as [`TarWriter`] writes them
//! (ustar, pax records only for long or non-ASCII names; mode 0644, owner
//! 0, mtime 0), so the same samples give the same bytes. Shards and the
//! index are each written atomically; a failure removes the shards already
//! written, so no partial fold is left to be opened.

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use binfmt_core::{AtomicFile, Destination, Inputs, LocalDir, OutputDir};

use crate::build::IndexBuilder;
use crate::error::{Result, TaridxError};
use crate::fold_names::{fold_shard_name, fold_shards};
use crate::keys::KeyRule;
use crate::tar::{BLOCK, Member};
use crate::tar_writer::TarWriter;

/// The most shards a fold written here may have: shard names have four
/// digits (`FOLD_0000.tar` … `FOLD_9999.tar`), and the fold convention orders
/// shards by name.
pub const MAX_FOLD_SHARDS: usize = 10_000;

/// Where shards roll over, and how keys are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SampleWriterOptions {
    /// The most samples in one shard (default 100,000, as webdataset's
    /// `ShardWriter`).
    pub max_samples: u64,
    /// The most bytes in one shard, tar headers and end blocks included
    /// (default 3 GB, as `ShardWriter`); a sample larger than this alone
    /// gets a shard of its own.
    pub max_bytes: u64,
    /// The index's key rule.
    pub key_rule: KeyRule,
}

impl Default for SampleWriterOptions {
    fn default() -> Self {
        Self {
            max_samples: 100_000,
            max_bytes: 3_000_000_000,
            key_rule: KeyRule::Glzn,
        }
    }
}

impl SampleWriterOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets [`SampleWriterOptions::max_samples`] (at least 1).
    #[must_use]
    pub fn max_samples(mut self, max_samples: u64) -> Self {
        self.max_samples = max_samples.max(1);
        self
    }

    /// Sets [`SampleWriterOptions::max_bytes`].
    #[must_use]
    pub fn max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Sets [`SampleWriterOptions::key_rule`].
    #[must_use]
    pub fn key_rule(mut self, key_rule: KeyRule) -> Self {
        self.key_rule = key_rule;
        self
    }
}

/// One member of a sample being written: its full name, size and bytes.
#[derive(Debug)]
pub struct MemberSource<R> {
    /// The member name.
    pub name: String,
    /// Its size; the reader must give exactly this many bytes.
    pub size: u64,
    /// Its bytes.
    pub data: R,
}

/// What a finished fold is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenFold {
    /// The shards, in fid order.
    pub shards: Vec<PathBuf>,
    /// The index.
    pub index: PathBuf,
    /// Samples written.
    pub samples: u64,
    /// Members written.
    pub members: u64,
    /// Payload bytes written.
    pub bytes: u64,
}

/// Writes samples into the shards of a fold, and its index.
///
/// # Examples
///
/// ```
/// use binfmt_taridx::{Dataset, SampleWriter, SampleWriterOptions};
///
/// let dir = tempfile::tempdir()?;
/// let mut writer = SampleWriter::create(dir.path(), "train", SampleWriterOptions::new().max_samples(2))?;
/// for i in 0..3 {
///     let key = format!("{i:06}");
///     writer.write(&key, &[("jpg", b"JFIF".as_slice()), ("cls", b"7".as_slice())])?;
/// }
/// let fold = writer.finish()?;
/// assert_eq!(fold.shards.len(), 2);
/// let dataset = Dataset::open_fold(dir.path(), "train")?;
/// assert_eq!(dataset.lookup_verified("000002")?.len(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct SampleWriter {
    /// Where shards and the index go, through the output gate.
    out: Arc<dyn OutputDir>,
    fold: String,
    /// Shard names: `FOLD_NNNN.tar`, or `PREFIX{n:06}.tar` for shards a
    /// caller names and indexes itself ([`SampleWriter::shards_only`]).
    prefix: Option<String>,
    options: SampleWriterOptions,
    current: Option<(TarWriter<Box<dyn Destination>>, u64)>,
    /// The names of the shards started.
    shards: Vec<String>,
    /// Each committed shard's members, for [`SampleWriter::finish_shards`].
    reports: Vec<WrittenShard>,
    index: IndexBuilder,
    keys: HashSet<String>,
    written: WrittenFold,
    finished: bool,
}

/// One shard written by [`SampleWriter::finish_shards`]: its name and its
/// members (name, offset of its own header, size), what an index is built
/// from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenShard {
    /// The shard's name under the writer's directory.
    pub name: String,
    /// Its members in order: name, offset of the member's own header, size.
    pub members: Vec<(String, u64, u64)>,
    /// The shard's size in bytes (end blocks included).
    pub size: u64,
}

impl SampleWriter {
    /// Starts fold `fold` in `dir` (created if missing): shards
    /// `DIR/FOLD_NNNN.tar`, index `DIR/FOLD.taridx`. Refuses a fold whose shards already exist (they
    /// would join the new fold when it is opened) and a fold name that is
    /// empty or holds `/`, `\` or NUL. (glzn's directory loader also needs
    /// fold names without `_`; this project's fold convention does not.)
    pub fn create(dir: impl AsRef<Path>, fold: &str, options: SampleWriterOptions) -> Result<Self> {
        Self::create_over(dir, fold, options, Inputs::default())
    }

    /// [`SampleWriter::create`] for a caller that reads `inputs` while it
    /// writes (the files `taridx pack` walks, the archive a conversion
    /// reads): the index and every shard are written through the output
    /// gate, so none replaces an input (by device and inode, hard links and
    /// symlinks included); an index path that names an input is refused
    /// here, before anything is written.
    pub fn create_over(
        dir: impl AsRef<Path>,
        fold: &str,
        options: SampleWriterOptions,
        inputs: Inputs,
    ) -> Result<Self> {
        let dir = dir.as_ref();
        check_fold_name(fold)?;
        std::fs::create_dir_all(dir).map_err(|error| binfmt_core::Error::io(dir, error))?;
        Self::create_in(
            Arc::new(LocalDir::new(dir, Arc::new(inputs))),
            fold,
            options,
        )
    }

    /// [`SampleWriter::create_over`] into any [`OutputDir`] (a local
    /// directory, an S3 prefix): its gate keeps every shard and the index
    /// off the inputs, and the index's name is checked before anything is
    /// written. A fold whose first shard is there already is refused.
    pub fn create_in(
        out: Arc<dyn OutputDir>,
        fold: &str,
        options: SampleWriterOptions,
    ) -> Result<Self> {
        check_fold_name(fold)?;
        let first = fold_shard_name(fold, 0);
        let existing = match out.local_path() {
            // Every naming of the fold, as readers find it.
            Some(dir) => fold_shards(dir, fold)
                .ok()
                .and_then(|shards| shards.first().cloned()),
            None => out.exists(&first)?.then(|| out.show(&first)),
        };
        if let Some(shard) = existing {
            return Err(TaridxError::FoldExists {
                fold: fold.to_owned(),
                shard,
            });
        }
        let index = format!("{fold}.taridx");
        out.check(&index)?;
        Ok(Self {
            written: WrittenFold {
                shards: Vec::new(),
                index: out.show(&index),
                samples: 0,
                members: 0,
                bytes: 0,
            },
            out,
            fold: fold.to_owned(),
            prefix: None,
            options,
            current: None,
            shards: Vec::new(),
            reports: Vec::new(),
            index: IndexBuilder::new(options.key_rule),
            keys: HashSet::new(),
            finished: false,
        })
    }

    /// A writer of shards alone, named `PREFIX000000.tar`,
    /// `PREFIX000001.tar`, ... under `out`, cut exactly as a fold's are;
    /// [`SampleWriter::finish_shards`] reports their members instead of
    /// writing an index (a Ray task writes shards, the driver indexes them
    /// all). `prefix` must not hold `\\` or NUL.
    pub fn shards_only(
        out: Arc<dyn OutputDir>,
        prefix: &str,
        options: SampleWriterOptions,
    ) -> Result<Self> {
        if prefix.contains(['\\', '\0']) || prefix.ends_with('/') {
            return Err(TaridxError::BadName {
                name: prefix.to_owned(),
                why: "a shard prefix must not end in '/' nor hold '\\' or NUL",
            });
        }
        let mut writer = Self::create_in(out, "shards", options)?;
        writer.prefix = Some(prefix.to_owned());
        Ok(writer)
    }

    /// Writes sample `key` with one member `KEY.EXT` per `(ext, bytes)`,
    /// in the order given. The key must come back from every member name
    /// under the key rule (no `.` in its basename; under glzn's rule no
    /// `/`), extensions must be distinct and non-empty, and a key is
    /// written once.
    pub fn write(&mut self, key: &str, members: &[(&str, &[u8])]) -> Result<()> {
        self.write_streams(
            key,
            members
                .iter()
                .map(|&(extension, bytes)| (extension.to_owned(), bytes.len() as u64, bytes))
                .collect(),
        )
    }

    /// [`SampleWriter::write`] with each member's bytes read from a reader
    /// that gives exactly `size` bytes: `(ext, size, reader)`.
    pub fn write_streams<R: Read>(
        &mut self,
        key: &str,
        members: Vec<(String, u64, R)>,
    ) -> Result<()> {
        let bad = |why: String| TaridxError::BadSample {
            key: key.to_owned(),
            why,
        };
        if members.is_empty() {
            return Err(bad("a sample needs at least one member".into()));
        }
        let mut extensions = HashSet::new();
        let mut sources = Vec::with_capacity(members.len());
        for (extension, size, data) in members {
            let extension = extension.strip_prefix('.').unwrap_or(&extension);
            if extension.is_empty() || !extensions.insert(extension.to_lowercase()) {
                return Err(bad(format!(
                    "extension {extension:?} is empty or appears twice"
                )));
            }
            let name = format!("{key}.{extension}");
            let split = self.options.key_rule.split(&name);
            if split.key != key || split.extension != extension.to_lowercase() {
                return Err(bad(format!(
                    "member {name:?} would be read back as key {:?}, extension {:?} ({} key rule)",
                    split.key,
                    split.extension,
                    self.options.key_rule.name()
                )));
            }
            sources.push(MemberSource { name, size, data });
        }
        if !self.keys.insert(key.to_owned()) {
            return Err(bad("the key was already written".into()));
        }
        self.write_members(sources)
    }

    /// Writes one sample given as whole members (names as they are, read
    /// from their readers): the members stay in one shard.
    pub fn write_members<R: Read>(&mut self, members: Vec<MemberSource<R>>) -> Result<()> {
        let len: u64 = members
            .iter()
            .map(|m| TarWriter::<AtomicFile>::member_len(&m.name, m.size))
            .fold(0u64, u64::saturating_add);
        let end_blocks = 2 * BLOCK;
        let full = self.current.as_ref().is_some_and(|(writer, samples)| {
            *samples >= self.options.max_samples
                || writer
                    .written()
                    .saturating_add(len)
                    .saturating_add(end_blocks)
                    > self.options.max_bytes
        });
        if full {
            self.finish_shard()?;
        }
        if self.current.is_none() {
            self.start_shard()?;
        }
        let fid = u16::try_from(self.shards.len() - 1).map_err(|_| TaridxError::TooManyShards {
            count: self.shards.len(),
        })?;
        let Some((writer, samples)) = self.current.as_mut() else {
            return Ok(());
        };
        for member in members {
            let offset = writer.append(&member.name, member.size, member.data)?;
            if let (Some(_), Some(report)) = (&self.prefix, self.reports.last_mut()) {
                report
                    .members
                    .push((member.name.clone(), offset, member.size));
            }
            self.index.add(
                fid,
                Member {
                    offset,
                    size: member.size,
                    name: member.name.into_bytes(),
                },
            )?;
            self.written.members += 1;
            self.written.bytes = self.written.bytes.saturating_add(member.size);
        }
        *samples += 1;
        self.written.samples += 1;
        Ok(())
    }

    fn start_shard(&mut self) -> Result<()> {
        if self.shards.len() >= MAX_FOLD_SHARDS {
            return Err(TaridxError::TooManyShards {
                count: self.shards.len() + 1,
            });
        }
        let name = match &self.prefix {
            Some(prefix) => format!("{prefix}{:06}.tar", self.shards.len()),
            None => fold_shard_name(&self.fold, self.shards.len()),
        };
        let file = self.out.create(&name)?;
        self.shards.push(name.clone());
        self.reports.push(WrittenShard {
            name,
            members: Vec::new(),
            size: 0,
        });
        self.current = Some((TarWriter::new(file), 0));
        Ok(())
    }

    fn finish_shard(&mut self) -> Result<()> {
        if let Some((writer, _)) = self.current.take() {
            let size = writer.written() + 2 * BLOCK;
            writer.finish()?.commit()?;
            if let Some(report) = self.reports.last_mut() {
                report.size = size;
            }
            if let Some(name) = self.shards.last() {
                self.written.shards.push(self.out.show(name));
            }
        }
        Ok(())
    }

    /// Closes the last shard and reports every shard's members; no index
    /// is written (see [`SampleWriter::shards_only`]).
    pub fn finish_shards(mut self) -> Result<Vec<WrittenShard>> {
        self.finish_shard()?;
        self.finished = true;
        Ok(std::mem::take(&mut self.reports))
    }

    /// Closes the last shard and writes the index. A fold with no sample
    /// still gets one (empty) shard, so that the fold convention finds it.
    pub fn finish(mut self) -> Result<WrittenFold> {
        if self.shards.is_empty() {
            self.start_shard()?;
        }
        self.finish_shard()?;
        let index = format!("{}.taridx", self.fold);
        let file = self.out.create(&index)?;
        self.index.write_to(file)?.commit()?;
        // A shard list left by an earlier fold of this name would override
        // the names: removed (the names find these shards).
        match self.out.local_path() {
            Some(_) => crate::shard_list::record_shards(&self.written.index, &self.written.shards)?,
            None => self
                .out
                .remove(&format!("{index}{}", crate::shard_list::SHARD_LIST_SUFFIX))?,
        }
        self.finished = true;
        Ok(self.written.clone())
    }
}

impl Drop for SampleWriter {
    /// An unfinished fold is removed: a partial set of shards would open as
    /// a smaller fold.
    fn drop(&mut self) {
        if !self.finished {
            let committed = self.written.shards.len();
            for name in self.shards.iter().take(committed) {
                let _ = self.out.remove(name);
            }
        }
    }
}

fn check_fold_name(fold: &str) -> Result<()> {
    if fold.is_empty() || fold.contains(['/', '\\', '\0']) {
        return Err(TaridxError::BadName {
            name: fold.to_owned(),
            why: "a fold name must be non-empty, without '/', '\\' or NUL",
        });
    }
    Ok(())
}
