//! `cargo xtask bench <format>`: this project's code next to the reference
//! implementation, on the same files, in the same run.
//!
//! - `kast`: the kastore reader against the Python `kastore` package;
//! - `taridx`: the shard indexer against the iTar indexer (dsb-ifi/glzn).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use binfmt_kastore::{ItemType, Store, Writer};
use binfmt_tests::pseudo_random_bytes;

use crate::report::{Report, median};

/// Samples of the taridx benchmark: three members each, 300,000 in all.
const TARIDX_SAMPLES: usize = 100_000;
const TARIDX_SHARDS: usize = 8;

pub fn taridx(python: &Path, glzn: &Path, dir: &Path, report: &mut Report) -> Result<(), String> {
    let root = dir.join("taridx");
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
    let reference_out = dir.join("taridx-reference.taridx");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/taridx_bench.py");
    let mut reference_runs = Vec::new();
    let mut rows = 0;
    for _ in 0..3 {
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
        reference_runs.push(Duration::from_secs_f64(
            value
                .get("seconds")
                .and_then(serde_json::Value::as_f64)
                .ok_or("no seconds")?,
        ));
        rows = value
            .get("rows")
            .and_then(serde_json::Value::as_u64)
            .ok_or("no rows")?;
    }
    let reference = median(reference_runs);
    let operation =
        |threads: &str| format!("index {rows} members in {TARIDX_SHARDS} shards, {threads}");
    for jobs in [Some(1), None] {
        let mut runs = Vec::new();
        for _ in 0..5 {
            let start = Instant::now();
            binfmt_taridx::index_fold(
                &root,
                "bench",
                binfmt_taridx::IndexOptions::new().jobs(jobs),
                || {},
            )
            .map_err(|e| e.to_string())?;
            runs.push(start.elapsed());
        }
        let threads = if jobs.is_some() {
            "1 thread"
        } else {
            "one thread per core"
        };
        report.time(
            "taridx",
            "iTar indexer (Python)",
            operation(threads),
            median(runs),
            reference,
        );
    }
    let ours = std::fs::read(root.join("bench.taridx")).map_err(|e| e.to_string())?;
    let theirs = std::fs::read(&reference_out).map_err(|e| e.to_string())?;
    if ours != theirs {
        return Err("the two indexes differ".to_owned());
    }
    report.note(format!(
        "taridx: both indexers wrote the same {} bytes.",
        ours.len()
    ));
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
    repeats: usize,
}

pub fn kast(python: &Path, dir: &Path, report: &mut Report) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let cases = [
        Case {
            name: "1 GiB, 16 arrays",
            path: dir.join("large.kas"),
            repeats: 5,
        },
        Case {
            name: "100,000 small keys",
            path: dir.join("many_keys.kas"),
            repeats: 5,
        },
        Case {
            name: "1 MiB, 16 arrays",
            path: dir.join("small.kas"),
            repeats: 20,
        },
    ];
    eprintln!("writing benchmark files to {}", dir.display());
    write_arrays(&cases[0].path, 16, 64 << 20)?;
    write_many_keys(&cases[1].path, 100_000)?;
    write_arrays(&cases[2].path, 16, 64 << 10)?;

    let reference = "Python kastore";
    for case in &cases {
        let ours = time_ours(&case.path, case.repeats, false)?;
        let read_all = time_ours(&case.path, case.repeats, true)?;
        let theirs = time_python(python, &case.path, case.repeats)?;
        if ours.checksum != theirs.checksum || read_all.checksum != theirs.checksum {
            return Err(format!(
                "{}: checksums differ: {} / {} / {}",
                case.name, ours.checksum, read_all.checksum, theirs.checksum
            ));
        }
        let name = case.name;
        report.time(
            "kast",
            reference,
            format!("{name}: open (binfmt maps; kastore load read_all=True)"),
            ours.open,
            theirs.open,
        );
        report.time(
            "kast",
            reference,
            format!("{name}: touch every byte after opening"),
            ours.touch,
            theirs.touch,
        );
        report.time(
            "kast",
            reference,
            format!("{name}: open + touch, both reading the whole file"),
            read_all.open + read_all.touch,
            theirs.open + theirs.touch,
        );
    }
    Ok(())
}

/// Median timings of opening a file and summing every array's bytes.
struct Timing {
    open: Duration,
    touch: Duration,
    checksum: u64,
}

/// Opening through a map costs microseconds, so it is timed over many
/// more runs than touching the data.
const MAPPED_OPENS: usize = 200;

fn time_ours(path: &Path, repeats: usize, read_all: bool) -> Result<Timing, String> {
    let open = || {
        if read_all {
            let source = binfmt_core::ByteSource::read(path).map_err(|e| e.to_string())?;
            Store::new(source)
        } else {
            Store::open(path)
        }
        .map_err(|e| e.to_string())
    };
    let open_runs = if read_all { repeats } else { MAPPED_OPENS };
    let mut opens = Vec::with_capacity(open_runs);
    for _ in 0..open_runs {
        let start = Instant::now();
        let store = open()?;
        opens.push(start.elapsed());
        drop(store);
    }
    let mut touches = Vec::with_capacity(repeats);
    let mut checksum = 0;
    for _ in 0..repeats {
        let store = open()?;
        let start = Instant::now();
        checksum = store
            .items()
            .map(|item| {
                item.le_bytes()
                    .map(|bytes| bytes.iter().map(|&b| u64::from(b)).sum::<u64>())
                    .unwrap_or(0)
            })
            .sum();
        touches.push(start.elapsed());
    }
    Ok(Timing {
        open: median(opens),
        touch: median(touches),
        checksum,
    })
}

fn time_python(python: &Path, path: &Path, repeats: usize) -> Result<Timing, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/kastore_bench.py");
    let value = run_python(
        python,
        &[
            script.as_os_str(),
            path.as_os_str(),
            repeats.to_string().as_ref(),
        ],
    )?;
    let seconds = |field: &str| {
        value
            .get(field)
            .and_then(serde_json::Value::as_f64)
            .map(Duration::from_secs_f64)
            .ok_or(format!("python output lacks {field}"))
    };
    Ok(Timing {
        open: seconds("open")?,
        touch: seconds("touch")?,
        checksum: value
            .get("checksum")
            .and_then(serde_json::Value::as_u64)
            .ok_or("python output lacks checksum")?,
    })
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
