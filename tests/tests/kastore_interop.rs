//! KAST against the Python `kastore` 0.3.6 package, both directions: files
//! it writes (both engines) read identically here, and files written here
//! load identically there and are byte-identical to its own dump.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::Path;
use std::process::Command;

use binfmt_kastore::{ItemType, Store, Writer};
use binfmt_tests::interop::{python, python_script};
use binfmt_tests::pseudo_random_bytes as bytes;

/// One array: key, type, little-endian bytes.
type Array = (String, ItemType, Vec<u8>);

fn all_types(prefix: &str, elements: usize) -> Vec<Array> {
    ItemType::ALL
        .iter()
        .enumerate()
        .map(|(i, &t)| {
            (
                format!("{prefix}{}", t.name()),
                t,
                bytes(i as u64, elements * t.size() as usize),
            )
        })
        .collect()
}

fn data_sets() -> Vec<(&'static str, Vec<Array>)> {
    let unicode = ["café", "日本語/キー", "emoji 🎉", "Ωmega", "a b\tc"]
        .iter()
        .enumerate()
        .map(|(i, key)| {
            (
                key.to_string(),
                ItemType::ALL[i % 10],
                bytes(100 + i as u64, 3 * ItemType::ALL[i % 10].size() as usize),
            )
        })
        .collect();
    let hundreds = (0..700)
        .map(|i| {
            let t = ItemType::ALL[i % 10];
            (
                format!("tables/t{i:04}/column"),
                t,
                bytes(1000 + i as u64, (i % 17) * t.size() as usize),
            )
        })
        .collect();
    vec![
        ("empty", Vec::new()),
        ("zero-elements", all_types("", 0)),
        ("one-element", all_types("x/", 1)),
        ("many-elements", all_types("big_", 10_000)),
        ("unicode-keys", unicode),
        ("hundreds-of-keys", hundreds),
    ]
}

fn spec_json(arrays: &[Array]) -> String {
    let spec: Vec<serde_json::Value> = arrays
        .iter()
        .map(|(key, t, data)| serde_json::json!([key, t.name(), hex(data)]))
        .collect();
    serde_json::to_string(&spec).unwrap()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn run_python(python: &Path, args: &[&std::ffi::OsStr]) -> Vec<u8> {
    let output = Command::new(python)
        .arg(python_script("kastore_interop.py"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "python {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

fn write_with_rust(arrays: &[Array], path: &Path) {
    let mut writer = Writer::new();
    for (key, t, data) in arrays {
        writer.insert_raw(key, *t, data.as_slice()).unwrap();
    }
    writer.write_file(path).unwrap();
}

fn sorted(arrays: &[Array]) -> Vec<Array> {
    let mut arrays = arrays.to_vec();
    arrays.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    arrays
}

#[test]
fn python_files_read_identically_and_match_our_bytes() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    for (name, arrays) in data_sets() {
        let spec = dir.path().join(format!("{name}.json"));
        std::fs::write(&spec, spec_json(&arrays)).unwrap();
        let ours = dir.path().join(format!("{name}.rust.kas"));
        write_with_rust(&arrays, &ours);
        let our_bytes = std::fs::read(&ours).unwrap();
        for engine in ["python", "c"] {
            let theirs = dir.path().join(format!("{name}.{engine}.kas"));
            run_python(
                &python,
                &[
                    "write".as_ref(),
                    spec.as_os_str(),
                    theirs.as_os_str(),
                    engine.as_ref(),
                ],
            );
            let store = Store::open(&theirs).unwrap();
            let read: Vec<Array> = store
                .items()
                .map(|item| {
                    (
                        item.key_str().unwrap().to_owned(),
                        item.item_type(),
                        item.le_bytes().unwrap().to_vec(),
                    )
                })
                .collect();
            assert_eq!(read, sorted(&arrays), "{name}, engine {engine}: contents");
            assert!(
                std::fs::read(&theirs).unwrap() == our_bytes,
                "{name}, engine {engine}: bytes differ from ours"
            );
        }
    }
}

#[test]
fn our_files_load_identically_in_python() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    for (name, arrays) in data_sets() {
        let ours = dir.path().join(format!("{name}.kas"));
        write_with_rust(&arrays, &ours);
        let expected: Vec<serde_json::Value> = sorted(&arrays)
            .iter()
            .map(|(key, t, data)| serde_json::json!([key, t.name(), hex(data)]))
            .collect();
        for read_all in ["0", "1"] {
            let json = run_python(
                &python,
                &["read".as_ref(), ours.as_os_str(), read_all.as_ref()],
            );
            let seen: Vec<serde_json::Value> = serde_json::from_slice(&json).unwrap();
            assert_eq!(seen, expected, "{name}, read_all={read_all}");
        }
    }
}

#[test]
fn more_than_65535_items_match_the_c_engine() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let arrays: Vec<Array> = (0..70_000)
        .map(|i| (format!("k{i}"), ItemType::Uint8, vec![(i % 251) as u8]))
        .collect();
    let spec = dir.path().join("many.json");
    std::fs::write(&spec, spec_json(&arrays)).unwrap();
    let theirs = dir.path().join("many.c.kas");
    run_python(
        &python,
        &[
            "write".as_ref(),
            spec.as_os_str(),
            theirs.as_os_str(),
            "c".as_ref(),
        ],
    );
    let ours = dir.path().join("many.rust.kas");
    write_with_rust(&arrays, &ours);
    assert!(std::fs::read(&theirs).unwrap() == std::fs::read(&ours).unwrap());
    assert_eq!(Store::open(&ours).unwrap().len(), 70_000);
}
