//! `binfmt convert` against the reference tools: a tree converted to each
//! format is read back by that format's reference implementation and every
//! entry compared. ARCX (arcx-cli dialect) extracts with `arcx` 0.3.0, KAST
//! loads with Python `kastore`, PAR4 loads with `parcode` 0.6.1, TARIDX
//! shards extract with `tar -x`. (The TARIDX index against the reference
//! indexer is `xtask/tests/converted_folds.rs`.)

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::Command;

use binfmt::{ConvertOptions, Format, convert};
use binfmt_tests::interop::{arcx, python, python_script};
use binfmt_tests::{pseudo_random_bytes, write_tree};

/// An empty entry, a large one, unicode names, nested paths and 1,000
/// small entries, packed as an ARCX archive to convert from.
fn source(dir: &Path) -> (std::path::PathBuf, BTreeMap<String, Vec<u8>>) {
    let mut files: Vec<(String, Vec<u8>)> = vec![
        ("empty.txt".into(), Vec::new()),
        ("large/blob.bin".into(), pseudo_random_bytes(5, 2_500_000)),
        ("caf\u{e9}/men\u{fc}.txt".into(), "crème\n".into()),
        ("日本/データ/表.json".into(), br#"{"a": 1}"#.to_vec()),
        ("a/b/c/d/e/f/deep.txt".into(), b"deep\n".to_vec()),
    ];
    files.extend((0..1000).map(|i| (format!("small/{i:04}.txt"), format!("{i}\n").into_bytes())));
    let tree = dir.join("tree");
    let written = write_tree(&tree, files);
    let archive = dir.join("source.arcx");
    binfmt_arcx::pack_dir(&tree, &archive, binfmt_arcx::PackOptions::default(), |_| {}).unwrap();
    (archive, written)
}

fn converted(
    dir: &Path,
    output: &str,
    to: Format,
) -> (std::path::PathBuf, BTreeMap<String, Vec<u8>>) {
    let (archive, files) = source(dir);
    let output = dir.join(output);
    let options = ConvertOptions::default()
        .arcx_dialect(binfmt_arcx::Dialect::ArcxCli)
        .shard_size(1 << 20);
    convert(&archive, &output, to, &options).unwrap();
    (output, files)
}

fn assert_same_tree(extracted: &Path, files: &BTreeMap<String, Vec<u8>>, what: &str) {
    for (name, bytes) in files {
        let got =
            std::fs::read(extracted.join(name)).unwrap_or_else(|e| panic!("{what}: {name}: {e}"));
        assert!(got == *bytes, "{what}: {name} differs");
    }
}

#[test]
fn arcx_extracts_our_arcx_cli_conversion() {
    let Some(tool) = arcx() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (archive, files) = converted(dir.path(), "converted.arcx", Format::Arcx);
    let extracted = dir.path().join("extracted");
    let output = Command::new(tool)
        .arg("extract")
        .arg(&archive)
        .arg(&extracted)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_same_tree(&extracted, &files, "arcx extract");
}

#[test]
fn python_kastore_loads_our_kast_conversion() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (store, files) = converted(dir.path(), "converted.kas", Format::Kast);
    let output = Command::new(python)
        .arg(python_script("kastore_interop.py"))
        .arg("read")
        .arg(&store)
        .arg("1")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let arrays: Vec<(String, String, String)> = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(arrays.len(), files.len());
    for (key, dtype, hex) in arrays {
        assert_eq!(dtype, "uint8", "{key}");
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        assert!(files[&key] == bytes, "{key} differs");
    }
}

#[test]
fn parcode_loads_our_par4_conversion() {
    let dir = tempfile::tempdir().unwrap();
    let (file, files) = converted(dir.path(), "converted.par4", Format::Par4);
    let loaded: HashMap<String, Vec<u8>> = parcode::Parcode::load(&file).unwrap();
    assert_eq!(loaded.len(), files.len());
    for (name, bytes) in &files {
        assert!(loaded[name] == *bytes, "{name} differs");
    }
}

#[test]
fn tar_extracts_our_taridx_conversion() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("fold")).unwrap();
    let (index, files) = converted(dir.path(), "fold/train.taridx", Format::Taridx);
    let shards = binfmt_taridx::fold_shards(index.parent().unwrap(), "train").unwrap();
    // 2.5 MB of entries in 1 MiB shards, the large entry alone in its own.
    assert!(shards.len() >= 3, "{shards:?}");
    let extracted = dir.path().join("extracted");
    std::fs::create_dir(&extracted).unwrap();
    for shard in &shards {
        let status = Command::new("tar")
            .arg("-xf")
            .arg(shard)
            .arg("-C")
            .arg(&extracted)
            .status()
            .unwrap();
        assert!(status.success(), "tar -xf {}", shard.display());
    }
    assert_same_tree(&extracted, &files, "tar -x");
}
