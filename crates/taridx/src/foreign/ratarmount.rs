//! ratarmount's SQLite index, `<shard>.index.sqlite`.
//!
//! Both ways the database lives in memory only: an export is built in an
//! in-memory database and serialised to bytes (the caller writes them
//! through the output gate); an import reads the file through the input
//! gate and deserialises it, read-only, so SQLite never opens a path (no
//! URI filenames, no journal or WAL files beside it, no FIFO or device
//! behind a name) and never writes.
//!
//! A database is a program as much as data: a `files` view can run a
//! recursive query forever or build names of any size. An import reads
//! `files` only when it is a plain table (no view, no virtual table, no
//! trigger on it, no generated column among those read), with
//! `trusted_schema` off, strings capped by `SQLITE_LIMIT_LENGTH`, the
//! SQLite operations bounded by a progress handler, and the rows bounded by
//! what the shard can hold.

use std::path::{Path, PathBuf};

use binfmt_core::Source;
use rusqlite::limits::Limit;
use serde_json::json;

use super::shared::foreign;
use crate::dataset::Dataset;
use crate::error::{Result, TaridxError};
use crate::format::Row;
use crate::tar::{BLOCK, MAX_METADATA_SIZE, Member};

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
    move |error| match error.sqlite_error_code() {
        Some(rusqlite::ErrorCode::OperationInterrupted) => foreign(
            file,
            "reading it takes more SQLite operations than its size allows (a hostile schema?)",
        ),
        _ => foreign(file, format!("SQLite: {error}")),
    }
}

/// ratarmount's SQLite index of shard `fid`, as the bytes of a database
/// file, so that ratarmount opens the shard without indexing it: one row
/// per member (names, header offsets and owners read from each member's tar
/// header, checked against its row) and per implied parent directory, and
/// the metadata ratarmount checks (`backendName`, the shard's size and
/// mtime in `tarstats`).
pub fn ratarmount_index<S: Source>(dataset: &Dataset<S>, fid: u16) -> Result<Vec<u8>> {
    let shard_path = dataset.shards().set().name(fid);
    let (shard_file, shard_len) = binfmt_core::input::open(&shard_path)?;
    let mtime = shard_file
        .metadata()
        .ok()
        .and_then(|meta| meta.modified().ok())
        .and_then(|time| time.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0.0, |since| since.as_secs_f64());
    drop(shard_file);
    let failed = sql(&shard_path);
    let db = rusqlite::Connection::open_in_memory().map_err(&failed)?;
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
        let mut directories: std::collections::BTreeSet<String> = Default::default();
        let mut generated: Vec<(String, String, u64, u64)> = Vec::new();
        let to_i64 = |value: u64| i64::try_from(value).unwrap_or(i64::MAX);
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
                rusqlite::params![path, name, to_i64(offsetheader), to_i64(offset)],
            )
            .map_err(&failed)?;
        }
    }
    let tarstats = json!({"st_size": shard_len, "st_mtime": mtime}).to_string();
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
    let bytes = db.serialize(rusqlite::MAIN_DB).map_err(&failed)?.to_vec();
    Ok(bytes)
}

/// The largest ratarmount database read: 1 GiB (it is held in memory).
pub const RATARMOUNT_MAX_DB: u64 = 1 << 30;

/// The largest ratarmount database read for a shard of `shard_len` bytes:
/// 64 MiB plus twice the shard, at most [`RATARMOUNT_MAX_DB`]. A row (its
/// names twice, with the primary key's index, and about 100 bytes of
/// numbers) is smaller than twice its member's tar bytes (a 512-byte
/// header, plus the name beyond 100 bytes in a record).
pub fn ratarmount_db_limit(shard_len: u64) -> u64 {
    shard_len
        .saturating_mul(2)
        .saturating_add(64 << 20)
        .min(RATARMOUNT_MAX_DB)
}

/// The columns an import reads from `files`.
const FILES_COLUMNS: [&str; 6] = ["path", "name", "offset", "size", "mode", "issparse"];

/// SQLite virtual-machine operations between two progress checks.
const OPS_PER_CHECK: i32 = 10_000;

/// The regular-file members a ratarmount SQLite index of a shard of
/// `shard_len` bytes lists, in header order: names joined from `path` and
/// `name`, header offsets from the payload offsets (`offset − 512`). No
/// shard is read; the caller verifies the rows against it.
///
/// The file is read through the input gate (a regular file of at most
/// [`ratarmount_db_limit`] bytes) into an in-memory, read-only database;
/// `files` must be a plain table with the columns read, at most
/// `shard_len / 512` regular files (each takes a 512-byte header) and names
/// of at most 1 MiB; SQLite may spend 10⁸ operations plus 16 per byte of
/// the database.
pub fn read_ratarmount(index: impl AsRef<Path>, shard_len: u64) -> Result<Vec<Member>> {
    read_ratarmount_within(index.as_ref(), shard_len, None)
}

/// [`read_ratarmount`], with SQLite's operations bounded by `ops` instead
/// of by the database's size (tests).
fn read_ratarmount_within(index: &Path, shard_len: u64, ops: Option<u64>) -> Result<Vec<Member>> {
    let failed = sql(index);
    let (file, len) = binfmt_core::input::open(index)?;
    let limit = ratarmount_db_limit(shard_len);
    if len > limit {
        return Err(binfmt_core::Error::LimitExceeded {
            what: format!(
                "{}: a ratarmount index for a {shard_len}-byte shard",
                index.display()
            )
            .into(),
            value: len,
            limit,
        }
        .into());
    }
    // The SQLite header alone is 100 bytes.
    let size = usize::try_from(len)
        .ok()
        .filter(|&size| size >= 100)
        .ok_or_else(|| foreign(index, "not an SQLite database (too short)"))?;
    let mut db = rusqlite::Connection::open_in_memory().map_err(&failed)?;
    let string_limit = i32::try_from(2 * MAX_METADATA_SIZE + 1024).unwrap_or(i32::MAX);
    for (what, value) in [
        (Limit::SQLITE_LIMIT_LENGTH, string_limit),
        (Limit::SQLITE_LIMIT_ATTACHED, 0),
        (Limit::SQLITE_LIMIT_TRIGGER_DEPTH, 1),
    ] {
        db.set_limit(what, value).map_err(&failed)?;
    }
    db.pragma_update(None, "trusted_schema", false)
        .map_err(&failed)?;
    let budget = ops.unwrap_or(100_000_000 + 16 * len) / OPS_PER_CHECK as u64;
    let mut checks = 0u64;
    db.progress_handler(
        OPS_PER_CHECK,
        Some(move || {
            checks += 1;
            checks > budget
        }),
    );
    db.deserialize_read_exact(rusqlite::MAIN_DB, file, size, true)
        .map_err(&failed)?;
    db.pragma_update(None, "query_only", true)
        .map_err(&failed)?;
    check_files_table(&db, index)?;
    let max_files = shard_len / BLOCK;
    let mut query = db
        .prepare(
            "SELECT path, name, offset, size, issparse FROM files WHERE (mode & 61440) = 32768",
        )
        .map_err(&failed)?;
    let mut rows = query.query([]).map_err(&failed)?;
    let mut members = Vec::new();
    while let Some(row) = rows.next().map_err(&failed)? {
        if members.len() as u64 >= max_files {
            return Err(foreign(
                index,
                format!(
                    "more regular files than a {shard_len}-byte shard can hold ({max_files}, one 512-byte header each)"
                ),
            ));
        }
        let path: String = row.get(0).map_err(&failed)?;
        let name: String = row.get(1).map_err(&failed)?;
        let offset: i64 = row.get(2).map_err(&failed)?;
        let size: i64 = row.get(3).map_err(&failed)?;
        let sparse = row
            .get::<_, Option<bool>>(4)
            .map_err(&failed)?
            .unwrap_or(false);
        let full = format!("{path}/{name}").trim_start_matches('/').to_owned();
        if full.len() as u64 > MAX_METADATA_SIZE {
            return Err(foreign(
                index,
                format!(
                    "a name of {} bytes (the limit is {MAX_METADATA_SIZE})",
                    full.len()
                ),
            ));
        }
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
    members.sort_by_key(|member| member.offset);
    Ok(members)
}

/// Refuses a database whose `files` is anything but a plain table holding
/// the columns an import reads as stored columns: a view (which runs a
/// query of its author's choosing), a virtual table, a trigger on it, a
/// generated column.
fn check_files_table(db: &rusqlite::Connection, index: &Path) -> Result<()> {
    let failed = sql(index);
    let mut objects = db
        .prepare(
            "SELECT type, name, sql FROM sqlite_master \
             WHERE name = 'files' COLLATE NOCASE OR tbl_name = 'files' COLLATE NOCASE",
        )
        .map_err(&failed)?;
    let mut rows = objects.query([]).map_err(&failed)?;
    let mut table = false;
    while let Some(row) = rows.next().map_err(&failed)? {
        let kind: String = row.get(0).map_err(&failed)?;
        let name: String = row.get(1).map_err(&failed)?;
        let sql: Option<String> = row.get(2).map_err(&failed)?;
        let plain = sql
            .as_deref()
            .and_then(|sql| sql.trim_start().get(..12))
            .is_some_and(|head| head.eq_ignore_ascii_case("CREATE TABLE"));
        match kind.as_str() {
            "table" if plain => table = true,
            "index" => {}
            "table" => {
                return Err(foreign(
                    index,
                    "\"files\" is a virtual table, not a ratarmount index table",
                ));
            }
            _ => {
                return Err(foreign(
                    index,
                    format!(
                        "\"files\" has a {kind} ({name:?}): a ratarmount index has a plain table"
                    ),
                ));
            }
        }
    }
    if !table {
        return Err(foreign(index, "no \"files\" table: not a ratarmount index"));
    }
    let mut columns = db
        .prepare("SELECT name, hidden FROM pragma_table_xinfo('files')")
        .map_err(&failed)?;
    let columns: Vec<(String, i64)> = columns
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .map_err(&failed)?
        .collect::<std::result::Result<_, _>>()
        .map_err(&failed)?;
    for wanted in FILES_COLUMNS {
        match columns
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(wanted))
        {
            Some((_, 0)) => {}
            Some(_) => {
                return Err(foreign(
                    index,
                    format!("\"files\".{wanted:?} is a generated column, not stored data"),
                ));
            }
            None => {
                return Err(foreign(
                    index,
                    format!("\"files\" has no {wanted:?} column: not a ratarmount index"),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratarmount_paths_are_normalised() {
        assert_eq!(ratarmount_path("a.jpg"), (String::new(), "a.jpg".into()));
        assert_eq!(
            ratarmount_path("d/e/f.jpg"),
            ("/d/e".into(), "f.jpg".into())
        );
        assert_eq!(ratarmount_path("./d//x/../f"), ("/d".into(), "f".into()));
    }

    /// The progress handler stops SQLite once it has spent its operations:
    /// a plain table of 100,000 rows that are not regular files, read under
    /// a budget of 10⁵ operations, is an error naming the cause (under the
    /// default budget, its size's, it reads as no members).
    #[test]
    fn sqlite_work_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.index.sqlite");
        let db = rusqlite::Connection::open(&path).unwrap();
        db.execute_batch(
            "CREATE TABLE files (path TEXT, name TEXT, offset INTEGER, size INTEGER, \
             mode INTEGER, issparse BOOL); \
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000) \
             INSERT INTO files SELECT '', 'd' || i, i * 512, 0, 16877, 0 FROM n;",
        )
        .unwrap();
        drop(db);
        assert!(read_ratarmount(&path, 1 << 20).unwrap().is_empty());
        let error = read_ratarmount_within(&path, 1 << 20, Some(100_000)).unwrap_err();
        assert!(
            error.to_string().contains("more SQLite operations"),
            "{error}"
        );
    }
}
