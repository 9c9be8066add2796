//! Extracting an archive into a directory, with its metadata.
//!
//! Every path goes through [`binfmt_core::extract::safe_target`]: nothing
//! lands outside the target, and no directory on the way is followed
//! through a symlink. Regular files are written to a temporary file and
//! renamed once their SHA-256 checks, with their permission bits (never
//! setuid, setgid or sticky) and modification time. Empty directories are
//! created. Symlinks are created only when asked, only with a relative
//! target that stays inside the target directory, and by rename, so an
//! existing entry at their place is replaced, never followed.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use binfmt_core::atomic::Inputs;
use binfmt_core::extract::Targets;
use binfmt_core::{AtomicFile, Source};
use rayon::prelude::*;

use crate::error::{ArcxError, Result};
use crate::manifest::{FileEntry, FileKind};
use crate::reader::Archive;

/// How to extract.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExtractOptions {
    /// Create symlinks (relative targets inside the target directory only);
    /// without this they are skipped and counted.
    pub symlinks: bool,
    /// Restore permission bits and modification times (default true).
    pub metadata: bool,
    /// Threads writing files; `None` uses one per core.
    pub jobs: Option<usize>,
}

impl Default for ExtractOptions {
    fn default() -> Self {
        Self {
            symlinks: false,
            metadata: true,
            jobs: None,
        }
    }
}

impl ExtractOptions {
    /// These options, creating symlinks or not.
    pub fn symlinks(mut self, symlinks: bool) -> Self {
        self.symlinks = symlinks;
        self
    }

    /// These options, restoring modes and times or not.
    pub fn metadata(mut self, metadata: bool) -> Self {
        self.metadata = metadata;
        self
    }

    /// These options, writing on `jobs` threads.
    pub fn jobs(mut self, jobs: Option<usize>) -> Self {
        self.jobs = jobs;
        self
    }
}

impl ExtractSummary {
    fn add(mut self, other: Self) -> Self {
        self.files += other.files;
        self.bytes += other.bytes;
        self.directories += other.directories;
        self.symlinks += other.symlinks;
        self.skipped_symlinks += other.skipped_symlinks;
        self
    }
}

/// What [`Archive::extract`] wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExtractSummary {
    /// Regular files written.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Empty directories created.
    pub directories: u64,
    /// Symlinks created.
    pub symlinks: u64,
    /// Symlinks skipped (extraction without [`ExtractOptions::symlinks`]).
    pub skipped_symlinks: u64,
}

fn time_of(mtime_ns: i64) -> SystemTime {
    let magnitude = Duration::from_nanos(mtime_ns.unsigned_abs());
    if mtime_ns >= 0 {
        UNIX_EPOCH + magnitude
    } else {
        UNIX_EPOCH - magnitude
    }
}

/// Refuses a symlink target unless it is relative, climbs (with leading
/// `..` only) no higher than the extraction directory from the link's own
/// directory, and then only descends. A `..` after a name is refused: the
/// name could itself be a symlink, and `..` would then leave from wherever
/// that points.
fn check_link_target(link: &str, target: &str) -> Result<()> {
    let refuse = |why| {
        ArcxError::Core(binfmt_core::Error::UnsafePath {
            name: format!("{link} -> {target}"),
            why,
        })
    };
    if target.is_empty() || target.starts_with('/') || target.contains(['\0', '\\']) {
        return Err(refuse(
            "symlink target is empty, absolute, or holds NUL or a backslash",
        ));
    }
    let mut depth = link.split('/').count() - 1;
    let mut descending = false;
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." if descending => {
                return Err(refuse("symlink target climbs with '..' after a name"));
            }
            ".." => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| refuse("symlink target leaves the extraction directory"))?;
            }
            _ => descending = true,
        }
    }
    Ok(())
}

impl<S: Source> Archive<S> {
    /// Extracts every entry under `dir` (created if missing).
    ///
    /// # Examples
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// std::fs::write(dir.path().join("a.txt"), b"a")?;
    /// let out = dir.path().join("a.arcx");
    /// binfmt_arcx::pack_dir(dir.path(), &out, Default::default(), |_| {})?;
    ///
    /// let target = dir.path().join("restored");
    /// let archive = binfmt_arcx::Archive::open(&out)?;
    /// let summary = archive.extract(&target, binfmt_arcx::ExtractOptions::default())?;
    /// assert_eq!(summary.files, 1);
    /// assert_eq!(std::fs::read(target.join("a.txt"))?, b"a");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn extract(
        &self,
        dir: impl AsRef<Path>,
        options: ExtractOptions,
    ) -> Result<ExtractSummary> {
        self.extract_with_progress(dir, options, &|_, _| {})
    }

    /// [`Archive::extract`], calling `progress(entries done, entries in
    /// all)` as entries are written.
    ///
    /// Files are written in parallel: the archive is cut into runs of
    /// files that share a block (each run decodes its block once) and
    /// files with blocks of their own, and threads take runs. Each file is
    /// still written whole or not at all; on a failure the first error is
    /// returned and the other threads stop at their next file.
    pub fn extract_with_progress(
        &self,
        dir: impl AsRef<Path>,
        options: ExtractOptions,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<ExtractSummary> {
        let dir = dir.as_ref();
        binfmt_core::extract::create_dir(dir)?;
        let targets = Targets::new(dir);
        // The archive's identity, taken once: each target is then one stat.
        let archive = Inputs::new(&[self.source().name()]);
        let total = self.len() as u64;
        let done = AtomicU64::new(0);
        let failed = AtomicBool::new(false);
        let extract_run = |run: &Range<u32>| -> Result<ExtractSummary> {
            let mut summary = ExtractSummary::default();
            for index in run.clone() {
                if failed.load(Ordering::Relaxed) {
                    break;
                }
                let Some(file) = self.manifest().file(index) else {
                    continue;
                };
                let outcome = self.extract_to(file, &targets, &archive, options, &mut summary);
                if outcome.is_err() {
                    failed.store(true, Ordering::Relaxed);
                }
                outcome?;
                progress(done.fetch_add(1, Ordering::Relaxed) + 1, total);
            }
            Ok(summary)
        };
        let runs = self.runs();
        let all = || {
            runs.par_iter()
                .map(extract_run)
                .try_reduce(ExtractSummary::default, |a, b| Ok(a.add(b)))
        };
        let summary = match options.jobs {
            Some(jobs) => rayon::ThreadPoolBuilder::new()
                .num_threads(jobs.max(1))
                .build()
                .map_err(|error| {
                    binfmt_core::Error::io("arcx extraction threads", std::io::Error::other(error))
                })?
                .install(all),
            None => all(),
        }?;
        // Large shared blocks streamed part way: their rest and checks.
        self.finish_cursors()?;
        Ok(summary)
    }

    /// The files in runs that share a block, in archive order: a run is
    /// the consecutive files whose one chunk lies in the same shared block,
    /// or one file with blocks of its own.
    fn runs(&self) -> Vec<Range<u32>> {
        let manifest = self.manifest();
        let mut users = vec![0u32; manifest.blocks().len()];
        for chunk in manifest.chunks() {
            if let Some(count) = users.get_mut(chunk.block as usize) {
                *count += 1;
            }
        }
        let shared_block = |index: u32| {
            manifest.file(index).and_then(|file| {
                let mut chunks = file.chunks();
                match (chunks.next(), chunks.next()) {
                    (Some(chunk), None)
                        if users.get(chunk.block as usize).is_some_and(|&n| n > 1) =>
                    {
                        Some(chunk.block)
                    }
                    _ => None,
                }
            })
        };
        let mut runs: Vec<Range<u32>> = Vec::new();
        let mut previous = None;
        for index in 0..manifest.len() as u32 {
            let block = shared_block(index);
            match runs.last_mut() {
                Some(run) if block.is_some() && block == previous => run.end = index + 1,
                _ => runs.push(index..index + 1),
            }
            previous = block;
        }
        runs
    }

    /// Extracts one entry under `dir`, adding what it wrote to `summary`.
    pub fn extract_entry(
        &self,
        file: FileEntry<'_>,
        dir: &Path,
        options: ExtractOptions,
        summary: &mut ExtractSummary,
    ) -> Result<()> {
        let archive = Inputs::new(&[self.source().name()]);
        self.extract_to(file, &Targets::new(dir), &archive, options, summary)
    }

    fn extract_to(
        &self,
        file: FileEntry<'_>,
        targets: &Targets,
        archive: &Inputs,
        options: ExtractOptions,
        summary: &mut ExtractSummary,
    ) -> Result<()> {
        let path = file.path().to_string();
        let attributes = file.attributes();
        match attributes.kind {
            FileKind::Directory => {
                let target = targets.target(&path)?;
                match std::fs::symlink_metadata(&target) {
                    Ok(metadata) if metadata.is_dir() => {}
                    Ok(_) => {
                        return Err(binfmt_core::Error::UnsafePath {
                            name: path,
                            why: "something that is not a directory is in the way",
                        }
                        .into());
                    }
                    Err(_) => std::fs::create_dir(&target)
                        .map_err(|error| binfmt_core::Error::io(&target, error))?,
                }
                if options.metadata {
                    restore_directory(&target, attributes.mode, attributes.mtime_ns)?;
                }
                summary.directories += 1;
            }
            FileKind::Symlink => {
                if !options.symlinks {
                    summary.skipped_symlinks += 1;
                    return Ok(());
                }
                let mut link_target = String::new();
                std::io::Read::read_to_string(&mut self.reader_for(file), &mut link_target)
                    .map_err(|error| ArcxError::from_io(error, Path::new(&path)))?;
                check_link_target(&path, &link_target)?;
                let target = targets.target(&path)?;
                create_symlink(&link_target, &target)?;
                summary.symlinks += 1;
            }
            FileKind::File => {
                let target = targets.target(&path)?;
                if archive.named_by(&target).is_some() {
                    return Err(binfmt_core::Error::UnsafePath {
                        name: path,
                        why: "it would be written over the archive being read",
                    }
                    .into());
                }
                let mut out = if options.metadata {
                    AtomicFile::create_with_mode(&target, attributes.mode)?
                        .modified(time_of(attributes.mtime_ns))
                } else {
                    AtomicFile::create(&target)?
                };
                summary.bytes += std::io::copy(&mut self.reader_for(file), &mut out)
                    .map_err(|error| ArcxError::from_io(error, &target))?;
                out.commit()?;
                summary.files += 1;
            }
        }
        Ok(())
    }
}

fn restore_directory(path: &Path, mode: u32, mtime_ns: i64) -> Result<()> {
    let io = |error| ArcxError::Core(binfmt_core::Error::io(path, error));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // Owner access is kept so the directory can still be filled and read.
        std::fs::set_permissions(
            path,
            std::fs::Permissions::from_mode((mode & 0o777) | 0o700),
        )
        .map_err(io)?;
    }
    #[cfg(not(unix))]
    let _ = mode;
    std::fs::File::open(path)
        .and_then(|directory| directory.set_modified(time_of(mtime_ns)))
        .map_err(io)
}

/// Creates a symlink at `path` by renaming one made beside it, so whatever
/// is at `path` is replaced, never followed.
#[cfg(unix)]
fn create_symlink(target: &str, path: &Path) -> Result<()> {
    let parent = path
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let io = |error| ArcxError::Core(binfmt_core::Error::io(path, error));
    for attempt in 0u32..100 {
        let temporary = parent.join(format!(".binfmt-link.{}.{attempt}.tmp", std::process::id()));
        match std::os::unix::fs::symlink(target, &temporary) {
            Ok(()) => {
                return std::fs::rename(&temporary, path).map_err(|error| {
                    let _ = std::fs::remove_file(&temporary);
                    io(error)
                });
            }
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(error) => return Err(io(error)),
        }
    }
    Err(io(std::io::Error::other(
        "no free temporary name for a symlink",
    )))
}

#[cfg(not(unix))]
fn create_symlink(_target: &str, path: &Path) -> Result<()> {
    Err(ArcxError::Core(binfmt_core::Error::io(
        path,
        std::io::Error::other("symlinks are extracted on Unix only"),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_targets_must_stay_inside() {
        for (link, target) in [
            ("a", "b"),
            ("dir/a", "../b"),
            ("dir/sub/a", "../../b"),
            ("dir/a", "./c/d"),
            ("dir/a", ".."),
        ] {
            assert!(
                check_link_target(link, target).is_ok(),
                "{link} -> {target}"
            );
        }
        for (link, target) in [
            ("a", "../b"),
            ("dir/a", "../../b"),
            ("a", "/etc/passwd"),
            ("a", ""),
            ("a", "b\\c"),
            ("dir/a", "x/../.."),
            ("dir/y", "x/.."),
        ] {
            assert!(
                check_link_target(link, target).is_err(),
                "{link} -> {target}"
            );
        }
    }
}
