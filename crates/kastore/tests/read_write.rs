//! Writer layout, reader rules beyond the conformance files, and a proptest
//! round trip.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::borrow::Cow;

use binfmt_kastore::{ItemType, KastError, Store, Writer};
use proptest::prelude::*;

fn u64_at(bytes: &[u8], offset: usize) -> u64 {
    u64::from_le_bytes(bytes[offset..offset + 8].try_into().unwrap())
}

#[test]
fn layout_matches_the_format_byte_for_byte() {
    let mut writer = Writer::new();
    writer.insert("b", &[1u16, 2, 3][..]).unwrap();
    writer.insert("a", &[-1i8][..]).unwrap();
    let bytes = writer.to_bytes().unwrap();

    // Header: signature, version 1.0, 2 items, file size, zeros.
    assert_eq!(&bytes[..8], b"\x89KAS\r\n\x1a\n");
    assert_eq!(&bytes[8..16], &[1, 0, 0, 0, 2, 0, 0, 0]);
    assert_eq!(u64_at(&bytes, 16), bytes.len() as u64);
    assert!(bytes[24..64].iter().all(|&b| b == 0));
    // Keys "a", "b" sorted at 192, 193; "a"'s array at 200, "b"'s at 208.
    let descriptor_a = &bytes[64..128];
    assert_eq!(descriptor_a[0], ItemType::Int8.id());
    assert_eq!(
        (u64_at(descriptor_a, 8), u64_at(descriptor_a, 16)),
        (192, 1)
    );
    assert_eq!(
        (u64_at(descriptor_a, 24), u64_at(descriptor_a, 32)),
        (200, 1)
    );
    let descriptor_b = &bytes[128..192];
    assert_eq!(descriptor_b[0], ItemType::Uint16.id());
    assert_eq!(
        (u64_at(descriptor_b, 8), u64_at(descriptor_b, 16)),
        (193, 1)
    );
    assert_eq!(
        (u64_at(descriptor_b, 24), u64_at(descriptor_b, 32)),
        (208, 3)
    );
    assert_eq!(&bytes[192..194], b"ab");
    assert_eq!(&bytes[194..200], &[0; 6]);
    assert_eq!(bytes[200], 0xff);
    assert_eq!(&bytes[201..208], &[0; 7]);
    assert_eq!(&bytes[208..], &[1, 0, 2, 0, 3, 0]);
}

#[test]
fn an_empty_store_is_just_a_header() {
    let bytes = Writer::new().to_bytes().unwrap();
    assert_eq!(bytes.len(), 64);
    let store = Store::new(bytes).unwrap();
    assert!(store.is_empty());
    assert_eq!(store.items().count(), 0);
}

#[test]
fn writer_refuses_empty_and_duplicate_keys_and_ragged_bytes() {
    let mut writer = Writer::new();
    assert!(matches!(
        writer.insert("", &[1u8][..]),
        Err(KastError::EmptyKeyInput)
    ));
    writer.insert("k", &[1u8][..]).unwrap();
    assert!(matches!(
        writer.insert("k", &[2.0f64][..]),
        Err(KastError::DuplicateKeyInput { key }) if key == "k"
    ));
    assert!(matches!(
        writer.insert_raw("r", ItemType::Int32, vec![0u8; 6]),
        Err(KastError::RaggedArray { len: 6, .. })
    ));
    writer
        .insert_raw("r", ItemType::Int32, vec![1, 0, 0, 0])
        .unwrap();
    let store = Store::new(writer.to_bytes().unwrap()).unwrap();
    assert_eq!(&*store.array::<i32>("r").unwrap(), &[1]);
}

/// One key rule for every way a key enters a path-keyed writer: inserted,
/// raw, streamed, or carried over from an existing store.
#[test]
fn path_keyed_writers_refuse_every_key_an_extractor_would_refuse() {
    let mut any = Writer::new();
    for key in ["../up", "/abs", "a//b", "a/./b", "a\\b", "nul\0"] {
        any.insert(key, vec![1u8]).unwrap();
    }
    any.insert(b"\xff".as_slice(), vec![1u8]).unwrap();
    let old = Store::new(any.to_bytes().unwrap()).unwrap();
    for item in old.items() {
        let mut writer = Writer::with_path_keys();
        let key = item.key();
        assert!(matches!(
            writer.insert(key, vec![1u8]),
            Err(KastError::KeyNotAPath { .. })
        ));
        assert!(matches!(
            writer.insert_raw(key, ItemType::Uint8, vec![1u8]),
            Err(KastError::KeyNotAPath { .. })
        ));
        assert!(matches!(
            writer.insert_reader(key, ItemType::Uint8, 1, &[1u8][..]),
            Err(KastError::KeyNotAPath { .. })
        ));
    }
    // Carried over from a store that holds them: refused too.
    let mut writer = Writer::with_path_keys();
    let error = writer.append_store(&old).unwrap_err();
    assert!(matches!(error, KastError::KeyNotAPath { .. }), "{error}");
    // The plain writer (the C library's rules) keeps them all.
    let mut plain = Writer::from_store(&old).unwrap();
    assert_eq!(plain.len(), 7);
    assert!(plain.remove("../up"));
    let mut good = Writer::with_path_keys();
    good.insert("nodes/time", vec![1.0f64]).unwrap();
    assert_eq!(good.keys().collect::<Vec<_>>(), [b"nodes/time".as_slice()]);
}

#[test]
fn lookups_type_checks_and_missing_keys() {
    let mut writer = Writer::new();
    writer.insert("x", vec![1.5f32, -2.0]).unwrap();
    let store = Store::new(writer.to_bytes().unwrap()).unwrap();
    assert_eq!(&*store.array::<f32>("x").unwrap(), &[1.5, -2.0]);
    assert!(matches!(
        store.array::<f64>("x"),
        Err(KastError::TypeMismatch {
            requested: ItemType::Float64,
            found: ItemType::Float32,
            ..
        })
    ));
    assert!(matches!(store.get("y"), Err(KastError::KeyNotFound { key }) if key == "y"));
    assert_eq!(
        store.get("x").unwrap().le_bytes().unwrap().as_ref(),
        [1.5f32.to_le_bytes(), (-2.0f32).to_le_bytes()].concat()
    );
}

#[test]
fn keys_that_are_not_utf8_are_readable_as_bytes() {
    let mut writer = Writer::new();
    writer.insert(b"\xff\xfe", &[7u8][..]).unwrap();
    writer.insert("plain", &[8u8][..]).unwrap();
    let store = Store::new(writer.to_bytes().unwrap()).unwrap();
    let first = store.item(1).unwrap();
    assert_eq!(first.key(), b"\xff\xfe");
    assert_eq!(first.key_str(), None);
    assert_eq!(&*store.array::<u8>(b"\xff\xfe").unwrap(), &[7]);
}

#[test]
fn misaligned_memory_takes_the_copying_path() {
    let mut writer = Writer::new();
    writer.insert("v", &[1u64, 2, 3][..]).unwrap();
    let bytes = writer.to_bytes().unwrap();
    let mut shifted = vec![0u8];
    shifted.extend_from_slice(&bytes);
    // The file's arrays are 8-aligned in the file but not in memory now.
    let store = Store::new(&shifted[1..]).unwrap();
    let values = store.array::<u64>("v").unwrap();
    assert_eq!(&*values, &[1, 2, 3]);
    if (shifted.as_ptr() as usize + 1 + 64 * 2) % 8 != 0 {
        assert!(matches!(values, Cow::Owned(_)));
    }
}

#[test]
fn stream_input_is_read_whole() {
    let mut writer = Writer::new();
    writer.insert("s", &[5i64][..]).unwrap();
    let bytes = writer.to_bytes().unwrap();
    let store = Store::read_from(&mut bytes.as_slice(), "<stdin>").unwrap();
    assert_eq!(&*store.array::<i64>("s").unwrap(), &[5]);
    assert_eq!(store.source().len(), bytes.len());
}

/// Several stores back to back in one stream, as Python kastore writes them
/// to one file object: each read takes one store and leaves the stream
/// right after it.
#[test]
fn concatenated_stores_in_one_stream() {
    let stores: Vec<Vec<u8>> = (0..3u32)
        .map(|n| {
            let mut writer = Writer::new();
            writer.insert("n", vec![n; n as usize + 1]).unwrap();
            writer.to_bytes().unwrap()
        })
        .collect();
    let stream = stores.concat();
    let mut reader = stream.as_slice();
    for n in 0..3u32 {
        let store = Store::read_one(&mut reader, "<pipe>").unwrap().unwrap();
        assert_eq!(&*store.array::<u32>("n").unwrap(), vec![n; n as usize + 1]);
    }
    assert!(Store::read_one(&mut reader, "<pipe>").unwrap().is_none());
    // A stream cut inside a store, or holding garbage, is an error.
    let mut cut = &stream[..stores[0].len() + 70];
    Store::read_one(&mut cut, "<pipe>").unwrap().unwrap();
    assert!(matches!(
        Store::read_one(&mut cut, "<pipe>"),
        Err(KastError::Core(binfmt_core::Error::Truncated { .. }))
    ));
    let mut garbage = &b"not a kastore store at all, but long enough for a header......!!"[..];
    assert!(matches!(
        Store::read_one(&mut garbage, "<pipe>"),
        Err(KastError::Core(binfmt_core::Error::BadMagic { .. }))
    ));
}

/// The signature is checked before anything past the header is read, and
/// a huge `file_size` claim costs only the bytes the stream delivers.
#[test]
fn stream_reading_checks_the_signature_first_and_grows_with_the_bytes() {
    struct Endless(u64);
    impl std::io::Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.0 += buf.len() as u64;
            buf.fill(b'x');
            Ok(buf.len())
        }
    }
    let mut endless = Endless(0);
    assert!(Store::read_one(&mut endless, "/dev/urandom-like").is_err());
    assert_eq!(endless.0, 64, "only the header was read");

    let mut header = Writer::new().to_bytes().unwrap();
    header[16..24].copy_from_slice(&(1u64 << 62).to_le_bytes());
    let mut claim = header.as_slice();
    assert!(matches!(
        Store::read_one(&mut claim, "<pipe>"),
        Err(KastError::Core(binfmt_core::Error::Truncated {
            available: 64,
            ..
        }))
    ));
}

#[test]
fn append_and_update_an_existing_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tables.kas");
    let mut writer = Writer::new();
    writer.insert("keep", &[1i32, 2][..]).unwrap();
    writer.insert("replace", &[1.0f64][..]).unwrap();
    writer.insert("drop", &[9u8][..]).unwrap();
    writer.write_file(&path).unwrap();

    let store = Store::open(&path).unwrap();
    let mut update = Writer::from_store(&store).unwrap();
    assert!(update.contains("replace"));
    assert!(matches!(
        update.insert("keep", &[0i32][..]),
        Err(KastError::DuplicateKeyInput { .. })
    ));
    assert!(update.remove("replace"));
    update.insert("replace", &[2.5f64, 3.5][..]).unwrap();
    assert!(update.remove("drop"));
    update.insert("added", &[7u16][..]).unwrap();
    // Writing over the file being read: the new file replaces it whole.
    update.write_file(&path).unwrap();
    drop(update);
    drop(store);

    let updated = Store::open(&path).unwrap();
    let keys: Vec<&str> = updated
        .items()
        .map(|item| item.key_str().unwrap())
        .collect();
    assert_eq!(keys, ["added", "keep", "replace"]);
    assert_eq!(&*updated.array::<i32>("keep").unwrap(), &[1, 2]);
    assert_eq!(&*updated.array::<f64>("replace").unwrap(), &[2.5, 3.5]);
    assert_eq!(&*updated.array::<u16>("added").unwrap(), &[7]);
}

#[test]
fn arrays_given_as_readers_are_streamed_and_checked() {
    let values: Vec<u8> = (0..100_000u32).flat_map(u32::to_le_bytes).collect();
    let mut writer = Writer::new();
    writer
        .insert_reader(
            "big",
            ItemType::Uint32,
            values.len() as u64,
            values.as_slice(),
        )
        .unwrap();
    writer.insert("small", &[1u8][..]).unwrap();
    let bytes = writer.to_bytes().unwrap();
    let mut expected = Writer::new();
    expected
        .insert_raw("big", ItemType::Uint32, values.as_slice())
        .unwrap();
    expected.insert("small", &[1u8][..]).unwrap();
    assert_eq!(bytes, expected.to_bytes().unwrap());

    let mut short = Writer::new();
    short
        .insert_reader("big", ItemType::Uint32, 8, &values[..4])
        .unwrap();
    assert!(matches!(
        short.to_bytes(),
        Err(KastError::ShortArray {
            expected: 8,
            found: 4,
            ..
        })
    ));
    let mut long = Writer::new();
    long.insert_reader("big", ItemType::Uint32, 4, &values[..8])
        .unwrap();
    assert!(matches!(long.to_bytes(), Err(KastError::ShortArray { .. })));
}

/// Opening through a source that is not in memory reads the header, the
/// descriptors and the keys; an array is read only when asked for.
#[test]
fn reads_only_what_each_operation_needs() {
    let mut writer = Writer::new();
    writer.insert("alpha", &[1u64; 1000][..]).unwrap();
    writer.insert("beta", &[2u8; 3][..]).unwrap();
    let bytes = writer.to_bytes().unwrap();
    let (counted, stats) = binfmt_tests::counting::Counted::new(bytes);
    let store = Store::new(binfmt_core::SeekSource::new(counted, "counted").unwrap()).unwrap();
    assert_eq!(stats.take(), (64 + 2 * 64 + 9, 3));
    assert_eq!(store.len(), 2);
    assert_eq!(&*store.array::<u8>("beta").unwrap(), &[2, 2, 2]);
    assert_eq!(stats.take(), (3, 1));
    let mut streamed = Vec::new();
    std::io::Read::read_to_end(
        &mut store.get("alpha").unwrap().reader().unwrap(),
        &mut streamed,
    )
    .unwrap();
    assert_eq!(streamed.len(), 8000);
    assert_eq!(stats.take().0, 8000);
}

/// Builds a two-item file, then swaps the keys' bytes so they are out of
/// order (or equal) while every offset stays valid.
fn with_keys(first: &[u8], second: &[u8]) -> Vec<u8> {
    let mut writer = Writer::new();
    writer.insert("a", &[1u8][..]).unwrap();
    writer.insert("b", &[2u8][..]).unwrap();
    let mut bytes = writer.to_bytes().unwrap();
    bytes[192] = first[0];
    bytes[193] = second[0];
    bytes
}

#[test]
fn unsorted_and_duplicate_keys_are_refused() {
    assert!(matches!(
        Store::new(with_keys(b"b", b"a")),
        Err(KastError::KeysNotSorted { item: 1, key, previous }) if key == "a" && previous == "b"
    ));
    assert!(matches!(
        Store::new(with_keys(b"a", b"a")),
        Err(KastError::DuplicateKey { item: 1, key }) if key == "a"
    ));
}

#[test]
fn a_newer_minor_version_is_read() {
    let mut bytes = Writer::new().to_bytes().unwrap();
    bytes[10] = 7;
    assert_eq!(Store::new(bytes).unwrap().version(), (1, 7));
}

#[test]
fn header_shorter_than_64_bytes() {
    let bytes = Writer::new().to_bytes().unwrap();
    for len in 1..64 {
        assert!(
            matches!(Store::new(&bytes[..len]), Err(KastError::Core(binfmt_core::Error::Truncated { available, .. })) if available == len as u64)
        );
    }
}

#[test]
fn atomic_write_to_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.kas");
    let mut writer = Writer::new();
    writer.insert("k", &[1u32, 2][..]).unwrap();
    let size = writer.write_file(&path).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), size);
    assert_eq!(
        &*Store::open(&path).unwrap().array::<u32>("k").unwrap(),
        &[1, 2]
    );
    assert!(
        writer
            .write_file(dir.path().join("missing/out.kas"))
            .is_err()
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

/// One array of any type, as its type and little-endian bytes.
fn array() -> impl Strategy<Value = (ItemType, Vec<u8>)> {
    (0u8..10, 0usize..40).prop_flat_map(|(id, len)| {
        let item_type = ItemType::from_id(id).unwrap();
        proptest::collection::vec(any::<u8>(), len * item_type.size() as usize)
            .prop_map(move |bytes| (item_type, bytes))
    })
}

proptest! {
    #[test]
    fn round_trip(items in proptest::collection::btree_map(proptest::collection::vec(any::<u8>(), 1..12), array(), 0..24)) {
        let mut writer = Writer::new();
        for (key, (item_type, bytes)) in &items {
            writer.insert_raw(key, *item_type, bytes.as_slice()).unwrap();
        }
        let bytes = writer.to_bytes().unwrap();
        prop_assert_eq!(bytes.len() as u64, writer.file_size());
        let store = Store::new(bytes).unwrap();
        prop_assert_eq!(store.len(), items.len());
        for (item, (key, (item_type, bytes))) in store.items().zip(&items) {
            prop_assert_eq!(item.key(), key.as_slice());
            prop_assert_eq!(item.item_type(), *item_type);
            let read = item.le_bytes().unwrap();
            prop_assert_eq!(read.as_ref(), bytes.as_slice());
            let found = store.get(key).unwrap().le_bytes().unwrap();
            prop_assert_eq!(found.as_ref(), bytes.as_slice());
        }
    }

    #[test]
    fn typed_round_trip(ints in proptest::collection::vec(any::<i64>(), 0..50), floats in proptest::collection::vec(any::<f64>(), 0..50)) {
        let mut writer = Writer::new();
        writer.insert("ints", ints.as_slice()).unwrap();
        writer.insert("floats", floats.as_slice()).unwrap();
        let store = Store::new(writer.to_bytes().unwrap()).unwrap();
        prop_assert_eq!(&*store.array::<i64>("ints").unwrap(), ints.as_slice());
        let read: Vec<u64> = store.array::<f64>("floats").unwrap().iter().map(|f| f.to_bits()).collect();
        let written: Vec<u64> = floats.iter().map(|f| f.to_bits()).collect();
        prop_assert_eq!(read, written);
    }

    #[test]
    fn any_bytes_after_a_valid_header_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..600), items in 0u32..6) {
        let mut bytes = Writer::new().to_bytes().unwrap();
        bytes.extend_from_slice(&tail);
        let len = bytes.len() as u64;
        bytes[12..16].copy_from_slice(&items.to_le_bytes());
        bytes[16..24].copy_from_slice(&len.to_le_bytes());
        if let Ok(store) = Store::new(bytes) {
            for item in store.items() {
                prop_assert!(item.le_bytes().unwrap().len() as u64 == item.len() * item.item_type().size());
            }
        }
    }
}
