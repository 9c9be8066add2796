//! The kastore project's own conformance files (`shared/kastore-test-data`,
//! which sits beside the repository): every valid file reads with the right
//! keys and values, every malformed one fails with its own error.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::PathBuf;

use binfmt_kastore::{ItemType, KastError, Store};

fn test_data(relative: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/kastore-test-data")
        .join(relative);
    assert!(
        path.exists(),
        "{} is missing: shared/ must sit beside the repository",
        path.display()
    );
    path
}

#[test]
fn all_types_files_hold_0_to_n_in_every_type() {
    for n in 0..10u8 {
        let store = Store::open(test_data(&format!("v1/all_types_{n}_elements.kas"))).unwrap();
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
}

#[test]
fn mapped_arrays_are_borrowed_not_copied() {
    let store = Store::open(test_data("v1/all_types_9_elements.kas")).unwrap();
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
            |e| matches!(e, E::BadSignature { found } if *found == [0; 8]),
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
    let on_disk = std::fs::read_dir(test_data("malformed")).unwrap().count();
    assert_eq!(on_disk, cases.len(), "every malformed file has a case");
    for (name, check) in cases {
        let error = Store::open(test_data(&format!("malformed/{name}"))).unwrap_err();
        assert!(check(&error), "{name}: unexpected {error:?}");
        // The in-memory path checks the same way.
        let bytes = std::fs::read(test_data(&format!("malformed/{name}"))).unwrap();
        let in_memory = Store::new(bytes).unwrap_err();
        assert!(
            check(&in_memory),
            "{name} in memory: unexpected {in_memory:?}"
        );
    }
}
