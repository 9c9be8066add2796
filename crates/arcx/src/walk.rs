//! Packing a directory tree: what is taken, in which order, with which
//! metadata.
//!
//! Entries are sorted component by component (`a/b` before `a.txt`).
//! Regular files keep their permission bits and modification time;
//! symlinks are stored as symlinks (their target as the entry's bytes),
//! never followed; empty directories are stored as directory entries. An
//! existing file at the destination that is also a file of the tree (the
//! same device and inode: a previous archive inside it, or a hard link to
//! one of its files) is an input: the pack is refused rather than write
//! over it (binfmt's output gate; tar would skip it). Names that are not UTF-8 or hold a backslash, and special files
//! (FIFOs, devices, sockets), are skipped and reported; so are symlinks
//! and empty directories in the arcx-cli dialect, which `arcx` 0.3.0
//! would extract as regular files.

use std::fs;
use std::path::{Path, PathBuf};

use binfmt_core::{AtomicFile, Destination, FileSource, SourceExt};
use rayon::prelude::*;

use crate::error::{ArcxError, Result};
use crate::format::Dialect;
use crate::manifest::{Attributes, FileKind};
use crate::writer::{
    NO_CLI_DIRECTORY, NO_CLI_SYMLINK, PackOptions, PackSummary, Packer, Skipped, SmallFile,
    read_small,
};

/// Why a walk set aside the existing file at the destination.
const DESTINATION_IN_TREE: &str = "the destination, a file of the tree";

/// An entry a walk found.
#[derive(Debug, Clone)]
struct Found {
    inner: String,
    path: PathBuf,
    attributes: Attributes,
    size: u64,
}

#[derive(Debug, Default)]
struct Walk {
    found: Vec<Found>,
    skipped: Vec<Skipped>,
}

impl Walk {
    /// Moves every entry that is not a regular file to the skipped ones
    /// (the arcx-cli dialect: `arcx` 0.3.0 extracts every entry as a
    /// regular file), keeping both in path order.
    fn regular_files_only(&mut self) {
        let (files, others): (Vec<Found>, Vec<Found>) = std::mem::take(&mut self.found)
            .into_iter()
            .partition(|found| found.attributes.kind == FileKind::File);
        self.found = files;
        self.skipped.extend(others.into_iter().map(|found| Skipped {
            why: match found.attributes.kind {
                FileKind::Symlink => NO_CLI_SYMLINK,
                _ => NO_CLI_DIRECTORY,
            },
            path: found.path,
        }));
        self.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    }
}

fn attributes(kind: FileKind, metadata: &fs::Metadata) -> Attributes {
    #[cfg(unix)]
    let mode = std::os::unix::fs::PermissionsExt::mode(&metadata.permissions());
    #[cfg(not(unix))]
    let mode = if metadata.permissions().readonly() {
        0o444
    } else {
        0o644
    };
    let mtime_ns = metadata.modified().ok().map_or(0, |time| {
        match time.duration_since(std::time::UNIX_EPOCH) {
            Ok(after) => i64::try_from(after.as_nanos()).unwrap_or(i64::MAX),
            Err(before) => i64::try_from(before.duration().as_nanos()).map_or(i64::MIN, |ns| -ns),
        }
    });
    Attributes::new(kind, mode, mtime_ns)
}

/// Whether `a` and `b` are the same file on disk.
fn same_file(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        a.dev() == b.dev() && a.ino() == b.ino()
    }
    #[cfg(not(unix))]
    {
        let _ = (a, b);
        false
    }
}

/// What one directory entry is to the walk.
enum Item {
    Found(Found),
    Skipped(Skipped),
    Directory(Walk),
}

/// The tree under `dir`, in archive order: each directory's entries sorted
/// by name and a subdirectory's walk in its place, which is the order of
/// paths compared component by component. Subdirectories are walked in
/// parallel.
fn walk(dir: &Path, skip: Option<&fs::Metadata>) -> Result<Walk> {
    let mut walk = walk_directory(String::new(), dir, skip)?;
    walk.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(walk)
}

fn walk_directory(prefix: String, directory: &Path, skip: Option<&fs::Metadata>) -> Result<Walk> {
    let io = |error| ArcxError::Core(binfmt_core::Error::io(directory, error));
    let mut entries: Vec<fs::DirEntry> = fs::read_dir(directory)
        .map_err(io)?
        .collect::<std::io::Result<_>>()
        .map_err(io)?;
    let mut walk = Walk::default();
    if entries.is_empty() && !prefix.is_empty() {
        let metadata = fs::symlink_metadata(directory).map_err(io)?;
        walk.found.push(Found {
            inner: prefix,
            path: directory.to_path_buf(),
            attributes: attributes(FileKind::Directory, &metadata),
            size: 0,
        });
        return Ok(walk);
    }
    entries.sort_by_key(fs::DirEntry::file_name);
    let items = entries
        .par_iter()
        .map(|entry| walk_entry(&prefix, entry, skip))
        .collect::<Result<Vec<_>>>()?;
    for item in items {
        match item {
            Item::Found(found) => walk.found.push(found),
            Item::Skipped(skipped) => walk.skipped.push(skipped),
            Item::Directory(mut below) => {
                walk.found.append(&mut below.found);
                walk.skipped.append(&mut below.skipped);
            }
        }
    }
    Ok(walk)
}

fn walk_entry(prefix: &str, entry: &fs::DirEntry, skip: Option<&fs::Metadata>) -> Result<Item> {
    let path = entry.path();
    let metadata = entry
        .metadata()
        .map_err(|error| ArcxError::Core(binfmt_core::Error::io(&path, error)))?;
    let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
        return Ok(Item::Skipped(Skipped {
            path,
            why: "name is not UTF-8",
        }));
    };
    if name.contains('\\') {
        return Ok(Item::Skipped(Skipped {
            path,
            why: "backslash in the name",
        }));
    }
    let inner = if prefix.is_empty() {
        name
    } else {
        format!("{prefix}/{name}")
    };
    let file_type = metadata.file_type();
    Ok(if file_type.is_symlink() {
        let target = fs::read_link(&path)
            .map_err(|error| ArcxError::Core(binfmt_core::Error::io(&path, error)))?;
        match target.to_str() {
            Some(target) => Item::Found(Found {
                inner,
                path,
                attributes: attributes(FileKind::Symlink, &metadata),
                size: target.len() as u64,
            }),
            None => Item::Skipped(Skipped {
                path,
                why: "symlink target is not UTF-8",
            }),
        }
    } else if file_type.is_dir() {
        Item::Directory(walk_directory(inner, &path, skip)?)
    } else if !file_type.is_file() {
        Item::Skipped(Skipped {
            path,
            why: "not a regular file, directory or symlink",
        })
    } else if skip.is_some_and(|skip| same_file(skip, &metadata)) {
        // The destination is one of the files packed: the output gate
        // refuses it (pack_dir), never writing over what it reads.
        Item::Skipped(Skipped {
            path,
            why: DESTINATION_IN_TREE,
        })
    } else {
        Item::Found(Found {
            inner,
            path,
            attributes: attributes(FileKind::File, &metadata),
            size: metadata.len(),
        })
    })
}

/// What [`pack_dir`] reports as it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PackProgress {
    /// The walk is done: this many entries and bytes will be stored.
    Started {
        /// Entries to store.
        entries: u64,
        /// Their bytes.
        bytes: u64,
    },
    /// One more entry of this many bytes was stored.
    Stored(u64),
}

/// Packs the tree under `dir` into `destination`, which appears only when
/// complete; `progress` hears about the walk and each entry stored.
///
/// # Examples
///
/// ```
/// let dir = tempfile::tempdir()?;
/// std::fs::create_dir(dir.path().join("src"))?;
/// std::fs::write(dir.path().join("src/main.rs"), b"fn main() {}")?;
/// let out = dir.path().join("src.arcx");
/// let summary = binfmt_arcx::pack_dir(dir.path(), &out, binfmt_arcx::PackOptions::default(), |_| {})?;
/// assert_eq!(summary.files, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn pack_dir(
    dir: impl AsRef<Path>,
    destination: impl AsRef<Path>,
    options: PackOptions,
    progress: impl FnMut(PackProgress),
) -> Result<PackSummary> {
    let destination = destination.as_ref();
    let existing = fs::metadata(destination).ok();
    pack_dir_into(
        dir,
        || Ok(Box::new(AtomicFile::create(destination)?)),
        destination,
        existing.as_ref(),
        options,
        progress,
    )
}

/// [`pack_dir`] into any destination (a local file, an S3 upload) that
/// `create` starts once the tree is walked; `shown` names it and
/// `existing` is what is at it now when it is local (a file inside the
/// tree is then never packed into itself).
pub fn pack_dir_into(
    dir: impl AsRef<Path>,
    create: impl FnOnce() -> Result<Box<dyn Destination>>,
    shown: &Path,
    existing: Option<&fs::Metadata>,
    options: PackOptions,
    mut progress: impl FnMut(PackProgress),
) -> Result<PackSummary> {
    let (dir, destination) = (dir.as_ref(), shown);
    let block_size = options.block_size;
    let pool = match options.jobs {
        Some(jobs) => Some(
            rayon::ThreadPoolBuilder::new()
                .num_threads(jobs.max(1))
                .build()
                .map_err(|error| {
                    binfmt_core::Error::io("arcx reading threads", std::io::Error::other(error))
                })?,
        ),
        None => None,
    };
    let mut walk = match &pool {
        Some(pool) => pool.install(|| walk(dir, existing)),
        None => walk(dir, existing),
    }?;
    if let Some(input) = walk.skipped.iter().find(|s| s.why == DESTINATION_IN_TREE) {
        return Err(binfmt_core::Error::OutputIsInput {
            output: destination.to_owned(),
            input: input.path.clone(),
        }
        .into());
    }
    if options.dialect == Dialect::ArcxCli {
        walk.regular_files_only();
    }
    progress(PackProgress::Started {
        entries: walk.found.len() as u64,
        bytes: walk.found.iter().map(|found| found.size).sum(),
    });
    let mut packer = Packer::new(create()?, options)?;
    // Small files are read and hashed on every core a window ahead of the
    // packer, which only copies them into shared blocks (while the next
    // window is read); large files, symlinks and directories go through
    // the packer one by one.
    let small_window = |packer: &Packer<Box<dyn Destination>>, found: &[Found]| {
        found
            .iter()
            .take(READ_AHEAD_FILES)
            .take_while(|found| {
                found.attributes.kind == FileKind::File && packer.is_small(found.size)
            })
            .count()
    };
    let read_window = |window: &[Found]| {
        window
            .par_iter()
            .map(|found| read_small(&found.path, found.size, block_size))
            .collect::<Vec<_>>()
    };
    let mut rest = walk.found.as_slice();
    let mut read_ahead = None;
    while let Some(first) = rest.first() {
        let window = small_window(&packer, rest);
        if window == 0 {
            add_one(&mut packer, first)?;
            progress(PackProgress::Stored(first.size));
            rest = rest.get(1..).unwrap_or_default();
            continue;
        }
        let (batch, after) = rest.split_at(window);
        let read = match read_ahead.take() {
            Some(read) => read,
            None => match &pool {
                Some(pool) => pool.install(|| read_window(batch)),
                None => read_window(batch),
            },
        };
        let next = after
            .get(..small_window(&packer, after))
            .unwrap_or_default();
        let mut next_read = None;
        in_place_scope(pool.as_ref(), |scope| {
            if !next.is_empty() {
                scope.spawn(|_| next_read = Some(read_window(next)));
            }
            copy_window(&mut packer, batch, read, &mut progress)
        })?;
        read_ahead = next_read;
        rest = after;
    }
    let (out, mut summary) = packer.finish()?;
    out.commit()?;
    summary.skipped = walk.skipped;
    Ok(summary)
}

/// Runs `op` on this thread in a scope whose tasks run on `pool` (the
/// global pool when `None`).
fn in_place_scope<'scope, R>(
    pool: Option<&rayon::ThreadPool>,
    op: impl FnOnce(&rayon::Scope<'scope>) -> R,
) -> R {
    match pool {
        Some(pool) => pool.in_place_scope(op),
        None => rayon::in_place_scope(op),
    }
}

/// Adds a window of small files read ahead (or, grown since listed,
/// streamed now).
fn copy_window<W: std::io::Write + std::io::Seek + Send + 'static>(
    packer: &mut Packer<W>,
    window: &[Found],
    read: Vec<Result<Option<SmallFile>>>,
    progress: &mut impl FnMut(PackProgress),
) -> Result<()> {
    for (found, small) in window.iter().zip(read) {
        match small? {
            Some(small) => {
                packer.add_small(&found.inner, found.attributes, &small)?;
            }
            None => add_one(packer, found)?,
        }
        progress(PackProgress::Stored(found.size));
    }
    Ok(())
}

/// Small files read ahead of the packer at once.
const READ_AHEAD_FILES: usize = 256;

/// Adds one entry found by the walk, streaming a regular file.
fn add_one<W: std::io::Write + std::io::Seek + Send + 'static>(
    packer: &mut Packer<W>,
    found: &Found,
) -> Result<()> {
    let io = |error| ArcxError::Core(binfmt_core::Error::io(&found.path, error));
    match found.attributes.kind {
        FileKind::Directory => packer.add_directory(
            &found.inner,
            found.attributes.mode,
            found.attributes.mtime_ns,
        )?,
        FileKind::Symlink => {
            let target = fs::read_link(&found.path).map_err(io)?;
            let target = target.to_string_lossy().into_owned();
            packer.add_with(&found.inner, found.attributes, &mut target.as_bytes())?;
        }
        FileKind::File => {
            let source = FileSource::open(&found.path)?;
            let mut reader = source.reader(0, binfmt_core::Source::len(&source), "file")?;
            packer.add_with(&found.inner, found.attributes, &mut reader)?;
        }
    }
    Ok(())
}
