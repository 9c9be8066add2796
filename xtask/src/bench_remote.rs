//! `cargo xtask bench remote`: what reading over HTTP costs, from the test
//! nginx on 127.0.0.1 (`bash .ci/servers start`).
//!
//! - ARCX: `get` of one small file, `get` of one large file and `list` of
//!   the ARCX bench archive (packed by `arcx` 0.3.0, so both tools read
//!   it), `binfmt arcx` next to `arcx` 0.3.0, run by run; requests and
//!   response-body bytes counted by nginx's access log for both alike.
//! - KAST: `get` of one small array of a 64 MiB store: the share of the
//!   file's bytes moved.
//! - TARIDX: 1,000 random samples of a remote fold read by 8 threads
//!   through `binfmt::open_dataset`: requests per sample and samples per
//!   second, next to the same loop over the local fold.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use binfmt_kastore::{ItemType, Writer};
use binfmt_tests::interop::Servers;
use binfmt_tests::pseudo_random_bytes;

use crate::bench_arcx;
use crate::report::{Report, median};

/// Runs per operation and tool, alternating tools run by run.
const RUNS: usize = 11;

pub fn run(dir: &Path, arcx: &Path, report: &mut Report) -> Result<(), String> {
    let servers = binfmt_tests::interop::servers()
        .ok_or("the test servers are not running: run `bash .ci/servers start`")?;
    let binfmt = bench_arcx::release_binfmt()?;
    let site = servers.www.join("bench-remote");
    fs::create_dir_all(&site).map_err(|e| format!("{}: {e}", site.display()))?;
    arcx_operations(servers, &binfmt, arcx, dir, &site, report)?;
    kast_one_array(servers, &binfmt, &site, report)?;
    taridx_random_samples(servers, &binfmt, dir, &site, report)?;
    Ok(())
}

/// What one run cost, as nginx saw it.
#[derive(Debug, Clone, Copy)]
struct Cost {
    requests: u64,
    bytes: u64,
    time: Duration,
}

/// Runs `program args`, timing it, and counts the requests for `/site/name`
/// that nginx logged meanwhile (`seen` is how many it had logged before).
fn measured(
    servers: &Servers,
    name: &str,
    seen: &mut usize,
    program: &Path,
    args: &[&str],
) -> Result<Cost, String> {
    let started = Instant::now();
    let output = Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("{}: {e}", program.display()))?;
    let time = started.elapsed();
    if !output.status.success() {
        return Err(format!(
            "{} {}: {}",
            program.display(),
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let lines = servers.nginx_log(&format!("bench-remote/{name}"), *seen + 1);
    let new = lines.get(*seen..).unwrap_or_default();
    *seen = lines.len();
    let bytes = Servers::nginx_body_bytes(new);
    Ok(Cost {
        requests: new.len() as u64,
        bytes,
        time,
    })
}

/// The median time of some runs, and the cost of the last (every run of
/// one operation makes the same requests).
fn summary(costs: &[Cost]) -> (Cost, Duration) {
    let time = median(costs.iter().map(|cost| cost.time).collect());
    (
        costs.last().copied().unwrap_or(Cost {
            requests: 0,
            bytes: 0,
            time,
        }),
        time,
    )
}

fn show_cost(cost: Cost, time: Duration) -> String {
    format!(
        "{} req, {} B, {}",
        cost.requests,
        cost.bytes,
        crate::report::show(time)
    )
}

fn arcx_operations(
    servers: &Servers,
    binfmt: &Path,
    arcx: &Path,
    dir: &Path,
    site: &Path,
    report: &mut Report,
) -> Result<(), String> {
    let corpus = bench_arcx::corpus(&dir.join("arcx"))?;
    // One archive, arcx 0.3.0's own, served under two names so that the
    // access log tells the tools apart.
    let ours = site.join("corpus-binfmt.arcx");
    let theirs = site.join("corpus-arcx.arcx");
    if !theirs.exists() {
        eprintln!("packing the remote bench archive with arcx 0.3.0");
        let status = Command::new(arcx)
            .args(["pack".as_ref(), corpus.as_os_str(), theirs.as_os_str()])
            .stdout(Stdio::null())
            .status()
            .map_err(|e| format!("{}: {e}", arcx.display()))?;
        if !status.success() {
            return Err("arcx pack failed".into());
        }
        let _ = fs::remove_file(&ours);
    }
    if !ours.exists() {
        fs::hard_link(&theirs, &ours).map_err(|e| format!("{}: {e}", ours.display()))?;
    }
    let size = fs::metadata(&ours).map_err(|e| e.to_string())?.len();
    let url = |path: &Path| {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        format!("{}/bench-remote/{name}", servers.nginx)
    };
    let (our_url, their_url) = (url(&ours), url(&theirs));
    let out = dir.join("remote-got");
    let out = out.to_str().ok_or("non-UTF-8 bench directory")?;
    let mut seen_ours = servers
        .nginx_log("bench-remote/corpus-binfmt.arcx", 0)
        .len();
    let mut seen_theirs = servers.nginx_log("bench-remote/corpus-arcx.arcx", 0).len();

    let operations: [(&str, Vec<&str>, Vec<&str>); 3] = [
        (
            "get one small file",
            vec!["arcx", "get", &our_url, bench_arcx::SMALL, "-o", out],
            vec!["get", &their_url, bench_arcx::SMALL, "-o", out],
        ),
        (
            "get one large file (30 MB)",
            vec!["arcx", "get", &our_url, bench_arcx::LARGE, "-o", out],
            vec!["get", &their_url, bench_arcx::LARGE, "-o", out],
        ),
        (
            "list",
            vec!["arcx", "list", &our_url],
            vec!["list", &their_url],
        ),
    ];
    for (operation, our_args, their_args) in operations {
        let (mut our_costs, mut their_costs) = (Vec::new(), Vec::new());
        let mut theirs_failed = None;
        for _ in 0..RUNS {
            our_costs.push(measured(
                servers,
                "corpus-binfmt.arcx",
                &mut seen_ours,
                binfmt,
                &our_args,
            )?);
            if theirs_failed.is_none() {
                match measured(
                    servers,
                    "corpus-arcx.arcx",
                    &mut seen_theirs,
                    arcx,
                    &their_args,
                ) {
                    Ok(cost) => their_costs.push(cost),
                    Err(error) => theirs_failed = Some(error),
                }
            }
        }
        let operation = format!("HTTP {operation}, {:.0} MB archive", size as f64 / 1e6);
        let (ours, our_time) = summary(&our_costs);
        match theirs_failed {
            None => {
                let (theirs, their_time) = summary(&their_costs);
                report.figures(
                    "arcx",
                    "arcx 0.3.0",
                    operation,
                    show_cost(ours, our_time),
                    show_cost(theirs, their_time),
                    Some(their_time.as_secs_f64() / our_time.as_secs_f64().max(1e-9)),
                );
            }
            Some(error) => {
                eprintln!("arcx 0.3.0 {operation}: {error}");
                report.figures(
                    "arcx",
                    "arcx 0.3.0",
                    operation,
                    show_cost(ours, our_time),
                    "fails (local files only)".to_owned(),
                    None,
                );
            }
        }
    }
    Ok(())
}

fn kast_one_array(
    servers: &Servers,
    binfmt: &Path,
    site: &Path,
    report: &mut Report,
) -> Result<(), String> {
    let name = "store.kas";
    let path = site.join(name);
    if !path.exists() {
        let (left, right) = (
            pseudo_random_bytes(21, 32 << 20),
            pseudo_random_bytes(22, 32 << 20),
        );
        let small: Vec<u8> = (0..256i32).flat_map(i32::to_le_bytes).collect();
        let mut writer = Writer::new();
        for (key, item_type, data) in [
            ("edges/left", ItemType::Float64, &left[..]),
            ("edges/right", ItemType::Float64, &right[..]),
            ("nodes/flags", ItemType::Int32, &small[..]),
        ] {
            writer
                .insert_raw(key, item_type, data)
                .map_err(|e| e.to_string())?;
        }
        writer.write_file(&path).map_err(|e| e.to_string())?;
    }
    let size = fs::metadata(&path).map_err(|e| e.to_string())?.len();
    let url = format!("{}/bench-remote/{name}", servers.nginx);
    let mut seen = servers.nginx_log(&format!("bench-remote/{name}"), 0).len();
    let costs = (0..RUNS)
        .map(|_| {
            measured(
                servers,
                name,
                &mut seen,
                binfmt,
                &["get", &url, "nodes/flags"],
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    let (cost, time) = summary(&costs);
    report.figures(
        "kast",
        "whole file",
        format!(
            "HTTP get one 1 KiB array of a {:.0} MB store ({:.3}% of its bytes)",
            size as f64 / 1e6,
            100.0 * cost.bytes as f64 / size as f64
        ),
        show_cost(cost, time),
        format!("{size} B"),
        None,
    );
    Ok(())
}

/// Samples in the remote fold, and how many the benchmark reads.
const FOLD_SAMPLES: usize = 8_000;
const READS: usize = 1_000;
const READERS: usize = 8;

fn taridx_random_samples(
    servers: &Servers,
    binfmt: &Path,
    dir: &Path,
    site: &Path,
    report: &mut Report,
) -> Result<(), String> {
    let index = site.join("fold/train.taridx");
    if !index.exists() {
        let tree = dir.join("remote-samples");
        if !tree.exists() {
            binfmt_tests::write_tree(
                &tree,
                (0..FOLD_SAMPLES).flat_map(|i| {
                    let key = format!("s{i:06}");
                    [
                        (
                            format!("{key}.jpg"),
                            pseudo_random_bytes(i as u64, 8_000 + i % 16_000),
                        ),
                        (
                            format!("{key}.json"),
                            format!("{{\"i\": {i}}}").into_bytes(),
                        ),
                        (format!("{key}.cls"), (i % 10).to_string().into_bytes()),
                    ]
                }),
            );
        }
        let status = Command::new(binfmt)
            .args(["taridx".as_ref(), "pack".as_ref(), tree.as_os_str()])
            .args(["--max-samples", "1000", "-o"])
            .arg(&index)
            .stdout(Stdio::null())
            .status()
            .map_err(|e| e.to_string())?;
        if !status.success() {
            return Err("binfmt taridx pack failed".into());
        }
    }
    let fold_bytes: u64 = fs::read_dir(index.parent().ok_or("no fold directory")?)
        .map_err(|e| e.to_string())?
        .filter_map(|entry| entry.ok()?.metadata().ok())
        .map(|meta| meta.len())
        .sum();
    let url = format!("{}/bench-remote/fold/train.taridx", servers.nginx);

    // One member by name through the CLI: the index, then one range.
    let started = Instant::now();
    let output = Command::new(binfmt)
        .args(["get", "-v", &url, "s004321.json"])
        .output()
        .map_err(|e| e.to_string())?;
    let time = started.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let (requests, bytes) = stderr
        .trim()
        .strip_prefix("requests: ")
        .and_then(|rest| rest.split_once(", bytes: "))
        .and_then(|(requests, bytes)| {
            Some((requests.parse::<u64>().ok()?, bytes.parse::<u64>().ok()?))
        })
        .ok_or_else(|| format!("binfmt get -v {url}: {stderr}"))?;
    report.figures(
        "taridx",
        "whole fold",
        format!(
            "HTTP get one member of a {:.0} MB fold ({:.3}% of its bytes)",
            fold_bytes as f64 / 1e6,
            100.0 * bytes as f64 / fold_bytes as f64
        ),
        show_cost(
            Cost {
                requests,
                bytes,
                time,
            },
            time,
        ),
        format!("{fold_bytes} B"),
        None,
    );

    let picks = random_picks(READS, FOLD_SAMPLES);

    let (mut remote_rates, mut local_rates) = (Vec::new(), Vec::new());
    let mut per_sample = 0.0;
    let mut moved = 0;
    for _ in 0..3 {
        let tally = binfmt_remote::Tally::default();
        let options = binfmt::OpenOptions::default()
            .remote(binfmt_remote::RemoteOptions::default().with_tally(tally.clone()));
        let dataset = binfmt::open_dataset(&url, &options).map_err(|e| e.to_string())?;
        let opened = tally.stats();
        remote_rates.push(read_samples(&dataset, &picks)?);
        let spent = tally.stats();
        per_sample = (spent.requests - opened.requests) as f64 / READS as f64;
        moved = spent.bytes;

        let dataset =
            binfmt::open_dataset(&index, &Default::default()).map_err(|e| e.to_string())?;
        local_rates.push(read_samples(&dataset, &picks)?);
    }
    let rate = |mut rates: Vec<f64>| {
        rates.sort_by(f64::total_cmp);
        rates.get(rates.len() / 2).copied().unwrap_or_default()
    };
    let (remote, local) = (rate(remote_rates), rate(local_rates));
    report.figures(
        "taridx",
        "same loop, local fold",
        format!(
            "HTTP {READS} random samples of {FOLD_SAMPLES}, {READERS} readers: {per_sample:.2} requests/sample, {:.1}% of the fold's {:.0} MB moved",
            100.0 * moved as f64 / fold_bytes as f64,
            fold_bytes as f64 / 1e6
        ),
        format!("{remote:.0} samples/s"),
        format!("{local:.0} samples/s"),
        Some(local / remote.max(1e-9)),
    );
    Ok(())
}

/// `count` sample numbers below `limit`, the same on every run.
fn random_picks(count: usize, limit: usize) -> Vec<usize> {
    pseudo_random_bytes(5, count * 4)
        .chunks_exact(4)
        .map(|word| {
            word.iter()
                .fold(0usize, |value, &byte| value << 8 | usize::from(byte))
                % limit
        })
        .collect()
}

/// Reads the samples `picks` with [`READERS`] threads, each sample's
/// members after one prefetch; returns samples per second.
fn read_samples(
    dataset: &binfmt_taridx::Dataset<Box<dyn binfmt_core::Source>>,
    picks: &[usize],
) -> Result<f64, String> {
    let started = Instant::now();
    std::thread::scope(|scope| {
        let workers: Vec<_> = picks
            .chunks(picks.len().div_ceil(READERS))
            .map(|chunk| {
                scope.spawn(move || -> Result<(), String> {
                    for &pick in chunk {
                        let rows = dataset
                            .sample(pick)
                            .map_err(|e| e.to_string())?
                            .ok_or_else(|| format!("no sample {pick}"))?;
                        dataset.prefetch(rows);
                        for row in rows {
                            let mut member = dataset.member(row).map_err(|e| e.to_string())?;
                            std::io::copy(&mut member, &mut std::io::sink())
                                .map_err(|e| e.to_string())?;
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        workers
            .into_iter()
            .try_for_each(|worker| worker.join().map_err(|_| "a reader panicked".to_owned())?)
    })?;
    Ok(picks.len() as f64 / started.elapsed().as_secs_f64().max(1e-9))
}
