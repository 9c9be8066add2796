//! The FUSE filesystem over a [`Tree`]: `lookup`, `getattr`, `readdir`
//! and `statfs` answer from the tree alone; `open` opens the entry's
//! seekable reader ([`crate::EntrySource::open_seekable`]), `read` seeks it
//! and reads what the kernel asked for, so only the blocks, members or
//! ranges a read touches are decompressed or fetched.
//!
//! Many readers at once: the kernel's requests run on several threads, each
//! open file has its own reader behind its own lock, and the table of open
//! files is locked only to look a handle up, never over a read. A read that
//! fails (a corrupt block, a lost connection) is `EIO` for that read, and
//! is logged once per file on stderr; the mount goes on.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::io::{Read, SeekFrom};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner,
    OpenAccMode, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory, ReplyEntry, ReplyOpen,
    ReplyStatfs, Request,
};

use super::tree::{Node, NodeKind, ROOT, Tree};
use crate::entries::EntrySource;
use crate::seekable::ReadSeek;

/// How long the kernel may keep names and attributes: a mounted file never
/// changes underneath.
const TTL: Duration = Duration::from_secs(3600);

/// The longest symlink target read.
const MAX_LINK: u64 = 4096;

type Reader<'a> = Mutex<Box<dyn ReadSeek + 'a>>;

self_cell::self_cell!(
    /// An open file: its entry's reader, which borrows the source.
    struct OpenEntry {
        owner: Arc<dyn EntrySource>,
        #[not_covariant]
        dependent: Reader,
    }
);

/// A mounted file: its entries as a read-only tree.
pub struct MountedFs {
    source: Arc<dyn EntrySource>,
    tree: Tree,
    open: Mutex<HashMap<u64, Arc<OpenEntry>>>,
    next_handle: AtomicU64,
    uid: u32,
    gid: u32,
    /// The time shown where the format keeps none.
    time: SystemTime,
    /// Inodes whose failure was logged.
    logged: Mutex<HashSet<u64>>,
}

impl std::fmt::Debug for MountedFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MountedFs")
            .field("file", &self.source.file())
            .field("inodes", &self.tree.len())
            .finish_non_exhaustive()
    }
}

impl MountedFs {
    /// The filesystem of `source` shown as `tree`, owned by `uid`/`gid`,
    /// `time` where the format keeps none.
    pub fn new(
        source: Arc<dyn EntrySource>,
        tree: Tree,
        uid: u32,
        gid: u32,
        time: SystemTime,
    ) -> Self {
        Self {
            source,
            tree,
            open: Mutex::new(HashMap::new()),
            next_handle: AtomicU64::new(1),
            uid,
            gid,
            time,
            logged: Mutex::new(HashSet::new()),
        }
    }

    fn attr(&self, ino: u64, node: &Node) -> FileAttr {
        let (kind, perm, nlink) = match node.kind {
            NodeKind::Directory => {
                let subdirs = node
                    .children
                    .values()
                    .filter(|&&child| {
                        self.tree
                            .node(child)
                            .is_some_and(|child| child.kind == NodeKind::Directory)
                    })
                    .count();
                (
                    FileType::Directory,
                    node.mode.unwrap_or(0o755) | 0o500,
                    2 + subdirs as u32,
                )
            }
            NodeKind::File => (FileType::RegularFile, node.mode.unwrap_or(0o444) | 0o400, 1),
            NodeKind::Symlink => (FileType::Symlink, 0o777, 1),
        };
        let time = node
            .mtime_ns
            .and_then(|ns| {
                let ns = u64::try_from(ns).ok()?;
                UNIX_EPOCH.checked_add(Duration::from_nanos(ns))
            })
            .unwrap_or(self.time);
        FileAttr {
            ino: INodeNo(ino),
            size: node.size,
            blocks: node.size.div_ceil(512),
            atime: time,
            mtime: time,
            ctime: time,
            crtime: time,
            kind,
            // Read-only: no write bits, whatever the format stored.
            perm: u16::try_from(perm & 0o7555).unwrap_or(0o444),
            nlink,
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            flags: 0,
            blksize: 4096,
        }
    }

    /// Logs a failed read of `ino` once, on stderr.
    fn failed(&self, ino: u64, error: &dyn std::fmt::Display) {
        let first = self
            .logged
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(ino);
        if first {
            let name = self
                .tree
                .node(ino)
                .and_then(|node| node.entry.clone())
                .unwrap_or_default();
            crate::output::note(format_args!(
                "mount: {}: {error} (reads of it fail with EIO; the mount goes on)",
                crate::output::escape(&name)
            ));
        }
    }

    fn handle(&self, fh: u64) -> Option<Arc<OpenEntry>> {
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&fh)
            .cloned()
    }
}

/// Reads up to `want` bytes from `offset`.
fn read_at(reader: &mut dyn ReadSeek, offset: u64, want: usize) -> std::io::Result<Vec<u8>> {
    reader.seek(SeekFrom::Start(offset))?;
    let mut bytes = vec![0u8; want];
    let mut filled = 0;
    while filled < want {
        match reader.read(bytes.get_mut(filled..).unwrap_or_default()) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    bytes.truncate(filled);
    Ok(bytes)
}

impl Filesystem for MountedFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let found = self
            .tree
            .child(parent.0, name)
            .and_then(|ino| Some((ino, self.tree.node(ino)?)));
        match found {
            Some((ino, node)) => reply.entry(&TTL, &self.attr(ino, node), Generation(0)),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.tree.node(ino.0) {
            Some(node) => reply.attr(&TTL, &self.attr(ino.0, node)),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        let Some(node) = self.tree.node(ino.0) else {
            return reply.error(Errno::ENOENT);
        };
        let (NodeKind::Symlink, Some(entry)) = (node.kind, &node.entry) else {
            return reply.error(Errno::EINVAL);
        };
        let mut target = Vec::new();
        let read = self.source.open(entry).map(|reader| {
            reader
                .take(MAX_LINK)
                .read_to_end(&mut target)
                .map_err(|error| error.to_string())
        });
        match read
            .map_err(|error| error.to_string())
            .and_then(|read| read)
        {
            Ok(_) => reply.data(&target),
            Err(error) => {
                self.failed(ino.0, &error);
                reply.error(Errno::EIO);
            }
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        if flags.acc_mode() != OpenAccMode::O_RDONLY {
            return reply.error(Errno::EROFS);
        }
        let Some(node) = self.tree.node(ino.0) else {
            return reply.error(Errno::ENOENT);
        };
        let (NodeKind::File, Some(entry)) = (node.kind, node.entry.clone()) else {
            return reply.error(Errno::EISDIR);
        };
        let opened = OpenEntry::try_new(Arc::clone(&self.source), |source| {
            source.open_seekable(&entry).map(Mutex::new)
        });
        match opened {
            Ok(open) => {
                let fh = self.next_handle.fetch_add(1, Ordering::Relaxed);
                self.open
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(fh, Arc::new(open));
                // The bytes never change: the kernel may keep its cache.
                reply.opened(FileHandle(fh), FopenFlags::FOPEN_KEEP_CACHE);
            }
            Err(error) => {
                self.failed(ino.0, &error);
                reply.error(Errno::EIO);
            }
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let (Some(node), Some(open)) = (self.tree.node(ino.0), self.handle(fh.0)) else {
            return reply.error(Errno::EBADF);
        };
        let want = node.size.saturating_sub(offset).min(u64::from(size));
        if want == 0 {
            return reply.data(&[]);
        }
        let want = usize::try_from(want).unwrap_or(usize::MAX);
        let read = open.with_dependent(|_, reader| {
            let mut reader = reader.lock().unwrap_or_else(PoisonError::into_inner);
            read_at(&mut **reader, offset, want)
        });
        match read {
            Ok(bytes) => reply.data(&bytes),
            Err(error) => {
                self.failed(ino.0, &error);
                reply.error(Errno::EIO);
            }
        }
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: fuser::ReplyEmpty,
    ) {
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&fh.0);
        reply.ok();
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let Some(node) = self.tree.node(ino.0) else {
            return reply.error(Errno::ENOENT);
        };
        if node.kind != NodeKind::Directory {
            return reply.error(Errno::ENOTDIR);
        }
        let parent = if ino.0 == ROOT { ROOT } else { node.parent };
        let dots = [(ino.0, OsStr::new(".")), (parent, OsStr::new(".."))];
        let children = node
            .children
            .iter()
            .map(|(name, &child)| (child, name.as_os_str()));
        for (i, (child, name)) in dots.into_iter().chain(children).enumerate() {
            if (i as u64) < offset {
                continue;
            }
            let kind = match self.tree.node(child).map(|node| node.kind) {
                Some(NodeKind::File) => FileType::RegularFile,
                Some(NodeKind::Symlink) => FileType::Symlink,
                _ => FileType::Directory,
            };
            if reply.add(INodeNo(child), i as u64 + 1, kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let bytes: u64 = (1..=self.tree.len() as u64)
            .filter_map(|ino| self.tree.node(ino))
            .map(|node| node.size.div_ceil(4096))
            .sum();
        reply.statfs(bytes, 0, 0, self.tree.len() as u64, 0, 4096, 255, 4096);
    }
}
