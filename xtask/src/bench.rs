//! `cargo xtask bench <format>`: this project's code next to the reference
//! implementation, on the same files, in the same run.
//!
//! - `kast`: the kastore reader against the Python `kastore` package;
//! - `taridx`: the shard indexer against the iTar indexer (dsb-ifi/glzn).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use binfmt_kastore::{ItemType, Store, Writer};
use binfmt_tests::pseudo_random_bytes;

use crate::limits;
use crate::measure::{Side, Stats, interleave, q, side};
use crate::report::{Report, Scaling};

/// Samples of the taridx benchmark: three members each, 300,000 in all.
const TARIDX_SAMPLES: usize = 100_000;
const TARIDX_SHARDS: usize = 8;
/// Interleaved rounds of each timing.
const ROUNDS: usize = 5;

/// What the benchmarks share: where they write, the Python with the
/// references, and whether to run the scaling sizes.
#[derive(Debug, Clone)]
pub struct Settings {
    pub dir: PathBuf,
    pub python: PathBuf,
    pub scale: bool,
    /// MB of each text corpus of the arcx benchmark.
    pub text_mb: u64,
    /// The thread count of the many-thread runs next to the one-thread
    /// ones (`--threads`; all cores by default).
    pub threads: usize,
}

/// The number of cores (two when it cannot be told).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// The iTar indexer and binfmt on the same fold, interleaved, next to the
/// machine's floor (every header read in 1 MiB chunks and checksummed).
pub fn taridx(settings: &Settings, glzn: &Path, report: &mut Report) -> Result<(), String> {
    let python = &settings.python;
    let root = settings.dir.join("taridx");
    let first_shard = root.join("bench_0000.tar");
    if !first_shard.exists() {
        eprintln!(
            "writing {TARIDX_SHARDS} shards of {TARIDX_SAMPLES} samples to {} (Python tarfile)",
            root.display()
        );
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/python/make_shards.py");
        run_python(
            python,
            &[
                script.as_os_str(),
                "bench".as_ref(),
                root.as_os_str(),
                TARIDX_SAMPLES.to_string().as_ref(),
                TARIDX_SHARDS.to_string().as_ref(),
            ],
        )?;
    }
    let shards = binfmt_taridx::fold_shards(&root, "bench").map_err(|e| e.to_string())?;
    let reference_out = settings.dir.join("taridx-reference.taridx");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/taridx_bench.py");
    let rows = std::cell::Cell::new(0);
    let threads = settings.threads;
    // Each run's serial tail: from the last shard scanned to the index
    // renamed into place and its shards recorded.
    let (serial_one, serial_many) = (
        std::cell::RefCell::new(Vec::new()),
        std::cell::RefCell::new(Vec::new()),
    );
    let reference: Side<'_> = Box::new(|| {
        let value = run_python(
            python,
            &[
                script.as_os_str(),
                root.as_os_str(),
                "bench".as_ref(),
                glzn.as_os_str(),
                reference_out.as_os_str(),
            ],
        )?;
        rows.set(
            value
                .get("rows")
                .and_then(serde_json::Value::as_u64)
                .ok_or("no rows")?,
        );
        Ok(Duration::from_secs_f64(
            value
                .get("seconds")
                .and_then(serde_json::Value::as_f64)
                .ok_or("no seconds")?,
        ))
    });
    let shards_ref = &shards;
    let floor_out = &root.join("floor.taridx");
    let mut sides = vec![
        reference,
        index_side(&root, 1, &serial_one),
        index_side(&root, threads, &serial_many),
        side(move || limits::tar_headers(shards_ref, 1, floor_out)),
        side(move || limits::tar_headers(shards_ref, threads, floor_out)),
    ];
    let stats = interleave(ROUNDS, &[&root], &mut sides)?;
    drop(sides);
    let [theirs, one, all, limit_one, limit_all] =
        <[Stats; 5]>::try_from(stats).map_err(|_| "five sides".to_owned())?;
    let rows = rows.get();
    let operation =
        |threads: &str| format!("index {rows} members in {TARIDX_SHARDS} shards, {threads}");
    report
        .compare(
            "taridx",
            "iTar indexer (Python)",
            operation("1 thread"),
            &one,
            &theirs,
        )
        .limit(&one, &limit_one);
    report
        .compare(
            "taridx",
            "iTar indexer (Python)",
            operation(&format!("{threads} threads")),
            &all,
            &theirs,
        )
        .limit(&all, &limit_all);
    let ours = std::fs::read(root.join("bench.taridx")).map_err(|e| e.to_string())?;
    let reference_index = std::fs::read(&reference_out).map_err(|e| e.to_string())?;
    if ours != reference_index {
        return Err("the two indexes differ".to_owned());
    }
    let timings = Indexing {
        one: &one,
        many: &all,
        limit_one: &limit_one,
        limit_many: &limit_all,
    };
    report_indexing(
        report,
        &timings,
        threads,
        (serial_one, serial_many),
        &root,
        &shards,
    )?;
    report.note(format!(
        "taridx: both indexers wrote the same {} bytes. Limit: every header read with read() in 1 MiB \
         chunks and its checksum checked, then 32 bytes a member written to a temporary file renamed \
         over the last one.",
        ours.len(),
    ));
    let binfmt = crate::measure::binfmt_binary()?;
    let rss = |command: String| crate::measure::peak_rss(&command);
    let ours_rss = rss(format!(
        "{} taridx index {} --fold bench",
        q(&binfmt),
        q(&root)
    ))?;
    let theirs_rss = rss(format!(
        "{} {} {} bench {} {}",
        q(python),
        q(&script),
        q(&root),
        q(glzn),
        q(&reference_out)
    ))?;
    report.megabytes(
        "taridx",
        "iTar indexer (Python)",
        format!("peak RSS indexing {rows} members"),
        ours_rss,
        theirs_rss,
    );
    if settings.scale {
        taridx_scaling(settings, &binfmt, report)?;
    }
    Ok(())
}

/// An indexing run's medians: binfmt and the limit, on one thread and many.
pub(crate) struct Indexing<'a> {
    pub one: &'a Stats,
    pub many: &'a Stats,
    pub limit_one: &'a Stats,
    pub limit_many: &'a Stats,
}

/// The 1→`threads` speed-up line of TARIDX indexing, with the serial
/// tails the runs recorded (one thread, many) and the tail's parts, timed
/// apart on the fold `bench` of `root` ([`taridx_phases`]).
pub(crate) fn report_indexing(
    report: &mut Report,
    timings: &Indexing<'_>,
    threads: usize,
    serial: (
        std::cell::RefCell<Vec<Duration>>,
        std::cell::RefCell<Vec<Duration>>,
    ),
    root: &Path,
    shards: &[PathBuf],
) -> Result<(), String> {
    let (serial_one, serial_many) = (
        Stats::new(serial.0.into_inner()),
        Stats::new(serial.1.into_inner()),
    );
    let phases = taridx_phases(root, shards, threads)?;
    let one = timings.one.median().as_secs_f64();
    let share = |serial: &Stats| 100.0 * serial.median().as_secs_f64() / one;
    report.speedup(
        "taridx index",
        threads,
        (timings.one, timings.many),
        (timings.limit_one, timings.limit_many),
        &format!(
            "; serial tail (last shard scanned to index renamed, shards recorded) at {threads} threads \
             {serial_many} = {:.1}% of one-thread time (at 1 thread {serial_one} = {:.1}%); \
             its parts at {threads} threads: {phases}",
            share(&serial_many),
            share(&serial_one),
        ),
    );
    Ok(())
}

/// A side indexing the fold `bench` of `root` on `jobs` threads, each
/// run's serial tail ([`index_timed`]) pushed onto `serial`.
pub(crate) fn index_side<'a>(
    root: &'a Path,
    jobs: usize,
    serial: &'a std::cell::RefCell<Vec<Duration>>,
) -> Side<'a> {
    side(move || {
        let tail = index_timed(root, jobs)?;
        serial.borrow_mut().push(tail);
        Ok(())
    })
}

/// Indexes the fold `bench` of `root` on `jobs` threads, as `binfmt taridx
/// index` does; returns its serial tail: the time from the last shard
/// scanned (the last call of `index_fold`'s per-shard hook) to its return
/// (the index renamed into place, the shards recorded beside it), the
/// work no thread count divides.
fn index_timed(root: &Path, jobs: usize) -> Result<Duration, String> {
    let last = LastScan::default();
    let options = binfmt_taridx::IndexOptions::new().jobs(Some(jobs));
    binfmt_taridx::index_fold(root, "bench", options, || last.now()).map_err(|e| e.to_string())?;
    let end = Instant::now();
    Ok(end.duration_since(last.take()?))
}

/// When the indexer's per-shard hook was last called: the last shard
/// scanned.
#[derive(Default)]
struct LastScan(Mutex<Option<Instant>>);

impl LastScan {
    /// The hook: notes the time.
    fn now(&self) {
        if let Ok(mut last) = self.0.lock() {
            *last = (*last).max(Some(Instant::now()));
        }
    }

    /// The last time noted.
    fn take(self) -> Result<Instant, String> {
        self.0
            .into_inner()
            .ok()
            .flatten()
            .ok_or_else(|| "no shard was scanned".to_owned())
    }
}

/// Where the serial tail of indexing on `threads` threads goes, from the
/// steps `index_fold` takes (each public), timed separately over three
/// runs (not interleaved; medians): merging what was still waiting when
/// the last shard was scanned and writing its rows, then finishing the
/// file (crash ids over every stem, the header and blocks, the rows not
/// yet written, the rename), then recording the shards.
pub(crate) fn taridx_phases(
    root: &Path,
    shards: &[PathBuf],
    threads: usize,
) -> Result<String, String> {
    let path = binfmt_taridx::fold_index_path(root, "bench");
    let mut parts = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
    for _ in 0..3 {
        let last = LastScan::default();
        let options = binfmt_taridx::IndexOptions::new().jobs(Some(threads));
        let mut file = binfmt_taridx::IndexFile::create(&path).map_err(|e| e.to_string())?;
        let mut builder =
            binfmt_taridx::index_shards_into(shards, options, || last.now(), &mut file)
                .map_err(|e| e.to_string())?;
        let merged = Instant::now();
        file.finish(&mut builder).map_err(|e| e.to_string())?;
        let renamed = Instant::now();
        binfmt_taridx::record_shards(&path, shards).map_err(|e| e.to_string())?;
        let recorded = Instant::now();
        drop(builder);
        let dropped = Instant::now();
        let last = last.take()?;
        for (part, time) in parts.iter_mut().zip([
            merged.duration_since(last),
            renamed.duration_since(merged),
            recorded.duration_since(renamed),
            dropped.duration_since(recorded),
        ]) {
            part.push(time);
        }
    }
    let [merge, finish, record, free] = parts.map(crate::report::median);
    Ok(format!(
        "merging the last shards and writing their rows {}, crash ids, header and rename {}, \
         recording the shards {}, freeing the rows {}",
        crate::report::show(merge),
        crate::report::show(finish),
        crate::report::show(record),
        crate::report::show(free),
    ))
}

/// Indexing at 1x, 10x and 100x the members (shards written by binfmt's
/// sample writer, on tmpfs when there is one), with peak memory.
fn taridx_scaling(settings: &Settings, binfmt: &Path, report: &mut Report) -> Result<(), String> {
    let base = crate::measure::tmpfs().unwrap_or_else(|| settings.dir.join("taridx-scale"));
    let mut points = Vec::new();
    let mut skipped = None;
    for factor in [1u32, 10, 100] {
        let samples = TARIDX_SAMPLES * factor as usize;
        // Each sample is about 3.5 KiB of tar.
        let needed = samples as u64 * 3584 * 12 / 10;
        if crate::measure::free_bytes(&base) < needed {
            skipped = Some(format!(
                "{factor}x needs {:.1} GB free at {}",
                needed as f64 / 1e9,
                base.display()
            ));
            break;
        }
        let dir = base.join(format!("x{factor}"));
        write_bench_fold(&dir, samples)?;
        let stats = interleave(
            3,
            &[&dir],
            &mut [side(|| {
                let options = binfmt_taridx::IndexOptions::new().jobs(Some(settings.threads));
                binfmt_taridx::index_fold(&dir, "bench", options, || {}).map_err(|e| e.to_string())
            })],
        )?;
        points.push((
            factor,
            stats.first().map(Stats::median).unwrap_or_default(),
            None,
        ));
        let rss = crate::measure::peak_rss(&format!(
            "{} taridx index {} --fold bench",
            q(binfmt),
            q(&dir)
        ))?;
        report.note(format!(
            "taridx scaling: {} members, peak RSS {:.0} MB.",
            samples * 3,
            rss as f64 / 1e6
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }
    let _ = std::fs::remove_dir_all(&base);
    report.scaling(Scaling {
        format: "taridx",
        operation: format!(
            "index {} members x size, {} threads",
            TARIDX_SAMPLES * 3,
            settings.threads
        ),
        points,
        skipped,
    });
    Ok(())
}

/// A fold `bench` of `samples` samples (jpg of 1000 bytes, json, cls) in
/// [`TARIDX_SHARDS`] shards, as the Python writer makes them.
fn write_bench_fold(dir: &Path, samples: usize) -> Result<(), String> {
    write_bench_fold_of(dir, samples, TARIDX_SHARDS)
}

/// Writes fold `bench` of `samples` samples (a 1000-byte jpg, a json and a
/// cls each) in `shards` shards under `dir`, with binfmt's sample writer.
pub(crate) fn write_bench_fold_of(dir: &Path, samples: usize, shards: usize) -> Result<(), String> {
    let _ = std::fs::remove_dir_all(dir);
    let per_shard = samples.div_ceil(shards.max(1)) as u64;
    let options = binfmt_taridx::SampleWriterOptions::new().max_samples(per_shard);
    let mut writer =
        binfmt_taridx::SampleWriter::create(dir, "bench", options).map_err(|e| e.to_string())?;
    let jpg = pseudo_random_bytes(1, 1000);
    for i in 0..samples {
        let json = format!("{{\"i\": {i}}}");
        writer
            .write(
                &format!("{i:09}"),
                &[("jpg", &jpg), ("json", json.as_bytes()), ("cls", b"7")],
            )
            .map_err(|e| e.to_string())?;
    }
    writer.finish().map_err(|e| e.to_string())?;
    Ok(())
}

fn run_python(python: &Path, args: &[&std::ffi::OsStr]) -> Result<serde_json::Value, String> {
    let output = Command::new(python)
        .args(args)
        .output()
        .map_err(|e| format!("{}: {e}", python.display()))?;
    if !output.status.success() {
        return Err(format!(
            "python: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    if output.stdout.is_empty() {
        return Ok(serde_json::Value::Null);
    }
    serde_json::from_slice(&output.stdout).map_err(|e| e.to_string())
}

/// One file of the benchmark.
struct Case {
    name: &'static str,
    path: PathBuf,
}

/// binfmt's store reader (mapped, and reading the whole file) against
/// Python kastore's C and Python engines (`load(read_all=True)`), next to
/// `read()` of the file into fresh memory.
pub fn kast(settings: &Settings, report: &mut Report) -> Result<(), String> {
    let dir = settings.dir.join("kast");
    let python = &settings.python;
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let cases = [
        Case {
            name: "1 GiB, 16 arrays",
            path: dir.join("large.kas"),
        },
        Case {
            name: "100,000 small keys",
            path: dir.join("many_keys.kas"),
        },
        Case {
            name: "1 MiB, 16 arrays",
            path: dir.join("small.kas"),
        },
    ];
    eprintln!("writing benchmark files to {}", dir.display());
    write_arrays(&cases[0].path, 16, 64 << 20)?;
    write_many_keys(&cases[1].path, 100_000)?;
    write_arrays(&cases[2].path, 16, 64 << 10)?;

    for case in &cases {
        let path = case.path.as_path();
        let checksums = std::cell::RefCell::new(Vec::new());
        let record = |sum: u64| checksums.borrow_mut().push(sum);
        let mut sides: Vec<Side<'_>> = vec![
            side(|| open_and_touch(path, false).map(record)),
            side(|| open_and_touch(path, true).map(record)),
            Box::new(|| {
                time_python(python, path, "c").map(|(time, sum)| {
                    record(sum);
                    time
                })
            }),
            Box::new(|| {
                time_python(python, path, "python").map(|(time, sum)| {
                    record(sum);
                    time
                })
            }),
            side(|| limits::read_all(path)),
        ];
        let stats = interleave(ROUNDS, &[path], &mut sides)?;
        drop(sides);
        let mut sums = checksums.into_inner();
        sums.dedup();
        if sums.len() != 1 {
            return Err(format!("{}: checksums differ: {sums:?}", case.name));
        }
        let [mapped, read_all, c, py, limit] =
            <[Stats; 5]>::try_from(stats).map_err(|_| "five sides".to_owned())?;
        let name = case.name;
        let what = format!("{name}: open + touch every byte, both reading the whole file");
        report
            .compare("kast", "kastore C engine", &what, &read_all, &c)
            .limit(&read_all, &limit);
        report
            .compare("kast", "kastore Python engine", &what, &read_all, &py)
            .limit(&read_all, &limit);
        report.compare(
            "kast",
            "kastore C engine",
            format!("{name}: open + touch every byte, binfmt mapping the file"),
            &mapped,
            &c,
        );
    }
    report.note(
        "kast: kastore is Python kastore's load(read_all=True) with engine=\"c\" or \"python\", \
         timed inside Python (no interpreter start); limit: read() of the file into fresh memory, then the same byte sum.",
    );
    Ok(())
}

/// Opens a store (mapped, or read whole) and sums every array's bytes.
fn open_and_touch(path: &Path, read_all: bool) -> Result<u64, String> {
    let store = if read_all {
        let source = binfmt_core::ByteSource::read(path).map_err(|e| e.to_string())?;
        Store::new(source)
    } else {
        Store::open(path)
    }
    .map_err(|e| e.to_string())?;
    Ok(store
        .items()
        .map(|item| {
            item.le_bytes()
                .map(|bytes| bytes.iter().map(|&b| u64::from(b)).sum::<u64>())
                .unwrap_or(0)
        })
        .sum())
}

/// One load + touch by Python kastore's `engine`: its time and checksum.
fn time_python(python: &Path, path: &Path, engine: &str) -> Result<(Duration, u64), String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/kastore_bench.py");
    let value = run_python(
        python,
        &[
            script.as_os_str(),
            path.as_os_str(),
            "1".as_ref(),
            engine.as_ref(),
        ],
    )?;
    let seconds = |field: &str| {
        value
            .get(field)
            .and_then(serde_json::Value::as_f64)
            .ok_or(format!("python output lacks {field}"))
    };
    Ok((
        Duration::from_secs_f64(seconds("open")? + seconds("touch")?),
        value
            .get("checksum")
            .and_then(serde_json::Value::as_u64)
            .ok_or("python output lacks checksum")?,
    ))
}

/// `count` arrays of `bytes` bytes each, cycling through the ten types.
fn write_arrays(path: &Path, count: usize, bytes: usize) -> Result<(), String> {
    let arrays: Vec<Vec<u8>> = (0..count)
        .map(|i| pseudo_random_bytes(i as u64, bytes))
        .collect();
    let mut writer = Writer::new();
    for (i, data) in arrays.iter().enumerate() {
        let item_type = ItemType::ALL
            .get(i % 10)
            .copied()
            .unwrap_or(ItemType::Uint8);
        writer
            .insert_raw(format!("array_{i:02}"), item_type, data.as_slice())
            .map_err(|e| e.to_string())?;
    }
    writer
        .write_file(path)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// `count` keys holding 1 to 16 elements each.
fn write_many_keys(path: &Path, count: usize) -> Result<(), String> {
    let mut writer = Writer::new();
    for i in 0..count {
        let data = pseudo_random_bytes(i as u64, 8 * (1 + i % 16));
        writer
            .insert_raw(
                format!("table_{:03}/column_{i:06}", i % 100),
                ItemType::Int64,
                data,
            )
            .map_err(|e| e.to_string())?;
    }
    writer
        .write_file(path)
        .map(|_| ())
        .map_err(|e| e.to_string())
}
