//! TARIDX against folds built by hand to be consistent but malicious, one
//! meaning changed at a time (tests/taridx_builder.rs): each rule has its
//! typed error, on the read path (a member is checked against its tar
//! header before a byte is returned) and in verify, and its regression
//! input under tests/regressions/taridx_fold/ (the fold packed as one tar:
//! `index.taridx`, then the shards), which `hostile::fuzz_findings_stay_fixed`
//! runs too. `BINFMT_BLESS=1` rewrites the regression files from the cases.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use binfmt_taridx::{Dataset, DatasetOptions, Index, KeyRule, RowProblem, ShardBytes, TaridxError};

#[path = "../exercise.rs"]
mod exercise;

use binfmt_tests::build::taridx::{self as builder, RawIndex, Tar};

/// The index of `shards` (glzn keys), as this project writes it.
fn index_of(shards: &[Vec<u8>]) -> Vec<u8> {
    let mut index = binfmt_taridx::IndexBuilder::new(KeyRule::Glzn);
    for (fid, shard) in shards.iter().enumerate() {
        for member in binfmt_taridx::tar::scan(shard).unwrap() {
            index.add(fid as u16, member).unwrap();
        }
    }
    index.to_bytes().unwrap()
}

/// The index of `shards` without the members `omit` picks: what an index
/// that misses them (stale, or written by a reader that skipped them) holds.
fn index_without(shards: &[Vec<u8>], omit: impl Fn(&[u8]) -> bool) -> Vec<u8> {
    let mut index = binfmt_taridx::IndexBuilder::new(KeyRule::Glzn);
    for (fid, shard) in shards.iter().enumerate() {
        for member in binfmt_taridx::tar::scan(shard).unwrap() {
            if !omit(&member.name) {
                index.add(fid as u16, member).unwrap();
            }
        }
    }
    index.to_bytes().unwrap()
}

/// A shard whose directory header (`5`) gives a size of 1024: GNU tar and
/// tarfile read no data after a directory, so `h.jpg` in those bytes is a
/// member.
fn directory_with_size_shard() -> Vec<u8> {
    let mut tar = Tar::new();
    tar.file("a.jpg", b"AAAA");
    tar.block(builder::header(b"dir/", 1024, b'5'));
    tar.file("h.jpg", b"HIDDEN");
    tar.file("z.jpg", b"ZZZZ");
    tar.finish()
}

/// The base fold: two plain samples, a directory, a member named by a pax
/// path and one by a GNU long name, all in one shard.
fn base_shard() -> Vec<u8> {
    let mut tar = Tar::new();
    tar.file("s/a.jpg", &[b'A'; 100]);
    tar.file("s/a.cls", b"1");
    tar.file("s/b.jpg", &[b'B'; 100]);
    tar.file("s/b.cls", b"2");
    tar.block(builder::header(b"s/", 0, b'5'));
    let long = format!("{}c.txt", "deep/".repeat(30));
    tar.pax(&[("path", long.as_bytes())]);
    tar.block(builder::header(b"placeholder.txt", 3, b'0'))
        .data(b"ccc");
    let gnu = format!("{}d.txt", "gnu/".repeat(40));
    tar.gnu_long_name(&gnu);
    tar.block(builder::header(b"truncated.txt", 4, b'0'))
        .data(b"dddd");
    tar.finish()
}

struct Case {
    name: &'static str,
    index: Vec<u8>,
    shards: Vec<Vec<u8>>,
}

fn base() -> (RawIndex, Vec<Vec<u8>>) {
    let shards = vec![base_shard()];
    let raw = RawIndex::parse(&index_of(&shards));
    (raw, shards)
}

fn case(name: &'static str, edit: impl FnOnce(&mut RawIndex, &mut Vec<Vec<u8>>)) -> Case {
    let (mut raw, mut shards) = base();
    edit(&mut raw, &mut shards);
    Case {
        name,
        index: raw.bytes(),
        shards,
    }
}

fn dataset(case: &Case) -> Result<Dataset<Vec<u8>>, TaridxError> {
    Dataset::new(
        Index::new(case.index.clone())?,
        ShardBytes::new(case.shards.clone()),
        DatasetOptions::new(),
    )
}

/// The first failure reading every member through its row.
fn read_all(case: &Case) -> Result<(), TaridxError> {
    let dataset = dataset(case)?;
    for row in dataset.rows() {
        dataset.read(row)?;
    }
    Ok(())
}

fn verify(case: &Case) -> Result<u64, TaridxError> {
    dataset(case)?.verify()
}

fn problem(error: &TaridxError) -> Option<&RowProblem> {
    match error {
        TaridxError::RowMismatch { problem, .. } => Some(&**problem),
        _ => None,
    }
}

/// Every case, with what reading and verifying must say.
/// What an error must be.
type Expect = fn(&TaridxError) -> bool;

fn cases() -> Vec<(Case, Expect, Expect)> {
    vec![
        (
            // A stale index: row 0 moved onto b.jpg (same size, other key).
            case("row-on-another-member", |raw, _| {
                raw.rows[0].offset = raw.rows[2].offset;
            }),
            // Aliasing is refused on every path, at the first member read.
            |e| {
                matches!(
                    e,
                    TaridxError::RowsShareMember {
                        first: 0,
                        second: 2,
                        ..
                    }
                )
            },
            |e| {
                matches!(
                    e,
                    TaridxError::RowsShareMember {
                        first: 0,
                        second: 2,
                        ..
                    }
                )
            },
        ),
        (
            // The same row twice: reads and verify refuse the alias.
            case("rows-share-member", |raw, _| {
                raw.rows.push(raw.rows[0]);
            }),
            |e| matches!(e, TaridxError::RowsShareMember { .. }),
            |e| matches!(e, TaridxError::RowsShareMember { .. }),
        ),
        (
            // A row whose member starts inside another's payload.
            case("members-overlap", |raw, _| {
                raw.rows[0].size = 600;
            }),
            |e| {
                matches!(
                    e,
                    TaridxError::MembersOverlap {
                        first: 0,
                        second: 1,
                        ..
                    }
                )
            },
            |e| {
                matches!(
                    e,
                    TaridxError::MembersOverlap {
                        first: 0,
                        second: 1,
                        ..
                    }
                )
            },
        ),
        (
            case("misaligned-offset", |raw, _| {
                raw.rows[1].offset += 3;
            }),
            |e| matches!(problem(e), Some(RowProblem::Misaligned)),
            |e| matches!(problem(e), Some(RowProblem::Misaligned)),
        ),
        (
            case("size-mismatch", |raw, _| {
                raw.rows[1].size = 0;
            }),
            |e| matches!(problem(e), Some(RowProblem::Size { member: 1, row: 0 })),
            |e| matches!(problem(e), Some(RowProblem::Size { .. })),
        ),
        (
            // jpg and cls swapped.
            case("extension-mismatch", |raw, _| {
                let (jpg, cls) = (raw.rows[0].extid, raw.rows[1].extid);
                raw.rows[0].extid = cls;
                raw.rows[1].extid = jpg;
            }),
            |e| matches!(problem(e), Some(RowProblem::Extension { .. })),
            |e| matches!(problem(e), Some(RowProblem::Extension { .. })),
        ),
        (
            // A crash table naming a stem no member has; a row claims it.
            case("crash-id-mismatch", |raw, _| {
                raw.crash_block = b"zzz".to_vec();
                raw.header.n_crash = 1;
                let last = raw.rows.len() - 1;
                raw.rows[last].crashid = 1;
            }),
            |e| {
                matches!(
                    problem(e),
                    Some(RowProblem::CrashId {
                        row: 1,
                        expected: 0,
                        ..
                    })
                )
            },
            |e| matches!(problem(e), Some(RowProblem::CrashId { .. })),
        ),
        (
            // A row pointing at the directory header (size 0, key "").
            case("row-on-a-directory", |raw, _| {
                raw.rows[3].offset = 4 * 1024;
                raw.rows[3].size = 0;
            }),
            |e| matches!(problem(e), Some(RowProblem::NotAFile { typeflag: '5' })),
            |e| matches!(problem(e), Some(RowProblem::NotAFile { .. })),
        ),
        (
            // The pax path names c.txt; the row claims the ustar placeholder.
            case("pax-name-disagrees", |raw, _| {
                raw.rows[4].keyhash = binfmt_taridx::keyhash("placeholder");
            }),
            |e| matches!(problem(e), Some(RowProblem::Key { key, .. }) if key == "c"),
            |e| matches!(problem(e), Some(RowProblem::Key { .. })),
        ),
        (
            // The GNU long name names d.txt; the row claims the ustar name.
            case("gnu-name-disagrees", |raw, _| {
                raw.rows[5].keyhash = binfmt_taridx::keyhash("truncated");
            }),
            |e| matches!(problem(e), Some(RowProblem::Key { key, .. }) if key == "d"),
            |e| matches!(problem(e), Some(RowProblem::Key { .. })),
        ),
        (
            // A pax size record that disagrees with the header's size field.
            case("pax-size-disagrees", |raw, shards| {
                let mut tar = Tar::new();
                tar.pax(&[("size", b"2")]);
                tar.block(builder::header(b"s/a.jpg", 3, b'0')).data(b"aaa");
                shards[0] = tar.finish();
                *raw = RawIndex::parse(&index_of(shards));
                raw.rows[0].size = 3;
            }),
            |e| matches!(problem(e), Some(RowProblem::Size { member: 2, row: 3 })),
            |e| matches!(problem(e), Some(RowProblem::Size { .. })),
        ),
        (
            case("payload-past-shard", |raw, _| {
                let last = raw.rows.len() - 1;
                raw.rows[last].size = 1 << 40;
            }),
            |e| matches!(e, TaridxError::PayloadPastShard { .. }),
            |e| matches!(e, TaridxError::PayloadPastShard { .. }),
        ),
        (
            case("fid-out-of-range", |raw, _| {
                raw.rows[2].fid = 7;
            }),
            |e| {
                matches!(
                    e,
                    TaridxError::FidOutOfRange {
                        fid: 7,
                        shards: 1,
                        ..
                    }
                )
            },
            |e| matches!(e, TaridxError::FidOutOfRange { fid: 7, .. }),
        ),
        (
            // Sizes of 2^63 in two shards: the total does not fit 64 bits.
            case("total-overflow", |raw, shards| {
                shards.push(shards[0].clone());
                raw.rows[0].size = 1 << 63;
                raw.rows[1].size = 1 << 63;
                raw.rows[1].fid = 1;
            }),
            |e| matches!(e, TaridxError::MembersOverlap { first: 0, .. }),
            |e| matches!(e, TaridxError::TotalOverflow { row: 1 }),
        ),
        (
            // A crash block of 131,072 empty lines counted as five.
            case("crash-block-count", |raw, _| {
                raw.crash_block = vec![b'\n'; 1 << 17];
                raw.header.n_crash = 5;
            }),
            |e| matches!(e, TaridxError::CrashCountMismatch { header: 5, decoded } if *decoded == (1 << 17) + 1),
            |e| matches!(e, TaridxError::CrashCountMismatch { .. }),
        ),
        (
            // More extensions than a 16-bit extid can use.
            case("too-many-extensions", |raw, _| {
                raw.ext_block = b"x\n".repeat(70_000);
                raw.ext_block.pop();
                raw.header.n_ext = 70_000;
            }),
            |e| matches!(e, TaridxError::TooManyExtensions { count: 70_000 }),
            |e| matches!(e, TaridxError::TooManyExtensions { .. }),
        ),
        (
            case("stem-count-lies", |raw, _| {
                raw.header.n_stems = 1;
            }),
            |_| false,
            |e| matches!(e, TaridxError::StemCountMismatch { header: 1, .. }),
        ),
        (
            case("contiguity-flag-lies", |raw, _| {
                raw.header.flags ^= 1;
            }),
            |_| false,
            |e| matches!(e, TaridxError::ContiguityFlagWrong { .. }),
        ),
        (
            // An index keyed by glzn's rule read as WebDataset-keyed.
            case("key-rule-flag-lies", |raw, _| {
                raw.header.flags |= 2;
            }),
            |e| matches!(problem(e), Some(RowProblem::Key { key, .. }) if key == "s/a"),
            |e| matches!(problem(e), Some(RowProblem::Key { .. })),
        ),
        (
            // Finding 04: m.jpg's header keyed "a", named by a pax record
            // that is really the payload of e.bin, which has no row. Tar
            // reads forward and never sees that record.
            fake_pax_case("fake-pax-in-payload", |raw| {
                raw.rows.remove(0);
                raw.rows[0].keyhash = binfmt_taridx::keyhash("a");
                raw.header.n_stems = 1;
                raw.header.flags = 1;
            }),
            |e| matches!(problem(e), Some(RowProblem::OmittedMember { at: 0, name }) if name == "e.bin"),
            |e| matches!(problem(e), Some(RowProblem::OmittedMember { at: 0, .. })),
        ),
        (
            // Finding 04 again: e.bin has a row, but one too short, so that
            // its claimed end is where the fake record starts.
            fake_pax_case("predecessor-size-short", |raw| {
                raw.rows[0].size = 512;
                raw.rows[1].keyhash = binfmt_taridx::keyhash("a");
                raw.header.n_stems = 2;
                raw.header.flags = 1;
            }),
            |e| {
                matches!(
                    problem(e),
                    Some(RowProblem::Size {
                        member: 1536,
                        row: 512
                    })
                )
            },
            |e| {
                matches!(
                    problem(e),
                    Some(RowProblem::Size {
                        member: 1536,
                        row: 512
                    })
                )
            },
        ),
        (
            // Finding 05: many rows on one member with a long pax name.
            case("aliased-rows-long-name", |raw, shards| {
                let mut tar = Tar::new();
                let long = format!("{}x.jpg", "d".repeat(200).repeat(10));
                tar.pax(&[("path", long.as_bytes())]);
                tar.block(builder::header(b"stub.jpg", 7, b'0'))
                    .data(b"PAYLOAD");
                shards[0] = tar.finish();
                *raw = RawIndex::parse(&index_of(shards));
                raw.rows = vec![raw.rows[0]; 64];
                raw.header.n_rows = 64;
            }),
            |e| {
                matches!(
                    e,
                    TaridxError::RowsShareMember {
                        first: 0,
                        second: 1,
                        ..
                    }
                )
            },
            |e| {
                matches!(
                    e,
                    TaridxError::RowsShareMember {
                        first: 0,
                        second: 1,
                        ..
                    }
                )
            },
        ),
        (
            // The rows stop before the shard's last member (d.txt): every
            // row reads, verify refuses the member without a row.
            case("rows-stop-before-last-member", |raw, shards| {
                *raw = RawIndex::parse(&index_without(shards, |name| name.ends_with(b"d.txt")));
            }),
            |e| matches!(e, TaridxError::UncoveredMember { fid: 0, .. }),
            |e| matches!(e, TaridxError::UncoveredMember { fid: 0, .. }),
        ),
        (
            // A second shard of the fold that no row points into.
            case("shard-without-rows", |_, shards| {
                let mut tar = Tar::new();
                tar.file("t/e.jpg", b"E");
                shards.push(tar.finish());
            }),
            |e| {
                matches!(
                    e,
                    TaridxError::UncoveredMember {
                        fid: 1,
                        offset: 0,
                        ..
                    }
                )
            },
            |e| {
                matches!(
                    e,
                    TaridxError::UncoveredMember {
                        fid: 1,
                        offset: 0,
                        ..
                    }
                )
            },
        ),
        (
            // h.jpg, after a directory header with a size, had no row when
            // that size was skipped as data.
            case("directory-size-hides-a-member", |raw, shards| {
                *shards = vec![directory_with_size_shard()];
                *raw = RawIndex::parse(&index_without(shards, |name| name == b"h.jpg"));
            }),
            |e| matches!(problem(e), Some(RowProblem::OmittedMember { at: 1536, .. })),
            |e| matches!(problem(e), Some(RowProblem::OmittedMember { at: 1536, .. })),
        ),
    ]
}

/// A shard whose first member, e.bin, holds in its payload (after 512
/// bytes of filler) a pax header and record naming `a.jpg`; then m.jpg
/// (`EVIL`) and a.jpg (`GOOD`). Tar lists three members: e.bin, m.jpg,
/// a.jpg.
fn fake_pax_shard() -> Vec<u8> {
    let mut fake = Tar::new();
    fake.pax(&[("path", b"a.jpg")]);
    let mut fake = fake.finish();
    fake.truncate(fake.len() - 1024);
    let payload = [vec![b'x'; 512], fake].concat();
    let mut tar = Tar::new();
    tar.file("e.bin", &payload);
    tar.file("m.jpg", b"EVIL");
    tar.file("a.jpg", b"GOOD");
    tar.finish()
}

/// The fake-record shard with its own index (rows e.bin, m.jpg, a.jpg),
/// edited.
fn fake_pax_case(name: &'static str, edit: impl FnOnce(&mut RawIndex)) -> Case {
    let shards = vec![fake_pax_shard()];
    let mut raw = RawIndex::parse(&index_of(&shards));
    edit(&mut raw);
    raw.header.n_rows = raw.rows.len() as u64;
    Case {
        name,
        index: raw.bytes(),
        shards,
    }
}

#[test]
fn a_record_inside_a_payload_is_payload() {
    // Finding 04, scan/: the shard is a legitimate tar; its own index
    // reads, verifies and names each member as tar does.
    let shards = vec![fake_pax_shard()];
    let case = Case {
        name: "fake-pax-shard",
        index: index_of(&shards),
        shards,
    };
    read_all(&case).unwrap();
    verify(&case).unwrap();
    let fold = dataset(&case).unwrap();
    for (name, bytes) in [("a.jpg", &b"GOOD"[..]), ("m.jpg", b"EVIL")] {
        let row = fold.find(name).unwrap().expect(name);
        assert_eq!(fold.read(&row).unwrap(), bytes, "{name}");
    }
    // A row whose predecessor's row is too short is refused on its own.
    let (case, _, _) = cases()
        .into_iter()
        .find(|(case, _, _)| case.name == "predecessor-size-short")
        .unwrap();
    let dataset = dataset(&case).unwrap();
    let error = dataset.read(&dataset.rows()[1]).unwrap_err();
    assert!(
        matches!(
            problem(&error),
            Some(RowProblem::Predecessor { row: 0, offset: 0, problem })
                if matches!(**problem, RowProblem::Size { member: 1536, row: 512 })
        ),
        "{error}"
    );
}

#[test]
fn the_base_fold_reads_and_verifies() {
    let (raw, shards) = base();
    let case = Case {
        name: "base",
        index: raw.bytes(),
        shards,
    };
    read_all(&case).unwrap();
    assert_eq!(verify(&case).unwrap(), 100 + 1 + 100 + 1 + 3 + 4);
    let dataset = dataset(&case).unwrap();
    let long = format!("{}c.txt", "deep/".repeat(30));
    let row = dataset.find(&long).unwrap().expect("found by its pax path");
    assert_eq!(dataset.read(&row).unwrap(), b"ccc");
    let gnu = format!("{}d.txt", "gnu/".repeat(40));
    let row = dataset
        .find(&gnu)
        .unwrap()
        .expect("found by its GNU long name");
    assert_eq!(dataset.read(&row).unwrap(), b"dddd");
    assert!(dataset.find("placeholder.txt").unwrap().is_none());
}

#[test]
fn each_rule_has_its_typed_error() {
    for (case, read_error, verify_error) in cases() {
        match read_all(&case) {
            Ok(()) => assert!(
                !read_error(&TaridxError::NotContiguous),
                "{}: every read succeeded",
                case.name
            ),
            Err(error) => assert!(read_error(&error), "{}: read gave {error}", case.name),
        }
        let error = verify(&case).expect_err(case.name);
        assert!(verify_error(&error), "{}: verify gave {error}", case.name);
        assert!(
            exercise::read_fold(exercise::pack_fold(&case.index, &case.shards)).is_err(),
            "{}",
            case.name
        );
    }
}

#[test]
fn the_regression_inputs_are_the_cases() {
    let dir = binfmt_tests::workspace_root().join("tests/regressions/taridx_fold");
    let bless = std::env::var_os("BINFMT_BLESS").is_some();
    if bless {
        std::fs::create_dir_all(&dir).unwrap();
    }
    for (case, _, _) in cases() {
        let packed = exercise::pack_fold(&case.index, &case.shards);
        let path = dir.join(format!("{}.bin", case.name));
        if bless {
            std::fs::write(&path, &packed).unwrap();
        }
        let committed = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (BINFMT_BLESS=1 writes it)", path.display()));
        assert!(
            committed == packed,
            "{} differs from its case",
            path.display()
        );
    }
}

#[test]
fn webdataset_keys_are_recorded_and_used() {
    let shards = vec![base_shard()];
    let mut builder = binfmt_taridx::IndexBuilder::new(KeyRule::WebDataset);
    for member in binfmt_taridx::tar::scan(&shards[0]).unwrap() {
        builder.add(0, member).unwrap();
    }
    let bytes = builder.to_bytes().unwrap();
    assert_eq!(&bytes[8..12], &[1, 0, 1, 0], "major 1, minor 1");
    assert_eq!(bytes[56] & 2, 2, "flag bit 1");
    let case = Case {
        name: "webdataset",
        index: bytes,
        shards,
    };
    read_all(&case).unwrap();
    verify(&case).unwrap();
    let dataset = dataset(&case).unwrap();
    assert_eq!(dataset.index().key_rule(), KeyRule::WebDataset);
    assert_eq!(dataset.lookup_verified("s/a").unwrap().len(), 2);
    assert!(dataset.lookup_verified("a").unwrap().is_empty());
}

/// a.jpg, then an entry of `typeflag` giving a size of 1024 whose bytes hold
/// a member h.jpg, then z.jpg.
fn symlink_with_size(typeflag: u8) -> Vec<u8> {
    let mut tar = Tar::new();
    tar.file("a.jpg", b"AAAA");
    tar.block(builder::header(b"link", 1024, typeflag));
    tar.file("h.jpg", b"HIDDEN");
    tar.file("z.jpg", b"ZZZZ");
    tar.finish()
}

/// Shards the scanner refuses, with their typed error.
fn shard_cases() -> Vec<(&'static str, Vec<u8>, Expect)> {
    let compressed = |magic: &[u8]| {
        let mut bytes = magic.to_vec();
        bytes.resize(1024, 0x55);
        bytes
    };
    let mut huge_pax = Tar::new();
    huge_pax.block(builder::header(b"././@PaxHeader", 1 << 30, b'x'));
    vec![
        ("gzip-compressed", compressed(&[0x1f, 0x8b, 8, 0]), |e| {
            matches!(
                e,
                TaridxError::CompressedShard {
                    compression: "gzip",
                    ..
                }
            )
        }),
        (
            "zstd-compressed",
            compressed(&[0x28, 0xb5, 0x2f, 0xfd]),
            |e| {
                matches!(
                    e,
                    TaridxError::CompressedShard {
                        compression: "zstd",
                        ..
                    }
                )
            },
        ),
        ("bzip2-compressed", compressed(b"BZh91AY&SY"), |e| {
            matches!(
                e,
                TaridxError::CompressedShard {
                    compression: "bzip2",
                    ..
                }
            )
        }),
        (
            "xz-compressed",
            compressed(&[0xfd, b'7', b'z', b'X', b'Z', 0]),
            |e| {
                matches!(
                    e,
                    TaridxError::CompressedShard {
                        compression: "xz",
                        ..
                    }
                )
            },
        ),
        ("pax-claims-a-gigabyte", huge_pax.finish(), |e| {
            matches!(
                e,
                TaridxError::Shard {
                    problem: binfmt_taridx::tar::TarProblem::PayloadPastEnd { size, .. },
                    ..
                } if *size == 1 << 30
            )
        }),
        ("symlink-with-size", symlink_with_size(b'2'), |e| {
            matches!(
                e,
                TaridxError::Shard {
                    offset: 1024,
                    problem: binfmt_taridx::tar::TarProblem::AmbiguousExtent {
                        typeflag: b'2',
                        size: 1024
                    },
                    ..
                }
            )
        }),
        ("unknown-typeflag", symlink_with_size(b'A'), |e| {
            matches!(
                e,
                TaridxError::Shard {
                    offset: 1024,
                    problem: binfmt_taridx::tar::TarProblem::UnknownType { typeflag: b'A' },
                    ..
                }
            )
        }),
        (
            "pax-record-overruns",
            {
                let mut tar = Tar::new();
                tar.block(builder::header(b"././@PaxHeader", 10, b'x'))
                    .data(b"99 path=x\n");
                tar.file("a.jpg", b"x");
                tar.finish()
            },
            |e| {
                matches!(
                    e,
                    TaridxError::Shard {
                        problem: binfmt_taridx::tar::TarProblem::BadPax { .. },
                        ..
                    }
                )
            },
        ),
    ]
}

#[test]
fn shard_rules_have_their_typed_errors() {
    let dir = binfmt_tests::workspace_root().join("tests/regressions/tar_shard");
    let bless = std::env::var_os("BINFMT_BLESS").is_some();
    for (name, bytes, check) in shard_cases() {
        let error = binfmt_taridx::tar::scan(&bytes).expect_err(name);
        assert!(check(&error), "{name}: {error}");
        assert!(exercise::read_tar(bytes.clone()).is_err(), "{name}");
        let path = dir.join(format!("{name}.bin"));
        if bless {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &bytes).unwrap();
        }
        assert!(
            std::fs::read(&path).unwrap() == bytes,
            "{} differs from its case",
            path.display()
        );
    }
    // A record of more than 1 MiB, present in full, is refused by size.
    let mut big = Tar::new();
    big.block(builder::header(b"././@PaxHeader", (1 << 20) + 1, b'x'))
        .data(&vec![b'\n'; (1 << 20) + 1]);
    big.file("a.jpg", b"x");
    assert!(matches!(
        binfmt_taridx::tar::scan(&big.finish()),
        Err(TaridxError::Shard {
            problem: binfmt_taridx::tar::TarProblem::MetadataTooLarge { .. },
            ..
        })
    ));
    let message = binfmt_taridx::tar::scan(&shard_cases()[0].1)
        .unwrap_err()
        .to_string();
    assert_eq!(
        message,
        "<memory> is gzip-compressed; TARIDX needs uncompressed tar (decompress it first)"
    );
}

/// Writers refuse every name readers or extractors would refuse or read as
/// something else, and a name twice.
#[test]
fn tar_writer_refuses_what_tar_would_misread() {
    let mut tar = binfmt_taridx::TarWriter::new(Vec::new());
    for name in [
        "",
        "/abs.jpg",
        "a/../b.jpg",
        "a//b.jpg",
        "./a.jpg",
        "dir/",
        "nul\0.jpg",
        "back\\slash",
    ] {
        assert!(
            matches!(
                tar.append_bytes(name, b"x"),
                Err(TaridxError::BadName { .. })
            ),
            "{name:?} accepted"
        );
    }
    tar.append_bytes("ok.jpg", b"x").unwrap();
    assert!(matches!(
        tar.append_bytes("ok.jpg", b"y"),
        Err(TaridxError::DuplicateName { .. })
    ));
    // A reader that gives fewer or more bytes than declared.
    assert!(matches!(
        tar.append("short.jpg", 5, &b"abc"[..]),
        Err(TaridxError::SizeMismatch {
            declared: 5,
            actual: 3,
            ..
        })
    ));
    let mut tar = binfmt_taridx::TarWriter::new(Vec::new());
    assert!(matches!(
        tar.append("long.jpg", 2, &b"abc"[..]),
        Err(TaridxError::SizeMismatch {
            declared: 2,
            actual: 3,
            ..
        })
    ));
}

/// Shards that are not regular files are refused before they are opened.
#[cfg(unix)]
#[test]
fn non_regular_shards_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let shards = [dir.path().join("f_0000.tar"), dir.path().join("f_0001.tar")];
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&shards[0])
            .status()
            .unwrap()
            .success()
    );
    std::os::unix::fs::symlink("/dev/zero", &shards[1]).unwrap();
    for shard in &shards {
        let error = binfmt_taridx::index_shards(
            std::slice::from_ref(shard),
            binfmt_taridx::IndexOptions::new(),
            || {},
        )
        .unwrap_err();
        assert!(
            matches!(
                error,
                TaridxError::Core(binfmt_core::Error::NotRegularFile { .. })
            ),
            "{error}"
        );
    }
    // A dataset over such shards refuses them when a row needs them.
    let mut with_member = Tar::new();
    with_member.file("a.jpg", b"x");
    let index = index_of(&[with_member.finish()]);
    let index_path = dir.path().join("f.taridx");
    std::fs::write(&index_path, index).unwrap();
    let dataset = Dataset::open(&index_path, &shards[..1]).unwrap();
    let row = dataset.rows()[0];
    assert!(matches!(
        dataset.read(&row),
        Err(TaridxError::Core(binfmt_core::Error::NotRegularFile {
            kind: "a FIFO",
            ..
        }))
    ));
}
