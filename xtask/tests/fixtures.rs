//! `fixtures/generated/` is exactly what `cargo xtask fixtures` writes, and
//! every file in it holds what its README line says.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use xtask::fixtures::{Fixture, generate};

fn committed() -> PathBuf {
    binfmt_tests::workspace_root().join("fixtures/generated")
}

/// Every file under `dir`, by path relative to it.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut found = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(directory) = stack.pop() {
        for entry in std::fs::read_dir(&directory).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let name = path
                    .strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                found.insert(name, std::fs::read(&path).unwrap());
            }
        }
    }
    found
}

fn regenerated() -> (tempfile::TempDir, Vec<Fixture>) {
    let dir = tempfile::tempdir().unwrap();
    let table = generate(dir.path()).unwrap();
    (dir, table)
}

#[test]
fn regenerating_gives_the_committed_bytes() {
    let (dir, _) = regenerated();
    let fresh = files(dir.path());
    let committed = files(&committed());
    assert_eq!(
        fresh.keys().collect::<Vec<_>>(),
        committed.keys().collect::<Vec<_>>(),
        "the set of files differs: run `cargo xtask fixtures`"
    );
    for (name, bytes) in &fresh {
        assert!(
            committed[name] == *bytes,
            "{name} differs from the committed fixture: run `cargo xtask fixtures` and review the diff"
        );
    }
}

#[test]
fn every_fixture_opens_lists_and_verifies_as_its_readme_says() {
    let (dir, table) = regenerated();
    assert!(table.len() >= 20);
    for fixture in &table {
        let path = dir.path().join(&fixture.path);
        match fixture.entries {
            Some(count) => {
                let source =
                    binfmt::open(&path).unwrap_or_else(|e| panic!("{}: {e}", fixture.path));
                assert_eq!(source.list().unwrap().len(), count, "{}", fixture.path);
                source
                    .verify()
                    .unwrap_or_else(|e| panic!("{}: {e}", fixture.path));
            }
            None => {
                let error = binfmt::open(&path)
                    .and_then(|source| source.list())
                    .unwrap_err();
                assert!(
                    error.to_string().contains("no named entries"),
                    "{}: {error}",
                    fixture.path
                );
            }
        }
    }
    let readme = std::fs::read_to_string(dir.path().join("README.md")).unwrap();
    for fixture in &table {
        assert!(readme.contains(&format!("`{}`", fixture.path)));
    }
}

#[test]
fn the_edge_cases_are_really_there() {
    let (dir, _) = regenerated();
    let dir = dir.path();

    // TARIDX: a pax path record and a ustar prefix split in the unicode shard.
    let shard = std::fs::read(dir.join("taridx/unicode_0000.tar")).unwrap();
    let headers: Vec<&[u8]> = shard
        .chunks(512)
        .filter(|b| &b[257..262] == b"ustar")
        .collect();
    assert!(headers.iter().any(|h| h[156] == b'x'), "no pax header");
    assert!(
        headers.iter().any(|h| h[156] == b'0' && h[345] != 0),
        "no ustar prefix"
    );
    // Non-contiguous: some stem's rows are separated by another stem's.
    let index = binfmt_taridx::Index::open(dir.join("taridx/interleaved.taridx")).unwrap();
    let stems: Vec<u64> = index
        .rows()
        .unwrap()
        .iter()
        .map(|row| row.keyhash.get())
        .collect();
    let contiguous = stems
        .iter()
        .enumerate()
        .all(|(i, stem)| !stems[..i].contains(stem) || stems[i - 1] == *stem);
    assert!(!contiguous, "the interleaved fold's rows are contiguous");
    assert_eq!(
        index.rows().unwrap().iter().map(|row| row.fid.get()).max(),
        Some(2)
    );

    // ARCX: several blocks, both codecs, a file in three chunks; both dialects.
    for (file, dialect) in [
        ("arcx/multi_block.spec.arcx", binfmt_arcx::Dialect::Spec),
        (
            "arcx/multi_block.arcx-cli.arcx",
            binfmt_arcx::Dialect::ArcxCli,
        ),
    ] {
        let archive = binfmt_arcx::Archive::open(dir.join(file)).unwrap();
        assert_eq!(archive.dialect(), dialect, "{file}");
        let manifest = archive.manifest();
        let codecs: Vec<_> = manifest.blocks().iter().map(|block| block.codec).collect();
        assert!(
            codecs.contains(&binfmt_arcx::Codec::Store),
            "{file}: {codecs:?}"
        );
        assert!(
            codecs.contains(&binfmt_arcx::Codec::Zstd),
            "{file}: {codecs:?}"
        );
        let large = archive.find("large/0004.bin").unwrap();
        assert_eq!(large.chunk_ids().len(), 3, "{file}");
    }

    // KAST: every type, the extremes, an empty array.
    let store = binfmt_kastore::Store::open(dir.join("kast/types.kas")).unwrap();
    assert_eq!(store.items().count(), 11);
    assert_eq!(
        store.array::<i64>("int64").unwrap().to_vec(),
        [i64::MIN, -1, 0, i64::MAX]
    );
    assert!(store.get("empty/float64").unwrap().is_empty());
    let float64 = store.array::<f64>("float64").unwrap().to_vec();
    assert!(float64[4].is_nan() && float64[3] == f64::NEG_INFINITY);

    // PAR4: two buckets; LZ4 chunks; an inline map; a sharded vector.
    let buckets = binfmt_parcode::ParFile::open(dir.join("par4/buckets.par4")).unwrap();
    assert_eq!(buckets.root().unwrap().child_count(), 2);
    let lz4 = binfmt_parcode::ParFile::open(dir.join("par4/unicode_lz4.par4")).unwrap();
    assert!(
        lz4.root()
            .unwrap()
            .children()
            .unwrap()
            .iter()
            .all(|chunk| chunk.compression() == binfmt_parcode::Compression::Lz4)
    );
    let inline = binfmt_parcode::ParFile::open(dir.join("par4/unicode_inline.par4")).unwrap();
    let map = binfmt_parcode::LazyMap::<String, Vec<u8>>::new(inline.root().unwrap()).unwrap();
    assert!(map.is_inline());
    let vector = binfmt_parcode::ParFile::open(dir.join("par4/vec_u64.par4")).unwrap();
    let lazy = binfmt_parcode::LazyVec::<u64>::new(vector.root().unwrap()).unwrap();
    assert_eq!(lazy.shard_count(), 3);
    assert_eq!(lazy.get(2999).unwrap(), 2999 * 2999);
}

#[test]
fn the_reference_parcode_loads_the_generated_maps() {
    let (dir, _) = regenerated();
    for file in [
        "empty_map.par4",
        "one.par4",
        "unicode.par4",
        "unicode_lz4.par4",
        "unicode_inline.par4",
        "buckets.par4",
    ] {
        let path = dir.path().join("par4").join(file);
        let loaded: std::collections::HashMap<String, Vec<u8>> =
            parcode::Parcode::load(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
        let source = binfmt::open(&path).unwrap();
        let ours = source.list().unwrap();
        assert_eq!(loaded.len(), ours.len(), "{file}");
        for entry in ours {
            assert_eq!(
                loaded[&entry.name],
                source.read(&entry.name).unwrap(),
                "{file}"
            );
        }
    }
}
