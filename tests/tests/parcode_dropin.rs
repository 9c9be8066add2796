//! binfmt-parcode as a drop-in for `parcode` 0.6.1 (issue 15): the same type
//! definitions (`dropin/types.rs`) compiled against both derives, and files
//! read both ways, eagerly and lazily, with and without LZ4.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::HashMap;

mod theirs {
    use parcode as dep;
    include!("dropin/types.rs");
}

mod ours {
    use binfmt_parcode as dep;
    include!("dropin/types.rs");
}

/// The same value as seen by each crate's types: equal when their serde
/// forms are.
fn same<A: serde::Serialize, B: serde::Serialize>(a: &A, b: &B) -> bool {
    serde_json::to_value(a).unwrap() == serde_json::to_value(b).unwrap()
}

const N: usize = 3_000;

/// The reference's file of `value`, compressed or not, written by its
/// parallel or its serial writer.
fn theirs_bytes<T: parcode::visitor::ParcodeVisitor + Sync>(
    value: &T,
    lz4: bool,
    sync: bool,
) -> Vec<u8> {
    let mut bytes = Vec::new();
    let options = parcode::Parcode::builder().compression(lz4);
    if sync {
        options.write_sync(&mut bytes, value).unwrap();
    } else {
        options.write(&mut bytes, value).unwrap();
    }
    bytes
}

fn ours_bytes<T: binfmt_parcode::ParcodeVisitor + Sync>(value: &T, lz4: bool) -> Vec<u8> {
    let mut bytes = Vec::new();
    binfmt_parcode::Parcode::builder()
        .compression(lz4)
        .write(&mut bytes, value)
        .unwrap();
    bytes
}

#[test]
fn reference_files_load_whole_here() {
    let expected = ours::world(N);
    for (lz4, sync) in [(false, false), (true, false), (false, true), (true, true)] {
        let bytes = theirs_bytes(&theirs::world(N), lz4, sync);
        let loaded: ours::World = binfmt_parcode::Parcode::load_bytes(bytes.clone()).unwrap();
        assert_eq!(loaded, expected, "lz4 {lz4} sync {sync}");
        binfmt_parcode::Parcode::open_bytes(bytes)
            .unwrap()
            .verify()
            .unwrap();
    }
}

#[test]
fn our_files_load_whole_with_the_reference() {
    let expected = theirs::world(N);
    for lz4 in [false, true] {
        let bytes = ours_bytes(&ours::world(N), lz4);
        let loaded: theirs::World = parcode::Parcode::load_bytes(bytes).unwrap();
        assert_eq!(loaded, expected, "lz4 {lz4}");
    }
}

#[test]
fn reference_files_read_lazily_here() {
    let value = ours::world(N);
    for lz4 in [false, true] {
        let bytes = theirs_bytes(&theirs::world(N), lz4, false);
        let file = binfmt_parcode::Parcode::open_bytes(bytes).unwrap();
        let world = file.root::<ours::World>().unwrap();
        assert_eq!(
            (world.id, &world.name, &world.kind, &world.note),
            (42, &value.name, &value.kind, &value.note)
        );
        assert_eq!(world.settings.difficulty, 3);
        assert_eq!(world.settings.history.len(), N);
        assert_eq!(world.settings.history.get(1234).unwrap(), "event 1234");
        assert_eq!(world.terrain.load().unwrap(), value.terrain);
        assert_eq!(world.points.get(N - 1).unwrap(), value.points[N - 1]);
        assert_eq!(
            world
                .points
                .iter()
                .unwrap()
                .collect::<Result<Vec<_>, _>>()
                .unwrap(),
            value.points
        );
        // Vec<struct with chunkable fields>, item by item.
        let heavy = world.heavy.get_lazy(123).unwrap();
        assert_eq!(heavy.id, 123);
        assert_eq!(heavy.kind, value.heavy[123].kind);
        assert_eq!(heavy.name.load().unwrap(), "heavy 123");
        assert_eq!(heavy.data.load().unwrap(), value.heavy[123].data);
        assert_eq!(world.heavy.get(77).unwrap(), value.heavy[77]);
        assert_eq!(world.heavy.load().unwrap(), value.heavy);
        let mut lazy_items = world.heavy.iter_lazy().unwrap();
        assert_eq!(lazy_items.len(), N / 10);
        let first = lazy_items.next().unwrap().unwrap();
        assert_eq!(first.name.load().unwrap(), "heavy 0");
        assert_eq!(lazy_items.len(), N / 10 - 1);
        assert_eq!(lazy_items.count(), N / 10 - 1);
        assert_eq!(world.heavy.last().unwrap().unwrap().id, (N / 10 - 1) as u32);
        // Maps with struct values, lazily and whole.
        let key = "player2718".to_string();
        let profile = world.players.get_lazy(&key).unwrap().unwrap();
        assert_eq!(profile.score, value.players[&key].score);
        assert_eq!(
            profile.inventory.load().unwrap(),
            value.players[&key].inventory
        );
        assert_eq!(
            world.players.get(&key).unwrap().as_ref(),
            Some(&value.players[&key])
        );
        assert!(world.players.contains_key(&key).unwrap());
        assert!(world.players.get(&"nobody".to_string()).unwrap().is_none());
        assert_eq!(world.players.len().unwrap(), N);
        assert_eq!(world.players.load().unwrap(), value.players);
        assert_eq!(
            world.scores.get(&(7 * 99)).unwrap(),
            Some(value.scores[&693].clone())
        );
        assert_eq!(world.scores.load().unwrap(), value.scores);
        // A plain HashMap in a chunk of its own (the reference's own promise
        // reads it as empty).
        assert_eq!(world.tags.load().unwrap(), value.tags);
        assert_eq!(world.tags.get(&"tag7".to_string()).unwrap(), Some(7));
        assert_eq!(world.title.load().unwrap(), value.title);
        assert_eq!(world.big.load().unwrap(), value.big);
        assert_eq!(world.small, value.small);
    }
}

#[test]
fn our_files_read_lazily_with_the_reference() {
    let value = theirs::world(N);
    for lz4 in [false, true] {
        let bytes = ours_bytes(&ours::world(N), lz4);
        let file = parcode::Parcode::open_bytes(bytes).unwrap();
        let world = file.root::<theirs::World>().unwrap();
        assert_eq!(world.id, 42);
        assert_eq!(world.settings.history.get(17).unwrap(), "event 17");
        assert_eq!(world.points.get(2999).unwrap(), value.points[2999]);
        assert_eq!(
            world.heavy.get_lazy(5).unwrap().name.load().unwrap(),
            "heavy 5"
        );
        let key = "player1".to_string();
        let profile = world.players.get_lazy(&key).unwrap().unwrap();
        assert_eq!(
            profile.inventory.load().unwrap(),
            value.players[&key].inventory
        );
        assert_eq!(
            world.players.get(&key).unwrap(),
            Some(value.players[&key].clone())
        );
        assert_eq!(world.scores.load().unwrap(), value.scores);
        assert_eq!(world.terrain.load().unwrap(), value.terrain);
    }
}

#[test]
fn roots_of_every_kind_cross_both_ways() {
    let numbers: Vec<u64> = (0..200_000).map(|i| i * 3).collect();
    let strings: Vec<String> = (0..5_000).map(|i| format!("s{i}")).collect();
    let map: HashMap<u32, String> = (0..100).map(|i| (i, format!("v{i}"))).collect();
    let points: Vec<ours::Point> = ours::world(500).points;
    let their_points: Vec<theirs::Point> = theirs::world(500).points;
    for lz4 in [false, true] {
        let bytes = theirs_bytes(&numbers, lz4, false);
        assert_eq!(
            binfmt_parcode::Parcode::load_bytes::<Vec<u64>>(bytes).unwrap(),
            numbers
        );
        let bytes = ours_bytes(&numbers, lz4);
        assert_eq!(
            parcode::Parcode::load_bytes::<Vec<u64>>(bytes).unwrap(),
            numbers
        );
        let bytes = theirs_bytes(&strings, lz4, false);
        assert_eq!(
            binfmt_parcode::Parcode::load_bytes::<Vec<String>>(bytes).unwrap(),
            strings
        );
        let bytes = ours_bytes(&strings, lz4);
        assert_eq!(
            parcode::Parcode::load_bytes::<Vec<String>>(bytes).unwrap(),
            strings
        );
        let bytes = theirs_bytes(&map, lz4, false);
        assert_eq!(
            binfmt_parcode::Parcode::load_bytes::<HashMap<u32, String>>(bytes).unwrap(),
            map
        );
        let bytes = ours_bytes(&map, lz4);
        assert_eq!(
            parcode::Parcode::load_bytes::<HashMap<u32, String>>(bytes).unwrap(),
            map
        );
        let bytes = theirs_bytes(&their_points, lz4, false);
        assert_eq!(
            binfmt_parcode::Parcode::load_bytes::<Vec<ours::Point>>(bytes).unwrap(),
            points
        );
        let bytes = ours_bytes(&points, lz4);
        assert_eq!(
            parcode::Parcode::load_bytes::<Vec<theirs::Point>>(bytes).unwrap(),
            their_points
        );
        let bytes = theirs_bytes(&theirs::Nothing, lz4, false);
        assert_eq!(
            binfmt_parcode::Parcode::load_bytes::<ours::Nothing>(bytes).unwrap(),
            ours::Nothing
        );
        let bytes = ours_bytes(&ours::Nothing, lz4);
        assert_eq!(
            parcode::Parcode::load_bytes::<theirs::Nothing>(bytes).unwrap(),
            theirs::Nothing
        );
        let bytes = theirs_bytes(&-17i64, lz4, false);
        assert_eq!(
            binfmt_parcode::Parcode::load_bytes::<i64>(bytes).unwrap(),
            -17
        );
        let bytes = ours_bytes(&"text".to_string(), lz4);
        assert_eq!(
            parcode::Parcode::load_bytes::<String>(bytes).unwrap(),
            "text"
        );
    }
    // The same value the same way: the serde forms agree.
    assert!(same(&ours::world(10), &theirs::world(10)));
}

#[test]
fn per_field_compression_and_zstd() {
    // terrain asks for LZ4: its container and shards are LZ4 whatever the
    // file's setting; the struct's own chunk follows the file.
    let bytes = ours_bytes(&ours::world(N), false);
    let file = binfmt_parcode::ParFile::new(bytes).unwrap();
    let root = file.root().unwrap();
    assert_eq!(root.compression(), binfmt_parcode::Compression::None);
    // Children: settings, terrain, points, heavy, players, scores, tags, title, big.
    let terrain = root.child(1).unwrap();
    assert_eq!(terrain.compression(), binfmt_parcode::Compression::Lz4);
    assert!(
        terrain
            .children()
            .unwrap()
            .iter()
            .all(|shard| shard.compression() == binfmt_parcode::Compression::Lz4)
    );
    assert_eq!(
        root.child(2).unwrap().compression(),
        binfmt_parcode::Compression::None
    );
    let scores = root.child(5).unwrap();
    assert_eq!(scores.compression(), binfmt_parcode::Compression::Lz4);

    // "zstd": the reference's parallel writer fails; binfmt writes LZ4,
    // which the reference reads.
    let packed = theirs::Packed {
        id: 1,
        blob: vec![9; 100_000],
    };
    let error = parcode::Parcode::serialize(&packed).unwrap_err();
    assert!(error.to_string().contains("Algorithm ID 2"), "{error}");
    let ours_packed = ours::Packed {
        id: 1,
        blob: vec![9; 100_000],
    };
    let bytes = binfmt_parcode::Parcode::serialize(&ours_packed).unwrap();
    assert!(
        bytes.len() < 10_000,
        "the blob is compressed: {} bytes",
        bytes.len()
    );
    let file = binfmt_parcode::ParFile::new(bytes.clone()).unwrap();
    assert_eq!(
        file.root().unwrap().child(0).unwrap().compression(),
        binfmt_parcode::Compression::Lz4
    );
    assert_eq!(
        parcode::Parcode::load_bytes::<theirs::Packed>(bytes.clone()).unwrap(),
        packed
    );
    assert_eq!(
        binfmt_parcode::Parcode::load_bytes::<ours::Packed>(bytes).unwrap(),
        ours_packed
    );
}

#[test]
fn our_bytes_do_not_depend_on_threads_or_map_order() {
    let value = ours::world(N);
    let write = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| ours_bytes(&value, true))
    };
    let one = write(1);
    assert_eq!(one, write(2));
    assert_eq!(one, write(4));
    // The same maps built in another order.
    let mut rebuilt = value.clone();
    let mut entries: Vec<_> = value.players.clone().into_iter().collect();
    entries.reverse();
    rebuilt.players = entries.into_iter().collect();
    assert_eq!(ours_bytes(&rebuilt, true), one);
}
