//! kastore's conformance cases: the valid `all_types_N_elements` files and
//! the 27 malformed files of the kastore project's `test-data`. Every valid
//! file reads with the right keys and values, every malformed one fails
//! with its own error.
//!
//! The project makes the cases itself: the valid files with Python
//! `kastore` from the test venv (or, without it, byte by byte, with a note),
//! the malformed ones by kastore's documented mutations
//! (`binfmt_tests::build::kast`). When the kastore project's own files are
//! beside the repository (`../shared/kastore-test-data`), they are read too,
//! and the generated malformed files must equal them byte for byte.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::{Path, PathBuf};

use binfmt_kastore::{ItemType, KastError, Store};

/// The kastore project's own files, when they sit beside the repository.
fn originals() -> Option<PathBuf> {
    let path = binfmt_tests::workspace_root().join("../shared/kastore-test-data");
    if path.exists() {
        Some(path)
    } else {
        eprintln!(
            "note: {} is absent: running the generated conformance cases only",
            path.display()
        );
        None
    }
}

/// Writes the valid all-types files into `dir`, with Python kastore when
/// the test venv has it.
fn write_valid_files(dir: &Path) {
    if let Some(python) = binfmt_tests::interop::python() {
        let status = std::process::Command::new(python)
            .arg(binfmt_tests::interop::python_script("make_kast_types.py"))
            .arg(dir)
            .status()
            .unwrap();
        assert!(status.success(), "make_kast_types.py failed");
        return;
    }
    eprintln!("note: no Python kastore: writing the all-types files byte by byte instead");
    std::fs::create_dir_all(dir).unwrap();
    for n in 0..10u8 {
        let items: Vec<(Vec<u8>, u8, Vec<u8>)> = ItemType::ALL
            .iter()
            .map(|&t| {
                let bytes = (0..n)
                    .flat_map(|v| match t {
                        ItemType::Float32 => f32::from(v).to_le_bytes().to_vec(),
                        ItemType::Float64 => f64::from(v).to_le_bytes().to_vec(),
                        _ => u64::from(v).to_le_bytes()[..t.size() as usize].to_vec(),
                    })
                    .collect();
                (t.name().as_bytes().to_vec(), t.id(), bytes)
            })
            .collect();
        std::fs::write(
            dir.join(format!("all_types_{n}_elements.kas")),
            binfmt_tests::build::kast::store(&items),
        )
        .unwrap();
    }
}

/// Every directory of valid files to check.
fn valid_dirs(generated: &Path) -> Vec<PathBuf> {
    write_valid_files(generated);
    let mut dirs = vec![generated.to_path_buf()];
    dirs.extend(originals().map(|root| root.join("v1")));
    dirs
}

fn check_all_types(path: &Path, n: u8) {
    let store = Store::open(path).unwrap();
    assert_eq!(store.version(), (1, 0));
    let keys: Vec<&str> = store.items().map(|item| item.key_str().unwrap()).collect();
    let mut expected: Vec<&str> = ItemType::ALL.iter().map(|t| t.name()).collect();
    expected.sort();
    assert_eq!(keys, expected, "n = {n}");
    for item in store.items() {
        let item_type = ItemType::from_name(item.key_str().unwrap()).unwrap();
        assert_eq!(item.item_type(), item_type);
        assert_eq!(item.len(), u64::from(n));
    }
    let n8 = n as i8;
    assert_eq!(
        &*store.array::<i8>("int8").unwrap(),
        (0..n8).collect::<Vec<_>>()
    );
    assert_eq!(
        &*store.array::<u8>("uint8").unwrap(),
        (0..n).collect::<Vec<_>>()
    );
    assert_eq!(
        &*store.array::<i16>("int16").unwrap(),
        (0..i16::from(n)).collect::<Vec<_>>()
    );
    assert_eq!(
        &*store.array::<u16>("uint16").unwrap(),
        (0..u16::from(n)).collect::<Vec<_>>()
    );
    assert_eq!(
        &*store.array::<i32>("int32").unwrap(),
        (0..i32::from(n)).collect::<Vec<_>>()
    );
    assert_eq!(
        &*store.array::<u32>("uint32").unwrap(),
        (0..u32::from(n)).collect::<Vec<_>>()
    );
    assert_eq!(
        &*store.array::<i64>("int64").unwrap(),
        (0..i64::from(n)).collect::<Vec<_>>()
    );
    assert_eq!(
        &*store.array::<u64>("uint64").unwrap(),
        (0..u64::from(n)).collect::<Vec<_>>()
    );
    assert_eq!(
        &*store.array::<f32>("float32").unwrap(),
        (0..n).map(f32::from).collect::<Vec<_>>()
    );
    assert_eq!(
        &*store.array::<f64>("float64").unwrap(),
        (0..n).map(f64::from).collect::<Vec<_>>()
    );
}

#[test]
fn all_types_files_hold_0_to_n_in_every_type() {
    let dir = tempfile::tempdir().unwrap();
    for valid in valid_dirs(dir.path()) {
        for n in 0..10u8 {
            check_all_types(&valid.join(format!("all_types_{n}_elements.kas")), n);
        }
    }
}

#[test]
fn mapped_arrays_are_borrowed_not_copied() {
    let dir = tempfile::tempdir().unwrap();
    write_valid_files(dir.path());
    let store = Store::open(dir.path().join("all_types_9_elements.kas")).unwrap();
    assert!(store.source().is_mapped());
    if cfg!(target_endian = "little") {
        assert!(matches!(
            store.array::<f64>("float64").unwrap(),
            std::borrow::Cow::Borrowed(_)
        ));
        assert!(matches!(
            store.array::<u16>("uint16").unwrap(),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}

#[test]
fn every_malformed_file_fails_with_its_own_error() {
    use KastError as E;
    type Check = fn(&KastError) -> bool;
    let cases: [(&str, Check); 27] = [
        ("empty_file.kas", |e| matches!(e, E::Empty)),
        (
            "bad_magic_number.kas",
            |e| matches!(e, E::Core(binfmt_core::Error::BadMagic { found, .. }) if **found == [0; 8]),
        ),
        ("version_0.kas", |e| {
            matches!(e, E::VersionTooOld { major: 0, .. })
        }),
        ("version_100.kas", |e| {
            matches!(e, E::VersionTooNew { major: 100, .. })
        }),
        ("bad_type_11.kas", |e| {
            matches!(
                e,
                E::BadType {
                    item: 0,
                    type_id: 11
                }
            )
        }),
        ("bad_type_20.kas", |e| {
            matches!(
                e,
                E::BadType {
                    item: 0,
                    type_id: 20
                }
            )
        }),
        ("bad_filesize_0_-1.kas", |e| {
            matches!(
                e,
                E::FileSizeMismatch {
                    header: 63,
                    actual: 64
                }
            )
        }),
        ("bad_filesize_0_1.kas", |e| {
            matches!(
                e,
                E::FileSizeMismatch {
                    header: 65,
                    actual: 64
                }
            )
        }),
        ("bad_filesize_0_1024.kas", |e| {
            matches!(
                e,
                E::FileSizeMismatch {
                    header: 1088,
                    actual: 64
                }
            )
        }),
        (
            "bad_filesize_10_-1.kas",
            |e| matches!(e, E::FileSizeMismatch { header, actual } if header + 1 == *actual),
        ),
        (
            "bad_filesize_10_1.kas",
            |e| matches!(e, E::FileSizeMismatch { header, actual } if *header == actual + 1),
        ),
        (
            "bad_filesize_10_1024.kas",
            |e| matches!(e, E::FileSizeMismatch { header, actual } if *header == actual + 1024),
        ),
        ("truncated_file.kas", |e| {
            matches!(e, E::FileSizeMismatch { actual: 150, .. })
        }),
        ("truncated_file_correct_size_100.kas", |e| {
            matches!(
                e,
                E::TooManyItems {
                    num_items: 5,
                    file_size: 100
                }
            )
        }),
        ("truncated_file_correct_size_128.kas", |e| {
            matches!(
                e,
                E::TooManyItems {
                    num_items: 5,
                    file_size: 128
                }
            )
        }),
        ("truncated_file_correct_size_129.kas", |e| {
            matches!(
                e,
                E::TooManyItems {
                    num_items: 5,
                    file_size: 129
                }
            )
        }),
        ("truncated_file_correct_size_200.kas", |e| {
            matches!(
                e,
                E::TooManyItems {
                    num_items: 5,
                    file_size: 200
                }
            )
        }),
        ("key_offset_outside_file.kas", |e| {
            matches!(
                e,
                E::KeyOutOfBounds {
                    item: 0,
                    start: 4294967296,
                    ..
                }
            )
        }),
        ("key_len_outside_file.kas", |e| {
            matches!(
                e,
                E::KeyOutOfBounds {
                    item: 0,
                    len: 4294967296,
                    ..
                }
            )
        }),
        ("array_offset_outside_file.kas", |e| {
            matches!(
                e,
                E::ArrayOutOfBounds {
                    item: 0,
                    start: 4294967296,
                    ..
                }
            )
        }),
        ("array_len_outside_file.kas", |e| {
            matches!(
                e,
                E::ArrayOutOfBounds {
                    item: 0,
                    len: 4294967296,
                    ..
                }
            )
        }),
        ("bad_key_start_-1.kas", |e| {
            matches!(
                e,
                E::KeyNotPacked {
                    item: 0,
                    expected: 128,
                    found: 127
                }
            )
        }),
        ("bad_key_start_1.kas", |e| {
            matches!(
                e,
                E::KeyNotPacked {
                    item: 0,
                    expected: 128,
                    found: 129
                }
            )
        }),
        ("bad_array_start_-1.kas", |e| {
            matches!(
                e,
                E::ArrayMisaligned {
                    item: 0,
                    start: 135
                }
            )
        }),
        ("bad_array_start_1.kas", |e| {
            matches!(
                e,
                E::ArrayOutOfBounds {
                    item: 0,
                    start: 137,
                    ..
                }
            )
        }),
        ("bad_array_start_-8.kas", |e| {
            matches!(
                e,
                E::ArrayNotPacked {
                    item: 0,
                    expected: 136,
                    found: 128
                }
            )
        }),
        ("bad_array_start_8.kas", |e| {
            matches!(
                e,
                E::ArrayOutOfBounds {
                    item: 0,
                    start: 144,
                    ..
                }
            )
        }),
    ];
    let generated = binfmt_tests::build::kast::malformed();
    assert_eq!(
        generated.len(),
        cases.len(),
        "every malformed file has a case"
    );
    let originals = originals().map(|root| root.join("malformed"));
    if let Some(originals) = &originals {
        let on_disk = std::fs::read_dir(originals).unwrap().count();
        assert_eq!(
            on_disk,
            cases.len(),
            "every original malformed file has a case"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, check) in cases {
        let (_, bytes) = generated
            .iter()
            .find(|(generated, _)| generated == name)
            .unwrap_or_else(|| panic!("{name} is not generated"));
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let mut paths = vec![path];
        if let Some(originals) = &originals {
            let original = originals.join(name);
            assert!(
                std::fs::read(&original).unwrap() == *bytes,
                "{name}: the generated file differs from kastore's"
            );
            paths.push(original);
        }
        for path in paths {
            let error = Store::open(&path).unwrap_err();
            assert!(check(&error), "{}: unexpected {error:?}", path.display());
            // The in-memory and positional paths check the same way.
            let bytes = std::fs::read(&path).unwrap();
            let in_memory = Store::new(bytes.clone()).unwrap_err();
            assert!(
                check(&in_memory),
                "{name} in memory: unexpected {in_memory:?}"
            );
            let cursor = binfmt_core::SeekSource::new(std::io::Cursor::new(bytes), name).unwrap();
            let positional = Store::new(cursor).unwrap_err();
            assert!(
                check(&positional),
                "{name} by offset: unexpected {positional:?}"
            );
        }
    }
}
