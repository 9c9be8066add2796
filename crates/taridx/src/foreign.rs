//! The other tar indexes people use, both ways: `wids` shard lists, NVIDIA
//! DALI `wds2idx` index files, and ratarmount's SQLite index.
//!
//! ```text
//! wids shard list (JSON)            DALI .idx (text, one line per sample)
//! {"__kind__": "wids-shard-index-v1",  v1.2 2
//!  "wids_version": 1, "name": FOLD,    cls 512 1 a.cls jpg 1536 4 a.jpg
//!  "shardlist": [{"url": "train_0000.tar", "nsamples": 2, "filesize": 10240}]}
//!                                      (v1.1: "ext offset size" per member)
//! ratarmount <shard>.index.sqlite: table files(path, name, offsetheader, offset,
//!   size, mtime, mode, type, linkname, uid, gid, istar, issparse, isgenerated,
//!   recursiondepth), metadata(key, value), versions(name, version, major, minor, patch)
//! ```
//!
//! Samples, where a foreign index counts them (wids `nsamples`, DALI lines),
//! are the runs of rows with one `(keyhash, crashid)` within a shard, in row
//! order: what wids and DALI count (consecutive members with one key) when
//! the index is WebDataset-keyed, and for glzn keys unless two consecutive
//! samples share a basename in different directories.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use binfmt_core::{AtomicFile, IoResultExt, Source};
use serde_json::{Value, json};

use crate::dataset::Dataset;
use crate::error::{Result, TaridxError};
use crate::format::Row;
use crate::index::Index;
use crate::member::check_member;
use crate::tar::{BLOCK, Member};

fn foreign(file: &Path, why: impl Into<String>) -> TaridxError {
    TaridxError::Foreign {
        file: file.to_owned(),
        why: why.into(),
    }
}

/// The rows of shard `fid`, in row order, grouped into samples (runs of one
/// key).
pub fn shard_samples(rows: &[Row], fid: u16) -> Vec<Vec<Row>> {
    let mut samples: Vec<Vec<Row>> = Vec::new();
    for row in rows.iter().filter(|row| row.fid.get() == fid) {
        match samples.last_mut() {
            Some(sample) if sample.last().map(Row::key) == Some(row.key()) => sample.push(*row),
            _ => samples.push(vec![*row]),
        }
    }
    samples
}

/// A path as seen from `dir`: relative when it is inside it.
fn relative_to(path: &Path, dir: &Path) -> String {
    path.strip_prefix(dir)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

// ---------------------------------------------------------------- wids

/// The wids shard list of a fold: one entry per shard, its `url` relative
/// to the list's directory (`list_dir`) when the shard is inside it, its
/// `nsamples` counted from the index, its `filesize` from the file.
pub fn wids_shard_list<S: Source>(
    index: &Index<S>,
    shards: &[PathBuf],
    list_dir: impl AsRef<Path>,
    name: &str,
) -> Result<Value> {
    let list_dir = list_dir.as_ref();
    let rows = index.rows()?;
    let mut list = Vec::with_capacity(shards.len());
    for (fid, shard) in shards.iter().enumerate() {
        let fid = u16::try_from(fid).map_err(|_| TaridxError::TooManyShards {
            count: shards.len(),
        })?;
        let filesize = std::fs::metadata(shard).with_path(shard)?.len();
        list.push(json!({
            "url": relative_to(shard, list_dir),
            "nsamples": shard_samples(&rows, fid).len(),
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

/// The shards a wids shard list names, resolved as wids resolves them
/// (relative to the list's directory; the top-level `base` is ignored, as
/// wids ignores it), with their `nsamples`. Only local shards: a URL with a
/// scheme other than `file` is refused, as are `datasets` components.
pub fn read_wids_shard_list(path: impl AsRef<Path>) -> Result<Vec<(PathBuf, u64)>> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).with_path(path)?;
    let list: Value =
        serde_json::from_slice(&bytes).map_err(|error| foreign(path, error.to_string()))?;
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
    let dir = path.parent().unwrap_or(Path::new(""));
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
            let local = match url.split_once("://") {
                None => url,
                Some(("file", rest)) => rest,
                Some((scheme, _)) => {
                    return Err(foreign(
                        path,
                        format!("shard {url:?}: only local shards are read, not {scheme}://"),
                    ));
                }
            };
            Ok((dir.join(local), nsamples))
        })
        .collect()
}

// ---------------------------------------------------------------- DALI

/// Where `wds2idx` puts the index of `shard` by default: the basename cut
/// at its first `.` that is not its first character, plus `.idx`
/// (`train_0000.tar` → `train_0000.idx`). (A basename with no such dot
/// keeps its whole name, where `wds2idx` drops its last character.)
pub fn dali_index_name(shard: impl AsRef<Path>) -> String {
    let shard = shard.as_ref();
    let base = shard
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let cut = base
        .char_indices()
        .skip(1)
        .find(|&(_, c)| c == '.')
        .map_or(base.len(), |(at, _)| at);
    format!("{}.idx", base.get(..cut).unwrap_or(&base))
}

fn dali_token<'a>(token: &'a str, what: &str, shard: &Path) -> Result<&'a str> {
    if token.is_empty() || token.chars().any(char::is_whitespace) {
        return Err(foreign(
            shard,
            format!("{what} {token:?} cannot be a DALI index token (empty or with whitespace)"),
        ));
    }
    Ok(token)
}

/// The DALI `.idx` text of shard `fid`: `v1.1` from the index alone (no
/// shard read), or `v1.2` with each member's full name when `names` gives
/// them (one header read per member). Offsets are payload offsets
/// (`row offset + 512`), components in row order.
pub fn dali_index<S: Source>(dataset: &Dataset<S>, fid: u16, with_names: bool) -> Result<String> {
    let shard = dataset.shards().set().name(fid);
    let samples = shard_samples(dataset.rows(), fid);
    if samples.is_empty() {
        return Err(foreign(
            &shard,
            "the shard has no members, and a DALI index needs at least one sample",
        ));
    }
    let mut text = format!(
        "{} {}\n",
        if with_names { "v1.2" } else { "v1.1" },
        samples.len()
    );
    for sample in samples {
        let mut line = Vec::with_capacity(sample.len());
        for row in &sample {
            let ext = dali_token(
                dataset.extension(row).unwrap_or_default(),
                "extension",
                &shard,
            )?;
            let mut component = format!("{ext} {} {}", row.payload_offset(), row.size.get());
            if with_names {
                let name = dataset.member_info(row)?.name;
                component.push(' ');
                component.push_str(dali_token(&name, "member name", &shard)?);
            }
            line.push(component);
        }
        text.push_str(&line.join(" "));
        text.push('\n');
    }
    Ok(text)
}

/// The members a DALI `.idx` file lists for `shard`: offsets and sizes from
/// the file, names from it (v1.2) or from each member's tar header (v1.1:
/// one header read per member). Follows DALI's reader: a version of `v1.1`
/// or `v1.2`, a sample count above 0, exactly that many lines of
/// components, payload offsets on 512-byte boundaries inside the shard.
pub fn read_dali_index(
    idx: impl AsRef<Path>,
    text: &str,
    shard: &dyn Source,
) -> Result<Vec<Member>> {
    let idx = idx.as_ref();
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default();
    let mut head = first.split_whitespace();
    let version = head.next().unwrap_or_default();
    let fields = match version {
        "v1.1" => 3,
        "v1.2" => 4,
        _ => {
            return Err(foreign(
                idx,
                format!("unsupported DALI index version {version:?} (v1.1 and v1.2 are)"),
            ));
        }
    };
    let count: u64 = head
        .next()
        .and_then(|n| n.parse().ok())
        .filter(|&n| n > 0)
        .ok_or_else(|| foreign(idx, "the sample count must be a positive number"))?;
    let mut members = Vec::new();
    // Where the previous member ends: the next one's records start there.
    let mut previous_end = 0u64;
    for number in 0..count {
        let line = lines
            .next()
            .ok_or_else(|| foreign(idx, format!("{count} samples declared, {number} present")))?;
        let tokens: Vec<&str> = line.split_whitespace().collect();
        if tokens.is_empty() {
            return Err(foreign(
                idx,
                format!("sample {number}: no extensions provided"),
            ));
        }
        if tokens.len() % fields != 0 {
            return Err(foreign(
                idx,
                format!("sample {number}: could not find all necessary component parameters"),
            ));
        }
        for component in tokens.chunks(fields) {
            let number_at = |at: usize, what: &str| -> Result<u64> {
                component
                    .get(at)
                    .and_then(|token| token.parse().ok())
                    .ok_or_else(|| foreign(idx, format!("sample {number}: bad {what}")))
            };
            let (offset, size) = (number_at(1, "offset")?, number_at(2, "size")?);
            if offset % BLOCK != 0 || offset < BLOCK {
                return Err(foreign(
                    idx,
                    format!(
                        "sample {number}: offset {offset} is not a payload offset (a multiple of 512 after a header)"
                    ),
                ));
            }
            let header = offset - BLOCK;
            let name = match component.get(3) {
                Some(name) => (*name).to_owned(),
                None => {
                    let mut row = <Row as zerocopy::FromZeros>::new_zeroed();
                    row.offset = header.into();
                    row.size = size.into();
                    check_member(shard, &row, previous_end)
                        .map_err(|failure| failure.at(shard, u64::MAX, &row))?
                        .name
                }
            };
            previous_end = offset
                .saturating_add(size)
                .checked_next_multiple_of(BLOCK)
                .unwrap_or(u64::MAX);
            members.push(Member {
                offset: header,
                size,
                name: name.into_bytes(),
            });
        }
    }
    Ok(members)
}

// ---------------------------------------------------------- ratarmount

/// ratarmount's index tables (ratarmountcore 0.11.1, index version 0.7.0).
const RATARMOUNT_SCHEMA: &str = r#"
CREATE TABLE "files" (
    "path" VARCHAR(65535) NOT NULL, "name" VARCHAR(65535) NOT NULL,
    "offsetheader" INTEGER, "offset" INTEGER, "size" INTEGER, "mtime" REAL,
    "mode" INTEGER, "type" INTEGER, "linkname" VARCHAR(65535), "uid" INTEGER,
    "gid" INTEGER, "istar" BOOL, "issparse" BOOL, "isgenerated" BOOL,
    "recursiondepth" INTEGER,
    PRIMARY KEY ("path","name","offsetheader")
);
CREATE TABLE "xattrkeys" ("id" INTEGER PRIMARY KEY, "name" VARCHAR(65535) UNIQUE);
CREATE TABLE "xattrsdata" (
    "offsetheader" INTEGER, "keyid" INTEGER, "value" VARCHAR(65535),
    PRIMARY KEY ("offsetheader","keyid"), FOREIGN KEY ("keyid") REFERENCES xattrkeys("id")
);
CREATE TABLE "metadata" (
    "key" VARCHAR(65535) NOT NULL, "value" VARCHAR(65535) NOT NULL, PRIMARY KEY ("key")
);
CREATE TABLE "versions" (
    "name" VARCHAR(65535) NOT NULL, "version" VARCHAR(65535) NOT NULL,
    "major" INTEGER, "minor" INTEGER, "patch" INTEGER, PRIMARY KEY ("name")
);
CREATE VIEW "xattrs" ("offsetheader", "key", "value") AS
    SELECT offsetheader, xattrkeys.name, value FROM "xattrsdata"
    INNER JOIN xattrkeys ON xattrkeys.id = xattrsdata.keyid;
CREATE TRIGGER "xattrs_insert" INSTEAD OF INSERT ON "xattrs"
BEGIN
    INSERT OR IGNORE INTO xattrkeys(name) VALUES (NEW.key);
    INSERT OR REPLACE INTO xattrsdata(offsetheader, keyid, value) VALUES (
        NEW.offsetheader, (SELECT xattrkeys.id FROM xattrkeys WHERE name = NEW.key), NEW.value);
END;
"#;

/// Where ratarmount looks for a shard's index first: `<shard>.index.sqlite`.
pub fn ratarmount_index_path(shard: impl AsRef<Path>) -> PathBuf {
    let mut path = shard.as_ref().as_os_str().to_owned();
    path.push(".index.sqlite");
    PathBuf::from(path)
}

/// A member name as ratarmount files it: `("/dir/sub", "base")`, or
/// `("", "base")` at the root (posixpath.normpath of `"/" + name`).
fn ratarmount_path(name: &str) -> (String, String) {
    let mut parts: Vec<&str> = Vec::new();
    for part in name.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    let base = parts.pop().unwrap_or_default().to_owned();
    let dir = parts.iter().map(|p| format!("/{p}")).collect::<String>();
    (dir, base)
}

fn sql(file: &Path) -> impl Fn(rusqlite::Error) -> TaridxError + '_ {
    move |error| foreign(file, format!("SQLite: {error}"))
}

/// Writes ratarmount's SQLite index of shard `fid` to `out` (atomically),
/// so that ratarmount opens the shard without indexing it: one row per
/// member (names, header offsets and owners read from each member's tar
/// header, checked against its row) and per implied parent directory, and
/// the metadata ratarmount checks (`backendName`, the shard's size and
/// mtime in `tarstats`).
pub fn export_ratarmount<S: Source>(
    dataset: &Dataset<S>,
    fid: u16,
    out: impl AsRef<Path>,
) -> Result<()> {
    let out = out.as_ref();
    let shard_path = dataset.shards().set().name(fid);
    let shard_meta = std::fs::metadata(&shard_path).with_path(&shard_path)?;
    let mtime = shard_meta
        .modified()
        .ok()
        .and_then(|time| time.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0.0, |since| since.as_secs_f64());
    // The file is written under a temporary name in the target directory,
    // then renamed into place.
    let temp = AtomicFile::create(out)?;
    let temp_path = temp.temp_path().to_owned();
    let failed = sql(out);
    {
        let db = rusqlite::Connection::open(&temp_path).map_err(&failed)?;
        db.execute_batch(RATARMOUNT_SCHEMA).map_err(&failed)?;
        let tx = db.unchecked_transaction().map_err(&failed)?;
        {
            let mut insert = tx
                .prepare(
                    "INSERT OR REPLACE INTO files VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, '', ?9, ?10, 0, 0, 0, 0)",
                )
                .map_err(&failed)?;
            let mut rows: Vec<Row> = dataset
                .rows()
                .iter()
                .filter(|row| row.fid.get() == fid)
                .copied()
                .collect();
            rows.sort_by_key(|row| row.offset.get());
            let mut directories: BTreeSet<String> = BTreeSet::new();
            let mut generated: Vec<(String, String, u64, u64)> = Vec::new();
            for row in &rows {
                let info = dataset.member_info(row)?;
                let (dir, base) = ratarmount_path(&info.name);
                let mut implied = String::new();
                for part in dir.split('/').filter(|p| !p.is_empty()) {
                    let parent = implied.clone();
                    implied = format!("{implied}/{part}");
                    if directories.insert(implied.clone()) {
                        generated.push((
                            parent,
                            part.to_owned(),
                            info.first_block,
                            row.payload_offset(),
                        ));
                    }
                }
                let to_i64 = |value: u64| i64::try_from(value).unwrap_or(i64::MAX);
                insert
                    .execute(rusqlite::params![
                        dir,
                        base,
                        to_i64(info.first_block),
                        to_i64(row.payload_offset()),
                        to_i64(info.size),
                        info.metadata.mtime as f64,
                        to_i64((info.metadata.mode & 0o7777) | 0o100_000),
                        b"0".as_slice(),
                        to_i64(info.metadata.uid),
                        to_i64(info.metadata.gid),
                    ])
                    .map_err(&failed)?;
            }
            for (path, name, offsetheader, offset) in generated {
                tx.execute(
                    "INSERT OR IGNORE INTO files VALUES (?1, ?2, ?3, ?4, 0, 0.0, 16749, 5, '', 0, 0, 0, 0, 0, 0)",
                    rusqlite::params![
                        path,
                        name,
                        i64::try_from(offsetheader).unwrap_or(i64::MAX),
                        i64::try_from(offset).unwrap_or(i64::MAX)
                    ],
                )
                .map_err(&failed)?;
            }
        }
        let tarstats = json!({"st_size": shard_meta.len(), "st_mtime": mtime}).to_string();
        for (key, value) in [
            ("backendName", "SQLiteIndexedTar"),
            ("tarstats", tarstats.as_str()),
            ("isGnuIncremental", "0"),
        ] {
            tx.execute(
                "INSERT INTO metadata VALUES (?1, ?2)",
                rusqlite::params![key, value],
            )
            .map_err(&failed)?;
        }
        tx.execute(
            "INSERT INTO versions VALUES ('index', '0.7.0', 0, 7, 0)",
            [],
        )
        .map_err(&failed)?;
        tx.commit().map_err(&failed)?;
    }
    temp.commit()?;
    Ok(())
}

/// The regular-file members a ratarmount SQLite index lists, in header
/// order: names joined from `path` and `name`, header offsets from the
/// payload offsets (`offset − 512`). No shard is read.
pub fn read_ratarmount(index: impl AsRef<Path>) -> Result<Vec<Member>> {
    let index = index.as_ref();
    let failed = sql(index);
    // SQLite would create a missing file, and block on a FIFO.
    if !std::fs::metadata(index).with_path(index)?.is_file() {
        return Err(binfmt_core::Error::NotRegularFile {
            path: index.to_owned(),
            kind: "not a regular file",
        }
        .into());
    }
    let db =
        rusqlite::Connection::open_with_flags(index, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(&failed)?;
    let mut query = db
        .prepare(
            "SELECT path, name, offset, size, issparse FROM files \
             WHERE (mode & 61440) = 32768 ORDER BY offsetheader",
        )
        .map_err(&failed)?;
    let rows = query
        .query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, i64>(2)?,
                row.get::<_, i64>(3)?,
                row.get::<_, Option<bool>>(4)?.unwrap_or(false),
            ))
        })
        .map_err(&failed)?;
    let mut members = Vec::new();
    for row in rows {
        let (path, name, offset, size, sparse) = row.map_err(&failed)?;
        let full = format!("{path}/{name}").trim_start_matches('/').to_owned();
        if sparse {
            return Err(foreign(
                index,
                format!("{full:?} is a sparse file, which TARIDX cannot index"),
            ));
        }
        let (Ok(offset), Ok(size)) = (u64::try_from(offset), u64::try_from(size)) else {
            return Err(foreign(
                index,
                format!("{full:?}: a negative offset or size"),
            ));
        };
        if offset % BLOCK != 0 || offset < BLOCK {
            return Err(foreign(
                index,
                format!("{full:?}: offset {offset} is not a payload offset"),
            ));
        }
        members.push(Member {
            offset: offset - BLOCK,
            size,
            name: full.into_bytes(),
        });
    }
    Ok(members)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dali_index_names_follow_wds2idx() {
        assert_eq!(
            dali_index_name(Path::new("a/shard-000.tar")),
            "shard-000.idx"
        );
        assert_eq!(dali_index_name(Path::new("data.train.tar")), "data.idx");
        assert_eq!(dali_index_name(Path::new(".hidden.tar")), ".hidden.idx");
    }

    #[test]
    fn ratarmount_paths_are_normalised() {
        assert_eq!(ratarmount_path("a.jpg"), (String::new(), "a.jpg".into()));
        assert_eq!(
            ratarmount_path("d/e/f.jpg"),
            ("/d/e".into(), "f.jpg".into())
        );
        assert_eq!(ratarmount_path("./d//x/../f"), ("/d".into(), "f".into()));
    }
}
