//! Archives that are consistent in layout but malicious in meaning, built
//! byte by byte (`binfmt_tests::build::arcx`), one meaning changed at a
//! time: each must be refused with its own error, in both dialects, and
//! every byte a reader takes must be one it needs.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::Read;

use binfmt_arcx::{Archive, ArcxError};
use binfmt_core::SeekSource;
use binfmt_tests::build::arcx::{Archive as Build, Block, Chunk, sha256};
use binfmt_tests::counting::Counted;

fn both(build: &Build) -> [(&'static str, Vec<u8>); 2] {
    [("spec", build.spec()), ("arcx-cli", build.cli())]
}

/// Three files in one shared block: the sound starting point.
fn three() -> Build {
    Build::of(&[("a", b"alpha"), ("b", b"bravo!"), ("c", b"charlie")])
}

/// A hostile case: its name (the regression file's), the archive, and the
/// error it must give.
struct Case {
    name: &'static str,
    build: Build,
    expect: fn(&ArcxError) -> bool,
}

fn manifest_says(fragment: &'static str) -> impl Fn(&ArcxError) -> bool {
    move |error| matches!(error, ArcxError::Manifest(_)) && error.to_string().contains(fragment)
}

fn cases() -> Vec<Case> {
    let mut cases = Vec::new();

    // One file listing the same chunk again and again: once this made
    // `read` reserve size × repetitions.
    let mut build = three();
    build.files[0].chunks = vec![0; 4];
    build.files[0].size = 20;
    cases.push(Case {
        name: "chunk-listed-twice-in-a-file",
        build,
        expect: |e| manifest_says("listed twice")(e),
    });

    // Two files listing one chunk.
    let mut build = three();
    build.files[1].chunks = vec![0];
    build.files[1].size = 5;
    build.files[1].sha256 = sha256(b"alpha");
    cases.push(Case {
        name: "chunk-shared-by-two-files",
        build,
        expect: |e| {
            matches!(
                e,
                ArcxError::ChunkReused {
                    chunk: 0,
                    owner: 0,
                    ..
                }
            )
        },
    });

    // Chunks of two files covering the same bytes of a block.
    let mut build = three();
    build.chunks[1].block_offset = 2;
    build.files[1].sha256 = sha256(b"pha\0\0\0");
    cases.push(Case {
        name: "chunks-overlap",
        build,
        expect: |e| {
            matches!(
                e,
                ArcxError::ChunkOverlap {
                    block: 0,
                    first: 0,
                    second: 1
                }
            )
        },
    });

    // Two block records over the same stored bytes.
    let mut build = Build::of(&[("a", &[7; 300_000])]);
    build.blocks.push(Block {
        alias_of: Some(0),
        ..build.blocks[0].clone()
    });
    build.strings.push("b".into());
    build.files.push(binfmt_tests::build::arcx::File {
        name: 2,
        chunks: vec![1],
        ..build.files[0].clone()
    });
    build.chunks.push(Chunk {
        file: 1,
        block: 1,
        ..build.chunks[0]
    });
    cases.push(Case {
        name: "two-blocks-over-the-same-bytes",
        build,
        expect: |e| manifest_says("overlap the header or the previous block")(e),
    });

    // A file going back to a shared block after a later one was used.
    let mut build = Build::of(&[
        ("a", b"one"),
        ("b", b"two"),
        ("c", b"three"),
        ("d", b"four"),
    ]);
    build.blocks = vec![
        Block::zstd(b"onethree".to_vec()),
        Block::zstd(b"twofour".to_vec()),
    ];
    build.chunks = vec![
        Chunk {
            file: 0,
            file_offset: 0,
            size: 3,
            block: 0,
            block_offset: 0,
        },
        Chunk {
            file: 1,
            file_offset: 0,
            size: 3,
            block: 1,
            block_offset: 0,
        },
        Chunk {
            file: 2,
            file_offset: 0,
            size: 5,
            block: 0,
            block_offset: 3,
        },
        Chunk {
            file: 3,
            file_offset: 0,
            size: 4,
            block: 1,
            block_offset: 3,
        },
    ];
    cases.push(Case {
        name: "shared-block-revisited",
        build,
        expect: |e| matches!(e, ArcxError::SharedBlockRevisited { block: 0, .. }),
    });

    // A file with two chunks, one in a block other files share.
    let mut build = Build::of(&[("a", b"alpha"), ("b", b"bravo")]);
    build.blocks.push(Block::store(b"tail".to_vec()));
    build.chunks.push(Chunk {
        file: 0,
        file_offset: 5,
        size: 4,
        block: 1,
        block_offset: 0,
    });
    build.files[0].chunks = vec![0, 2];
    build.files[0].size = 9;
    build.files[0].sha256 = sha256(b"alphatail");
    cases.push(Case {
        name: "shared-block-file-with-two-chunks",
        build,
        expect: |e| manifest_says("a file in a shared block is that one piece")(e),
    });

    // A block of its own that its one chunk does not cover.
    let mut build = Build::of(&[("a", b"alpha")]);
    build.chunks[0].size = 3;
    build.files[0].size = 3;
    build.files[0].sha256 = sha256(b"alp");
    cases.push(Case {
        name: "own-block-not-covered",
        build,
        expect: |e| manifest_says("not the whole block")(e),
    });

    // A chunk no file lists.
    let mut build = three();
    build.files[2].chunks = Vec::new();
    build.files[2].size = 0;
    build.files[2].sha256 = sha256(b"");
    cases.push(Case {
        name: "orphan-chunk",
        build,
        expect: |e| manifest_says("belongs to no file")(e),
    });

    // The same path twice.
    let mut build = three();
    build.files[1].name = 1;
    cases.push(Case {
        name: "path-twice",
        build,
        expect: |e| manifest_says("appears twice")(e),
    });

    // Sizes that do not add up.
    let mut build = three();
    build.files[0].size = 6;
    cases.push(Case {
        name: "file-size-disagrees",
        build,
        expect: |e| manifest_says("chunks hold 5 bytes, the file is 6")(e),
    });

    // A zstd block claiming fewer bytes than its frame needs.
    let mut build = Build::of(&[("a", &binfmt_tests::pseudo_random_bytes(3, 4000))]);
    build.blocks[0].size = Some(10);
    build.chunks[0].size = 10;
    build.files[0].size = 10;
    cases.push(Case {
        name: "stored-larger-than-zstd-makes",
        build,
        expect: |e| manifest_says("cannot hold 10 bytes")(e),
    });

    // A directory entry with bytes.
    let mut build = three();
    build.files[0].kind = 1;
    cases.push(Case {
        name: "directory-with-bytes",
        build,
        expect: |e| manifest_says("a directory entry holds bytes")(e),
    });

    // A manifest that decompresses to 17 MiB of zeros after its tables:
    // a few kilobytes may not claim that much memory (finding 10 of the
    // outside attack padded 1 GiB into 33 KB).
    let mut build = three();
    build.manifest_padding = 17 << 20;
    cases.push(Case {
        name: "manifest-padded-with-zeros",
        build,
        expect: |e| manifest_says("decompress beyond 16777216 bytes")(e),
    });

    // A name holding nothing.
    let mut build = three();
    build.strings[1] = Vec::new();
    cases.push(Case {
        name: "empty-name",
        build,
        expect: |e| manifest_says("the name part is empty")(e),
    });
    cases
}

#[test]
fn every_hostile_case_is_refused_with_its_error() {
    let sound = three();
    for (dialect, bytes) in both(&sound) {
        let archive = Archive::new(bytes).unwrap_or_else(|e| panic!("{dialect}: {e}"));
        assert_eq!(archive.read("b").unwrap(), b"bravo!");
        archive.verify().unwrap();
    }
    for case in cases() {
        for (dialect, bytes) in both(&case.build) {
            // The chunk file offset only exists in the spec dialect.
            let error = match Archive::new(bytes) {
                Ok(_) => panic!("{} ({dialect}) was accepted", case.name),
                Err(error) => error,
            };
            assert!((case.expect)(&error), "{} ({dialect}): {error}", case.name);
        }
    }
}

#[test]
fn spec_chunk_offsets_must_follow_the_file() {
    let mut build = Build::of(&[("a", &[1; 300_000])]);
    build.blocks = vec![Block::zstd(vec![1; 200_000]), Block::zstd(vec![1; 100_000])];
    build.chunks = vec![
        Chunk {
            file: 0,
            file_offset: 0,
            size: 200_000,
            block: 0,
            block_offset: 0,
        },
        Chunk {
            file: 0,
            file_offset: 7,
            size: 100_000,
            block: 1,
            block_offset: 0,
        },
    ];
    build.files[0].chunks = vec![0, 1];
    let error = Archive::new(build.spec()).unwrap_err();
    assert!(error.to_string().contains("starts at 7"), "{error}");
    // The tool's dialect has no such field; the same archive reads.
    let archive = Archive::new(build.cli()).unwrap();
    assert_eq!(archive.read("a").unwrap(), vec![1; 300_000]);
}

#[test]
fn header_fields_must_repeat_the_footer() {
    let mut build = three();
    build.header_manifest_offset = Some(81);
    for (dialect, bytes) in both(&build) {
        assert!(
            matches!(
                Archive::new(bytes),
                Err(ArcxError::HeaderFooterMismatch {
                    field: "manifest_offset",
                    header: 81,
                    ..
                })
            ),
            "{dialect}"
        );
    }
    let mut build = three();
    build.total_files = Some(2);
    assert!(Archive::new(build.spec()).is_err());
}

#[test]
fn a_zstd_bomb_is_read_in_bounded_pieces_and_refused_at_its_end() {
    // One block that truly decompresses to 64 MiB, but the manifest says
    // 32 MiB: a streamed block stops at its stated size and fails there.
    let zeros = vec![0u8; 64 << 20];
    let mut build = Build::of(&[("bomb", &zeros)]);
    build.blocks[0].size = Some(32 << 20);
    build.chunks[0].size = 32 << 20;
    build.files[0].size = 32 << 20;
    build.files[0].sha256 = sha256(&zeros[..32 << 20]);
    let archive = Archive::new(build.spec()).unwrap();
    let mut reader = archive.reader("bomb").unwrap();
    let mut sink = vec![0u8; 1 << 20];
    let mut total = 0usize;
    let error = loop {
        match reader.read(&mut sink) {
            Ok(0) => panic!("the bomb read to its end"),
            Ok(n) => total += n,
            Err(error) => break error,
        }
    };
    assert_eq!(total, 32 << 20, "every stated byte came out first");
    let error = ArcxError::from_io(error, std::path::Path::new("bomb"));
    assert!(
        matches!(&error, ArcxError::BlockData { block: 0, why } if why.contains("beyond")),
        "{error}"
    );
}

/// Opening reads the header, the footer and the manifest region, nothing
/// else; getting a file reads only its block.
#[test]
fn reads_only_what_each_operation_needs() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    let big = binfmt_tests::pseudo_random_bytes(5, 3 << 20);
    binfmt_tests::write_tree(
        &tree,
        [
            ("big.bin".to_owned(), big.clone()),
            ("small.txt".to_owned(), b"small".to_vec()),
        ],
    );
    for dialect in [binfmt_arcx::Dialect::Spec, binfmt_arcx::Dialect::ArcxCli] {
        let out = dir.path().join(format!("{}.arcx", dialect.name()));
        binfmt_arcx::pack_dir(
            &tree,
            &out,
            binfmt_arcx::PackOptions::default().dialect(dialect),
            |_| {},
        )
        .unwrap();
        let bytes = std::fs::read(&out).unwrap();
        let len = bytes.len() as u64;
        let (counted, stats) = Counted::new(bytes);
        let archive = Archive::new(SeekSource::new(counted, "counted").unwrap()).unwrap();
        let (manifest_offset, _) = archive.manifest_region();
        let (opened, reads) = stats.take();
        assert_eq!(reads, 3, "{dialect:?}: header, footer, manifest region");
        assert_eq!(
            opened,
            80 + 40 + (len - 40 - manifest_offset),
            "{dialect:?}"
        );

        assert_eq!(archive.read("small.txt").unwrap(), b"small");
        let small_block = archive.manifest().blocks()[archive
            .find("small.txt")
            .unwrap()
            .chunks()
            .next()
            .unwrap()
            .block as usize];
        assert_eq!(
            stats.take(),
            (4 + u64::from(small_block.stored_size), 1),
            "{dialect:?}"
        );

        assert_eq!(archive.read("big.bin").unwrap(), big);
        let big_blocks: u64 = archive
            .find("big.bin")
            .unwrap()
            .chunks()
            .map(|chunk| {
                4 + u64::from(archive.manifest().blocks()[chunk.block as usize].stored_size)
            })
            .sum();
        assert_eq!(
            stats.take(),
            (big_blocks, 3),
            "{dialect:?}: three 1 MiB chunks"
        );

        // Verify reads the header and every block once, and nothing else.
        archive.verify().unwrap();
        let (verified, _) = stats.take();
        assert_eq!(verified, manifest_offset, "{dialect:?}");

        // Extraction, on several threads, reads every block once too.
        let target = dir.path().join(format!("x-{}", dialect.name()));
        archive
            .extract(
                &target,
                binfmt_arcx::ExtractOptions::default().jobs(Some(3)),
            )
            .unwrap();
        assert_eq!(stats.take().0, manifest_offset - 80, "{dialect:?}");

        // Leaving the header to verify, opening is two reads: the footer,
        // and the manifest region before it.
        let (counted, stats) = Counted::new(std::fs::read(&out).unwrap());
        let options = binfmt_arcx::OpenOptions::default().check_header(false);
        Archive::with_options(SeekSource::new(counted, "counted").unwrap(), options).unwrap();
        assert_eq!(
            stats.take(),
            (40 + (len - 40 - manifest_offset), 2),
            "{dialect:?}"
        );
    }
}

/// The hostile cases, committed under `tests/regressions/arcx/` for the
/// workspace's regression test and as fuzzing seeds: the files must be what
/// the builder makes (`BINFMT_BLESS=1` rewrites them).
#[test]
fn regression_files_are_current() {
    let dir = binfmt_tests::workspace_root().join("tests/regressions/arcx");
    let bless = std::env::var_os("BINFMT_BLESS").is_some();
    if bless {
        std::fs::create_dir_all(&dir).unwrap();
    }
    for case in cases() {
        for (dialect, bytes) in both(&case.build) {
            let path = dir.join(format!("{}.{dialect}.arcx", case.name));
            if bless {
                std::fs::write(&path, &bytes).unwrap();
            }
            let committed = std::fs::read(&path)
                .unwrap_or_else(|e| panic!("{}: {e} (BINFMT_BLESS=1 writes it)", path.display()));
            assert!(committed == bytes, "{} is stale", path.display());
        }
    }
}

/// 300 one-byte files in one shared block: extracting them decodes the
/// block once, whatever the thread count (once, each file decoded it again).
#[test]
fn a_shared_block_is_decoded_once_when_extracting() {
    let names: Vec<String> = (0..300).map(|i| format!("f{i:03}")).collect();
    let files: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &b"x"[..])).collect();
    let build = Build::of(&files);
    for (dialect, bytes) in both(&build) {
        let block = 80 + 4 + build.blocks[0].data.len() as u64;
        let stored = u64::from_le_bytes(
            bytes[bytes.len() - 32..bytes.len() - 24]
                .try_into()
                .unwrap(),
        ) - 80;
        for jobs in [1, 2, 4] {
            let (counted, stats) = Counted::new(bytes.clone());
            let archive = Archive::new(SeekSource::new(counted, "counted").unwrap()).unwrap();
            stats.take();
            let dir = tempfile::tempdir().unwrap();
            let summary = archive
                .extract(
                    dir.path(),
                    binfmt_arcx::ExtractOptions::default().jobs(Some(jobs)),
                )
                .unwrap();
            assert_eq!(summary.files, 300);
            let (read, requests) = stats.take();
            assert_eq!((read, requests), (stored, 1), "{dialect}, {jobs} threads");
            assert!(block >= stored);
        }
    }
}
