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
        serde_json::json!({"name": "clé/données", "size": 3000, "kind": "uint8", "length": 3000})
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
    assert_eq!(json["entries"], 12);
    assert_eq!(json["format"], "kast");
    assert_eq!(json["file_size"], size);
    let info = text(&binfmt(&["kast", "info", path.to_str().unwrap()]).stdout);
    assert!(
        info.contains("entries: 12\n") && info.contains(&format!("file size: {size} bytes\n")),
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
            "-o",
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
    assert_eq!(&*store.array::<u8>("file").unwrap(), b"\x00\x01binary\xff");
    assert_eq!(&*store.array::<u8>("stdin").unwrap(), b"from stdin");
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
            "-o",
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
        binfmt(&["kast", "pack", "-o", "out.kas", "--uint8", "no-equals-sign"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        binfmt(&["kast", "pack", "-o", "out.kas"]).status.code(),
        Some(2)
    );
    assert_eq!(binfmt(&["kast", "dump", path]).status.code(), Some(2));
}

#[test]
fn every_subcommand_has_examples() {
    for command in [
        "ls", "list", "get", "dump", "info", "extract", "verify", "pack",
    ] {
        let output = binfmt(&["kast", command, "--help"]);
        assert!(text(&output.stdout).contains("Examples:"), "{command}");
    }
}

/// A minimal one-dimensional .npy file, as numpy's `save` writes it.
fn npy(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(data);
    bytes
}

#[test]
fn pack_takes_every_element_type_and_npy_files() {
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("flags.i32");
    std::fs::write(&raw, [(-5i32).to_le_bytes(), 9i32.to_le_bytes()].concat()).unwrap();
    let times = dir.path().join("time.npy");
    let values: Vec<u8> = [0.5f64, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(&times, npy("<f8", "(2,)", &values)).unwrap();
    let out = dir.path().join("typed.kas");
    let arg = |key: &str, path: &std::path::Path| format!("{key}={}", path.display());
    let output = binfmt(&[
        "kast",
        "pack",
        "-o",
        out.to_str().unwrap(),
        "--int32",
        &arg("nodes/flags", &raw),
        "--npy",
        &arg("nodes/time", &times),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let store = Store::open(&out).unwrap();
    assert_eq!(&*store.array::<i32>("nodes/flags").unwrap(), &[-5, 9]);
    assert_eq!(&*store.array::<f64>("nodes/time").unwrap(), &[0.5, 2.0]);

    // Ragged raw bytes and a 2-D array are refused, naming what is wrong.
    let ragged = dir.path().join("ragged.bin");
    std::fs::write(&ragged, [0u8; 7]).unwrap();
    let output = binfmt(&[
        "kast",
        "pack",
        "-o",
        out.to_str().unwrap(),
        "--float64",
        &arg("x", &ragged),
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("not a whole number of float64"),
        "{}",
        text(&output.stderr)
    );
    let matrix = dir.path().join("matrix.npy");
    std::fs::write(&matrix, npy("<i4", "(2, 2)", &[0; 16])).unwrap();
    let output = binfmt(&[
        "kast",
        "pack",
        "-o",
        out.to_str().unwrap(),
        "--npy",
        &arg("m", &matrix),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let message = text(&output.stderr);
    assert!(
        message.contains("matrix.npy") && message.contains("one-dimensional"),
        "{message}"
    );
    // The earlier store is untouched.
    assert_eq!(Store::open(&out).unwrap().len(), 2);
}

#[test]
fn pack_appends_to_and_updates_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("store.kas");
    let a = dir.path().join("a.bin");
    std::fs::write(&a, [1u8, 2, 3]).unwrap();
    let b = dir.path().join("b.u16");
    std::fs::write(&b, 7u16.to_le_bytes()).unwrap();
    let path = out.to_str().unwrap();
    let arg = |key: &str, file: &std::path::Path| format!("{key}={}", file.display());
    assert!(
        binfmt(&["kast", "pack", "-o", path, "--uint8", &arg("a", &a)])
            .status
            .success()
    );
    assert!(
        binfmt(&[
            "kast",
            "pack",
            "-o",
            path,
            "--append",
            "--uint16",
            &arg("b", &b)
        ])
        .status
        .success()
    );
    let store = Store::open(&out).unwrap();
    assert_eq!(store.len(), 2);
    assert_eq!(&*store.array::<u16>("b").unwrap(), &[7]);
    drop(store);
    // An existing key needs --replace.
    let again = binfmt(&[
        "kast",
        "pack",
        "-o",
        path,
        "--append",
        "--uint16",
        &arg("a", &b),
    ]);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        text(&again.stderr).contains("given twice"),
        "{}",
        text(&again.stderr)
    );
    let replaced = binfmt(&[
        "kast",
        "pack",
        "-o",
        path,
        "--append",
        "--replace",
        "--uint16",
        &arg("a", &b),
    ]);
    assert!(replaced.status.success(), "{}", text(&replaced.stderr));
    assert_eq!(
        &*Store::open(&out).unwrap().array::<u16>("a").unwrap(),
        &[7]
    );
}

/// `kast dump`, `dump --raw` and `get` of a store cut short while they
/// print it: an error naming the file, never SIGBUS. Deterministic: the
/// command blocks on a full stdout pipe after its first pieces, the test
/// truncates the file, then drains the pipe.
#[cfg(unix)]
#[test]
fn a_store_cut_short_while_it_is_read_is_an_error_not_sigbus() {
    use std::io::{BufRead, Read};
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["kast", "dump"][..],
        &["kast", "dump", "--raw"][..],
        &["kast", "get"][..],
    ] {
        let path = dir.path().join("big.kas");
        let mut writer = Writer::new();
        writer
            .insert("values", (0..2_000_000u64).collect::<Vec<_>>())
            .unwrap();
        writer.write_file(&path).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_binfmt"))
            .args(args)
            .arg(&path)
            .arg("values")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut first = Vec::new();
        stdout.read_until(b'\n', &mut first).unwrap();
        assert!(!first.is_empty(), "{args:?}");
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(4096)
            .unwrap();
        std::io::copy(&mut stdout, &mut std::io::sink()).unwrap();
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(1), "{args:?}: {status:?} {stderr}");
        assert!(
            stderr.contains("big.kas") && stderr.contains("shorter than when it was opened"),
            "{args:?}: {stderr}"
        );
    }
}

/// `--append` carries over only keys `kast pack` itself would write.
#[test]
fn append_refuses_keys_pack_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("old.kas");
    let mut writer = Writer::new();
    writer.insert("../evil", vec![1u8]).unwrap();
    writer.insert("good", vec![2u8]).unwrap();
    writer.write_file(&out).unwrap();
    let before = std::fs::read(&out).unwrap();
    let input = dir.path().join("a.bin");
    std::fs::write(&input, [3u8]).unwrap();
    let path = out.to_str().unwrap();
    let arg = format!("a={}", input.display());
    for extra in [&[][..], &["--replace"][..]] {
        let mut args = vec!["kast", "pack", "-o", path, "--append"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--uint8", &arg]);
        let output = binfmt(&args);
        assert_eq!(output.status.code(), Some(1));
        let message = text(&output.stderr);
        assert!(
            message.contains("old.kas") && message.contains("../evil") && message.contains("'..'"),
            "{message}"
        );
    }
    // The same key given on the command line is refused the same way.
    let output = binfmt(&[
        "kast",
        "pack",
        "-o",
        path,
        "--uint8",
        &format!("../evil={}", input.display()),
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("'..'"),
        "{}",
        text(&output.stderr)
    );
    assert_eq!(std::fs::read(&out).unwrap(), before);
}

/// A `.npy` header numpy reads differently from a first-match reader (a
/// key given twice; trailing text; `(N)`, which is not a tuple) is refused.
#[test]
fn ambiguous_npy_headers_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.kas");
    for (name, descr, shape) in [
        ("twice.npy", "<i4', 'descr': '<f8", "(2,)"),
        ("tuple.npy", "<i4", "(2)"),
        ("trailing.npy", "<i4", "(2,), } {'shape': (1,)"),
    ] {
        let file = dir.path().join(name);
        std::fs::write(&file, npy(descr, shape, &[0; 8])).unwrap();
        let output = binfmt(&[
            "kast",
            "pack",
            "-o",
            out.to_str().unwrap(),
            "--npy",
            &format!("k={}", file.display()),
        ]);
        assert_eq!(output.status.code(), Some(1), "{name}");
        assert!(
            text(&output.stderr).contains(name),
            "{}",
            text(&output.stderr)
        );
    }
    assert!(!out.exists());
}

/// `-o` naming one of pack's own inputs is refused before anything is read.
#[cfg(unix)]
#[test]
fn pack_never_writes_over_an_input() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("a.bin");
    std::fs::write(&input, [1u8, 2]).unwrap();
    let link = dir.path().join("link.kas");
    std::os::unix::fs::symlink(&input, &link).unwrap();
    let output = binfmt(&[
        "kast",
        "pack",
        "-o",
        link.to_str().unwrap(),
        "--uint8",
        &format!("a={}", input.display()),
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(std::fs::read(&input).unwrap(), [1, 2]);
}
