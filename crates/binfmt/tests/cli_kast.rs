//! `binfmt kast ...`, run as a real process; output compared with the
//! `kastore` Python CLI where it has the same command.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use binfmt_tests::cli::{self, text};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use binfmt_kastore::{ItemType, Store, Writer};
use binfmt_tests::interop::python;

fn binfmt(args: &[&str]) -> Output {
    cli::run(env!("CARGO_BIN_EXE_binfmt"), args)
}

fn binfmt_with_stdin(args: &[&str], stdin: &[u8]) -> Output {
    cli::run_with_stdin(env!("CARGO_BIN_EXE_binfmt"), args, stdin)
}

/// A store with every type, awkward float values, and a unicode key.
fn sample(dir: &Path) -> PathBuf {
    let floats = [
        0.0,
        -0.0,
        0.1,
        1.0 / 3.0,
        1e-4,
        1e-5,
        123_456_789.0,
        1e15,
        1e16,
        -2.5e-300,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        999_999.0,
        1e6,
    ];
    let floats32: Vec<f32> = floats.iter().map(|&f| f as f32).collect();
    let mut writer = Writer::new();
    writer.insert("f64", &floats[..]).unwrap();
    writer.insert("f32", floats32).unwrap();
    writer.insert("i8", vec![i8::MIN, -1, 0, i8::MAX]).unwrap();
    writer.insert("u8", vec![0u8, 255]).unwrap();
    writer.insert("i16", vec![i16::MIN, i16::MAX]).unwrap();
    writer.insert("u16", vec![u16::MAX]).unwrap();
    writer.insert("i32", vec![i32::MIN, 7]).unwrap();
    writer.insert("u32", vec![u32::MAX]).unwrap();
    writer.insert("i64", vec![i64::MIN, i64::MAX]).unwrap();
    writer.insert("u64", vec![u64::MAX, 0]).unwrap();
    writer.insert("empty", Vec::<u32>::new()).unwrap();
    writer.insert("clé/données", vec![1u8; 3000]).unwrap();
    let path = dir.join("sample.kas");
    writer.write_file(&path).unwrap();
    path
}

#[test]
fn ls_forms() {
    let dir = tempfile::tempdir().unwrap();
    let path = sample(dir.path());
    let path = path.to_str().unwrap();
    let output = binfmt(&["kast", "ls", path]);
    assert!(output.status.success());
    assert_eq!(
        text(&output.stdout),
        "clé/données\nempty\nf32\nf64\ni16\ni32\ni64\ni8\nu16\nu32\nu64\nu8\n"
    );

    let long = text(&binfmt(&["kast", "ls", "-l", path]).stdout);
    assert_eq!(
        long.lines().next().unwrap(),
        "uint8   3000 3000 clé/données"
    );
    assert_eq!(long.lines().nth(1).unwrap(), "uint32     0    0 empty");

    let json: serde_json::Value =
        serde_json::from_slice(&binfmt(&["kast", "ls", "--json", path]).stdout).unwrap();
    assert_eq!(
        json[0],
        serde_json::json!({"key": "clé/données", "type": "uint8", "length": 3000, "bytes": 3000})
    );
    assert_eq!(json.as_array().unwrap().len(), 12);
}

#[test]
fn output_matches_the_python_cli() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = sample(dir.path());
    let python_cli = |args: &[&str]| {
        let output = Command::new(&python)
            .args(["-m", "kastore"])
            .args(args)
            .arg(&path)
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", text(&output.stderr));
        text(&output.stdout)
    };
    let ours = |args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_binfmt"))
            .arg("kast")
            .args(args)
            .arg(&path)
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", text(&output.stderr));
        text(&output.stdout)
    };
    assert_eq!(ours(&["ls"]), python_cli(&["ls"]));
    assert_eq!(ours(&["ls", "-l"]), python_cli(&["ls", "-l"]));
    assert_eq!(ours(&["ls", "-l", "-H"]), python_cli(&["ls", "-l", "-H"]));
    let store = Store::open(&path).unwrap();
    for item in store.items() {
        let key = item.key_str().unwrap();
        let output = Command::new(&python)
            .args(["-m", "kastore", "dump"])
            .arg(&path)
            .arg(key)
            .output()
            .unwrap();
        let theirs = text(&output.stdout);
        let output = Command::new(env!("CARGO_BIN_EXE_binfmt"))
            .args(["kast", "dump"])
            .arg(&path)
            .arg(key)
            .output()
            .unwrap();
        assert_eq!(text(&output.stdout), theirs, "dump {key}");
    }
}

#[test]
fn dump_raw_and_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let path = sample(dir.path());
    let raw = binfmt(&["kast", "dump", "--raw", path.to_str().unwrap(), "i32"]);
    assert!(raw.status.success());
    assert_eq!(
        raw.stdout,
        [i32::MIN.to_le_bytes(), 7i32.to_le_bytes()].concat()
    );

    let bytes = std::fs::read(&path).unwrap();
    let piped = binfmt_with_stdin(&["kast", "dump", "-", "u16"], &bytes);
    assert_eq!(text(&piped.stdout), "65535\n");
}

#[test]
fn info_text_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let path = sample(dir.path());
    let size = std::fs::metadata(&path).unwrap().len();
    let json: serde_json::Value =
        serde_json::from_slice(&binfmt(&["kast", "info", "--json", path.to_str().unwrap()]).stdout)
            .unwrap();
    assert_eq!(json["version"], "1.0");
    assert_eq!(json["items"], 12);
    assert_eq!(json["file_size"], size);
    let info = text(&binfmt(&["kast", "info", path.to_str().unwrap()]).stdout);
    assert!(
        info.contains("items: 12\n") && info.contains(&format!("file size: {size} bytes\n")),
        "{info}"
    );
}

#[test]
fn pack_stores_files_as_uint8_arrays() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("input.bin");
    std::fs::write(&input, b"\x00\x01binary\xff").unwrap();
    let out = dir.path().join("packed.kas");
    let output = binfmt_with_stdin(
        &[
            "kast",
            "pack",
            out.to_str().unwrap(),
            "--uint8",
            &format!("file={}", input.display()),
            "--uint8",
            "stdin=-",
        ],
        b"from stdin",
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let store = Store::open(&out).unwrap();
    assert_eq!(store.get("file").unwrap().item_type(), ItemType::Uint8);
    assert_eq!(store.get("file").unwrap().le_bytes(), b"\x00\x01binary\xff");
    assert_eq!(store.get("stdin").unwrap().le_bytes(), b"from stdin");
}

#[test]
fn errors_and_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let path = sample(dir.path());
    let path = path.to_str().unwrap();

    let missing_key = binfmt(&["kast", "dump", path, "nope"]);
    assert_eq!(missing_key.status.code(), Some(1));
    assert_eq!(
        text(&missing_key.stderr),
        format!("binfmt: {path}: key \"nope\" not found\n")
    );

    let bad = dir.path().join("bad.kas");
    let mut bytes = std::fs::read(path).unwrap();
    bytes[64] = 11; // first descriptor's type
    std::fs::write(&bad, &bytes).unwrap();
    let output = binfmt(&["kast", "ls", bad.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        text(&output.stderr),
        format!(
            "binfmt: {}: item 0: unknown type id 11 (valid ids are 0..=9)\n",
            bad.display()
        )
    );

    let absent = binfmt(&["kast", "info", "/nonexistent/x.kas"]);
    assert_eq!(absent.status.code(), Some(1));
    assert_eq!(
        text(&absent.stderr).matches("/nonexistent/x.kas").count(),
        1
    );

    let duplicate = binfmt_with_stdin(
        &[
            "kast",
            "pack",
            dir.path().join("d.kas").to_str().unwrap(),
            "--uint8",
            "k=-",
            "--uint8",
            "k=-",
        ],
        b"",
    );
    assert_eq!(duplicate.status.code(), Some(1));
    assert!(!dir.path().join("d.kas").exists());

    assert_eq!(
        binfmt(&["kast", "pack", "out.kas", "--uint8", "no-equals-sign"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(binfmt(&["kast", "pack", "out.kas"]).status.code(), Some(2));
    assert_eq!(binfmt(&["kast", "dump", path]).status.code(), Some(2));
}

#[test]
fn every_subcommand_has_examples() {
    for command in ["ls", "dump", "info", "pack"] {
        let output = binfmt(&["kast", command, "--help"]);
        assert!(text(&output.stdout).contains("Examples:"), "{command}");
    }
}
