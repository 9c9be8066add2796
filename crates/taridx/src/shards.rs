//! Where a fold's shards come from, and how many are open at once.
//!
//! A [`ShardSet`] numbers the shards (fid order) and opens one on demand as a
//! [`binfmt_core::Source`]. [`ShardFiles`] opens files by path: by `pread`
//! ([`binfmt_core::FileSource`], the default: memory holds only what is
//! read) or mapped ([`binfmt_core::ByteSource`], zero-copy payloads). Either
//! refuses what is not a regular file (a FIFO, a symlink to `/dev/zero`)
//! before opening it. [`OpenShards`] keeps at most a configured number open,
//! closing the least recently used, so a fold of any number of shards reads
//! under any `ulimit -n`.

use std::fmt;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use binfmt_core::{ByteSource, FileSource, Source};

use crate::checked::Checked;
use crate::error::Result;

/// The shards of a fold, in fid order, opened on demand.
pub trait ShardSet: Send + Sync + fmt::Debug {
    /// How many shards there are.
    fn count(&self) -> usize;

    /// Shard `fid`'s name in messages (its path).
    fn name(&self, fid: u16) -> PathBuf;

    /// Opens shard `fid`.
    fn open(&self, fid: u16) -> Result<Arc<dyn Source>>;

    /// A shard of the fold beyond the ones this set holds, named and opened,
    /// when the set could not list its directory (plain HTTP takes as many
    /// shards as the rows point into) and one exists where the next would
    /// be: coverage refuses its members (spec/taridx.md §4.4). A set that
    /// listed its shards has none.
    fn unlisted(&self) -> Result<Option<(PathBuf, Arc<dyn Source>)>> {
        Ok(None)
    }
}

/// Shard files by path.
#[derive(Debug, Clone)]
pub struct ShardFiles {
    paths: Vec<PathBuf>,
    map: bool,
}

impl ShardFiles {
    /// The shards at `paths` (fid = position), read by `pread`.
    pub fn new(paths: Vec<PathBuf>) -> Self {
        Self { paths, map: false }
    }

    /// Whether shards are memory-mapped (zero-copy payloads, pages count
    /// towards the process's memory as they are touched) instead of read by
    /// `pread`.
    #[must_use]
    pub fn mapped(mut self, map: bool) -> Self {
        self.map = map;
        self
    }

    /// The paths, in fid order.
    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }
}

impl ShardSet for ShardFiles {
    fn count(&self) -> usize {
        self.paths.len()
    }

    fn name(&self, fid: u16) -> PathBuf {
        self.paths
            .get(usize::from(fid))
            .cloned()
            .unwrap_or_else(|| PathBuf::from(format!("<shard {fid}>")))
    }

    fn open(&self, fid: u16) -> Result<Arc<dyn Source>> {
        let path = self.name(fid);
        Ok(if self.map {
            Arc::new(ByteSource::open(&path)?)
        } else {
            Arc::new(FileSource::open(&path)?)
        })
    }
}

/// Shards held in memory (tests, fuzzing, shards already read).
#[derive(Debug, Clone, Default)]
pub struct ShardBytes(pub Vec<Arc<ByteSource>>);

impl ShardBytes {
    /// Shards from buffers, named `shard-N` in messages.
    pub fn new(shards: impl IntoIterator<Item = Vec<u8>>) -> Self {
        Self(
            shards
                .into_iter()
                .enumerate()
                .map(|(fid, bytes)| Arc::new(ByteSource::from_vec(bytes, format!("shard-{fid}"))))
                .collect(),
        )
    }
}

impl ShardSet for ShardBytes {
    fn count(&self) -> usize {
        self.0.len()
    }

    fn name(&self, fid: u16) -> PathBuf {
        self.0.get(usize::from(fid)).map_or_else(
            || PathBuf::from(format!("shard-{fid}")),
            |s| s.path().to_owned(),
        )
    }

    fn open(&self, fid: u16) -> Result<Arc<dyn Source>> {
        match self.0.get(usize::from(fid)) {
            Some(shard) => Ok(Arc::clone(shard) as Arc<dyn Source>),
            None => Err(binfmt_core::Error::io(
                self.name(fid),
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such shard"),
            )
            .into()),
        }
    }
}

/// The default number of shards a dataset keeps open.
pub const DEFAULT_OPEN_SHARDS: usize = 64;

/// A [`ShardSet`] with at most `capacity` shards open, least recently used
/// closed first. A shard handed out stays open for as long as its handle
/// lives, so the open files are at most `capacity` plus the handles held.
pub struct OpenShards {
    set: Box<dyn ShardSet>,
    open: Mutex<lru::LruCache<u16, Open>>,
}

/// An open shard and what its member checks established while it is open.
struct Open {
    source: Arc<dyn Source>,
    checked: Arc<Checked>,
}

impl fmt::Debug for OpenShards {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenShards")
            .field("set", &self.set)
            .finish_non_exhaustive()
    }
}

impl OpenShards {
    /// Keeps at most `capacity` (at least 1) shards of `set` open.
    pub fn new(set: Box<dyn ShardSet>, capacity: usize) -> Self {
        let capacity = NonZeroUsize::new(capacity).unwrap_or(NonZeroUsize::MIN);
        Self {
            set,
            open: Mutex::new(lru::LruCache::new(capacity)),
        }
    }

    /// The shards behind the cache.
    pub fn set(&self) -> &dyn ShardSet {
        &*self.set
    }

    /// Shard `fid`, from the open ones or opened now.
    pub fn get(&self, fid: u16) -> Result<Arc<dyn Source>> {
        Ok(self.get_checked(fid, || 0..0)?.0)
    }

    /// Shard `fid` with what its member checks established while it is
    /// open; opened now (nothing established) when it is not open, with
    /// room for one bit per member at `places` (its rows' positions in the
    /// sorted view).
    pub(crate) fn get_checked(
        &self,
        fid: u16,
        places: impl FnOnce() -> std::ops::Range<usize>,
    ) -> Result<(Arc<dyn Source>, Arc<Checked>)> {
        let mut open = self
            .open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(shard) = open.get_mut(&fid) {
            // Opened by `get`, which knows nothing of its rows: sized now.
            if shard.checked.is_empty() {
                shard.checked = Arc::new(Checked::new(places()));
            }
            return Ok((Arc::clone(&shard.source), Arc::clone(&shard.checked)));
        }
        let source = self.set.open(fid)?;
        let checked = Arc::new(Checked::new(places()));
        open.put(
            fid,
            Open {
                source: Arc::clone(&source),
                checked: Arc::clone(&checked),
            },
        );
        Ok((source, checked))
    }

    /// Shard `fid` when it is open now (its use not counted: a hint's
    /// look never reorders what is closed first); `None` otherwise.
    pub fn open_source(&self, fid: u16) -> Option<Arc<dyn Source>> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .peek(&fid)
            .map(|shard| Arc::clone(&shard.source))
    }

    /// How many shards are open now.
    pub fn open_count(&self) -> usize {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }
}

/// Checks that `output` is none of `inputs` through the output gate
/// ([`binfmt_core::Inputs`]: device and inode, so a hard link or a symlink
/// to an input is refused too), as [`crate::TaridxError::OutputIsInput`].
pub fn check_not_input(output: impl AsRef<Path>, inputs: &[PathBuf]) -> Result<()> {
    let output = output.as_ref();
    match binfmt_core::Inputs::new(inputs).named_by(output) {
        Some(input) => Err(crate::TaridxError::OutputIsInput {
            output: output.to_owned(),
            input: input.to_owned(),
        }),
        None => Ok(()),
    }
}
