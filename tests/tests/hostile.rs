//! Every reader against files it did not write: each truncation of a
//! fixture and a flip of each bit of its structures (one bit of every other
//! byte). No input may panic, abort, or make any single allocation larger
//! than a fixed bound; truncations and flips in structures the format
//! checks must be errors, and for ARCX every flipped byte of a block or of
//! the manifest must be caught.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    // Lists of byte ranges that happen to hold one range.
    clippy::single_range_in_vec_init
)]
// The counting allocator forwards to the system allocator.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;
use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};

use binfmt_tests::fixture;

/// Records the largest single allocation the process makes.
struct Counting;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

/// No reader may allocate more than this at once for inputs of a few
/// kilobytes: anything larger was sized by a count read from the file.
const ALLOCATION_BOUND: usize = 16 << 20;

// SAFETY: every call is forwarded unchanged to `System`, which upholds the
// `GlobalAlloc` contract; the only addition is a relaxed atomic max.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's layout is passed through as received.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST.fetch_max(new_size, Ordering::Relaxed);
        // SAFETY: `ptr` came from `System` with `layout`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[path = "../exercise.rs"]
mod exercise;

use exercise::{read_arcx, read_kast, read_par4_derived, read_par4_map, read_par4_vec, read_tar};

/// Reads everything a reader can read from `bytes`; `Err` if anything was
/// rejected.
type Reader = fn(Vec<u8>) -> Result<(), String>;

/// The interleaved fold's shards, in memory.
fn interleaved_shards() -> &'static binfmt_taridx::ShardBytes {
    static SHARDS: std::sync::OnceLock<binfmt_taridx::ShardBytes> = std::sync::OnceLock::new();
    SHARDS.get_or_init(|| {
        binfmt_taridx::ShardBytes::new((0..3).map(|fid| {
            std::fs::read(fixture(&format!(
                "generated/taridx/interleaved_{fid:04}.tar"
            )))
            .unwrap()
        }))
    })
}

thread_local! {
    /// The paths of the ARCX fixture a sweep flips (each test runs on a
    /// thread of its own): the one-path lookup is tried on each.
    static ARCX_PATHS: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// ARCX: everything `read_arcx` reads, and the one-path lookup of each of
/// the fixture's paths against it (`exercise::compare_arcx_lookup`).
fn read_arcx_and_look_up(bytes: Vec<u8>) -> Result<(), String> {
    ARCX_PATHS.with_borrow(|paths| exercise::compare_arcx_lookup(&bytes, paths));
    read_arcx(bytes)
}

fn read_taridx(bytes: Vec<u8>) -> Result<(), String> {
    exercise::read_taridx(bytes, Some(interleaved_shards()))
}

/// Runs `reader` on `bytes`, turning a panic into a failure that names the
/// input, and checks the sniffer on the same bytes.
fn run(what: &str, reader: Reader, bytes: Vec<u8>) -> Result<(), String> {
    let _ = binfmt::sniff_bytes(&bytes, &bytes);
    match catch_unwind(AssertUnwindSafe(|| reader(bytes))) {
        Ok(result) => result,
        Err(_) => panic!("{what}: the reader panicked"),
    }
}

/// The bits flipped in a file: every bit of the ranges given, one bit of
/// every byte elsewhere.
fn flips(len: usize, every_bit: &[Range<usize>]) -> Vec<(usize, u8)> {
    (0..len)
        .flat_map(|at| {
            let all = every_bit.iter().any(|range| range.contains(&at));
            let bits: Vec<u8> = if all {
                (0..8).collect()
            } else {
                vec![(at % 8) as u8]
            };
            bits.into_iter().map(move |bit| (at, bit))
        })
        .collect()
}

/// One fixture's sweep: which bytes get every bit flipped, and which
/// flipped bytes must be rejected.
struct Sweep {
    file: &'static str,
    reader: Reader,
    every_bit: Vec<Range<usize>>,
    /// Whether flipping bit `bit` of byte `at` must be rejected.
    must_reject: Box<dyn Fn(usize, u8) -> bool>,
    /// Whether cutting the file to `cut` of `len` bytes must be rejected.
    cut_rejected: Box<dyn Fn(usize) -> bool>,
}

/// Bytes in any of `ranges`, every bit.
fn within(ranges: Vec<Range<usize>>) -> Box<dyn Fn(usize, u8) -> bool> {
    Box::new(move |at, _| ranges.iter().any(|range| range.contains(&at)))
}

/// Every format but tar ends in a structure that a cut removes.
fn always() -> Box<dyn Fn(usize) -> bool> {
    Box::new(|_| true)
}

fn sweep(case: &Sweep) {
    let original = std::fs::read(fixture(case.file)).unwrap();
    let len = original.len();
    run(case.file, case.reader, original.clone())
        .unwrap_or_else(|e| panic!("{}: the fixture itself is rejected: {e}", case.file));

    for cut in 0..len {
        let result = run(case.file, case.reader, original[..cut].to_vec());
        if (case.cut_rejected)(cut) {
            assert!(
                result.is_err(),
                "{}: cut to {cut} bytes was accepted",
                case.file
            );
        }
    }
    let mut missed: HashMap<usize, Vec<u8>> = HashMap::new();
    for (at, bit) in flips(len, &case.every_bit) {
        let mut bytes = original.clone();
        bytes[at] ^= 1 << bit;
        let result = run(case.file, case.reader, bytes);
        if result.is_ok() && (case.must_reject)(at, bit) {
            missed.entry(at).or_default().push(bit);
        }
    }
    let mut missed: Vec<_> = missed.into_iter().collect();
    missed.sort();
    assert!(
        missed.is_empty(),
        "{}: flips accepted (byte, bits): {missed:?}",
        case.file
    );
    let largest = LARGEST.load(Ordering::Relaxed);
    assert!(
        largest <= ALLOCATION_BOUND,
        "{}: an allocation of {largest} bytes",
        case.file
    );
}

/// An ARCX sweep: every bit of the 80-byte header and the 40-byte footer;
/// every flip between them, in blocks or the manifest, must be caught.
fn arcx_sweep(file: &'static str) {
    let len = std::fs::metadata(fixture(file)).unwrap().len() as usize;
    let archive = binfmt_arcx::Archive::open(fixture(file)).unwrap();
    let paths = archive.files().map(|f| f.path().to_string()).collect();
    ARCX_PATHS.set(paths);
    sweep(&Sweep {
        file,
        reader: read_arcx_and_look_up,
        every_bit: vec![0..80, len - 40..len],
        must_reject: within(vec![80..len - 40]),
        cut_rejected: always(),
    });
}

#[test]
fn arcx_spec_dialect() {
    arcx_sweep("generated/arcx/multi_block.spec.arcx");
}

#[test]
fn arcx_cli_dialect() {
    arcx_sweep("generated/arcx/multi_block.arcx-cli.arcx");
}

#[test]
fn arcx_written_by_the_reference_tool() {
    arcx_sweep("reference/sample.arcx");
}

#[test]
fn kast() {
    // Header and the 11 descriptors: every bit. Signature, version major,
    // item count and file size must be rejected when flipped.
    sweep(&Sweep {
        file: "generated/kast/types.kas",
        reader: read_kast,
        every_bit: vec![0..64 + 11 * 64],
        must_reject: within(vec![0..10, 12..24]),
        cut_rejected: always(),
    });
}

#[test]
fn par4_maps() {
    for file in [
        "generated/par4/unicode.par4",
        "generated/par4/unicode_lz4.par4",
    ] {
        let len = std::fs::metadata(fixture(file)).unwrap().len() as usize;
        // The 26-byte global header: magic, version, root offset and length.
        sweep(&Sweep {
            file,
            reader: read_par4_map,
            every_bit: vec![len - 64..len],
            must_reject: within(vec![len - 26..len - 4]),
            cut_rejected: always(),
        });
    }
}

#[test]
fn par4_vec() {
    let file = "generated/par4/vec_u64.par4";
    let len = std::fs::metadata(fixture(file)).unwrap().len() as usize;
    sweep(&Sweep {
        file,
        reader: read_par4_vec,
        every_bit: vec![len - 128..len],
        must_reject: within(vec![len - 26..len - 4]),
        cut_rejected: always(),
    });
}

#[test]
fn par4_derived() {
    let file = "generated/par4/derived.par4";
    let len = std::fs::metadata(fixture(file)).unwrap().len() as usize;
    sweep(&Sweep {
        file,
        reader: read_par4_derived,
        every_bit: vec![len - 128..len],
        must_reject: within(vec![len - 26..len - 4]),
        cut_rejected: always(),
    });
}

#[test]
fn taridx_index() {
    // The 64-byte header: magic, version, sizes, counts and offsets.
    sweep(&Sweep {
        file: "generated/taridx/interleaved.taridx",
        reader: read_taridx,
        every_bit: vec![0..64],
        // All but the minor version (a newer minor is read), reserved bytes
        // and flag bits 1-7 (ignored, as by the reference), and n_crash
        // 0 -> 1 (an empty crash block counted as 1 is one empty stem).
        must_reject: Box::new(|at, bit| match at {
            10 | 11 | 57.. => false,
            36 => bit != 0,
            56 => bit == 0,
            _ => true,
        }),
        cut_rejected: always(),
    });
}

#[test]
fn tar_shard() {
    let file = "generated/taridx/interleaved_0000.tar";
    // (header start, payload end) of every member.
    let members: Vec<(usize, usize)> =
        binfmt_taridx::tar::scan(&std::fs::read(fixture(file)).unwrap())
            .unwrap()
            .iter()
            .map(|member| {
                (
                    member.offset as usize,
                    (member.offset + 512 + member.size) as usize,
                )
            })
            .collect();
    assert_eq!(members.len(), 3);
    // A header's checksum covers every byte of it. The checksum field
    // itself may be written "0001234\0 " or " 001234 \0" alike, so a leading
    // '0' turned into a space, and its NUL and space swapped, read the same.
    sweep(&Sweep {
        file,
        reader: read_tar,
        every_bit: vec![0..512],
        must_reject: Box::new(|at, bit| match at {
            148 => bit != 4,
            154 | 155 => bit != 5,
            _ => at < 512,
        }),
        // A tar may end after any member (the reference stops where the
        // headers stop); a cut through a header or a payload never.
        cut_rejected: Box::new(move |cut| {
            members.iter().any(|&(start, end)| start < cut && cut < end)
        }),
    });
}

/// Inputs the fuzz targets found crashing a reader, one directory per
/// target (`tests/regressions/TARGET/`): each must now be an error.
#[test]
fn fuzz_findings_stay_fixed() {
    let root = binfmt_tests::workspace_root().join("tests/regressions");
    let readers: [(&str, Reader); 6] = [
        ("arcx", read_arcx),
        ("kast", read_kast),
        // A PAR4 input must be rejected read as a vector, as a map and as a
        // derived struct: by the reader it attacks, by the others for its
        // layout.
        ("par4", |bytes| {
            read_par4_vec(bytes.clone())
                .or_else(|_| read_par4_map(bytes.clone()))
                .or_else(|_| read_par4_derived(bytes))
        }),
        ("taridx_index", |bytes| exercise::read_taridx(bytes, None)),
        ("tar_shard", read_tar),
        ("taridx_fold", exercise::read_fold),
    ];
    let mut checked = 0;
    for (target, reader) in readers {
        let Ok(entries) = std::fs::read_dir(root.join(target)) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let name = path.display().to_string();
            let result = run(&name, reader, std::fs::read(&path).unwrap());
            assert!(result.is_err(), "{name} was accepted");
            checked += 1;
        }
    }
    assert!(checked > 0);
}
