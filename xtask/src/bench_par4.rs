//! `cargo xtask bench par4`: this project's PAR4 code next to the `parcode`
//! 0.6.1 crate, on the same data, in the same run.

use std::collections::HashMap;
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use binfmt_parcode::{ChunkGraph, Compression, LazyMap, LazyVec, MapLayout, ParFile, StructReader};
use parcode::{Parcode, ParcodeObject};
use serde::{Deserialize, Serialize};

use crate::report::{Report, median};

/// The derived types, compiled against both crates.
mod theirs_types {
    use parcode as dep;
    include!("bench_par4/types.rs");
}

mod ours_types {
    use binfmt_parcode as dep;
    include!("bench_par4/types.rs");
}

/// The reference writes its lazy bucket layout only for a struct field
/// marked `#[parcode(map)]`; a map saved directly is one inline chunk.
#[derive(Debug, Clone, Serialize, Deserialize, ParcodeObject)]
struct MapHolder {
    #[parcode(map)]
    map: HashMap<String, Vec<u8>>,
}

const VEC_ITEMS: u64 = 10_000_000;
const MAP_ENTRIES: usize = 100_000;
const CLOUD_POINTS: usize = 200_000;

fn timed<T>(f: &mut impl FnMut() -> Result<T, String>) -> Result<Duration, String> {
    let start = Instant::now();
    black_box(f()?);
    Ok(start.elapsed())
}

/// Medians of `runs` runs of each, alternating ours and theirs so that
/// drift in the machine's load hits both alike.
fn compare<A, B>(
    runs: usize,
    mut ours: impl FnMut() -> Result<A, String>,
    mut theirs: impl FnMut() -> Result<B, String>,
) -> Result<(Duration, Duration), String> {
    let (mut a, mut b) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for _ in 0..runs {
        a.push(timed(&mut ours)?);
        b.push(timed(&mut theirs)?);
    }
    Ok((median(a), median(b)))
}

/// Bulk operations and point accesses: runs of each.
const BULK_RUNS: usize = 11;
const POINT_RUNS: usize = 501;

pub fn run(dir: &Path, report: &mut Report) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let items: Vec<u64> = (0..VEC_ITEMS)
        .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 20)
        .collect();
    let map: HashMap<String, Vec<u8>> = (0..MAP_ENTRIES)
        .map(|i| {
            (
                format!("key/{i:08}"),
                binfmt_tests::pseudo_random_bytes(i as u64, 64),
            )
        })
        .collect();
    let holder = MapHolder { map: map.clone() };
    let (ours_vec, ref_vec) = (dir.join("vec.ours.par4"), dir.join("vec.ref.par4"));
    let (ours_map, ref_map, ref_holder) = (
        dir.join("map.ours.par4"),
        dir.join("map.ref.par4"),
        dir.join("map.holder.ref.par4"),
    );

    let mut row = |what: &str, (ours, theirs): (Duration, Duration)| {
        report.time("par4", "parcode 0.6.1", what, ours, theirs);
    };
    let save_vec = || {
        let mut graph = ChunkGraph::new();
        let root = graph.vec(&items).map_err(|e| err(&e))?;
        graph
            .write_file(root, Compression::None, &ours_vec)
            .map_err(|e| err(&e))
    };
    row(
        "save Vec<u64>, 10M items",
        compare(BULK_RUNS, save_vec, || {
            Parcode::save(&ref_vec, &items).map_err(|e| err(&e))
        })?,
    );

    let load_vec = || {
        let file = ParFile::open(&ours_vec).map_err(|e| err(&e))?;
        LazyVec::<u64>::new(file.root().map_err(|e| err(&e))?)
            .and_then(|v| v.load())
            .map_err(|e| err(&e))
    };
    row(
        "load Vec<u64>, 10M items",
        compare(BULK_RUNS, load_vec, || {
            Parcode::load::<Vec<u64>, _>(&ref_vec).map_err(|e| err(&e))
        })?,
    );

    let save_map = || {
        let mut graph = ChunkGraph::new();
        let root = graph.map(&map, MapLayout::Buckets).map_err(|e| err(&e))?;
        graph
            .write_file(root, Compression::None, &ours_map)
            .map_err(|e| err(&e))
    };
    row(
        "save HashMap<String, Vec<u8>>, 100k entries (reference: map saved directly)",
        compare(BULK_RUNS, save_map, || {
            Parcode::save(&ref_map, &map).map_err(|e| err(&e))
        })?,
    );
    row(
        "save HashMap<String, Vec<u8>>, 100k entries (reference: #[parcode(map)] field)",
        compare(BULK_RUNS, save_map, || {
            Parcode::save(&ref_holder, &holder).map_err(|e| err(&e))
        })?,
    );

    let load_map = || {
        let file = ParFile::open(&ours_map).map_err(|e| err(&e))?;
        LazyMap::<String, Vec<u8>>::new(file.root().map_err(|e| err(&e))?)
            .and_then(|m| m.load())
            .map_err(|e| err(&e))
    };
    row(
        "load HashMap, 100k entries",
        compare(BULK_RUNS, load_map, || {
            Parcode::load::<HashMap<String, Vec<u8>>, _>(&ref_map).map_err(|e| err(&e))
        })?,
    );

    // Point accesses: both readers read the same file, written by the
    // reference (the page cache keeps a file in folios whose size depends on
    // how it was written, which changes the page faults a cold read takes),
    // and cycle through the same spread-out indexes and keys, so no single
    // lucky position decides the result.
    let index_at = |run: usize| (run as u64 * 7_919_993) % VEC_ITEMS;
    let (mut ours_run, mut theirs_run) = (0, 0);
    let ours = || {
        ours_run += 1;
        let index = index_at(ours_run);
        let file = ParFile::open(&ref_vec).map_err(|e| err(&e))?;
        let value = LazyVec::<u64>::new(file.root().map_err(|e| err(&e))?)
            .and_then(|v| v.get(index))
            .map_err(|e| err(&e))?;
        (items.get(index as usize) == Some(&value))
            .then_some(())
            .ok_or("wrong value".to_owned())
    };
    let theirs = || {
        theirs_run += 1;
        let index = index_at(theirs_run);
        let file = Parcode::open(&ref_vec).map_err(|e| err(&e))?;
        let value = file
            .root::<Vec<u64>>()
            .and_then(|v| v.get(index as usize))
            .map_err(|e| err(&e))?;
        (items.get(index as usize) == Some(&value))
            .then_some(())
            .ok_or("wrong value".to_owned())
    };
    row(
        "open + get(index) of Vec<u64> (same file)",
        compare(POINT_RUNS, ours, theirs)?,
    );

    let key_at = |run: usize| format!("key/{:08}", (run * 37_813) % MAP_ENTRIES);
    let (mut ours_run, mut theirs_run) = (0, 0);
    let ours = || {
        ours_run += 1;
        let key = key_at(ours_run);
        let file = ParFile::open(&ref_holder).map_err(|e| err(&e))?;
        let root = file.root().map_err(|e| err(&e))?;
        let value = StructReader::new(root)
            .and_then(|mut fields| fields.map::<String, Vec<u8>>()?.get(&key))
            .map_err(|e| err(&e))?;
        (value.as_ref() == map.get(&key))
            .then_some(())
            .ok_or("wrong value".to_owned())
    };
    let theirs = || {
        theirs_run += 1;
        let key = key_at(theirs_run);
        let file = Parcode::open(&ref_holder).map_err(|e| err(&e))?;
        let value = file
            .root::<MapHolder>()
            .and_then(|h| h.map.get(&key))
            .map_err(|e| err(&e))?;
        (value.as_ref() == map.get(&key))
            .then_some(())
            .ok_or("wrong value".to_owned())
    };
    row(
        "open + get(key) of HashMap in a #[parcode(map)] field (same file)",
        compare(POINT_RUNS, ours, theirs)?,
    );
    // Against a map saved directly, which the reference can only load whole;
    // ours reads its own bucketed file.
    let mut ours_run = 0;
    let ours = || {
        ours_run += 1;
        let key = key_at(ours_run);
        let file = ParFile::open(&ours_map).map_err(|e| err(&e))?;
        let value = LazyMap::<String, Vec<u8>>::new(file.root().map_err(|e| err(&e))?)
            .and_then(|m| m.get(&key))
            .map_err(|e| err(&e))?;
        (value.as_ref() == map.get(&key))
            .then_some(())
            .ok_or("wrong value".to_owned())
    };
    let key = key_at(1);
    let expected = map.get(&key).cloned();
    let theirs = || {
        let loaded = Parcode::load::<HashMap<String, Vec<u8>>, _>(&ref_map).map_err(|e| err(&e))?;
        (loaded.get(&key) == expected.as_ref())
            .then_some(())
            .ok_or("wrong value".to_owned())
    };
    row(
        "open + get(key) of HashMap (reference: map saved directly, must load it all)",
        compare(BULK_RUNS, ours, theirs)?,
    );
    derived(dir, report, &items, &map)
}

/// Saves and loads `ours` and `theirs` (the same value as each crate's
/// derived type), each crate its own file; returns the files.
fn save_and_load<A, B>(
    report: &mut Report,
    dir: &Path,
    label: &str,
    ours: &A,
    theirs: &B,
) -> Result<(std::path::PathBuf, std::path::PathBuf), String>
where
    A: binfmt_parcode::ParcodeVisitor + binfmt_parcode::ParcodeNative + PartialEq + Sync,
    B: parcode::visitor::ParcodeVisitor + parcode::reader::ParcodeNative + PartialEq + Sync,
{
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let slug: String = label
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let ours_path = dir.join(format!("{slug}.ours.par4"));
    let theirs_path = dir.join(format!("{slug}.ref.par4"));
    let timing = compare(
        BULK_RUNS,
        || binfmt_parcode::Parcode::save(&ours_path, ours).map_err(|e| err(&e)),
        || Parcode::save(&theirs_path, theirs).map_err(|e| err(&e)),
    )?;
    report.time(
        "par4",
        "parcode 0.6.1",
        format!("derive: save {label}"),
        timing.0,
        timing.1,
    );
    let loaded: A = binfmt_parcode::Parcode::load(&ours_path).map_err(|e| err(&e))?;
    let their_loaded: B = Parcode::load(&theirs_path).map_err(|e| err(&e))?;
    if loaded != *ours || their_loaded != *theirs {
        return Err(format!("{label}: a load differs from the value saved"));
    }
    let timing = compare(
        BULK_RUNS,
        || binfmt_parcode::Parcode::load::<A, _>(&ours_path).map_err(|e| err(&e)),
        || Parcode::load::<B, _>(&theirs_path).map_err(|e| err(&e)),
    )?;
    report.time(
        "par4",
        "parcode 0.6.1",
        format!("derive: load {label}"),
        timing.0,
        timing.1,
    );
    Ok((ours_path, theirs_path))
}

/// The derive path: save and load of derived structs, then `open().root()`
/// and one lazy field access, both crates reading the reference's file.
fn derived(
    dir: &Path,
    report: &mut Report,
    items: &[u64],
    map: &HashMap<String, Vec<u8>>,
) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let check = |ok: bool| ok.then_some(()).ok_or_else(|| "wrong value".to_owned());

    let (_, series_file) = save_and_load(
        report,
        dir,
        "Series { Vec<u64>, 10M items }",
        &ours_types::series(items),
        &theirs_types::series(items),
    )?;
    let (_, index_file) = save_and_load(
        report,
        dir,
        "Index { #[parcode(map)] HashMap<String, Vec<u8>>, 100k entries }",
        &ours_types::index(map),
        &theirs_types::index(map),
    )?;
    let cloud = ours_types::cloud(CLOUD_POINTS);
    let (_, cloud_file) = save_and_load(
        report,
        dir,
        "Cloud { Vec<Point>, 200k structs }",
        &cloud,
        &theirs_types::cloud(CLOUD_POINTS),
    )?;

    let index_at = |run: usize| (run * 7_919_993) % items.len();
    let (mut ours_run, mut theirs_run) = (0, 0);
    let timing = compare(
        POINT_RUNS,
        || {
            ours_run += 1;
            let at = index_at(ours_run);
            let file = binfmt_parcode::Parcode::open(&series_file).map_err(|e| err(&e))?;
            let series = file.root::<ours_types::Series>().map_err(|e| err(&e))?;
            check(Some(&series.values.get(at).map_err(|e| err(&e))?) == items.get(at))
        },
        || {
            theirs_run += 1;
            let at = index_at(theirs_run);
            let file = Parcode::open(&series_file).map_err(|e| err(&e))?;
            let series = file.root::<theirs_types::Series>().map_err(|e| err(&e))?;
            check(Some(&series.values.get(at).map_err(|e| err(&e))?) == items.get(at))
        },
    )?;
    report.time(
        "par4",
        "parcode 0.6.1",
        "derive: open + root() + values.get(i) of Series (same file)",
        timing.0,
        timing.1,
    );

    let key_at = |run: usize| format!("key/{:08}", (run * 37_813) % MAP_ENTRIES);
    let (mut ours_run, mut theirs_run) = (0, 0);
    let timing = compare(
        POINT_RUNS,
        || {
            ours_run += 1;
            let key = key_at(ours_run);
            let file = binfmt_parcode::Parcode::open(&index_file).map_err(|e| err(&e))?;
            let index = file.root::<ours_types::Index>().map_err(|e| err(&e))?;
            check(index.entries.get(&key).map_err(|e| err(&e))?.as_ref() == map.get(&key))
        },
        || {
            theirs_run += 1;
            let key = key_at(theirs_run);
            let file = Parcode::open(&index_file).map_err(|e| err(&e))?;
            let index = file.root::<theirs_types::Index>().map_err(|e| err(&e))?;
            check(index.entries.get(&key).map_err(|e| err(&e))?.as_ref() == map.get(&key))
        },
    )?;
    report.time(
        "par4",
        "parcode 0.6.1",
        "derive: open + root() + entries.get(&key) of Index (same file)",
        timing.0,
        timing.1,
    );

    let point_at = |run: usize| (run * 104_729) % CLOUD_POINTS;
    let (mut ours_run, mut theirs_run) = (0, 0);
    let timing = compare(
        POINT_RUNS,
        || {
            ours_run += 1;
            let at = point_at(ours_run);
            let file = binfmt_parcode::Parcode::open(&cloud_file).map_err(|e| err(&e))?;
            let lazy = file.root::<ours_types::Cloud>().map_err(|e| err(&e))?;
            check(lazy.points.get(at).map_err(|e| err(&e))?.id == at as u32)
        },
        || {
            theirs_run += 1;
            let at = point_at(theirs_run);
            let file = Parcode::open(&cloud_file).map_err(|e| err(&e))?;
            let lazy = file.root::<theirs_types::Cloud>().map_err(|e| err(&e))?;
            check(lazy.points.get(at).map_err(|e| err(&e))?.id == at as u32)
        },
    )?;
    report.time(
        "par4",
        "parcode 0.6.1",
        "derive: open + root() + points.get(i) of Cloud (same file)",
        timing.0,
        timing.1,
    );
    Ok(())
}
