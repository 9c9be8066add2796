//! Merging part archives (`binfmt_arcx::merge`): the merged archive holds
//! what one packer given every entry would hold, entry by entry; its blocks
//! are the parts' blocks byte for byte; it is the same bytes every time;
//! and a part that lies (a corrupt block, a block whose record disagrees
//! with its bytes, a path another part holds, other settings) is refused
//! with a typed error naming it.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use binfmt_arcx::{
    Archive, ArcxError, Attributes, Dialect, FileKind, MergeOptions, Merger, PackOptions, Packer,
    merge,
};
use binfmt_tests::build::arcx::{Archive as Build, Block};
use binfmt_tests::pseudo_random_bytes;

/// One entry to pack.
#[derive(Debug, Clone)]
enum Row {
    File(String, Vec<u8>, u32, i64),
    Dir(String, u32, i64),
    Link(String, String),
}

/// What an entry reads back as: path, kind, mode, time, bytes.
type Entry = (String, FileKind, u32, i64, Vec<u8>);

/// Small sizes, so a few KB make several shared blocks and a multi-chunk
/// file without a slow debug test.
fn small_options() -> PackOptions {
    PackOptions::default()
        .block_size(4 << 10)
        .chunk_size(16 << 10)
}

/// Small files sharing blocks, empty files, a multi-chunk file (half
/// compressible, half noise), directories and symlinks.
fn rows(dialect: Dialect) -> Vec<Row> {
    let mut rows = Vec::new();
    for i in 0..40 {
        let text = format!("row {i}: ").repeat(i * 7 + 1).into_bytes();
        rows.push(Row::File(
            format!("small/{i:02}.txt"),
            text,
            0o600 + i as u32,
            1_700_000_000_000_000_000 + i as i64,
        ));
        if i % 9 == 0 {
            rows.push(Row::File(format!("empty/{i}"), Vec::new(), 0o644, 0));
        }
        if i == 20 {
            let mut large = b"compressible ".repeat(4000);
            large.extend(pseudo_random_bytes(3, 40_000));
            rows.push(Row::File("large/blob.bin".into(), large, 0o755, 42));
        }
    }
    if dialect == Dialect::Spec {
        rows.push(Row::Dir("empty-dir".into(), 0o750, 7));
        rows.push(Row::Link("links/to-first".into(), "../small/00.txt".into()));
        rows.push(Row::Dir("nested/empty".into(), 0o700, 8));
    }
    rows.push(Row::File(
        "z/last.txt".into(),
        b"the end".to_vec(),
        0o644,
        9,
    ));
    rows
}

fn pack(rows: &[Row], options: PackOptions) -> Vec<u8> {
    let mut packer = Packer::new(Cursor::new(Vec::new()), options).unwrap();
    for row in rows {
        match row {
            Row::File(path, data, mode, mtime) => {
                let attributes = Attributes::new(FileKind::File, *mode, *mtime);
                packer.add_with(path, attributes, &mut &data[..]).unwrap();
            }
            Row::Dir(path, mode, mtime) => packer.add_directory(path, *mode, *mtime).unwrap(),
            Row::Link(path, target) => {
                let attributes = Attributes::new(FileKind::Symlink, 0o777, 5);
                packer
                    .add_with(path, attributes, &mut target.as_bytes())
                    .unwrap();
            }
        }
    }
    packer.finish().unwrap().0.into_inner()
}

fn entries<S: binfmt_core::Source>(archive: &Archive<S>) -> Vec<Entry> {
    archive
        .files()
        .map(|file| {
            let mut bytes = Vec::new();
            archive.reader_for(file).read_to_end(&mut bytes).unwrap();
            let attributes = file.attributes();
            (
                file.path().to_string(),
                attributes.kind,
                attributes.mode,
                attributes.mtime_ns,
                bytes,
            )
        })
        .collect()
}

/// `rows` cut into `parts` runs of about equal length, in order.
fn split(rows: &[Row], parts: usize) -> Vec<Vec<Row>> {
    let per = rows.len().div_ceil(parts);
    let mut runs: Vec<Vec<Row>> = rows.chunks(per).map(<[Row]>::to_vec).collect();
    runs.resize(parts, Vec::new());
    runs
}

fn merged_bytes(parts: &[Vec<u8>], options: MergeOptions) -> Vec<u8> {
    let opened: Vec<Archive<Vec<u8>>> = parts
        .iter()
        .map(|bytes| Archive::new(bytes.clone()).unwrap())
        .collect();
    let (out, summary) = merge(&opened, Cursor::new(Vec::new()), options).unwrap();
    let out = out.into_inner();
    assert_eq!(summary.archive_size, out.len() as u64);
    assert_eq!(
        summary.files,
        opened.iter().map(|part| part.len() as u64).sum::<u64>()
    );
    out
}

/// The data region of an archive: its blocks, from the header to the
/// manifest.
fn data_region(bytes: &[u8]) -> &[u8] {
    let archive = Archive::new(bytes.to_vec()).unwrap();
    let (manifest_offset, _) = archive.manifest_region();
    &bytes[80..manifest_offset as usize]
}

fn check_merge(dialect: Dialect, options: PackOptions, parts: usize) {
    let options = options.dialect(dialect);
    let rows = rows(dialect);
    let whole = Archive::new(pack(&rows, options)).unwrap();
    let packed: Vec<Vec<u8>> = split(&rows, parts)
        .iter()
        .map(|run| pack(run, options))
        .collect();
    let merged = merged_bytes(&packed, MergeOptions::default());

    let archive = Archive::new(merged.clone()).unwrap();
    assert_eq!(archive.dialect(), dialect);
    assert_eq!(
        entries(&archive),
        entries(&whole),
        "{dialect:?}, {parts} parts"
    );
    let verified = archive.verify().unwrap();
    assert_eq!(verified.files, rows.len() as u64);

    // Every block is a part's block, byte for byte, in part order.
    let blocks: Vec<u8> = packed
        .iter()
        .flat_map(|part| data_region(part).to_vec())
        .collect();
    assert_eq!(data_region(&merged), &blocks[..], "blocks copied as stored");
    let part_blocks: usize = packed
        .iter()
        .map(|part| {
            Archive::new(part.clone())
                .unwrap()
                .manifest()
                .blocks()
                .len()
        })
        .sum();
    assert_eq!(archive.manifest().blocks().len(), part_blocks);

    // The same parts give the same bytes.
    assert_eq!(merged_bytes(&packed, MergeOptions::default()), merged);
    // One part merged is the same entries as the part.
    if parts == 1 {
        assert_eq!(
            entries(&archive),
            entries(&Archive::new(packed[0].clone()).unwrap())
        );
    }
}

#[test]
fn one_two_and_five_parts_equal_one_packer_spec() {
    for parts in [1, 2, 5] {
        check_merge(Dialect::Spec, small_options(), parts);
    }
}

#[test]
fn one_two_and_five_parts_equal_one_packer_arcx_cli() {
    for parts in [1, 2, 5] {
        check_merge(Dialect::ArcxCli, small_options(), parts);
    }
}

#[test]
fn default_sizes_with_a_file_over_the_chunk_size() {
    let options = PackOptions::default();
    let mut rows = rows(Dialect::Spec);
    let mut large = pseudo_random_bytes(11, 1_500_000);
    large.extend(b"tail ".repeat(200_000));
    rows.insert(
        5,
        Row::File("big/over-a-chunk.bin".into(), large, 0o640, 77),
    );
    let whole = Archive::new(pack(&rows, options)).unwrap();
    let packed: Vec<Vec<u8>> = split(&rows, 3)
        .iter()
        .map(|run| pack(run, options))
        .collect();
    let merged = Archive::new(merged_bytes(&packed, MergeOptions::default())).unwrap();
    assert_eq!(entries(&merged), entries(&whole));
    merged.verify().unwrap();
    let big = merged.find("big/over-a-chunk.bin").unwrap();
    assert!(big.chunk_ids().len() >= 3, "a multi-chunk file");
}

#[test]
fn random_splits_and_empty_parts() {
    let rows = rows(Dialect::Spec);
    let whole = entries(&Archive::new(pack(&rows, small_options())).unwrap());
    for seed in 0..6u64 {
        // Cut points from the seed; empty runs included.
        let noise = pseudo_random_bytes(seed, 8);
        let mut cuts: Vec<usize> = noise
            .iter()
            .map(|&b| b as usize % (rows.len() + 1))
            .collect();
        cuts.push(0);
        cuts.push(rows.len());
        cuts.sort_unstable();
        let packed: Vec<Vec<u8>> = cuts
            .windows(2)
            .map(|cut| pack(&rows[cut[0]..cut[1]], small_options()))
            .collect();
        let merged = Archive::new(merged_bytes(&packed, MergeOptions::default())).unwrap();
        assert_eq!(entries(&merged), whole, "seed {seed}");
        merged.verify().unwrap();
    }
}

#[test]
fn zero_parts_give_a_valid_empty_archive() {
    for dialect in [Dialect::Spec, Dialect::ArcxCli] {
        let none: Vec<Archive<Vec<u8>>> = Vec::new();
        let (out, summary) = merge(
            &none,
            Cursor::new(Vec::new()),
            MergeOptions::default().dialect(dialect),
        )
        .unwrap();
        let bytes = out.into_inner();
        assert_eq!((summary.files, summary.blocks), (0, 0));
        assert_eq!(summary.archive_size, bytes.len() as u64);
        let archive = Archive::new(bytes.clone()).unwrap();
        assert_eq!(archive.dialect(), dialect);
        assert!(archive.is_empty());
        archive.verify().unwrap();
        // What a packer given nothing writes.
        let packed = pack(&[], PackOptions::default().dialect(dialect));
        assert_eq!(bytes, packed, "{dialect:?}");
    }
    // No dialect asked for: spec.
    let none: Vec<Archive<Vec<u8>>> = Vec::new();
    let (out, _) = merge(&none, Cursor::new(Vec::new()), MergeOptions::default()).unwrap();
    assert_eq!(
        Archive::new(out.into_inner()).unwrap().dialect(),
        Dialect::Spec
    );
}

/// Parts written as files, so each has a name.
fn write_parts(dir: &Path, parts: &[Vec<u8>]) -> Vec<PathBuf> {
    parts
        .iter()
        .enumerate()
        .map(|(k, bytes)| {
            let path = dir.join(format!("part-{k}.arcx"));
            std::fs::write(&path, bytes).unwrap();
            path
        })
        .collect()
}

fn merge_files(paths: &[PathBuf], options: MergeOptions) -> binfmt_arcx::Result<Vec<u8>> {
    let opened: Vec<Archive> = paths.iter().map(|p| Archive::open(p).unwrap()).collect();
    merge(&opened, Cursor::new(Vec::new()), options).map(|(out, _)| out.into_inner())
}

fn file(path: &str, data: &[u8]) -> Row {
    Row::File(path.into(), data.to_vec(), 0o644, 0)
}

#[test]
fn a_path_in_two_parts_is_refused_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let parts = [
        pack(
            &[file("a.txt", b"a"), file("dup/x", b"first")],
            small_options(),
        ),
        pack(&[file("b.txt", b"b")], small_options()),
        pack(
            &[file("c.txt", b"c"), file("dup/x", b"second")],
            small_options(),
        ),
    ];
    let paths = write_parts(dir.path(), &parts);
    let error = merge_files(&paths, MergeOptions::default()).unwrap_err();
    match &error {
        ArcxError::DuplicatePath {
            path,
            first,
            second,
        } => {
            assert_eq!(path, "dup/x");
            assert_eq!((first.index, &first.name), (0, &paths[0]));
            assert_eq!((second.index, &second.name), (2, &paths[2]));
        }
        other => panic!("expected DuplicatePath, got {other:?}"),
    }
    let message = error.to_string();
    assert!(
        message.contains("part-0.arcx") && message.contains("part-2.arcx"),
        "{message}"
    );

    // Refused before anything was written: the merger goes on without it.
    let opened: Vec<Archive> = paths.iter().map(|p| Archive::open(p).unwrap()).collect();
    let mut merger = Merger::new(Cursor::new(Vec::new()), MergeOptions::default()).unwrap();
    merger.append(&opened[0]).unwrap();
    assert!(merger.append(&opened[2]).is_err());
    merger.append(&opened[1]).unwrap();
    let (out, summary) = merger.finish().unwrap();
    assert_eq!(summary.files, 3);
    let merged = Archive::new(out.into_inner()).unwrap();
    assert_eq!(merged.read("dup/x").unwrap(), b"first");
    merged.verify().unwrap();
}

/// Where part `bytes`'s first block's stored bytes start.
fn first_block_payload(bytes: &[u8]) -> usize {
    let archive = Archive::new(bytes.to_vec()).unwrap();
    archive.manifest().blocks()[0].offset as usize + 4
}

#[test]
fn a_corrupt_block_is_refused_naming_the_part() {
    let dir = tempfile::tempdir().unwrap();
    for dialect in [Dialect::Spec, Dialect::ArcxCli] {
        let options = small_options().dialect(dialect);
        let rows = rows(dialect);
        let mut parts: Vec<Vec<u8>> = split(&rows, 3).iter().map(|r| pack(r, options)).collect();
        let at = first_block_payload(&parts[1]) + 10;
        parts[1][at] ^= 0x40;
        let paths = write_parts(dir.path(), &parts);
        let error = merge_files(&paths, MergeOptions::default()).unwrap_err();
        match &error {
            ArcxError::Part { part, source } => {
                assert_eq!((part.index, &part.name), (1, &paths[1]));
                assert!(
                    matches!(**source, ArcxError::BlockChecksum { block: 0, .. }),
                    "{source:?}"
                );
            }
            other => panic!("expected Part, got {other:?}"),
        }
        assert!(error.to_string().contains("part-1.arcx"), "{error}");
    }
}

#[test]
fn a_failed_copy_stops_the_merger_and_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let good = pack(&[file("a", b"alpha")], small_options());
    let mut bad = pack(&[file("b", b"bravo")], small_options());
    let at = first_block_payload(&bad);
    bad[at] ^= 1;
    let paths = write_parts(dir.path(), &[good, bad]);
    let (good, bad) = (
        Archive::open(&paths[0]).unwrap(),
        Archive::open(&paths[1]).unwrap(),
    );
    let out = dir.path().join("merged.arcx");
    let mut merger = Merger::create(&out, MergeOptions::default()).unwrap();
    merger.append(&good).unwrap();
    assert!(matches!(merger.append(&bad), Err(ArcxError::Part { .. })));
    // The output holds part of that part's blocks: nothing more goes in.
    match merger.append(&good) {
        Err(ArcxError::MergeStopped { part, .. }) => assert_eq!(part.index, 1),
        other => panic!("expected MergeStopped, got {other:?}"),
    }
    assert!(matches!(
        merger.commit(),
        Err(ArcxError::MergeStopped { .. })
    ));
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 2, "only the parts: {left:?}");
}

#[test]
fn a_block_record_that_lies_about_its_size_is_refused() {
    // The manifest says the shared block decompresses to 10 more bytes than
    // it does: the CRC32 of the stored bytes still matches.
    let mut build = Build::of(&[("a", b"alpha"), ("b", b"bravo!"), ("c", b"charlie")]);
    build.blocks[0].size = Some(build.blocks[0].data.len() as u64 + 10);
    for (dialect, bytes) in [("spec", build.spec()), ("arcx-cli", build.cli())] {
        let part = Archive::new(bytes).unwrap();
        let error = merge([&part], Cursor::new(Vec::new()), MergeOptions::default()).unwrap_err();
        match &error {
            ArcxError::Part { part, source } => {
                assert_eq!(part.index, 0);
                assert!(
                    matches!(&**source, ArcxError::BlockData { block: 0, why } if why.contains("decompresses to 18 bytes")),
                    "{dialect}: {source:?}"
                );
            }
            other => panic!("{dialect}: expected Part, got {other:?}"),
        }
    }

    // The size prefix in the data disagrees with the manifest's stored size.
    let mut bytes = pack(&[file("a", b"alpha"), file("b", b"bravo")], small_options());
    bytes[80] ^= 0x01;
    let part = Archive::new(bytes).unwrap();
    let error = merge([&part], Cursor::new(Vec::new()), MergeOptions::default()).unwrap_err();
    assert!(
        matches!(&error, ArcxError::Part { source, .. } if matches!(&**source, ArcxError::BlockData { block: 0, why } if why.contains("size prefix"))),
        "{error:?}"
    );
}

#[test]
fn blocks_no_entry_uses_are_left_out() {
    let mut build = Build::of(&[("a", b"alpha"), ("b", b"bravo!")]);
    build
        .blocks
        .push(Block::zstd(b"nobody reads this".repeat(10)));
    let part = Archive::new(build.spec()).unwrap();
    assert_eq!(part.manifest().blocks().len(), 2);
    let (out, summary) = merge([&part], Cursor::new(Vec::new()), MergeOptions::default()).unwrap();
    assert_eq!(summary.blocks, 1);
    let merged = Archive::new(out.into_inner()).unwrap();
    assert_eq!(merged.read("b").unwrap(), b"bravo!");
    merged.verify().unwrap();
}

#[test]
fn parts_of_another_dialect_or_other_settings_are_refused() {
    let one = |options: PackOptions| Archive::new(pack(&[file("x", b"x")], options)).unwrap();
    let two = |options: PackOptions| Archive::new(pack(&[file("y", b"y")], options)).unwrap();
    let cases: [(PackOptions, PackOptions, MergeOptions, usize, &str); 4] = [
        (
            small_options(),
            small_options().dialect(Dialect::ArcxCli),
            MergeOptions::default(),
            1,
            "dialect",
        ),
        (
            small_options(),
            small_options().level(5),
            MergeOptions::default(),
            1,
            "zstd level",
        ),
        (
            small_options(),
            small_options().chunk_size(32 << 10),
            MergeOptions::default(),
            1,
            "chunk size",
        ),
        (
            small_options(),
            small_options(),
            MergeOptions::default().dialect(Dialect::ArcxCli),
            0,
            "dialect",
        ),
    ];
    for (first, second, options, index, setting) in cases {
        let parts = [one(first), two(second)];
        let error = merge(&parts, Cursor::new(Vec::new()), options).unwrap_err();
        match &error {
            ArcxError::Part { part, source } => {
                assert_eq!(part.index, index, "{error}");
                assert!(
                    matches!(&**source, ArcxError::MergeMismatch { setting: s, .. } if *s == setting),
                    "{source:?}"
                );
            }
            other => panic!("expected Part, got {other:?}"),
        }
    }
}

#[test]
fn the_arcx_tools_own_archive_merges() {
    let fixture = binfmt_tests::fixture("reference/sample.arcx");
    let part = Archive::open(&fixture).unwrap();
    assert_eq!(part.dialect(), Dialect::ArcxCli);
    let (out, summary) = merge([&part], Cursor::new(Vec::new()), MergeOptions::default()).unwrap();
    assert_eq!(summary.files, part.len() as u64);
    let merged = Archive::new(out.into_inner()).unwrap();
    assert_eq!(merged.dialect(), Dialect::ArcxCli);
    assert_eq!(entries(&merged), entries(&part));
    merged.verify().unwrap();
}

#[test]
fn the_arcx_tool_extracts_a_merged_archive() {
    let Some(tool) = binfmt_tests::interop::arcx() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let options = PackOptions::default().dialect(Dialect::ArcxCli);
    let mut large = pseudo_random_bytes(5, 1_200_000);
    large.extend(b"end".repeat(1000));
    let rows = vec![
        file("one/a.txt", b"first part"),
        Row::File("one/large.bin".into(), large, 0o644, 0),
        file("two/b.txt", b"second part"),
        file("two/c.txt", b""),
    ];
    let parts = [pack(&rows[..2], options), pack(&rows[2..], options)];
    let merged = dir.path().join("merged.arcx");
    std::fs::write(&merged, merged_bytes(&parts, MergeOptions::default())).unwrap();
    let out = dir.path().join("out");
    let status = std::process::Command::new(&tool)
        .arg("extract")
        .arg(&merged)
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    for row in &rows {
        let Row::File(path, data, ..) = row else {
            unreachable!()
        };
        assert_eq!(&std::fs::read(out.join(path)).unwrap(), data, "{path}");
    }
}

/// A part in memory that records the largest single read made of it.
#[derive(Debug)]
struct Watched {
    bytes: Vec<u8>,
    largest: AtomicUsize,
}

impl binfmt_core::Source for Watched {
    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let start = offset as usize;
        buf.copy_from_slice(&self.bytes[start..start + buf.len()]);
        self.largest.fetch_max(buf.len(), Ordering::Relaxed);
        Ok(())
    }

    fn name(&self) -> &Path {
        Path::new("watched")
    }
}

#[test]
fn a_block_larger_than_a_piece_is_copied_in_pieces() {
    // One incompressible 3 MiB chunk: a stored block of 3 MiB.
    let options = PackOptions::default().chunk_size(3 << 20);
    let data = pseudo_random_bytes(9, 3 << 20);
    let bytes = pack(
        &[Row::File("noise".into(), data.clone(), 0o644, 0)],
        options,
    );
    let part = Archive::new(Watched {
        bytes,
        largest: AtomicUsize::new(0),
    })
    .unwrap();
    part.source().largest.store(0, Ordering::Relaxed);
    let (out, _) = merge([&part], Cursor::new(Vec::new()), MergeOptions::default()).unwrap();
    assert!(
        part.source().largest.load(Ordering::Relaxed) <= 1 << 20,
        "read {} bytes at once",
        part.source().largest.load(Ordering::Relaxed)
    );
    let merged = Archive::new(out.into_inner()).unwrap();
    assert_eq!(merged.read("noise").unwrap(), data);
}

#[test]
fn a_dropped_packer_or_merger_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut packer = Packer::create(dir.path().join("p.arcx"), small_options()).unwrap();
    packer.add("a", &mut &b"alpha"[..]).unwrap();
    drop(packer);
    let merger = Merger::create(dir.path().join("m.arcx"), MergeOptions::default()).unwrap();
    drop(merger);
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}
