//! How a member name becomes a sample key and an extension.
//!
//! Two rules, recorded in the index (flag bit 1, spec/taridx.md §2):
//!
//! | rule | key of `cat/1.seg.PNG` | extension | used by |
//! |---|---|---|---|
//! | [`KeyRule::Glzn`] (default) | `1` (basename up to its first `.`) | `seg.png` | the iTar indexer (glzn) |
//! | [`KeyRule::WebDataset`] | `cat/1` (the path up to the basename's first `.`) | `seg.png` | webdataset's `base_plus_ext` |
//!
//! Under glzn's rule `cat/1.jpg` and `dog/1.jpg` are one sample; under
//! WebDataset's they are two. Extensions are lower-cased under both, as
//! both tools lower-case them.
//!
//! ```
//! use binfmt_taridx::KeyRule;
//!
//! let glzn = KeyRule::Glzn.split("cat/1.seg.PNG");
//! assert_eq!((glzn.key.as_str(), glzn.extension.as_str()), ("1", "seg.png"));
//! let wds = KeyRule::WebDataset.split("cat/1.seg.PNG");
//! assert_eq!((wds.key.as_str(), wds.extension.as_str()), ("cat/1", "seg.png"));
//! ```

use std::borrow::Cow;

use xxhash_rust::xxh64::xxh64;

/// webdataset's `base_plus_ext` (`webdataset/tariterators.py`),
/// `^((?:.*/|)[^.]+)[.]([^/]*)$`, without a regex engine (it cost more than
/// the rest of a member's check; the test below compares the two on every
/// short name over `a . / \n`): the key and the extension, or `None` where
/// the regex does not match.
///
/// The extension holds no `/`, so the `.` that ends the key lies in the
/// basename; the key's last part (`[^.]+`) holds no `.` and starts where
/// the prefix (`.*/`, which cannot cross a newline) ends. The regex tries
/// the longest prefix first; a shorter one can only help while no `.` lies
/// between it and the basename.
fn base_plus_ext(name: &str) -> Option<(&str, &str)> {
    let bytes = name.as_bytes();
    let newline = bytes
        .iter()
        .position(|&b| b == b'\n')
        .unwrap_or(bytes.len());
    let last_slash = bytes.iter().rposition(|&b| b == b'/');
    let base = last_slash.map_or(0, |at| at + 1);
    // The `.` that ends the key: the first of the basename.
    let dot = base + bytes.get(base..)?.iter().position(|&b| b == b'.')?;
    // No `.` may lie between the key's start and `dot`.
    let floor = bytes
        .get(..dot)?
        .iter()
        .rposition(|&b| b == b'.')
        .map_or(0, |at| at + 1);
    // Where the key's last part may start: just after a `/` that no newline
    // precedes, or at 0; the largest such start with a non-empty part.
    let starts = bytes
        .get(..dot)?
        .iter()
        .enumerate()
        .rev()
        .filter(|&(at, &b)| b == b'/' && at < newline)
        .map(|(at, _)| at + 1)
        .chain(std::iter::once(0));
    for start in starts {
        if start < floor {
            return None;
        }
        if start < dot {
            return Some((name.get(..dot)?, name.get(dot + 1..)?));
        }
    }
    None
}

/// Which part of a member name is the sample key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum KeyRule {
    /// glzn's iTar rule: the basename up to its first `.`; the directory is
    /// dropped. Indexes built with it are byte-identical to glzn's.
    #[default]
    Glzn,
    /// WebDataset's rule: the whole path up to the first `.` of the
    /// basename, as webdataset's `base_plus_ext` regex
    /// `^((?:.*/|)[^.]+)[.]([^/]*)$` splits it. A name the regex does not
    /// match (no `.` in the basename) keeps its whole name as the key and
    /// has the empty extension, where webdataset would skip the member.
    WebDataset,
}

/// A member name split into its sample key and extension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyAndExtension {
    /// The sample key (glzn calls it the stem).
    pub key: String,
    /// The extension, lower-cased; empty when the name has none.
    pub extension: String,
}

impl KeyRule {
    /// The rule's name on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Self::Glzn => "glzn",
            Self::WebDataset => "webdataset",
        }
    }

    /// Splits a member name (as tar reads it: see [`crate::tar::normalize`]).
    pub fn split(self, name: &str) -> KeyAndExtension {
        let (key, extension) = self.split_parts(name);
        KeyAndExtension {
            key: key.to_owned(),
            extension: lowercase(extension).into_owned(),
        }
    }

    /// [`KeyRule::split`] borrowing both parts from `name`, the extension
    /// as written (not lower-cased: see [`lowercase`]).
    pub fn split_parts(self, name: &str) -> (&str, &str) {
        match self {
            Self::Glzn => {
                let base = name.rsplit('/').next().unwrap_or_default();
                base.split_once('.').unwrap_or((base, ""))
            }
            Self::WebDataset => base_plus_ext(name).unwrap_or((name, "")),
        }
    }

    /// Splits a member name given as bytes, decoded as UTF-8 with invalid
    /// sequences replaced (as the reference decodes them).
    pub fn split_bytes(self, name: &[u8]) -> KeyAndExtension {
        self.split(&String::from_utf8_lossy(name))
    }
}

/// An extension lower-cased as both tools do (Unicode lower case),
/// borrowed when it already is.
pub fn lowercase(extension: &str) -> Cow<'_, str> {
    if extension
        .bytes()
        .any(|b| b.is_ascii_uppercase() || !b.is_ascii())
    {
        Cow::Owned(extension.to_lowercase())
    } else {
        Cow::Borrowed(extension)
    }
}

/// The key hash of a sample key: xxh64 of its UTF-8 bytes, seed 0.
pub fn keyhash(key: &str) -> u64 {
    xxh64(key.as_bytes(), 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(rule: KeyRule, name: &str) -> (String, String) {
        let KeyAndExtension { key, extension } = rule.split(name);
        (key, extension)
    }

    #[test]
    fn glzn_splits_the_basename() {
        let g = |name| split(KeyRule::Glzn, name);
        assert_eq!(g("a/b/000123.JPG"), ("000123".into(), "jpg".into()));
        assert_eq!(g("x.seg.Mask.PNG"), ("x".into(), "seg.mask.png".into()));
        assert_eq!(g("dir.v2/noext"), ("noext".into(), String::new()));
        assert_eq!(g(".hidden"), (String::new(), "hidden".into()));
        assert_eq!(KeyRule::Glzn.split_bytes(b"caf\xff.txt").key, "caf\u{fffd}");
    }

    /// The hand-written split against webdataset's regex itself, on every
    /// name of up to 8 characters over `a`, `.`, `/` and a newline.
    #[test]
    fn base_plus_ext_is_the_regex() {
        let regex = regex::Regex::new(r"^((?:.*/|)[^.]+)[.]([^/]*)$").unwrap();
        let alphabet = ['a', '.', '/', '\n'];
        let mut checked = 0;
        for len in 0..=8u32 {
            for code in 0..4usize.pow(len) {
                let name: String = (0..len)
                    .map(|i| alphabet[code / 4usize.pow(i) % 4])
                    .collect();
                let theirs = regex.captures(&name).map(|groups| {
                    (
                        groups.get(1).unwrap().as_str(),
                        groups.get(2).unwrap().as_str(),
                    )
                });
                assert_eq!(base_plus_ext(&name), theirs, "{name:?}");
                checked += 1;
            }
        }
        assert_eq!(checked, (0..=8).map(|len| 4usize.pow(len)).sum::<usize>());
    }

    /// The cases of webdataset's own behaviour (docs/tar-ecosystem §2).
    #[test]
    fn webdataset_splits_as_base_plus_ext() {
        let w = |name| split(KeyRule::WebDataset, name);
        assert_eq!(w("a.jpg"), ("a".into(), "jpg".into()));
        assert_eq!(
            w("dir/sub.key.v2.cls"),
            ("dir/sub".into(), "key.v2.cls".into())
        );
        assert_eq!(w("dir.x/a.b"), ("dir.x/a".into(), "b".into()));
        assert_eq!(w("a.b.c/d.e.f"), ("a.b.c/d".into(), "e.f".into()));
        assert_eq!(w("a..b"), ("a".into(), ".b".into()));
        assert_eq!(w("a."), ("a".into(), String::new()));
        assert_eq!(w("dir/.x"), ("dir/".into(), "x".into()));
        assert_eq!(
            w("nodes/metadata"),
            ("nodes/metadata".into(), String::new())
        );
        assert_eq!(w("cat/1.JPG"), ("cat/1".into(), "jpg".into()));
    }

    #[test]
    fn keyhash_is_xxh64_seed_0() {
        assert_eq!(keyhash(""), 0xef46_db37_51d8_e999);
        assert_eq!(keyhash("a"), 0xd24e_c4f1_a98c_6e5b);
    }
}
