//! `cargo xtask fixtures`: the files under `fixtures/generated/`, written by
//! this project's own writers.
//!
//! Everything here is a pure function of the code: no clock, no directory
//! walk, no hash-map order, no thread count reaches the bytes. A test
//! regenerates the set into a temporary directory and compares it byte for
//! byte with the committed one, so a writer change that moves a byte shows
//! up as a fixture diff to review.
//!
//! The README of the set is written from the same table that drives the
//! generation, so it cannot drift from the files.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use binfmt_tests::pseudo_random_bytes;

/// One generated file (or TARIDX fold) and what it exercises.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fixture {
    /// Path under the fixture directory; for a fold, the index.
    pub path: String,
    /// Named entries a reader should list, or `None` for a file that has no
    /// named entries.
    pub entries: Option<usize>,
    /// What the file is there to exercise.
    pub exercises: String,
}

/// Writes every fixture under `dir` (created if missing) and its README;
/// returns the table the README lists.
pub fn generate(dir: &Path) -> Result<Vec<Fixture>, String> {
    let mut fixtures = Vec::new();
    taridx_folds(&dir.join("taridx"), &mut fixtures)?;
    arcx_archives(&dir.join("arcx"), &mut fixtures)?;
    kast_stores(&dir.join("kast"), &mut fixtures)?;
    par4_files(&dir.join("par4"), &mut fixtures)?;
    let readme = dir.join("README.md");
    std::fs::write(&readme, readme_text(&fixtures)).map_err(|e| about(&readme, e))?;
    Ok(fixtures)
}

/// TARIDX folds made by `binfmt convert` from generated fixtures, kept in
/// `fixtures/reference/converted/` with the index the reference indexer
/// writes for their shards: (fold, source under `fixtures/generated/`,
/// shard size).
pub const CONVERTED_FOLDS: [(&str, &str, u64); 2] = [
    ("unicode", "arcx/unicode.spec.arcx", 4096),
    ("interleaved", "taridx/interleaved.taridx", 4096),
];

/// Converts each of [`CONVERTED_FOLDS`] from `generated` into `out`, shards
/// and index; returns the index paths.
pub fn convert_folds(generated: &Path, out: &Path) -> Result<Vec<PathBuf>, String> {
    create_dir(out)?;
    CONVERTED_FOLDS
        .iter()
        .map(|(fold, source, shard_size)| {
            let index = out.join(format!("{fold}.taridx"));
            let options = binfmt::ConvertOptions::default().shard_size(*shard_size);
            binfmt::convert(
                generated.join(source),
                &index,
                binfmt::Format::Taridx,
                &options,
            )
            .map_err(|e| e.to_string())?;
            Ok(index)
        })
        .collect()
}

fn about(path: &Path, error: impl std::fmt::Display) -> String {
    format!("{}: {error}", path.display())
}

fn create_dir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| about(dir, e))
}

/// The generator's own path for a fixture, relative to the set.
fn relative(path: &Path) -> String {
    let parts: Vec<String> = path
        .components()
        .rev()
        .take(2)
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.into_iter().rev().collect::<Vec<_>>().join("/")
}

fn record(fixtures: &mut Vec<Fixture>, path: &Path, entries: Option<usize>, exercises: &str) {
    fixtures.push(Fixture {
        path: relative(path),
        entries,
        exercises: exercises.to_owned(),
    });
}

/// Named bytes, in the order they are written.
type Entries = Vec<(String, Vec<u8>)>;

/// Entries with names that push every format's naming rules: non-ASCII,
/// nested, a ustar prefix split, a pax path, an empty entry. Stems and
/// extensions are unique, so the set also converts to TARIDX.
fn unicode_entries() -> Entries {
    vec![
        ("café/0001.txt".into(), "crème brûlée\n".as_bytes().to_vec()),
        ("日本/データ/0002.json".into(), br#"{"label": 2}"#.to_vec()),
        (
            format!("{}0003.bin", "nested/directory/".repeat(7)),
            pseudo_random_bytes(3, 700),
        ),
        (format!("{}0004.cls", "deep/".repeat(60)), b"4\n".to_vec()),
        ("empty/0005.txt".into(), Vec::new()),
    ]
}

fn taridx_folds(dir: &Path, fixtures: &mut Vec<Fixture>) -> Result<(), String> {
    create_dir(dir)?;
    let one = vec![("only/000000.txt".to_owned(), b"the only member\n".to_vec())];
    // Stems interleaved across three shards: a stem's rows are not
    // contiguous, and 000001 has members in every shard.
    let sample = |stem: u32, ext: &str, len: usize| {
        (
            format!("train/{stem:06}.{ext}"),
            pseudo_random_bytes(u64::from(stem) * 10 + ext.len() as u64, len),
        )
    };
    let interleaved = vec![
        vec![
            sample(1, "jpg", 1500),
            sample(2, "jpg", 700),
            sample(1, "json", 40),
        ],
        vec![
            sample(3, "jpg", 512),
            sample(2, "json", 41),
            sample(1, "cls", 2),
        ],
        vec![
            sample(3, "json", 39),
            sample(2, "cls", 2),
            sample(3, "cls", 0),
        ],
    ];
    let folds: [(&str, Vec<Entries>, &str); 4] = [
        (
            "empty",
            vec![Vec::new()],
            "an empty fold: one shard of two zero blocks, an index with no rows",
        ),
        ("one", vec![one], "one member in one shard"),
        (
            "unicode",
            vec![unicode_entries()],
            "non-ASCII and nested names, a ustar prefix/name split, a pax path record, an empty member",
        ),
        (
            "interleaved",
            interleaved,
            "three shards; stems interleaved so rows are not contiguous; payloads of 0, 512 and over 512 bytes",
        ),
    ];
    for (fold, shards, exercises) in folds {
        let mut paths = Vec::new();
        let mut count = 0;
        for (number, members) in shards.iter().enumerate() {
            let path = dir.join(binfmt_taridx::fold_shard_name(fold, number));
            let mut tar = binfmt_taridx::TarWriter::new(Vec::new());
            for (name, data) in members {
                tar.append_bytes(name, data).map_err(|e| about(&path, e))?;
            }
            let bytes = tar.finish().map_err(|e| about(&path, e))?;
            std::fs::write(&path, bytes).map_err(|e| about(&path, e))?;
            count += members.len();
            paths.push(path);
        }
        let index = binfmt_taridx::fold_index_path(dir, fold);
        binfmt_taridx::index_shards(&paths, binfmt_taridx::IndexOptions::default(), || {})
            .map_err(|e| about(&index, e))?
            .write_file(&index)
            .map_err(|e| about(&index, e))?;
        let shards = paths.len();
        record(
            fixtures,
            &index,
            Some(count),
            &format!(
                "{exercises} (shards `{}`{})",
                binfmt_taridx::fold_shard_name(fold, 0),
                if shards > 1 {
                    format!(" … `{}`", binfmt_taridx::fold_shard_name(fold, shards - 1))
                } else {
                    String::new()
                }
            ),
        );
    }
    Ok(())
}

fn arcx_archives(dir: &Path, fixtures: &mut Vec<Fixture>) -> Result<(), String> {
    create_dir(dir)?;
    // Small files share 1 KiB blocks; the large one is cut into 4 KiB
    // chunks, one block each; the text compresses, the noise is stored.
    let multi_block: Entries = vec![
        ("text/0001.txt".into(), b"compressible line\n".repeat(40)),
        ("noise/0002.bin".into(), pseudo_random_bytes(20, 600)),
        ("noise/0003.bin".into(), pseudo_random_bytes(21, 900)),
        ("large/0004.bin".into(), pseudo_random_bytes(22, 10_000)),
        ("text/0005.txt".into(), b"another line\n".repeat(3)),
    ];
    let sets: [(&str, Entries, &str); 4] = [
        ("empty", Vec::new(), "no files: an empty manifest"),
        (
            "one",
            vec![("only.txt".to_owned(), b"the only file\n".to_vec())],
            "one file in one block",
        ),
        (
            "unicode",
            unicode_entries(),
            "non-ASCII, nested and long paths, an empty file",
        ),
        (
            "multi_block",
            multi_block,
            "small files sharing 1 KiB blocks, a 10,000-byte file in three 4 KiB chunks, stored and zstd blocks",
        ),
    ];
    for (dialect, tag, about_dialect) in [
        (binfmt_arcx::Dialect::Spec, "spec", "the seed's layout"),
        (
            binfmt_arcx::Dialect::ArcxCli,
            "arcx-cli",
            "the layout `arcx` 0.3.0 reads",
        ),
    ] {
        for (name, files, exercises) in &sets {
            let path = dir.join(format!("{name}.{tag}.arcx"));
            let options = binfmt_arcx::PackOptions::default()
                .dialect(dialect)
                .block_size(1024)
                .chunk_size(4096)
                .jobs(Some(1));
            let mut packer =
                binfmt_arcx::Packer::create(&path, options).map_err(|e| about(&path, e))?;
            for (file, bytes) in files {
                packer
                    .add(file, &mut bytes.as_slice())
                    .map_err(|e| about(&path, e))?;
            }
            packer.commit().map_err(|e| about(&path, e))?;
            record(
                fixtures,
                &path,
                Some(files.len()),
                &format!("{exercises}; {about_dialect}"),
            );
        }
    }
    Ok(())
}

fn kast_stores(dir: &Path, fixtures: &mut Vec<Fixture>) -> Result<(), String> {
    create_dir(dir)?;
    let write = |name: &str, writer: &binfmt_kastore::Writer<'_>| -> Result<PathBuf, String> {
        let path = dir.join(name);
        writer.write_file(&path).map_err(|e| about(&path, e))?;
        Ok(path)
    };
    let failed = |e: binfmt_kastore::KastError| e.to_string();

    let path = write("empty.kas", &binfmt_kastore::Writer::new())?;
    record(fixtures, &path, Some(0), "no keys: a header only");

    let mut writer = binfmt_kastore::Writer::new();
    writer.insert("only", &[1u32, 2, 3][..]).map_err(failed)?;
    let path = write("one.kas", &writer)?;
    record(fixtures, &path, Some(1), "one uint32 array");

    let mut writer = binfmt_kastore::Writer::new();
    writer
        .insert("int8", &[i8::MIN, -1, 0, 1, i8::MAX][..])
        .map_err(failed)?;
    writer
        .insert("uint8", &[0u8, 1, 254, u8::MAX][..])
        .map_err(failed)?;
    writer
        .insert("int16", &[i16::MIN, -1, 0, i16::MAX][..])
        .map_err(failed)?;
    writer
        .insert("uint16", &[0u16, u16::MAX][..])
        .map_err(failed)?;
    writer
        .insert("int32", &[i32::MIN, -1, 0, i32::MAX][..])
        .map_err(failed)?;
    writer
        .insert("uint32", &[0u32, u32::MAX][..])
        .map_err(failed)?;
    writer
        .insert("int64", &[i64::MIN, -1, 0, i64::MAX][..])
        .map_err(failed)?;
    writer
        .insert("uint64", &[0u64, u64::MAX][..])
        .map_err(failed)?;
    writer
        .insert(
            "float32",
            &[
                0.0f32,
                -0.0,
                1.5,
                f32::MIN_POSITIVE,
                f32::INFINITY,
                f32::NAN,
            ][..],
        )
        .map_err(failed)?;
    writer
        .insert(
            "float64",
            &[0.0f64, -2.25, f64::MAX, f64::NEG_INFINITY, f64::NAN][..],
        )
        .map_err(failed)?;
    writer
        .insert("empty/float64", &[] as &[f64])
        .map_err(failed)?;
    let path = write("types.kas", &writer)?;
    record(
        fixtures,
        &path,
        Some(11),
        "every element type with its extremes (NaN, ±infinity, −0.0), an empty array",
    );

    let mut writer = binfmt_kastore::Writer::new();
    for (key, value) in unicode_entries() {
        writer
            .insert_raw(key.as_bytes(), binfmt_kastore::ItemType::Uint8, value)
            .map_err(failed)?;
    }
    let path = write("unicode.kas", &writer)?;
    record(
        fixtures,
        &path,
        Some(5),
        "non-ASCII, nested and long keys, an empty uint8 array",
    );
    Ok(())
}

fn par4_files(dir: &Path, fixtures: &mut Vec<Fixture>) -> Result<(), String> {
    create_dir(dir)?;
    let write_map = |name: &str,
                     map: &HashMap<String, Vec<u8>>,
                     layout: binfmt_parcode::MapLayout,
                     compression: binfmt_parcode::Compression|
     -> Result<PathBuf, String> {
        let path = dir.join(name);
        let mut graph = binfmt_parcode::ChunkGraph::new();
        let root = graph.map(map, layout).map_err(|e| about(&path, e))?;
        graph
            .write_file(root, compression, &path)
            .map_err(|e| about(&path, e))?;
        Ok(path)
    };
    let none = binfmt_parcode::Compression::None;
    let buckets = binfmt_parcode::MapLayout::Buckets;

    let path = write_map("empty_map.par4", &HashMap::new(), buckets, none)?;
    record(
        fixtures,
        &path,
        Some(0),
        "an empty map: a container with no buckets",
    );

    let one = HashMap::from([("only.txt".to_owned(), b"the only entry\n".to_vec())]);
    let path = write_map("one.par4", &one, buckets, none)?;
    record(fixtures, &path, Some(1), "one entry in one bucket");

    let unicode: HashMap<String, Vec<u8>> = unicode_entries().into_iter().collect();
    let path = write_map("unicode.par4", &unicode, buckets, none)?;
    record(
        fixtures,
        &path,
        Some(5),
        "non-ASCII, nested and long keys, an empty value",
    );
    let path = write_map(
        "unicode_lz4.par4",
        &unicode,
        buckets,
        binfmt_parcode::Compression::Lz4,
    )?;
    record(fixtures, &path, Some(5), "the same map with LZ4 chunks");
    let path = write_map(
        "unicode_inline.par4",
        &unicode,
        binfmt_parcode::MapLayout::Inline,
        none,
    )?;
    record(
        fixtures,
        &path,
        Some(5),
        "the same map inline: one chunk, as the reference writes a map saved directly",
    );

    let many: HashMap<String, Vec<u8>> = (0..4100u32)
        .map(|n| (format!("k/{n:04}"), vec![(n % 251) as u8]))
        .collect();
    let path = write_map("buckets.par4", &many, buckets, none)?;
    record(
        fixtures,
        &path,
        Some(4100),
        "4,100 entries in two buckets, keys spread by hash",
    );

    let items: Vec<u64> = (0..3000).map(|n| n * n).collect();
    let path = dir.join("vec_u64.par4");
    let mut graph = binfmt_parcode::ChunkGraph::new();
    let root = graph
        .vec_with_shard_len(&items, 1024)
        .map_err(|e| about(&path, e))?;
    graph
        .write_file(root, none, &path)
        .map_err(|e| about(&path, e))?;
    record(
        fixtures,
        &path,
        None,
        "a `Vec<u64>` in three shards: a PAR4 file with no named entries",
    );

    let path = dir.join("derived.par4");
    let bytes = binfmt_parcode::Parcode::serialize(&binfmt_tests::par4::shapes::shelf(40))
        .map_err(|e| about(&path, e))?;
    std::fs::write(&path, bytes).map_err(|e| about(&path, e))?;
    record(
        fixtures,
        &path,
        None,
        "a `#[derive(ParcodeObject)]` struct (`binfmt_tests::par4::shapes::Shelf`): a `Vec` of structs with chunkable fields, a `#[parcode(map)]` map of struct values, a nested struct",
    );
    Ok(())
}

/// The first line of the generated README, by which the task knows a
/// directory it may replace.
pub const README_TITLE: &str = "# fixtures/generated/\n";

fn readme_text(fixtures: &[Fixture]) -> String {
    let mut text = String::from(README_TITLE);
    text.push_str(
        "\n\
         Written by this project's own writers with `cargo xtask fixtures`;\n\
         `xtask/tests/fixtures.rs` regenerates them and compares byte for byte.\n\
         Do not edit: this file is generated too.\n\n\
         | file | entries | exercises |\n|---|---:|---|\n",
    );
    for fixture in fixtures {
        let entries = fixture
            .entries
            .map_or_else(|| "none".to_owned(), |count| count.to_string());
        let _ = writeln!(
            text,
            "| `{}` | {entries} | {} |",
            fixture.path, fixture.exercises
        );
    }
    text
}
