//! Files written by the reference implementations are recognised.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use binfmt::Format;
use binfmt_tests::fixture;

#[test]
fn every_reference_fixture_is_recognised() {
    let expected = [
        ("reference/all_types.kas", Format::Kast),
        ("reference/map.par4", Format::Par4),
        ("reference/sample.arcx", Format::Arcx),
        ("reference/sample.tar", Format::Tar),
        ("reference/sample.taridx", Format::Taridx),
    ];
    for (name, format) in expected {
        assert_eq!(binfmt::sniff(fixture(name)).unwrap(), format, "{name}");
    }
}

/// kastore's conformance cases (made here by its documented mutations; its
/// own files too when `../shared` sits beside the repository): every file
/// whose signature is intact sniffs as KAST, whatever else is wrong with it.
#[test]
fn kastore_conformance_files_with_a_signature_are_kast() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for (name, bytes) in binfmt_tests::build::kast::malformed() {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        files.push(path);
    }
    let originals = binfmt_tests::workspace_root().join("../shared/kastore-test-data/malformed");
    match std::fs::read_dir(&originals) {
        Ok(entries) => files.extend(entries.map(|entry| entry.unwrap().path())),
        Err(_) => eprintln!(
            "note: {} is absent: generated cases only",
            originals.display()
        ),
    }
    let mut checked = 0;
    for path in files {
        let bytes = std::fs::read(&path).unwrap();
        let expected = if bytes.starts_with(&binfmt_kastore::SIGNATURE) {
            Format::Kast
        } else {
            continue;
        };
        assert_eq!(
            binfmt::sniff(&path).unwrap(),
            expected,
            "{}",
            path.display()
        );
        checked += 1;
    }
    assert!(checked >= 24, "{checked}");
}
