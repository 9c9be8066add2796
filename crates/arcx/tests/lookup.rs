//! `Archive::open_one`, the one-path lookup: the same bytes as the full
//! open for every file of every fixture, and the hostile manifests refused
//! for every path their defect concerns, with the full open's error.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use binfmt_arcx::{Archive, ArcxError, OpenOptions, PackOptions, Packer};
use binfmt_tests::build::arcx::{Archive as Build, Block, sha256};

fn fixtures() -> Vec<(String, Vec<u8>)> {
    let mut found = Vec::new();
    for dir in ["fixtures/generated/arcx", "fixtures/reference"] {
        let dir = binfmt_tests::workspace_root().join(dir);
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "arcx") {
                found.push((path.display().to_string(), std::fs::read(&path).unwrap()));
            }
        }
    }
    assert!(found.len() >= 9, "{found:?}");
    found
}

#[test]
fn every_file_of_every_fixture_reads_the_same_bytes() {
    for (name, bytes) in fixtures() {
        let archive = Archive::new(bytes.clone()).unwrap();
        for file in archive.files() {
            let path = file.path().to_string();
            let one = Archive::open_one(bytes.clone(), &path, OpenOptions::default())
                .unwrap_or_else(|e| panic!("{name}: {path}: {e}"));
            assert_eq!(one.file().path().to_string(), path);
            assert_eq!(one.file().index(), file.index(), "{name}: {path}");
            assert_eq!(one.file().size(), file.size());
            assert_eq!(one.file().sha256(), file.sha256());
            assert_eq!(one.file().attributes(), file.attributes());
            assert_eq!(one.dialect(), archive.dialect());
            assert_eq!(
                one.read().unwrap(),
                archive.read(&path).unwrap(),
                "{name}: {path}"
            );
        }
        // Paths that are not there, including ones that share a part with
        // a path that is.
        for missing in ["", "/", "nope", "a/", "/a"] {
            if archive.find(missing).is_none() {
                assert!(matches!(
                    Archive::open_one(bytes.clone(), missing, OpenOptions::default()),
                    Err(ArcxError::NotFound { .. })
                ));
            }
        }
    }
}

/// Many files in several shared blocks and some of their own, in both
/// dialects: each one found alone.
#[test]
fn a_packed_tree_reads_the_same_bytes_file_by_file() {
    for dialect in [binfmt_arcx::Dialect::Spec, binfmt_arcx::Dialect::ArcxCli] {
        let out = std::io::Cursor::new(Vec::new());
        let options = PackOptions::default()
            .dialect(dialect)
            .block_size(4096)
            .chunk_size(4096);
        let mut packer = Packer::new(out, options).unwrap();
        let mut expected = Vec::new();
        for i in 0..300u64 {
            let path = format!("d{}/sub/f{i}.bin", i % 7);
            let bytes = binfmt_tests::pseudo_random_bytes(i, (i * 97 % 9000) as usize);
            packer.add(&path, &mut bytes.as_slice()).unwrap();
            expected.push((path, bytes));
        }
        let bytes = packer.finish().unwrap().0.into_inner();
        for (path, content) in &expected {
            let one = Archive::open_one(bytes.clone(), path, OpenOptions::default()).unwrap();
            assert_eq!(&one.read().unwrap(), content, "{path}");
        }
        // A directory alone, or a name alone, is not a path.
        for missing in ["d1", "d1/sub", "f3.bin", "sub/f3.bin", "d1/sub/f3.bin/"] {
            assert!(matches!(
                Archive::open_one(bytes.clone(), missing, OpenOptions::default()),
                Err(ArcxError::NotFound { .. })
            ));
        }
    }
}

/// The hostile cases of `hostile.rs`, rebuilt here for the paths they
/// concern: `open_one` refuses those paths with the full open's error.
#[test]
fn hostile_manifests_are_refused_for_the_path_they_concern() {
    let three = || Build::of(&[("a", b"alpha"), ("b", b"bravo!"), ("c", b"charlie")]);
    let manifest = |fragment: &'static str| {
        move |error: &ArcxError| {
            matches!(error, ArcxError::Manifest(_)) && error.to_string().contains(fragment)
        }
    };
    type Expect = Box<dyn Fn(&ArcxError) -> bool>;
    let mut cases: Vec<(&str, Build, &[&str], Expect)> = Vec::new();

    let mut build = three();
    build.files[0].chunks = vec![0; 4];
    build.files[0].size = 20;
    cases.push((
        "listed twice",
        build,
        &["a", "b", "c"],
        Box::new(manifest("listed twice")),
    ));

    let mut build = three();
    build.files[1].chunks = vec![0];
    build.files[1].size = 5;
    build.files[1].sha256 = sha256(b"alpha");
    cases.push((
        "chunk reused",
        build,
        &["b"],
        Box::new(|e| {
            matches!(
                e,
                ArcxError::ChunkReused {
                    chunk: 0,
                    owner: 0,
                    ..
                }
            )
        }),
    ));

    let mut build = three();
    build.chunks[1].block_offset = 2;
    build.files[1].sha256 = sha256(b"pha\0\0\0");
    cases.push((
        "overlap",
        build,
        &["a", "b"],
        Box::new(|e| {
            matches!(
                e,
                ArcxError::ChunkOverlap {
                    block: 0,
                    first: 0,
                    second: 1
                }
            )
        }),
    ));

    let mut build = three();
    build.chunks[2].block = 5;
    cases.push((
        "missing block",
        build,
        &["c"],
        Box::new(manifest("block 5 does not exist")),
    ));

    let mut build = three();
    build.chunks[2].block_offset = 100;
    cases.push((
        "outside its block",
        build,
        &["c"],
        Box::new(manifest("are outside block 0")),
    ));

    let mut build = three();
    build.files[2].chunks = vec![7];
    cases.push((
        "missing chunk",
        build,
        &["c"],
        Box::new(manifest("chunk 7 does not exist")),
    ));

    let mut build = three();
    build.files[1].name = 1;
    cases.push((
        "path twice",
        build,
        &["a"],
        Box::new(manifest("appears twice")),
    ));

    let mut build = three();
    build.files[0].size = 6;
    cases.push((
        "size",
        build,
        &["a"],
        Box::new(manifest("chunks hold 5 bytes, the file is 6")),
    ));

    let mut build = three();
    build.files[0].kind = 1;
    cases.push((
        "directory with bytes",
        build,
        &["a"],
        Box::new(manifest("a directory entry holds bytes")),
    ));

    let mut build = Build::of(&[("a", b"alpha")]);
    build.chunks[0].size = 3;
    build.files[0].size = 3;
    build.files[0].sha256 = sha256(b"alp");
    cases.push((
        "own block",
        build,
        &["a"],
        Box::new(manifest("not the whole block")),
    ));

    let mut build = Build::of(&[("a", &binfmt_tests::pseudo_random_bytes(3, 4000))]);
    build.blocks[0].size = Some(10);
    build.chunks[0].size = 10;
    build.files[0].size = 10;
    cases.push((
        "block rule",
        build,
        &["a"],
        Box::new(manifest("cannot hold 10 bytes")),
    ));

    let mut build = three();
    build.manifest_padding = 17 << 20;
    cases.push((
        "padding",
        build,
        &["a", "b", "c"],
        Box::new(manifest("decompress beyond 16777216 bytes")),
    ));

    for (case, build, refused, expect) in cases {
        for (dialect, bytes) in [("spec", build.spec()), ("arcx-cli", build.cli())] {
            // The full open refuses the archive whatever the path.
            let full = Archive::new(bytes.clone()).map(|_| ()).unwrap_err();
            for path in ["a", "b", "c"] {
                let one = Archive::open_one(bytes.clone(), path, OpenOptions::default());
                if refused.contains(&path) {
                    let error = one.map(|_| ()).unwrap_err();
                    assert!(
                        expect(&error),
                        "{case} ({dialect}) {path}: {error}; full: {full}"
                    );
                } else if let Ok(one) = one {
                    // Paths the defect does not concern read their own bytes.
                    assert_eq!(one.file().path().to_string(), path);
                    one.read().unwrap();
                }
            }
        }
    }
}

/// Strings are compared with the path as bytes: only those that may be
/// part of it are checked for UTF-8 (spec/arcx.md, "Reading one file").
#[test]
fn only_strings_that_may_be_the_path_are_checked_for_utf8() {
    let mut build = Build::of(&[("a", b"alpha"), ("b", b"bravo!"), ("c", b"charlie")]);
    // b's name: the last byte of "é", alone.
    build.strings[2] = vec![0xa9];
    for (dialect, bytes) in [("spec", build.spec()), ("arcx-cli", build.cli())] {
        let full = Archive::new(bytes.clone()).map(|_| ()).unwrap_err();
        assert!(full.to_string().contains("not UTF-8"), "{dialect}: {full}");
        let one = Archive::open_one(bytes.clone(), "a", OpenOptions::default()).unwrap();
        assert_eq!(one.read().unwrap(), b"alpha", "{dialect}");
        // A path ending with that byte: the string is a candidate.
        let error = Archive::open_one(bytes.clone(), "xé", OpenOptions::default())
            .map(|_| ())
            .unwrap_err();
        assert!(
            matches!(error, ArcxError::Manifest(_)) && error.to_string() == full.to_string(),
            "{dialect}: {error}; full: {full}"
        );
    }
}

/// Chunk rows whose blocks are not in ascending order: the lookup reads
/// the chunk table again for the chunks of the file's blocks, and finds
/// what the full open finds.
#[test]
fn chunk_rows_out_of_block_order() {
    let mut build = Build::of(&[("a", b"alpha"), ("b", b"bravo!"), ("c", b"charlie")]);
    // Rows name blocks 0, 1, 0.
    build.blocks[0] = Block::zstd(b"alphacharlie".to_vec());
    build.blocks.push(Block::zstd(b"bravo!".to_vec()));
    build.chunks[1].block = 1;
    build.chunks[1].block_offset = 0;
    build.chunks[2].block_offset = 5;
    for bytes in [build.spec(), build.cli()] {
        let full = Archive::new(bytes.clone()).unwrap();
        for path in ["a", "b", "c"] {
            let one = Archive::open_one(bytes.clone(), path, OpenOptions::default()).unwrap();
            assert_eq!(one.read().unwrap(), full.read(path).unwrap(), "{path}");
        }
    }
    // c's chunk, after block 1's, overlaps a's.
    build.chunks[2].block_offset = 2;
    build.blocks[0] = Block::zstd(b"alphacharlie".to_vec());
    build.files[2].sha256 = sha256(b"phachar");
    for bytes in [build.spec(), build.cli()] {
        Archive::new(bytes.clone()).map(|_| ()).unwrap_err();
        for path in ["a", "c"] {
            let error = Archive::open_one(bytes.clone(), path, OpenOptions::default())
                .map(|_| ())
                .unwrap_err();
            assert!(
                matches!(
                    error,
                    ArcxError::ChunkOverlap {
                        block: 0,
                        first: 0,
                        second: 2
                    }
                ),
                "{path}: {error}"
            );
        }
        let one = Archive::open_one(bytes.clone(), "b", OpenOptions::default()).unwrap();
        assert_eq!(one.read().unwrap(), b"bravo!");
    }
}

/// A one-file open decompresses the file's block into the buffer that
/// held the manifest, given exactly the room the block states: a frame
/// making more or fewer bytes than that is refused as the full open's
/// read refuses it.
#[test]
fn a_block_making_other_than_its_stated_size_is_refused_as_by_the_full_open() {
    let data = b"abcdefgh".repeat(500);
    for stated in [3000u64, 5000] {
        let mut build = Build::of(&[("a", &data)]);
        build.blocks[0].size = Some(stated);
        build.chunks[0].size = stated;
        build.files[0].size = stated;
        for (dialect, bytes) in [("spec", build.spec()), ("arcx-cli", build.cli())] {
            let full = Archive::new(bytes.clone()).unwrap().read("a").unwrap_err();
            let one = Archive::open_one(bytes.clone(), "a", OpenOptions::default())
                .unwrap()
                .read()
                .unwrap_err();
            assert!(
                matches!(one, ArcxError::BlockData { block: 0, .. }),
                "{dialect} {stated}: {one}"
            );
            assert_eq!(one.to_string(), full.to_string(), "{dialect} {stated}");
        }
    }
}
