//! Reading index files: every rule of the format's reader requirements has
//! its own error, and the Dataset view follows the reference's semantics.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use binfmt_taridx::{Dataset, Index, ShardFiles, TaridxError, fold_shards};
use binfmt_tests::fixture;

fn golden() -> Vec<u8> {
    std::fs::read(fixture("reference/taridx/golden.taridx")).unwrap()
}

fn patched(offset: usize, bytes: &[u8]) -> Vec<u8> {
    let mut file = golden();
    file[offset..offset + bytes.len()].copy_from_slice(bytes);
    file
}

/// A corruption: its name, the file, and the error it must produce.
type Case = (&'static str, Vec<u8>, fn(&TaridxError) -> bool);

#[test]
fn each_corruption_has_its_own_error() {
    use TaridxError as E;
    let golden = golden();
    let off_crash = u64::from_le_bytes(golden[40..48].try_into().unwrap());
    let off_arr = u64::from_le_bytes(golden[48..56].try_into().unwrap());
    let cases: Vec<Case> = vec![
        ("bad magic", patched(0, b"TARIDY"), |e| {
            matches!(e, E::Core(binfmt_core::Error::BadMagic { offset: 0, .. }))
        }),
        (
            "major 2",
            patched(8, &2u16.to_le_bytes()),
            |e| matches!(e, E::Core(binfmt_core::Error::UnsupportedVersion { found, .. }) if found == "2.0"),
        ),
        (
            "major 0",
            patched(8, &0u16.to_le_bytes()),
            |e| matches!(e, E::Core(binfmt_core::Error::UnsupportedVersion { found, .. }) if found == "0.0"),
        ),
        ("rec_size 16", patched(12, &16u16.to_le_bytes()), |e| {
            matches!(e, E::BadRecordSize { found: 16 })
        }),
        ("hdr_size 128", patched(14, &128u16.to_le_bytes()), |e| {
            matches!(e, E::BadHeaderSize { found: 128 })
        }),
        ("n_rows + 1", patched(24, &18u64.to_le_bytes()), |e| {
            matches!(
                e,
                E::RowCountMismatch {
                    header: 18,
                    actual: 17
                }
            )
        }),
        ("n_ext + 1", patched(32, &7u32.to_le_bytes()), |e| {
            matches!(
                e,
                E::ExtensionCountMismatch {
                    header: 7,
                    decoded: 6
                }
            )
        }),
        ("n_crash 2", patched(36, &2u32.to_le_bytes()), |e| {
            matches!(
                e,
                E::CrashCountMismatch {
                    header: 2,
                    decoded: 0
                }
            )
        }),
        ("off_crash 63", patched(40, &63u64.to_le_bytes()), |e| {
            matches!(e, E::CrashBlockInHeader { off_crash: 63 })
        }),
        (
            "off_arr < off_crash",
            patched(48, &(off_crash - 1).to_le_bytes()),
            |e| matches!(e, E::RowsBeforeCrashBlock { .. }),
        ),
        (
            "off_arr past the end",
            patched(48, &u64::MAX.to_le_bytes()),
            |e| matches!(e, E::RowsPastEnd { .. }),
        ),
        ("extension block not UTF-8", patched(64, &[0xff]), |e| {
            matches!(
                e,
                E::BlockNotUtf8 {
                    block: "extension",
                    offset: 64
                }
            )
        }),
        (
            "ragged rows",
            [golden.as_slice(), &[0; 5]].concat(),
            |e| matches!(e, E::RaggedRows { bytes } if bytes % 32 == 5),
        ),
        ("extra row", [golden.as_slice(), &[0; 32]].concat(), |e| {
            matches!(
                e,
                E::RowCountMismatch {
                    header: 17,
                    actual: 18
                }
            )
        }),
        ("truncated header", golden[..63].to_vec(), |e| {
            matches!(
                e,
                E::Core(binfmt_core::Error::Truncated {
                    needed: 64,
                    available: 63,
                    ..
                })
            )
        }),
        ("empty", Vec::new(), |e| {
            matches!(
                e,
                E::Core(binfmt_core::Error::Truncated { available: 0, .. })
            )
        }),
    ];
    for (name, bytes, check) in cases {
        let error = Index::new(bytes).unwrap_err();
        assert!(check(&error), "{name}: unexpected {error:?}");
    }
    assert_eq!(off_arr + 17 * 32, golden.len() as u64);
}

#[test]
fn row_checks_are_made_by_verify() {
    use TaridxError as E;
    let golden = golden();
    let off_arr = u64::from_le_bytes(golden[48..56].try_into().unwrap()) as usize;
    let row = |n: usize, field: usize| off_arr + 32 * n + field;

    let index = Index::new(patched(row(3, 18), &99u16.to_le_bytes())).unwrap();
    assert!(matches!(
        index.verify(None),
        Err(E::ExtidOutOfRange {
            row: 3,
            extid: 99,
            n_ext: 6
        })
    ));

    let index = Index::new(patched(row(0, 20), &1u32.to_le_bytes())).unwrap();
    assert!(matches!(
        index.verify(None),
        Err(E::CrashidOutOfRange {
            row: 0,
            crashid: 1,
            n_crash: 0
        })
    ));

    let shards = ShardFiles::new(fold_shards(fixture("reference/taridx"), "golden").unwrap());
    let index = Index::new(patched(row(5, 0), &7u16.to_le_bytes())).unwrap();
    assert!(matches!(
        index.verify(Some(&shards)),
        Err(E::FidOutOfRange {
            row: 5,
            fid: 7,
            shards: 3
        })
    ));

    let index = Index::new(patched(row(1, 2), &10_240u64.to_le_bytes())).unwrap();
    assert!(matches!(
        index.verify(Some(&shards)),
        Err(E::PayloadPastShard {
            row: 1,
            offset: 10_240,
            ..
        })
    ));

    let index = Index::new(patched(16, &9u64.to_le_bytes())).unwrap();
    assert!(matches!(
        index.verify(None),
        Err(E::StemCountMismatch {
            header: 9,
            actual: 8
        })
    ));

    let index = Index::new(patched(56, &[0])).unwrap();
    assert!(matches!(
        index.verify(None),
        Err(E::ContiguityFlagWrong {
            flag: false,
            actual: true
        })
    ));
}

#[test]
fn a_newer_minor_version_is_read() {
    let index = Index::new(patched(10, &3u16.to_le_bytes())).unwrap();
    assert_eq!(index.version(), (1, 3));
}

#[test]
fn opening_reads_no_rows() {
    // A row region of garbage still opens (its size is right); only verify looks at rows.
    let golden = golden();
    let off_arr = u64::from_le_bytes(golden[48..56].try_into().unwrap()) as usize;
    let mut garbage = golden.clone();
    garbage[off_arr..].fill(0xee);
    let index = Index::new(garbage).unwrap();
    assert_eq!(index.rows().unwrap().len(), 17);
    assert!(index.verify(None).is_err());
}

fn dataset(fold: &str) -> Dataset {
    Dataset::open_fold(fixture("reference/taridx"), fold).unwrap()
}

#[test]
fn samples_of_a_contiguous_fold() {
    let dataset = dataset("golden");
    assert_eq!(dataset.num_rows(), 17);
    assert_eq!(dataset.num_samples().unwrap(), 8);
    let first = dataset.sample(0).unwrap().unwrap();
    let exts: Vec<_> = first
        .iter()
        .map(|row| dataset.extension(row).unwrap())
        .collect();
    assert_eq!(exts, ["jpg", "json", "cls"]);
    // Sample 3 (stem 000003) spans shards 0 and 1.
    let split = dataset.sample(2).unwrap().unwrap();
    let fids: Vec<u16> = split.iter().map(|row| row.fid.get()).collect();
    assert_eq!(fids, [0, 0, 1]);
    assert!(dataset.sample(8).unwrap().is_none());
    assert_eq!(dataset.read(&split[2]).unwrap().len(), 2);
}

#[test]
fn a_mixed_fold_needs_enforce_contiguous() {
    let mut dataset = dataset("mixed");
    assert!(!dataset.is_contiguous());
    assert!(matches!(dataset.sample(0), Err(TaridxError::NotContiguous)));
    let order_before: Vec<_> = dataset.rows().to_vec();
    dataset.enforce_contiguous();
    assert!(dataset.is_contiguous());
    assert_eq!(dataset.num_samples().unwrap(), 3);
    for i in 0..3 {
        let sample = dataset.sample(i).unwrap().unwrap();
        assert_eq!(sample.len(), 3);
        assert!(sample.iter().all(|row| row.key() == sample[0].key()));
        // Stable: within a sample, rows keep their original order.
        let positions: Vec<usize> = sample
            .iter()
            .map(|row| order_before.iter().position(|r| r == row).unwrap())
            .collect();
        assert!(positions.windows(2).all(|w| w[0] < w[1]));
    }
}

#[test]
fn filter_extensions_keeps_stems_that_have_all() {
    let mut dataset = dataset("golden");
    dataset.filter_extensions(&["jpg", "cls"]).unwrap();
    // Stems 000001..000003 have jpg and cls; 000004..000007 lack cls.
    assert_eq!(dataset.num_rows(), 6);
    assert_eq!(dataset.num_samples().unwrap(), 3);
    assert!(
        dataset
            .rows()
            .iter()
            .all(|row| matches!(dataset.extension(row), Some("jpg" | "cls")))
    );
    assert!(matches!(
        dataset.filter_extensions(&["webp"]),
        Err(TaridxError::UnknownExtensions { unknown, .. }) if unknown == ["webp"]
    ));
    let mut none = self::dataset("golden");
    assert!(matches!(
        none.filter_extensions(&["cls", "tar.gz"]),
        Err(TaridxError::NoStemHasAll { .. })
    ));
}

#[test]
fn lookup_by_stem_and_member_names() {
    let dataset = dataset("golden");
    let rows = dataset.lookup_verified("000004").unwrap();
    let exts: Vec<_> = rows
        .iter()
        .map(|row| dataset.extension(row).unwrap())
        .collect();
    assert_eq!(exts, ["seg.mask.png", "jpg", "json"]);
    assert_eq!(
        dataset.member_info(&rows[0]).unwrap().name,
        "s/000004.seg.mask.PNG"
    );
    assert!(dataset.lookup("nope").is_empty());
    assert_eq!(
        fold_shards(fixture("reference/taridx"), "golden")
            .unwrap()
            .len(),
        3
    );
}
