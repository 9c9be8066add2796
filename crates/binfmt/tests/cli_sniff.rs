//! `binfmt sniff`, run as a real process on hand-built minimal files.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use binfmt_tests::pseudo_random_bytes;

fn binfmt(args: &[&Path]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_binfmt"))
        .arg("sniff")
        .args(args)
        .output()
        .unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// A 64-byte kastore header for an empty store: signature, version 1.0,
/// 0 items, file size 64, reserved zeros.
fn minimal_kast() -> Vec<u8> {
    let mut bytes = vec![0x89, b'K', b'A', b'S', b'\r', b'\n', 0x1a, b'\n'];
    bytes.extend_from_slice(&1u16.to_le_bytes());
    bytes.extend_from_slice(&0u16.to_le_bytes());
    bytes.extend_from_slice(&0u32.to_le_bytes());
    bytes.extend_from_slice(&64u64.to_le_bytes());
    bytes.resize(64, 0);
    bytes
}

/// A TARIDX header for zero rows with empty blocks.
fn minimal_taridx() -> Vec<u8> {
    let mut bytes = b"TARIDX\0\0".to_vec();
    for field in [1u16, 0, 32, 64] {
        bytes.extend_from_slice(&field.to_le_bytes());
    }
    bytes.extend_from_slice(&[0; 16]); // n_stems, n_rows
    bytes.extend_from_slice(&[0; 8]); // n_ext, n_crash
    bytes.extend_from_slice(&64u64.to_le_bytes()); // off_crash
    bytes.extend_from_slice(&64u64.to_le_bytes()); // off_arr
    bytes.push(1); // flags: contiguous
    bytes.resize(64, 0);
    bytes
}

/// An 80-byte ARCX header followed directly by a 40-byte footer.
fn minimal_arcx() -> Vec<u8> {
    let mut bytes = b"ARCX0001".to_vec();
    bytes.resize(80, 0);
    bytes.extend_from_slice(b"ARCXEND1");
    bytes.resize(120, 0);
    bytes
}

/// One chunk (an empty payload and its MetaByte) and the 26-byte global header.
fn minimal_par4() -> Vec<u8> {
    let mut bytes = vec![0u8]; // MetaByte: no children, no compression
    bytes.extend_from_slice(b"PAR4");
    bytes.extend_from_slice(&4u16.to_le_bytes());
    bytes.extend_from_slice(&0u64.to_le_bytes());
    bytes.extend_from_slice(&1u64.to_le_bytes());
    bytes.extend_from_slice(&0u32.to_le_bytes());
    bytes
}

/// A tar header block with a correct checksum, `magic` at byte 257, then a
/// one-block payload and the two zero blocks that end an archive.
fn minimal_tar(magic: &[u8]) -> Vec<u8> {
    let mut block = [0u8; 512];
    block[..9].copy_from_slice(b"hello.txt");
    block[100..108].copy_from_slice(b"0000644\0");
    block[124..136].copy_from_slice(b"00000000005\0");
    block[156] = b'0';
    block[257..257 + magic.len()].copy_from_slice(magic);
    block[148..156].fill(b' ');
    let sum: u32 = block.iter().map(|&b| u32::from(b)).sum();
    block[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    let mut bytes = block.to_vec();
    bytes.extend_from_slice(b"hello");
    bytes.resize(512 * 4, 0);
    bytes
}

fn write_all(dir: &Path, files: &[(&str, Vec<u8>)]) -> Vec<PathBuf> {
    files
        .iter()
        .map(|(name, bytes)| {
            let path = dir.join(name);
            std::fs::write(&path, bytes).unwrap();
            path
        })
        .collect()
}

#[test]
fn recognises_a_minimal_file_of_each_format() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_all(
        dir.path(),
        &[
            ("a.kas", minimal_kast()),
            ("b.taridx", minimal_taridx()),
            ("c.arcx", minimal_arcx()),
            ("d.par4", minimal_par4()),
            ("e.tar", minimal_tar(b"ustar\x0000")),
            ("f.tar", minimal_tar(b"ustar  \0")),
            ("g.tar", minimal_tar(b"")),
            ("h.bin", pseudo_random_bytes(1, 4096)),
            ("i.empty", Vec::new()),
        ],
    );
    let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let output = binfmt(&paths);
    assert!(output.status.success(), "{output:?}");
    let expected: String = files
        .iter()
        .zip([
            "kast", "taridx", "arcx", "par4", "tar", "tar", "tar", "unknown", "unknown",
        ])
        .map(|(path, format)| format!("{}\t{format}\n", path.display()))
        .collect();
    assert_eq!(stdout(&output), expected);
    assert!(output.stderr.is_empty());
}

#[test]
fn short_files_never_crash() {
    let dir = tempfile::tempdir().unwrap();
    // Every length up to past the longest window, cut from each minimal file.
    let sources = [
        minimal_kast(),
        minimal_taridx(),
        minimal_arcx(),
        minimal_par4(),
        minimal_tar(b"ustar\x0000"),
    ];
    let mut files = Vec::new();
    for (index, source) in sources.iter().enumerate() {
        for len in (0..source.len().min(600)).step_by(7) {
            files.push((format!("{index}-{len}"), source[..len].to_vec()));
        }
    }
    let named: Vec<(&str, Vec<u8>)> = files.iter().map(|(n, b)| (n.as_str(), b.clone())).collect();
    let paths = write_all(dir.path(), &named);
    let args: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    let output = binfmt(&args);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(stdout(&output).lines().count(), paths.len());
}

#[test]
fn a_missing_file_is_reported_and_the_others_still_sniffed() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_all(
        dir.path(),
        &[("a.kas", minimal_kast()), ("b.par4", minimal_par4())],
    );
    let missing = dir.path().join("missing.arcx");
    let output = binfmt(&[&files[0], &missing, &files[1]]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stdout(&output),
        format!(
            "{}\tkast\n{}\tpar4\n",
            files[0].display(),
            files[1].display()
        )
    );
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("binfmt: ") && stderr.contains("missing.arcx"),
        "{stderr}"
    );
}

#[test]
fn a_directory_is_an_error_not_a_format() {
    let dir = tempfile::tempdir().unwrap();
    let output = binfmt(&[dir.path()]);
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
}

#[test]
fn json_lists_path_and_format() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_all(
        dir.path(),
        &[
            ("x.taridx", minimal_taridx()),
            ("y", pseudo_random_bytes(2, 10)),
        ],
    );
    let output = Command::new(env!("CARGO_BIN_EXE_binfmt"))
        .args(["sniff", "--json"])
        .args(&files)
        .output()
        .unwrap();
    assert!(output.status.success());
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        value,
        serde_json::json!([
            {"path": files[0].to_str().unwrap(), "format": "taridx"},
            {"path": files[1].to_str().unwrap(), "format": "unknown"},
        ])
    );
}

#[test]
fn usage_errors_exit_with_2() {
    let output = Command::new(env!("CARGO_BIN_EXE_binfmt"))
        .arg("sniff")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let output = Command::new(env!("CARGO_BIN_EXE_binfmt"))
        .arg("no-such-command")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn help_has_examples() {
    for args in [&["--help"][..], &["sniff", "--help"]] {
        let output = Command::new(env!("CARGO_BIN_EXE_binfmt"))
            .args(args)
            .output()
            .unwrap();
        assert!(output.status.success());
        assert!(stdout(&output).contains("Examples:"), "{args:?}");
    }
}
