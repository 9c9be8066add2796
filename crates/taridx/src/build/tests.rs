//! The index builder on hand-made members: first-seen ids, contiguity,
//! crash ids, and shards merged in fid order.

use super::*;

fn member(name: &str, offset: u64) -> Member {
    Member {
        offset,
        size: 1,
        name: name.as_bytes().to_vec(),
    }
}

#[test]
fn ids_in_first_seen_order_and_contiguity() {
    let mut builder = IndexBuilder::new(KeyRule::Glzn);
    for (i, name) in ["a.jpg", "a.json", "b.json", "b.jpg", "a.txt"]
        .iter()
        .enumerate()
    {
        builder.add(0, member(name, i as u64 * 1024)).unwrap();
    }
    let extids: Vec<u16> = builder
        .rows()
        .unwrap()
        .iter()
        .map(|r| r.extid.get())
        .collect();
    assert_eq!(extids, [0, 1, 1, 0, 2]);
    let bytes = builder.to_bytes().unwrap();
    let index = crate::Index::new(bytes).unwrap();
    assert_eq!(index.extensions(), ["jpg", "json", "txt"]);
    assert_eq!(index.n_stems(), 2);
    // a, a, b, b, a: three runs for two stems.
    assert!(!index.is_contiguous());
    index.verify(None).unwrap();
}

/// Members of three shards whose stems share hashes (forced: real
/// xxh64 collisions are out of reach): stem, extension, hash.
const SHARDS: [&[(&str, &str, u64)]; 3] = [
    &[("first", "jpg", 42), ("x", "jpg", 7), ("second", "jpg", 42)],
    &[
        ("second", "txt", 42),
        ("third", "jpg", 42),
        ("first", "txt", 42),
    ],
    &[("third", "txt", 42), ("y", "cls", 7), ("x", "txt", 7)],
];

#[test]
fn merged_shards_give_the_crash_ids_of_one_sequence() {
    // Member by member, as one sequence.
    let mut sequence = IndexBuilder::new(KeyRule::Glzn);
    // Shard by shard, as index_shards does: each table sorted by the
    // thread that scanned it, then appended in fid order.
    let mut merged = IndexBuilder::new(KeyRule::Glzn);
    for (fid, members) in (0u16..).zip(SHARDS) {
        let mut table = RowTable::default();
        for (i, &(stem, extension, key)) in (0u64..).zip(members) {
            let offset = i * 1024;
            table
                .push(fid, offset, 1, stem, extension, key, String::new)
                .unwrap();
            sequence
                .table
                .push(fid, offset, 1, stem, extension, key, String::new)
                .unwrap();
        }
        table.stems.sort_by_hash().unwrap();
        merged.table.append(table).unwrap();
    }
    let crashids = |builder: &mut IndexBuilder| -> Vec<u32> {
        let rows = builder.rows().unwrap();
        rows.iter().map(|r| r.crashid.get()).collect()
    };
    // The first stem under a hash is canonical (0); crash ids count
    // the others in first-seen order, across hashes: 42 -> first (0),
    // second (1), third (2); 7 -> x (0), y (3).
    let expected = [0, 0, 1, 1, 2, 0, 2, 3, 0];
    assert_eq!(crashids(&mut merged), expected);
    assert_eq!(crashids(&mut sequence), expected);
    let bytes = merged.to_bytes().unwrap();
    assert!(bytes == sequence.to_bytes().unwrap());
    let index = crate::Index::new(bytes).unwrap();
    assert_eq!(
        index.crash_stems().collect::<Vec<_>>(),
        ["second", "third", "y"]
    );
    assert_eq!(index.n_stems(), 5);
    index.verify(None).unwrap();
}

#[test]
fn rows_added_after_a_merge_get_ids_too() {
    let mut builder = IndexBuilder::new(KeyRule::Glzn);
    let mut table = RowTable::default();
    for (i, &(stem, extension, key)) in (0u64..).zip(SHARDS[0]) {
        table
            .push(0, i * 1024, 1, stem, extension, key, String::new)
            .unwrap();
    }
    table.stems.sort_by_hash().unwrap();
    builder.table.append(table).unwrap();
    // Ids given once, then more rows in the same piece and a new stem
    // under a known hash.
    assert_eq!(builder.rows().unwrap().len(), 3);
    for (i, &(stem, extension, key)) in (3u64..).zip(SHARDS[1]) {
        builder
            .table
            .push(1, i * 1024, 1, stem, extension, key, String::new)
            .unwrap();
    }
    let crashids: Vec<u32> = builder
        .rows()
        .unwrap()
        .iter()
        .map(|r| r.crashid.get())
        .collect();
    assert_eq!(crashids, [0, 0, 1, 1, 2, 0]);
    crate::Index::new(builder.to_bytes().unwrap())
        .unwrap()
        .verify(None)
        .unwrap();
}

#[test]
fn colliding_stems_get_crash_ids_in_first_seen_order() {
    let mut builder = IndexBuilder::new(KeyRule::Glzn);
    for (i, name) in [
        "first.jpg",
        "second.jpg",
        "first.txt",
        "third.jpg",
        "second.txt",
    ]
    .iter()
    .enumerate()
    {
        let mut prepared = Prepared::new(member(name, i as u64 * 1024), KeyRule::Glzn);
        prepared.key = 42;
        builder.add_prepared(0, prepared).unwrap();
    }
    let crashids: Vec<u32> = builder
        .rows()
        .unwrap()
        .iter()
        .map(|r| r.crashid.get())
        .collect();
    assert_eq!(crashids, [0, 1, 0, 2, 1]);
    let index = crate::Index::new(builder.to_bytes().unwrap()).unwrap();
    assert_eq!(index.crash_stems().collect::<Vec<_>>(), ["second", "third"]);
    assert_eq!(index.crash_id("third"), 2);
    assert_eq!(index.crash_id("first"), 0);
    assert_eq!(index.n_stems(), 3);
    index.verify(None).unwrap();
}

/// Streams `shards` into an [`IndexFile`] merge by merge, as
/// `index_shards_into` does, and returns the file's bytes next to those
/// of the same rows written at once.
fn streamed_and_whole(shards: &[&[(&str, &str, u64)]]) -> (Vec<u8>, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("streamed.taridx");
    let mut file = IndexFile::create(&path).unwrap();
    let mut merged = IndexBuilder::new(KeyRule::Glzn);
    let mut whole = IndexBuilder::new(KeyRule::Glzn);
    for (fid, members) in (0u16..).zip(shards) {
        let mut table = RowTable::default();
        for (i, &(stem, extension, key)) in (0u64..).zip(members.iter()) {
            table
                .push(fid, i * 1024, 1, stem, extension, key, String::new)
                .unwrap();
            whole
                .table
                .push(fid, i * 1024, 1, stem, extension, key, String::new)
                .unwrap();
        }
        table.stems.sort_by_hash().unwrap();
        merged.table.append(table).unwrap();
        file.rows_merged(&merged.table.extensions.names, &merged.table.rows.pieces)
            .unwrap();
    }
    file.finish(&mut merged).unwrap();
    (std::fs::read(&path).unwrap(), whole.to_bytes().unwrap())
}

#[test]
fn streamed_rows_in_place_give_the_same_bytes() {
    // No new extension after the first shard, no shared hash.
    let shards: [&[(&str, &str, u64)]; 3] = [
        &[("a", "jpg", 1), ("a", "json", 1), ("b", "jpg", 2)],
        &[("b", "json", 2), ("c", "jpg", 3)],
        &[("c", "json", 3), ("d", "jpg", 4), ("d", "json", 4)],
    ];
    let (streamed, whole) = streamed_and_whole(&shards);
    assert!(streamed == whole);
    let index = crate::Index::new(streamed).unwrap();
    assert_eq!(index.num_rows(), 8);
    index.verify(None).unwrap();
}

#[test]
fn streamed_rows_moved_by_a_new_extension_or_crash_stem_give_the_same_bytes() {
    // New extensions in later shards and crash stems: every row moves.
    let (streamed, whole) = streamed_and_whole(&SHARDS);
    assert!(streamed == whole);
    assert_eq!(
        crate::Index::new(streamed).unwrap().crash_stems().count(),
        3
    );
    // Crash stems alone, every extension known from the first shard.
    let shards: [&[(&str, &str, u64)]; 2] = [
        &[("first", "jpg", 42), ("first", "txt", 42)],
        &[("second", "jpg", 42), ("second", "txt", 42)],
    ];
    let (streamed, whole) = streamed_and_whole(&shards);
    assert!(streamed == whole);
    // The crash stem is "": its block is empty, its rows' crash id is not.
    let shards: [&[(&str, &str, u64)]; 2] = [
        &[("first", "jpg", 42), ("first", "txt", 42)],
        &[("", "jpg", 42), ("", "txt", 42)],
    ];
    let (streamed, whole) = streamed_and_whole(&shards);
    assert!(streamed == whole);
}

#[test]
fn an_index_file_dropped_before_finish_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dropped.taridx");
    let mut file = IndexFile::create(&path).unwrap();
    let mut builder = IndexBuilder::new(KeyRule::Glzn);
    builder.add(0, member("a.jpg", 0)).unwrap();
    file.rows_merged(&builder.table.extensions.names, &builder.table.rows.pieces)
        .unwrap();
    drop(file);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn merges_deferred_behind_the_scanners_give_the_same_index() {
    // Six shards, stems sharing two hashes across shards (crash ids) and a
    // stem going on from one shard into the next; every merge deferred, so
    // the end sorts six runs at once.
    let mut sequence = IndexBuilder::new(KeyRule::Glzn);
    let mut deferred = IndexBuilder::new(KeyRule::Glzn);
    for fid in 0u16..6 {
        let mut table = RowTable::default();
        // A stem's hash is its number's parity (t's the other one).
        let n = u64::from(fid);
        let stems = [
            (format!("s{n}"), 100 + n % 2),
            (format!("t{n}"), 100 + (n + 1) % 2),
            (format!("s{}", n + 1), 100 + (n + 1) % 2),
        ];
        for (i, (stem, key)) in (0u64..).zip(&stems) {
            let key = *key;
            for builder_table in [&mut table, &mut sequence.table] {
                builder_table
                    .push(fid, i * 1024, 1, stem, "jpg", key, String::new)
                    .unwrap();
            }
        }
        table.stems.sort_by_hash().unwrap();
        deferred.table.append_deferring(table, true).unwrap();
    }
    assert!(deferred.table.stems.sorted_runs.len() > 3);
    assert!(deferred.to_bytes().unwrap() == sequence.to_bytes().unwrap());
    let index = crate::Index::new(deferred.to_bytes().unwrap()).unwrap();
    index.verify(None).unwrap();
    assert!(index.crash_stems().count() > 0);
}
