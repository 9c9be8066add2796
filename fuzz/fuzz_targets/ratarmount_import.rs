//! A ratarmount SQLite index (`taridx import ratarmount`), structure-aware:
//! a database made from arbitrary rows in ratarmount's `files` table, or
//! with `files` replaced by a view or a table of other columns, or extra
//! triggers. Reading it is bounded (rows, name lengths, SQLite's work) and
//! never panics; it yields no more members than the shard can hold.
#![no_main]

use arbitrary::Arbitrary;

#[derive(Debug, Arbitrary)]
struct FileRow {
    path: String,
    name: String,
    offsetheader: i64,
    offset: i64,
    size: i64,
    mode: i64,
    issparse: bool,
}

#[derive(Debug, Arbitrary)]
enum Shape {
    /// ratarmount's own `files` table.
    Table,
    /// `files` as a view over a table of the rows (code SQLite runs).
    View,
    /// A table with the columns renamed or missing.
    OtherColumns,
    /// ratarmount's table, plus a recursive view defined beside it.
    WithRecursiveView,
}

#[derive(Debug, Arbitrary)]
struct Input {
    shape: Shape,
    rows: Vec<FileRow>,
    shard_len: u32,
}

const FILES: &str = r#"CREATE TABLE "files" (
    "path" VARCHAR(65535) NOT NULL, "name" VARCHAR(65535) NOT NULL,
    "offsetheader" INTEGER, "offset" INTEGER, "size" INTEGER, "mtime" REAL,
    "mode" INTEGER, "type" INTEGER, "linkname" VARCHAR(65535), "uid" INTEGER,
    "gid" INTEGER, "istar" BOOL, "issparse" BOOL, "isgenerated" BOOL,
    "recursiondepth" INTEGER, PRIMARY KEY ("path","name","offsetheader"))"#;

fn build(path: &std::path::Path, input: &Input) -> rusqlite::Result<()> {
    let db = rusqlite::Connection::open(path)?;
    let table = match input.shape {
        Shape::View => {
            db.execute_batch(&FILES.replace("\"files\"", "\"rows\""))?;
            db.execute_batch("CREATE VIEW files AS SELECT * FROM rows")?;
            "rows"
        }
        Shape::OtherColumns => {
            db.execute_batch(
                "CREATE TABLE files (path TEXT, name TEXT, offsetheader INTEGER, offset INTEGER, size INTEGER)",
            )?;
            "files"
        }
        Shape::Table | Shape::WithRecursiveView => {
            db.execute_batch(FILES)?;
            if matches!(input.shape, Shape::WithRecursiveView) {
                db.execute_batch(
                    "CREATE VIEW spin AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c",
                )?;
            }
            "files"
        }
    };
    for row in input.rows.iter().take(64) {
        let sql = if table == "files" && matches!(input.shape, Shape::OtherColumns) {
            "INSERT OR IGNORE INTO files (path, name, offsetheader, offset, size) VALUES (?1, ?2, ?3, ?4, ?5)"
                .to_owned()
        } else {
            format!(
                "INSERT OR IGNORE INTO {table} (path, name, offsetheader, offset, size, mode, issparse) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
            )
        };
        let mut statement = db.prepare(&sql)?;
        if matches!(input.shape, Shape::OtherColumns) {
            statement.execute(rusqlite::params![row.path, row.name, row.offsetheader, row.offset, row.size])?;
        } else {
            statement.execute(rusqlite::params![
                row.path,
                row.name,
                row.offsetheader,
                row.offset,
                row.size,
                row.mode,
                row.issparse
            ])?;
        }
    }
    Ok(())
}

libfuzzer_sys::fuzz_target!(|input: Input| {
    let Ok(dir) = tempfile::tempdir() else { return };
    let db = dir.path().join("shard.tar.index.sqlite");
    if build(&db, &input).is_err() {
        return;
    }
    let shard_len = u64::from(input.shard_len);
    if let Ok(members) = binfmt_taridx::foreign::read_ratarmount(&db, shard_len) {
        // The rows are checked against the shard by the caller (import
        // verifies every row's tar header); here, only their number is
        // bounded by what the shard can hold.
        assert!(members.len() as u64 <= shard_len / 512);
    }
});
