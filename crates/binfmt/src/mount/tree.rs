//! The tree a mount shows: every entry of a listing placed by its `/`
//! separated name, directories made for the components between, numbered
//! as inodes (the root is 1). Built once, at mount time, from the listing
//! alone; read only afterwards.
//!
//! ```text
//! listing                          tree
//! docs/a.txt        (file, 3)      1 /            dir
//! docs/b            (symlink)      2 /docs        dir (made)
//! nodes/time        (array, 40)    3 /docs/a.txt  file → entry "docs/a.txt"
//!                                  4 /docs/b      symlink → entry "docs/b"
//!                                  5 /nodes       dir (made)
//!                                  6 /nodes/time  file → entry "nodes/time"
//! ```
//!
//! A name no directory can hold (an empty, `.` or `..` component, a NUL,
//! a name not UTF-8 that the listing shows with U+FFFD), and a second entry
//! at a path already taken, are left out and reported, never dropped
//! silently ([`Tree::left_out`]).

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};

use crate::entries::Entry;

/// What an inode is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// A directory.
    Directory,
    /// A regular file: an entry's bytes.
    File,
    /// A symbolic link: its target is the entry's bytes.
    Symlink,
}

/// One inode.
#[derive(Debug, Clone)]
pub struct Node {
    /// Its parent's inode (the root's is itself).
    pub parent: u64,
    /// Its name in its parent.
    pub name: OsString,
    /// What it is.
    pub kind: NodeKind,
    /// Its size in bytes (0 for directories).
    pub size: u64,
    /// Permission bits the format stored, if any.
    pub mode: Option<u32>,
    /// Modification time the format stored, if any (ns since the epoch).
    pub mtime_ns: Option<i64>,
    /// The entry whose bytes it shows (`None` for made directories).
    pub entry: Option<String>,
    /// Its children by name (directories).
    pub children: BTreeMap<OsString, u64>,
}

/// Every inode of a mount.
#[derive(Debug)]
pub struct Tree {
    nodes: Vec<Node>,
    left_out: Vec<(String, &'static str)>,
}

/// The root's inode number.
pub const ROOT: u64 = 1;

impl Tree {
    /// The tree of `entries`.
    pub fn new(entries: Vec<Entry>) -> Self {
        let mut tree = Tree {
            nodes: vec![directory(ROOT, OsString::new(), None)],
            left_out: Vec::new(),
        };
        for entry in entries {
            tree.add(entry);
        }
        tree
    }

    /// The entries left out, with why.
    pub fn left_out(&self) -> &[(String, &'static str)] {
        &self.left_out
    }

    /// The inode `ino`.
    pub fn node(&self, ino: u64) -> Option<&Node> {
        let index = usize::try_from(ino.checked_sub(1)?).ok()?;
        self.nodes.get(index)
    }

    /// The child `name` of directory `parent`.
    pub fn child(&self, parent: u64, name: &OsStr) -> Option<u64> {
        self.node(parent)?.children.get(name).copied()
    }

    /// How many inodes there are.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the tree holds only its root.
    pub fn is_empty(&self) -> bool {
        self.nodes.len() <= 1
    }

    fn add(&mut self, entry: Entry) {
        let name = entry.name.clone();
        if entry.name_not_utf8 {
            return self.leave_out(name, "its name is not UTF-8");
        }
        let parts: Vec<&str> = name.trim_end_matches('/').split('/').collect();
        if parts
            .iter()
            .any(|part| part.is_empty() || *part == "." || *part == ".." || part.contains('\0'))
        {
            return self.leave_out(
                name,
                "its name has an empty, '.' or '..' component, or a NUL",
            );
        }
        let Some((last, dirs)) = parts.split_last() else {
            return self.leave_out(name, "its name is empty");
        };
        let mut parent = ROOT;
        for dir in dirs {
            parent = match self.child(parent, OsStr::new(dir)) {
                Some(ino) if self.is_dir(ino) => ino,
                Some(_) => return self.leave_out(name, "a file is where its directory would be"),
                None => self.push(parent, directory(parent, OsString::from(dir), None)),
            };
        }
        let kind = match entry.kind {
            Some("directory") => NodeKind::Directory,
            Some("symlink") => NodeKind::Symlink,
            _ => NodeKind::File,
        };
        if let Some(existing) = self.child(parent, OsStr::new(last)) {
            // A directory listed after its files were placed (or a made one
            // listed itself): it takes the entry's attributes.
            if kind == NodeKind::Directory && self.is_dir(existing) {
                if let Some(node) = self.nodes.get_mut(index(existing)) {
                    node.mode = entry.mode;
                    node.mtime_ns = entry.mtime_ns;
                    node.entry = Some(entry.name);
                }
                return;
            }
            return self.leave_out(name, "another entry has the same path");
        }
        let node = Node {
            parent,
            name: OsString::from(last),
            kind,
            size: if kind == NodeKind::Directory {
                0
            } else {
                entry.size
            },
            mode: entry.mode,
            mtime_ns: entry.mtime_ns,
            entry: Some(entry.name),
            children: BTreeMap::new(),
        };
        self.push(parent, node);
    }

    fn is_dir(&self, ino: u64) -> bool {
        self.node(ino)
            .is_some_and(|node| node.kind == NodeKind::Directory)
    }

    fn push(&mut self, parent: u64, node: Node) -> u64 {
        let name = node.name.clone();
        self.nodes.push(node);
        let ino = self.nodes.len() as u64;
        if let Some(dir) = self.nodes.get_mut(index(parent)) {
            dir.children.insert(name, ino);
        }
        ino
    }

    fn leave_out(&mut self, name: String, why: &'static str) {
        self.left_out.push((name, why));
    }
}

fn index(ino: u64) -> usize {
    usize::try_from(ino.saturating_sub(1)).unwrap_or(usize::MAX)
}

fn directory(parent: u64, name: OsString, entry: Option<String>) -> Node {
    Node {
        parent,
        name,
        kind: NodeKind::Directory,
        size: 0,
        mode: None,
        mtime_ns: None,
        entry,
        children: BTreeMap::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, kind: Option<&'static str>) -> Entry {
        Entry {
            kind,
            ..Entry::new(name, 3)
        }
    }

    #[test]
    fn paths_become_directories_and_bad_names_are_reported() {
        let tree = Tree::new(vec![
            entry("docs/a.txt", None),
            entry("docs", Some("directory")),
            entry("docs/link", Some("symlink")),
            entry("docs/a.txt", None),
            entry("../escape", None),
            entry("docs/a.txt/under", None),
            entry("nodes/time", Some("float64")),
        ]);
        let docs = tree.child(ROOT, OsStr::new("docs"));
        let docs = docs.and_then(|ino| tree.node(ino).map(|node| (ino, node)));
        assert!(
            matches!(docs, Some((_, node)) if node.kind == NodeKind::Directory && node.entry.as_deref() == Some("docs"))
        );
        let docs_ino = docs.map_or(0, |(ino, _)| ino);
        let link = tree
            .child(docs_ino, OsStr::new("link"))
            .and_then(|ino| tree.node(ino));
        assert!(link.is_some_and(|node| node.kind == NodeKind::Symlink));
        let time = tree
            .child(ROOT, OsStr::new("nodes"))
            .and_then(|ino| tree.child(ino, OsStr::new("time")))
            .and_then(|ino| tree.node(ino));
        assert!(time.is_some_and(|node| node.kind == NodeKind::File && node.size == 3));
        let left: Vec<&str> = tree
            .left_out()
            .iter()
            .map(|(name, _)| name.as_str())
            .collect();
        assert_eq!(left, ["docs/a.txt", "../escape", "docs/a.txt/under"]);
        assert_eq!(tree.len(), 6);
    }
}
