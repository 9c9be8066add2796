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

#[test]
fn every_kastore_conformance_file_that_has_a_signature_is_kast() {
    let root = binfmt_tests::workspace_root().join("../shared/kastore-test-data/v1");
    let entries = std::fs::read_dir(&root).unwrap_or_else(|error| {
        panic!(
            "{}: {error} (shared/ must sit beside the clone)",
            root.display()
        )
    });
    let mut checked = 0;
    for entry in entries {
        let path = entry.unwrap().path();
        assert_eq!(
            binfmt::sniff(&path).unwrap(),
            Format::Kast,
            "{}",
            path.display()
        );
        checked += 1;
    }
    assert_eq!(checked, 10);
}
