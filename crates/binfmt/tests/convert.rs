//! Converting a set of entries through every ordered pair of formats and
//! back, comparing every entry's bytes.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use binfmt::{ConvertOptions, ExtractOptions, Format, convert, open};
use binfmt_tests::{pseudo_random_bytes, write_tree};

const FORMATS: [Format; 4] = [Format::Arcx, Format::Kast, Format::Par4, Format::Taridx];

fn entries_of(path: &Path) -> BTreeMap<String, Vec<u8>> {
    let source = open(path).unwrap();
    source
        .list()
        .unwrap()
        .into_iter()
        .map(|entry| {
            let bytes = source.read(&entry.name).unwrap();
            assert_eq!(bytes.len() as u64, entry.size, "{}", entry.name);
            (entry.name, bytes)
        })
        .collect()
}

/// Where a file of `format` goes in `dir` (TARIDX: an index named by its fold).
fn target(dir: &Path, stem: &str, format: Format) -> PathBuf {
    let extension = match format {
        Format::Arcx => "arcx",
        Format::Kast => "kas",
        Format::Par4 => "par4",
        _ => "taridx",
    };
    dir.join(format!("{stem}.{extension}"))
}

#[test]
fn every_ordered_pair_round_trips_every_entry() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    let mut files: Vec<(String, Vec<u8>)> = vec![
        ("empty".into(), Vec::new()),
        ("large/blob.bin".into(), pseudo_random_bytes(1, 3_000_000)),
        (
            "donn\u{e9}es/\u{e9}t\u{e9}.txt".into(),
            "été ✓\n".as_bytes().to_vec(),
        ),
        (
            "a/very/deeply/nested/path/to/a/file.json".into(),
            b"{\"deep\": true}".to_vec(),
        ),
        (
            format!("{}/long_name.txt", "segment".repeat(30)),
            b"needs a pax path in tar".to_vec(),
        ),
    ];
    files.extend((0..1000).map(|i| {
        (
            format!("small/{i:04}.dat"),
            format!("entry {i}").into_bytes(),
        )
    }));
    let expected = write_tree(&tree, files);

    let origin = dir.path().join("origin.arcx");
    binfmt_arcx::pack_dir(&tree, &origin, binfmt_arcx::PackOptions::default(), |_| {}).unwrap();
    assert_eq!(entries_of(&origin), expected);

    // One file of every format, made from the archive.
    let mut sources = BTreeMap::new();
    sources.insert(Format::Arcx.name(), origin.clone());
    for format in [Format::Kast, Format::Par4, Format::Taridx] {
        let stem = format!("src_{}", format.name());
        let sub = dir.path().join(&stem);
        std::fs::create_dir(&sub).unwrap();
        let path = target(&sub, &stem, format);
        convert(&origin, &path, format, &ConvertOptions::default()).unwrap();
        assert_eq!(entries_of(&path), expected, "to {format}");
        sources.insert(format.name(), path);
    }

    let mut pairs = 0;
    for from in FORMATS {
        for to in FORMATS {
            if from == to {
                continue;
            }
            let step = dir.path().join(format!("{}_to_{}", from.name(), to.name()));
            std::fs::create_dir(&step).unwrap();
            let there = target(&step, "there", to);
            let options = ConvertOptions::default().shard_size(1 << 20);
            convert(&sources[from.name()], &there, to, &options).unwrap();
            assert_eq!(entries_of(&there), expected, "{from} -> {to}");
            let back_dir = step.join("back");
            std::fs::create_dir(&back_dir).unwrap();
            let back = target(&back_dir, "back", from);
            convert(&there, &back, from, &options).unwrap();
            assert_eq!(entries_of(&back), expected, "{from} -> {to} -> {from}");
            pairs += 1;
        }
    }
    assert_eq!(pairs, 12);
}

#[test]
fn taridx_targets_split_shards_and_open_by_the_fold_convention() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    let expected = write_tree(
        &tree,
        (0..50).map(|i| (format!("s/{i:03}.bin"), pseudo_random_bytes(i, 100_000))),
    );
    let origin = dir.path().join("o.arcx");
    binfmt_arcx::pack_dir(&tree, &origin, binfmt_arcx::PackOptions::default(), |_| {}).unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let index = out.join("train.taridx");
    let summary = convert(
        &origin,
        &index,
        Format::Taridx,
        &ConvertOptions::default().shard_size(1 << 20),
    )
    .unwrap();
    // 50 members of ~100 KB in 1 MiB shards: several shards, each within the limit.
    let shards = binfmt_taridx::fold_shards(&out, "train").unwrap();
    assert!(shards.len() >= 5, "{} shards", shards.len());
    assert_eq!(summary.outputs.len(), shards.len() + 1);
    assert!(
        shards
            .iter()
            .all(|shard| std::fs::metadata(shard).unwrap().len() <= 1 << 20)
    );
    assert_eq!(entries_of(&index), expected);

    // Converting again into the same place would mix two folds: refused.
    let again = convert(&origin, &index, Format::Taridx, &ConvertOptions::default());
    assert!(again.unwrap_err().to_string().contains("already exist"));
}

#[test]
fn names_a_target_cannot_hold_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    write_tree(
        &tree,
        [
            ("a/x.jpg".to_string(), b"1".to_vec()),
            ("b/x.jpg".to_string(), b"2".to_vec()),
        ],
    );
    let origin = dir.path().join("o.arcx");
    binfmt_arcx::pack_dir(&tree, &origin, binfmt_arcx::PackOptions::default(), |_| {}).unwrap();
    let error = convert(
        &origin,
        dir.path().join("t.taridx"),
        Format::Taridx,
        &ConvertOptions::default(),
    )
    .unwrap_err();
    assert!(
        error.to_string().contains("b/x.jpg")
            && error.to_string().contains("same key")
            && error.to_string().contains("webdataset"),
        "{error}"
    );
    assert!(!dir.path().join("t.taridx").exists());

    // A TARIDX target is named by its fold.
    let error = convert(
        &origin,
        dir.path().join("t.tar"),
        Format::Taridx,
        &ConvertOptions::default(),
    )
    .unwrap_err();
    assert!(error.to_string().contains("FOLD.taridx"), "{error}");
}

#[test]
fn a_failed_taridx_conversion_leaves_no_shards() {
    let dir = tempfile::tempdir().unwrap();
    // Three files in separate blocks; the last block is corrupt, so the
    // first shard is complete before the third entry fails its CRC.
    let archive = dir.path().join("two.arcx");
    let mut packer = binfmt_arcx::Packer::create(
        &archive,
        binfmt_arcx::PackOptions::default().block_size(4096),
    )
    .unwrap();
    for (seed, name) in [(1, "a.bin"), (2, "b.bin"), (3, "c.bin")] {
        packer
            .add(name, &mut pseudo_random_bytes(seed, 8192).as_slice())
            .unwrap();
    }
    packer.commit().unwrap();
    let last_block = binfmt_arcx::Archive::open(&archive)
        .unwrap()
        .manifest()
        .blocks()
        .last()
        .unwrap()
        .offset;
    let mut bytes = std::fs::read(&archive).unwrap();
    bytes[last_block as usize + 4 + 16] ^= 0xff;
    std::fs::write(&archive, &bytes).unwrap();

    let target = dir.path().join("out");
    std::fs::create_dir(&target).unwrap();
    let failed = convert(
        &archive,
        target.join("fold.taridx"),
        Format::Taridx,
        &ConvertOptions::default().shard_size(1),
    );
    assert!(
        failed
            .as_ref()
            .is_err_and(|e| e.to_string().contains("block 2")),
        "{failed:?}"
    );
    assert_eq!(
        std::fs::read_dir(&target).unwrap().count(),
        0,
        "{failed:?} left files behind"
    );
}

#[test]
fn names_that_are_not_utf8_are_refused_not_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("latin1.kas");
    let mut writer = binfmt_kastore::Writer::new();
    writer
        .insert_raw(b"caf\xe9", binfmt_kastore::ItemType::Uint8, b"x".as_slice())
        .unwrap();
    writer
        .insert_raw("plain", binfmt_kastore::ItemType::Uint8, b"y".as_slice())
        .unwrap();
    writer.write_file(&store).unwrap();

    let entries = open(&store).unwrap().list().unwrap();
    let shown: Vec<(&str, bool)> = entries
        .iter()
        .map(|entry| (entry.name.as_str(), entry.name_not_utf8))
        .collect();
    assert_eq!(shown, [("caf\u{fffd}", true), ("plain", false)]);

    for to in FORMATS {
        let output = target(dir.path(), "out", to);
        let error = convert(&store, &output, to, &ConvertOptions::default()).unwrap_err();
        assert!(
            error.to_string().contains("latin1.kas") && error.to_string().contains("not UTF-8"),
            "{to}: {error}"
        );
        assert!(!output.exists(), "{to}");
    }
    let error = binfmt::extract(
        open(&store).unwrap().as_ref(),
        dir.path().join("x"),
        &ExtractOptions::default(),
    )
    .unwrap_err();
    assert!(error.to_string().contains("not UTF-8"), "{error}");
}

#[test]
fn repeated_names_are_refused_by_convert_and_extract() {
    let dir = tempfile::tempdir().unwrap();
    let shard = dir.path().join("twice_0000.tar");
    // TarWriter refuses a repeated name: join two archives instead, as
    // `tar -A` would.
    let archive = |data: &[u8]| {
        let mut tar = binfmt_taridx::TarWriter::new(Vec::new());
        tar.append_bytes("a.txt", data).unwrap();
        tar.finish().unwrap()
    };
    let first = archive(b"first");
    let joined = [&first[..first.len() - 1024], &archive(b"second")].concat();
    std::fs::write(&shard, joined).unwrap();
    let index = dir.path().join("twice.taridx");
    binfmt_taridx::index_shards(&[shard], binfmt_taridx::IndexOptions::default(), || {})
        .unwrap()
        .write_file(&index)
        .unwrap();

    let source = open(&index).unwrap();
    assert_eq!(source.list().unwrap().len(), 2);
    assert_eq!(source.read("a.txt").unwrap(), b"first");
    for to in FORMATS {
        let output = target(&dir.path().join("out"), "t", to);
        let error = convert(&index, &output, to, &ConvertOptions::default()).unwrap_err();
        assert!(
            error.to_string().contains("twice.taridx")
                && error.to_string().contains("appears twice"),
            "{to}: {error}"
        );
    }
    let extracted = dir.path().join("x");
    let error =
        binfmt::extract(source.as_ref(), &extracted, &ExtractOptions::default()).unwrap_err();
    assert!(error.to_string().contains("appears twice"), "{error}");
    assert!(!extracted.join("a.txt").exists());
}

#[test]
fn progress_counts_every_entry() {
    let dir = tempfile::tempdir().unwrap();
    let source = binfmt_tests::fixture("generated/arcx/multi_block.spec.arcx");
    let seen = std::cell::RefCell::new(Vec::new());
    binfmt::convert_with_progress(
        &source,
        dir.path().join("out.kas"),
        Format::Kast,
        &ConvertOptions::default(),
        &|done, all| seen.borrow_mut().push((done, all)),
    )
    .unwrap();
    assert_eq!(seen.take(), [(1, 5), (2, 5), (3, 5), (4, 5), (5, 5)]);

    // Extraction runs on several threads: every count is reported once.
    let source = open(&source).unwrap();
    let reported = std::sync::Mutex::new(Vec::new());
    let progress = |done, all| reported.lock().unwrap().push((done, all));
    binfmt::extract(
        source.as_ref(),
        dir.path().join("x"),
        &ExtractOptions::default().progress(&progress),
    )
    .unwrap();
    let mut reported = reported.into_inner().unwrap();
    reported.sort_unstable();
    assert_eq!(reported, [(1, 5), (2, 5), (3, 5), (4, 5), (5, 5)]);
}

/// tskit's tables share stems (`nodes/metadata`, `individuals/metadata`):
/// glzn's keys refuse them and say to key by the whole path, which works.
#[test]
fn tskit_style_keys_need_the_webdataset_key_rule() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("tables.kas");
    let mut writer = binfmt_kastore::Writer::new();
    for key in ["nodes/metadata", "individuals/metadata", "nodes/time"] {
        writer
            .insert_raw(key, binfmt_kastore::ItemType::Uint8, key.as_bytes())
            .unwrap();
    }
    writer.write_file(&store).unwrap();
    let glzn = dir.path().join("glzn/t.taridx");
    let error = convert(&store, &glzn, Format::Taridx, &ConvertOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("\"individuals/metadata\"")
            && error.contains("\"nodes/metadata\"")
            && error.contains("--taridx-keys webdataset"),
        "{error}"
    );
    let wds = dir.path().join("wds/t.taridx");
    let options = ConvertOptions::default().taridx_keys(binfmt_taridx::KeyRule::WebDataset);
    convert(&store, &wds, Format::Taridx, &options).unwrap();
    let back = open(&wds).unwrap();
    assert_eq!(
        back.read("individuals/metadata").unwrap(),
        b"individuals/metadata"
    );
    assert_eq!(back.list().unwrap().len(), 3);
}

/// A kastore of every element type, its extremes included.
fn typed_store(path: &Path) -> Vec<u8> {
    let mut writer = binfmt_kastore::Writer::new();
    writer
        .insert("int8", vec![i8::MIN, -1, 0, i8::MAX])
        .unwrap();
    writer.insert("uint8", vec![0u8, 255]).unwrap();
    writer.insert("int16", vec![i16::MIN, i16::MAX]).unwrap();
    writer.insert("uint16", vec![u16::MAX]).unwrap();
    writer
        .insert("nodes/flags", vec![1i32, -7, i32::MAX])
        .unwrap();
    writer.insert("uint32", vec![u32::MAX, 0]).unwrap();
    writer.insert("int64", vec![i64::MIN]).unwrap();
    writer.insert("uint64", Vec::<u64>::new()).unwrap();
    writer.insert("float32", vec![0.1f32, f32::NAN]).unwrap();
    writer
        .insert("nodes/time", vec![0.0f64, 1.5, -2.25e300])
        .unwrap();
    writer.write_file(path).unwrap();
    std::fs::read(path).unwrap()
}

/// KAST -> any format -> KAST gives the original file byte for byte: the
/// element types travel in the types record, which each format's own
/// readers see as one more entry.
#[test]
fn kastore_types_survive_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("tables.kas");
    let original = typed_store(&store);
    for via in [Format::Arcx, Format::Par4, Format::Taridx, Format::Kast] {
        let step = dir.path().join(via.name());
        std::fs::create_dir(&step).unwrap();
        let there = target(&step, "there", via);
        let summary = convert(&store, &there, via, &ConvertOptions::default()).unwrap();
        let listed = entries_of(&there);
        if via == Format::Kast {
            assert_eq!(std::fs::read(&there).unwrap(), original, "a typed copy");
            assert_eq!(summary.entries, 10);
            continue;
        }
        assert_eq!(summary.entries, 11, "{via}: ten arrays and the record");
        let record: serde_json::Value =
            serde_json::from_slice(&listed[binfmt::TYPES_ENTRY]).unwrap();
        assert_eq!(record["items"]["nodes/time"], "float64", "{via}");
        assert!(
            record["items"].get("uint8").is_none(),
            "{via}: uint8 is the default"
        );
        let back = step.join("back.kas");
        let summary = convert(&there, &back, Format::Kast, &ConvertOptions::default()).unwrap();
        assert_eq!(summary.entries, 10, "{via}: the record is not an array");
        assert_eq!(std::fs::read(&back).unwrap(), original, "{via}");
    }
}

#[test]
fn plain_files_become_uint8_arrays() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    write_tree(
        &tree,
        [
            ("weights.float64".to_owned(), vec![0u8; 16]),
            ("notes.txt".to_owned(), b"hello".to_vec()),
        ],
    );
    let archive = dir.path().join("plain.arcx");
    binfmt_arcx::pack_dir(&tree, &archive, binfmt_arcx::PackOptions::default(), |_| {}).unwrap();
    let out = dir.path().join("plain.kas");
    convert(&archive, &out, Format::Kast, &ConvertOptions::default()).unwrap();
    let store = binfmt_kastore::Store::open(&out).unwrap();
    assert!(
        store
            .items()
            .all(|item| item.item_type() == binfmt_kastore::ItemType::Uint8)
    );
    assert_eq!(&*store.array::<u8>("notes.txt").unwrap(), b"hello");
}

/// A file that happens to be called like the types record but is not one
/// stays an ordinary entry; a record that lies about a size is refused.
#[test]
fn only_a_real_types_record_is_read_as_one() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    write_tree(
        &tree,
        [
            (binfmt::TYPES_ENTRY.to_owned(), b"{\"items\": {}}".to_vec()),
            ("x".to_owned(), vec![1, 2, 3]),
        ],
    );
    let archive = dir.path().join("a.arcx");
    binfmt_arcx::pack_dir(&tree, &archive, binfmt_arcx::PackOptions::default(), |_| {}).unwrap();
    let out = dir.path().join("a.kas");
    convert(&archive, &out, Format::Kast, &ConvertOptions::default()).unwrap();
    assert_eq!(binfmt_kastore::Store::open(&out).unwrap().len(), 2);

    let lying = r#"{"format": "binfmt kastore types", "version": 1, "items": {"x": "float64"}}"#
        .to_string();
    write_tree(
        &tree,
        [(binfmt::TYPES_ENTRY.to_owned(), lying.into_bytes())],
    );
    let archive = dir.path().join("b.arcx");
    binfmt_arcx::pack_dir(&tree, &archive, binfmt_arcx::PackOptions::default(), |_| {}).unwrap();
    let error = convert(
        &archive,
        dir.path().join("b.kas"),
        Format::Kast,
        &ConvertOptions::default(),
    )
    .unwrap_err();
    assert!(error.to_string().contains("float64"), "{error}");
}

/// Finding 06: a kastore with its own key named like the types record and
/// typed arrays: every target that would get the record refuses the key by
/// name before writing anything; KAST keeps it. The store is
/// tests/regressions/convert/kast_types_entry.kas (`BINFMT_BLESS=1`
/// rewrites it).
#[test]
fn a_key_named_like_the_types_record_is_refused_not_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("user.kas");
    let mut writer = binfmt_kastore::Writer::new();
    writer
        .insert_raw(
            binfmt::TYPES_ENTRY,
            binfmt_kastore::ItemType::Uint8,
            b"user data, not a record".as_slice(),
        )
        .unwrap();
    writer.insert("x", vec![1.0f64]).unwrap();
    writer.write_file(&input).unwrap();
    let built = std::fs::read(&input).unwrap();
    let committed =
        binfmt_tests::workspace_root().join("tests/regressions/convert/kast_types_entry.kas");
    if std::env::var_os("BINFMT_BLESS").is_some() {
        std::fs::create_dir_all(committed.parent().unwrap()).unwrap();
        std::fs::write(&committed, &built).unwrap();
    }
    assert!(
        std::fs::read(&committed).unwrap() == built,
        "regression input differs"
    );
    for to in [Format::Arcx, Format::Par4, Format::Taridx] {
        let out = target(dir.path(), "out", to);
        let error = convert(&committed, &out, to, &ConvertOptions::default()).unwrap_err();
        let message = error.to_string();
        assert!(
            matches!(&error, binfmt::Error::CannotHold { name, .. } if name == binfmt::TYPES_ENTRY),
            "{to}: {message}"
        );
        assert!(message.contains("rename the key"), "{message}");
        assert!(!out.exists(), "{to}: wrote {}", out.display());
    }
    let out = dir.path().join("copy.kas");
    convert(&committed, &out, Format::Kast, &ConvertOptions::default()).unwrap();
    let store = binfmt_kastore::Store::open(&out).unwrap();
    assert_eq!(
        &*store.array::<u8>(binfmt::TYPES_ENTRY).unwrap(),
        b"user data, not a record"
    );
}

/// Finding 12: a kastore of uint8 arrays only (no record needed) whose own
/// `__kastore__.json` holds bytes that form a valid types record: carried
/// as an entry, converting back would read it as a record, retype `x` and
/// drop the key. Every non-KAST target refuses it, as in finding 06. The
/// store is tests/regressions/convert/kast_uint8_with_record_key.kas.
#[test]
fn a_uint8_store_with_a_record_shaped_key_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    // A real record, as convert writes it for a float64 array `x`.
    let typed = dir.path().join("typed.kas");
    let mut writer = binfmt_kastore::Writer::new();
    writer.insert("x", vec![1.5f64]).unwrap();
    writer.write_file(&typed).unwrap();
    let arcx = target(dir.path(), "typed", Format::Arcx);
    convert(&typed, &arcx, Format::Arcx, &ConvertOptions::default()).unwrap();
    let record = entries_of(&arcx).remove(binfmt::TYPES_ENTRY).unwrap();

    let mut writer = binfmt_kastore::Writer::new();
    writer
        .insert_raw(
            binfmt::TYPES_ENTRY,
            binfmt_kastore::ItemType::Uint8,
            &record[..],
        )
        .unwrap();
    writer.insert("x", vec![7u8; 8]).unwrap();
    let built = writer.to_bytes().unwrap();
    let committed = binfmt_tests::workspace_root()
        .join("tests/regressions/convert/kast_uint8_with_record_key.kas");
    if std::env::var_os("BINFMT_BLESS").is_some() {
        std::fs::write(&committed, &built).unwrap();
    }
    assert!(
        std::fs::read(&committed).unwrap() == built,
        "regression input differs"
    );
    for to in [Format::Arcx, Format::Par4, Format::Taridx] {
        let out = target(dir.path(), "out", to);
        let error = convert(&committed, &out, to, &ConvertOptions::default()).unwrap_err();
        assert!(
            matches!(&error, binfmt::Error::CannotHold { name, .. } if name == binfmt::TYPES_ENTRY),
            "{to}: {error}"
        );
        assert!(!out.exists(), "{to}: wrote {}", out.display());
    }
}
