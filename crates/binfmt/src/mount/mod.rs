//! Any file, local or remote, mounted as a read-only filesystem through
//! FUSE ([`fuser`], pure Rust: as root the kernel mount is made directly,
//! otherwise through `fusermount3`). The tree is what `binfmt list` lists
//! ([`tree`]); reads go to the entries' seekable readers ([`fs`]). The
//! contract is spec/mount.md.
//!
//! # Examples
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! let source = binfmt::open("data.arcx")?;
//! let mounted = binfmt::mount::Mount::new(Arc::from(source), "mnt".as_ref(), &Default::default())?;
//! // `mnt/` now shows data.arcx's files; this returns once it is unmounted.
//! mounted.run()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod fs;
pub mod tree;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::entries::EntrySource;
use crate::error::{InFile, Result};

/// How a file is mounted.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MountOptions {
    /// Let users other than the one mounting read it (`-o allow_other`).
    pub allow_other: bool,
    /// Threads answering the kernel at once (at least 1; default 8).
    pub threads: usize,
}

impl Default for MountOptions {
    fn default() -> Self {
        Self {
            allow_other: false,
            threads: 8,
        }
    }
}

impl MountOptions {
    /// Sets [`MountOptions::allow_other`].
    #[must_use]
    pub fn allow_other(mut self, allow_other: bool) -> Self {
        self.allow_other = allow_other;
        self
    }

    /// Sets [`MountOptions::threads`].
    #[must_use]
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }
}

/// A mounted file: the mount is made when this is made, and stays until
/// it is unmounted (by [`Mount::unmounter`], `umount`, or `fusermount3
/// -u`), which ends [`Mount::run`].
pub struct Mount {
    session: fuser::Session<fs::MountedFs>,
    /// The mount point's real path, as the kernel's mount table names it.
    real: Option<PathBuf>,
}

impl std::fmt::Debug for Mount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mount").finish_non_exhaustive()
    }
}

/// Unmounts a [`Mount`] from another thread (a signal handler's).
pub struct Unmounter(fuser::SessionUnmounter);

impl std::fmt::Debug for Unmounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unmounter").finish_non_exhaustive()
    }
}

impl Unmounter {
    /// Unmounts; [`Mount::run`] then returns.
    pub fn unmount(&mut self) -> std::io::Result<()> {
        self.0.unmount()
    }
}

impl Mount {
    /// Mounts `source` at `mountpoint`: lists it (the listing's cost: the
    /// index, manifest or descriptors, spec/remote.md), builds the tree,
    /// and mounts. Entries no path can show are named on stderr (the
    /// printer's `note`), never dropped silently.
    pub fn new(
        source: Arc<dyn EntrySource>,
        mountpoint: &Path,
        options: &MountOptions,
    ) -> Result<Self> {
        check_mountpoint(mountpoint).in_file(source.file())?;
        let tree = tree::Tree::new(source.list()?);
        for (name, why) in tree.left_out() {
            crate::output::note(format_args!(
                "mount: {} is not shown: {why} (binfmt get reads it)",
                crate::output::escape(name)
            ));
        }
        let time = source
            .inputs()
            .first()
            .filter(|_| !source.origin().is_remote())
            .and_then(|path| std::fs::metadata(path).ok())
            .and_then(|meta| meta.modified().ok())
            .unwrap_or_else(std::time::SystemTime::now);
        let (uid, gid) = process_ids();
        let file = source.file().to_owned();
        let filesystem = fs::MountedFs::new(source, tree, uid, gid, time);
        let mut config = fuser::Config::default();
        config.mount_options = vec![
            fuser::MountOption::RO,
            fuser::MountOption::NoDev,
            fuser::MountOption::NoSuid,
            fuser::MountOption::FSName("binfmt".to_owned()),
            fuser::MountOption::Subtype("binfmt".to_owned()),
        ];
        if options.allow_other {
            // fuser passes `allow_other` to the kernel for this ACL.
            config.acl = fuser::SessionACL::All;
        }
        config.n_threads = Some(options.threads.max(1));
        let session = fuser::Session::new(filesystem, mountpoint, &config)
            .map_err(|error| binfmt_core::Error::io(mountpoint, error))
            .in_file(&file)?;
        let real = std::fs::canonicalize(mountpoint).ok();
        Ok(Self { session, real })
    }

    /// What unmounts this mount from another thread.
    pub fn unmounter(&mut self) -> Unmounter {
        Unmounter(self.session.unmount_callable())
    }

    /// Answers the kernel until the mount is unmounted.
    pub fn run(self) -> Result<()> {
        let answered = match self.session.run() {
            // Some kernels end a lazily detached mount's connection with
            // ECONNABORTED rather than ENODEV once its last user leaves:
            // unmounted all the same. An abort while still mounted (through
            // /sys/fs/fuse/connections) stays an error.
            Err(error)
                if error.kind() == std::io::ErrorKind::ConnectionAborted
                    && !self.real.as_deref().is_some_and(is_mount_point) =>
            {
                Ok(())
            }
            answered => answered,
        };
        answered
            .map_err(|error| binfmt_core::Error::io("mount", error))
            .in_file("mount")
    }
}

/// A mount point must be an empty directory (not a symlink, FIFO or file,
/// nothing hidden by the mount) that is not a mount point already: checked
/// before the listing is read and before the kernel is asked (mounting on a
/// FIFO would block in the kernel).
fn check_mountpoint(mountpoint: &Path) -> binfmt_core::Result<()> {
    let io = |error| binfmt_core::Error::io(mountpoint, error);
    let refuse = |why: &str| io(std::io::Error::other(why.to_owned()));
    let meta = std::fs::symlink_metadata(mountpoint).map_err(io)?;
    if !meta.is_dir() {
        return Err(refuse(
            "not a directory: mount on an existing empty directory",
        ));
    }
    let real = std::fs::canonicalize(mountpoint).map_err(io)?;
    if is_mount_point(&real) {
        return Err(refuse("something is mounted there already"));
    }
    if std::fs::read_dir(mountpoint).map_err(io)?.next().is_some() {
        return Err(refuse(
            "not empty: a mount would hide what is there; mount on an empty directory",
        ));
    }
    Ok(())
}

/// Whether `real` (a canonical path) is a mount point, by the kernel's own
/// table (a pseudo-file, not an input of the command).
fn is_mount_point(real: &Path) -> bool {
    std::fs::read_to_string("/proc/self/mountinfo").is_ok_and(|info| {
        info.lines()
            .any(|line| line.split(' ').nth(4) == real.to_str())
    })
}

/// The user and group this process runs as (the owner of `/proc/self`),
/// which own every file of the mount; root where that cannot be read.
fn process_ids() -> (u32, u32) {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").map_or((0, 0), |meta| (meta.uid(), meta.gid()))
}
