//! The manifest's round trips and hostile bodies.

use binfmt_core::Error;
use binfmt_core::varint;

use super::encode::section;
use super::*;
use crate::format::Codec;

pub(crate) fn sample() -> Manifest {
    let mut builder = ManifestBuilder::new(Config::new(262_144, 262_144, 3));
    let chunk = |file, block, offset, size| ChunkRecord {
        file,
        block,
        offset,
        size,
    };
    builder.push_chunk(chunk(0, 0, 0, 3)).unwrap();
    builder
        .push_file("a/b.txt", 3, [1; 32], 0..1, Attributes::default())
        .unwrap();
    builder.push_chunk(chunk(1, 0, 3, 2)).unwrap();
    builder
        .push_file(
            "a/c.txt",
            2,
            [2; 32],
            1..2,
            Attributes::new(FileKind::File, 0o755, 1_700_000_000_000_000_000),
        )
        .unwrap();
    builder.push_chunk(chunk(2, 1, 0, 6)).unwrap();
    builder.push_chunk(chunk(2, 2, 0, 4)).unwrap();
    builder
        .push_file("big", 10, [3; 32], 2..4, Attributes::default())
        .unwrap();
    builder
        .push_file(
            "empty-dir",
            0,
            [4; 32],
            4..4,
            Attributes::new(FileKind::Directory, 0o700, 5),
        )
        .unwrap();
    let block = |codec, offset, stored_size, size, checksum| BlockRecord {
        codec,
        offset,
        stored_size,
        size,
        checksum,
    };
    builder.finish(vec![
        block(Codec::Zstd, 80, 10, 5, 0xdead_beef),
        block(Codec::Store, 94, 6, 6, 7),
        block(Codec::Store, 104, 4, 4, 8),
    ])
}

#[test]
fn both_encodings_round_trip() {
    let manifest = sample();
    assert_eq!(
        Manifest::decode_spec_body(&manifest.encode_spec_body().unwrap()).unwrap(),
        manifest
    );
    assert_eq!(
        Manifest::decode_cli_raw(&manifest.encode_cli_raw()).unwrap(),
        manifest
    );
}

#[test]
fn paths_are_interned_and_compared_without_joining() {
    let manifest = sample();
    assert_eq!(manifest.strings.len(), 6);
    let paths: Vec<String> = manifest.files().map(|f| f.path().to_string()).collect();
    assert_eq!(paths, ["a/b.txt", "a/c.txt", "big", "empty-dir"]);
    let first = manifest.file(0).unwrap().path();
    assert!(first.is("a/b.txt"));
    assert!(!first.is("a/c.txt") && !first.is("a.b.txt") && !first.is("b.txt"));
    assert_eq!(first.hash(), path_hash("a/b.txt"));
    assert_eq!(manifest.file(2).unwrap().path().hash(), path_hash("big"));
}

#[test]
fn every_truncation_of_a_body_is_an_error() {
    let manifest = sample();
    let spec = manifest.encode_spec_body().unwrap();
    // The attribute section is optional: the body cut right before it
    // reads as the same files with default attributes; any other cut fails.
    let accepted: Vec<usize> = (0..spec.len())
        .filter(|&cut| Manifest::decode_spec_body(&spec[..cut]).is_ok())
        .collect();
    assert_eq!(accepted.len(), 1, "{accepted:?}");
    let plain = Manifest::decode_spec_body(&spec[..accepted[0]]).unwrap();
    assert!(
        plain
            .files()
            .all(|f| f.attributes() == Attributes::default())
    );
    assert_eq!(plain.files.len(), manifest.files.len());
    let cli = manifest.encode_cli_raw();
    for cut in 0..cli.len() {
        assert!(
            Manifest::decode_cli_raw(&cli[..cut]).is_err(),
            "cli cut {cut}"
        );
    }
}

#[test]
fn hostile_counts_are_refused_before_allocating() {
    let mut body = Vec::new();
    section(
        &mut body,
        &rmp_serde::to_vec_named(&sample().config).unwrap(),
    );
    let mut strings = Vec::new();
    varint::encode_u64(1 << 60, &mut strings);
    section(&mut body, &strings);
    assert!(matches!(
        Manifest::decode_spec_body(&body),
        Err(Error::CountTooLarge { .. })
    ));
}
