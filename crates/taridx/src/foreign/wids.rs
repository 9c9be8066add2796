//! wids shard lists: JSON naming each shard by a URL that wids resolves
//! against the list's directory, with its sample count.

use std::path::{Component, Path, PathBuf};

use binfmt_core::{IoResultExt, Source};
use serde_json::{Value, json};

use super::shared::{foreign, shard_samples};
use crate::error::{Result, TaridxError};
use crate::index::Index;

/// The largest wids shard list read (64 MiB: 65,536 shards of 1 KiB each).
pub const WIDS_LIST_LIMIT: u64 = 64 << 20;

/// The wids shard list of a fold: one entry per shard, its `url` as
/// [`wids_url`] writes it, its `nsamples` counted from the index, its
/// `filesize` from the file (opened through the input gate).
pub fn wids_shard_list<S: Source>(
    index: &Index<S>,
    shards: &[PathBuf],
    list_dir: impl AsRef<Path>,
    name: &str,
) -> Result<Value> {
    wids_shard_list_of_rows(&index.rows()?, shards, list_dir.as_ref(), name)
}

/// [`wids_shard_list`] of an index's rows.
pub(crate) fn wids_shard_list_of_rows(
    rows: &[crate::Row],
    shards: &[PathBuf],
    list_dir: &Path,
    name: &str,
) -> Result<Value> {
    let mut list = Vec::with_capacity(shards.len());
    for (fid, shard) in shards.iter().enumerate() {
        let fid = u16::try_from(fid).map_err(|_| TaridxError::TooManyShards {
            count: shards.len(),
        })?;
        let (_, filesize) = binfmt_core::input::open(shard)?;
        list.push(json!({
            "url": wids_url(shard, list_dir)?,
            "nsamples": shard_samples(rows, fid).len(),
            "filesize": filesize,
        }));
    }
    Ok(json!({
        "__kind__": "wids-shard-index-v1",
        "wids_version": 1,
        "name": name,
        "shardlist": list,
    }))
}

/// The URL of `shard` in a list written to directory `list_dir` (empty:
/// the current directory): the path from the list's real directory to the
/// shard's real directory (`..` where the shard is outside it), then the
/// shard's file name, as wids resolves it (`os.path.join` of the list's
/// directory and the URL, normalised). A URL whose first component holds a
/// `:` gets a leading `./`, which keeps Python's `urlparse` from reading
/// it as a scheme. A path that is not UTF-8 is refused.
pub fn wids_url(shard: &Path, list_dir: &Path) -> Result<String> {
    let real = |dir: &Path| -> Result<PathBuf> {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        Ok(std::fs::canonicalize(dir).with_path(dir)?)
    };
    let file = shard
        .file_name()
        .ok_or_else(|| foreign(shard, "a shard path must end in a file name"))?;
    let from = real(list_dir)?;
    let to = real(shard.parent().unwrap_or(Path::new("")))?;
    let from: Vec<Component<'_>> = from.components().collect();
    let to: Vec<Component<'_>> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut url = PathBuf::new();
    for _ in common..from.len() {
        url.push("..");
    }
    for part in to.iter().skip(common) {
        url.push(part);
    }
    url.push(file);
    let url = url.to_str().ok_or_else(|| {
        foreign(
            shard,
            "the path is not UTF-8, which a wids list (JSON) cannot hold",
        )
    })?;
    let first = url.split('/').next().unwrap_or_default();
    Ok(if first.contains(':') {
        format!("./{url}")
    } else {
        url.to_owned()
    })
}

/// Python's `posixpath.normpath` (what wids applies to a joined URL): `.`
/// and empty components dropped, `..` cancelling the component before it
/// (lexically, as wids does), kept at the start of a relative path.
fn normpath(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => match parts.last() {
                Some(&last) if last != ".." => {
                    parts.pop();
                }
                _ if absolute => {}
                _ => parts.push(".."),
            },
            part => parts.push(part),
        }
    }
    let joined = parts.join("/");
    match (absolute, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_owned(),
        (false, false) => joined,
    }
}

/// The scheme of `url` as Python's `urlparse` reads one: a letter, then
/// letters, digits, `+`, `-` or `.`, then `:`.
fn url_scheme(url: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = url.split_once(':')?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then_some((scheme, rest))
}

/// The shards a wids shard list names, resolved as wids resolves them
/// (joined to the list's directory and normalised lexically; the top-level
/// `base` is ignored, as wids ignores it), with their `nsamples`. The list
/// is read through the input gate (a regular file of at most
/// [`WIDS_LIST_LIMIT`] bytes). Only local shards: a URL with a scheme
/// other than `file` is refused, as are `datasets` components and more
/// shards than a TARIDX index can number.
pub fn read_wids_shard_list(path: impl AsRef<Path>) -> Result<Vec<(PathBuf, u64)>> {
    let path = path.as_ref();
    let bytes = binfmt_core::input::read(path, WIDS_LIST_LIMIT, "wids shard list")?;
    let dir = path
        .parent()
        .map(|dir| dir.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(wids_shard_urls(&bytes, path)?
        .into_iter()
        .map(|(local, nsamples)| {
            let joined = if local.starts_with('/') || dir.is_empty() {
                local
            } else {
                format!("{dir}/{local}")
            };
            (PathBuf::from(normpath(&joined)), nsamples)
        })
        .collect())
}

/// The shards a wids shard list's bytes name, as written (a `file:` URL
/// reduced to its path), with their `nsamples`: what
/// [`read_wids_shard_list`] resolves against the list's directory, and a
/// remote reader against the list's URL. `file` names the list in errors.
pub fn wids_shard_urls(bytes: &[u8], file: &Path) -> Result<Vec<(String, u64)>> {
    let path = file;
    let list: Value =
        serde_json::from_slice(bytes).map_err(|error| foreign(path, error.to_string()))?;
    if list.get("wids_version").and_then(Value::as_u64) != Some(1) {
        return Err(foreign(
            path,
            "not a wids shard list: wids_version is not 1",
        ));
    }
    if list.get("datasets").is_some() {
        return Err(foreign(
            path,
            "\"datasets\" components are not supported: list the shards in \"shardlist\"",
        ));
    }
    let entries = list
        .get("shardlist")
        .and_then(Value::as_array)
        .ok_or_else(|| foreign(path, "no \"shardlist\" array"))?;
    if entries.is_empty() {
        return Err(foreign(path, "the shard list is empty"));
    }
    if entries.len() > usize::from(u16::MAX) + 1 {
        return Err(TaridxError::TooManyShards {
            count: entries.len(),
        });
    }
    entries
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            let url = entry
                .get("url")
                .and_then(Value::as_str)
                .ok_or_else(|| foreign(path, format!("shard {i} has no \"url\"")))?;
            let nsamples = entry
                .get("nsamples")
                .and_then(Value::as_u64)
                .ok_or_else(|| foreign(path, format!("shard {i} has no \"nsamples\"")))?;
            let local = match url_scheme(url) {
                None => url,
                Some((scheme, rest)) if scheme.eq_ignore_ascii_case("file") => {
                    // file:///abs, file://localhost/abs, file:/abs, file:rel.
                    match rest.strip_prefix("//") {
                        None => rest,
                        Some(after) => {
                            let (host, local) =
                                after.split_at(after.find('/').unwrap_or(after.len()));
                            if !(host.is_empty() || host == "localhost") {
                                return Err(foreign(
                                    path,
                                    format!("shard {url:?}: only local shards are read"),
                                ));
                            }
                            local
                        }
                    }
                }
                Some((scheme, _)) => {
                    return Err(foreign(
                        path,
                        format!("shard {url:?}: only local shards are read, not {scheme}:"),
                    ));
                }
            };
            if local.is_empty() || local.contains('\0') {
                return Err(foreign(path, format!("shard {i}: {url:?} is not a path")));
            }
            Ok((local.to_owned(), nsamples))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_normalise_as_python_does() {
        assert_eq!(normpath("a/./b/../c.tar"), "a/c.tar");
        assert_eq!(normpath("../../x.tar"), "../../x.tar");
        assert_eq!(normpath("/a/../../x.tar"), "/x.tar");
        assert_eq!(normpath("a/.."), ".");
    }

    #[test]
    fn schemes_are_read_as_urlparse_reads_them() {
        assert_eq!(url_scheme("s3://b/k"), Some(("s3", "//b/k")));
        assert_eq!(url_scheme("a:b.tar"), Some(("a", "b.tar")));
        assert_eq!(url_scheme("./a:b.tar"), None);
        assert_eq!(url_scheme("1a:b"), None);
    }

    #[test]
    fn urls_are_relative_to_the_list_directory() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let lists = dir.path().join("lists");
        std::fs::create_dir(&data).unwrap();
        std::fs::create_dir(&lists).unwrap();
        let shard = data.join("t_0000.tar");
        assert_eq!(wids_url(&shard, &lists).unwrap(), "../data/t_0000.tar");
        assert_eq!(wids_url(&shard, &data).unwrap(), "t_0000.tar");
        let odd = data.join("x:y_0000.tar");
        assert_eq!(wids_url(&odd, &data).unwrap(), "./x:y_0000.tar");
    }
}
