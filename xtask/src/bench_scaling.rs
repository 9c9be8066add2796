//! `cargo xtask bench scaling`: the many-core rows, with no reference tool
//! needed (no iTar indexer, no `arcx` 0.3.0, no Python), so that a borrowed
//! machine with only the prebuilt binaries can run them ([`crate::measure::
//! release_binary`] takes them from `XTASK_PREBUILT`).
//!
//! - TARIDX: `max(8, 3 × threads)` shards of 12,500 samples (three members
//!   each) written by binfmt's sample writer, indexed in this process on 1
//!   and N threads, with the serial tail of each run, next to the limit
//!   program on 1 and N threads;
//! - ARCX: the `mixed` text corpus (`--text-mb` MB) packed by `binfmt arcx
//!   pack --jobs 1|N`, by `tar | zstd -3 -T1|-TN` and by the limit program
//!   on 1 and N threads; the archive extracted (every core) next to
//!   `zstd -dc | tar -x` and the extract limit.

use std::cell::RefCell;
use std::fs;
use std::path::Path;
use std::time::Instant;

use crate::bench::{Indexing, Settings, index_side, report_indexing, write_bench_fold_of};
use crate::limits;
use crate::measure::{FreshDirs, Side, Stats, interleave, q, quote, sh, shell, side};
use crate::report::Report;
use crate::text_corpus;

/// Interleaved rounds of each timing.
const ROUNDS: usize = 3;
/// Samples in each TARIDX shard (three members each).
const SAMPLES_PER_SHARD: usize = 12_500;

/// Runs the scaling rows into `report`.
pub fn run(settings: &Settings, report: &mut Report) -> Result<(), String> {
    let dir = settings.dir.join("scaling");
    taridx(settings, &dir.join("taridx"), report)?;
    arcx(settings, &dir.join("arcx"), report)
}

/// Indexing on 1 and N threads, with the serial tail and the limit.
fn taridx(settings: &Settings, dir: &Path, report: &mut Report) -> Result<(), String> {
    let threads = settings.threads;
    let shards = 8.max(3 * threads);
    let samples = shards * SAMPLES_PER_SHARD;
    let marker = dir.join(format!("written-{shards}"));
    if !marker.exists() {
        eprintln!(
            "writing {shards} shards of {SAMPLES_PER_SHARD} samples to {}",
            dir.display()
        );
        write_bench_fold_of(dir, samples, shards)?;
        fs::write(&marker, b"").map_err(|e| e.to_string())?;
    }
    let paths = binfmt_taridx::fold_shards(dir, "bench").map_err(|e| e.to_string())?;
    let (serial_one, serial_many) = (RefCell::new(Vec::new()), RefCell::new(Vec::new()));
    let floor_out = dir.join("floor.taridx");
    let (paths_ref, floor_ref) = (&paths, &floor_out);
    let mut sides = vec![
        index_side(dir, 1, &serial_one),
        index_side(dir, threads, &serial_many),
        side(move || limits::tar_headers(paths_ref, 1, floor_ref)),
        side(move || limits::tar_headers(paths_ref, threads, floor_ref)),
    ];
    let stats = interleave(ROUNDS, &[dir], &mut sides)?;
    drop(sides);
    let [one, many, limit_one, limit_many] =
        <[Stats; 4]>::try_from(stats).map_err(|_| "four sides".to_owned())?;
    let members = samples * 3;
    let operation = |n: usize| format!("index {members} members in {shards} shards, {n} thread(s)");
    for (n, ours, limit) in [(1, &one, &limit_one), (threads, &many, &limit_many)] {
        report
            .only_ours_stats("taridx", "-", operation(n), ours, "-")
            .limit(ours, limit);
    }
    let timings = Indexing {
        one: &one,
        many: &many,
        limit_one: &limit_one,
        limit_many: &limit_many,
    };
    report_indexing(
        report,
        &timings,
        threads,
        (serial_one, serial_many),
        dir,
        &paths,
    )?;
    Ok(())
}

/// Packing on 1 and N threads and extracting, next to `tar | zstd` and the
/// limits.
fn arcx(settings: &Settings, dir: &Path, report: &mut Report) -> Result<(), String> {
    let threads = settings.threads;
    let corpus = text_corpus::CORPORA
        .iter()
        .find(|corpus| corpus.name == "mixed")
        .ok_or("no mixed text corpus")?;
    let tree = dir.join(format!("mixed-{}mb", settings.text_mb));
    if !tree.exists() {
        eprintln!("writing the mixed text corpus to {}", tree.display());
        let partial = dir.join("corpus.partial");
        let _ = fs::remove_dir_all(&partial);
        text_corpus::write(&partial, corpus, settings.text_mb * 1_000_000)?;
        fs::rename(&partial, &tree).map_err(|e| e.to_string())?;
    }
    let files = limits::files_under(&tree)?;
    let input: u64 = files
        .iter()
        .filter_map(|(p, _)| fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    let what = format!(
        "{} files, {:.0} MB of text",
        files.len(),
        input as f64 / 1e6
    );
    let binfmt = crate::measure::binfmt_binary()?;
    let (ours, tarzst, floor) = (
        dir.join("ours.arcx"),
        dir.join("tree.tar.zst"),
        dir.join("floor.zst"),
    );
    let pack = |jobs: usize| shell(pack_command(&binfmt, &tree, &ours, jobs));
    let tar = |jobs: usize| shell(tar_command(&tree, &tarzst, jobs));
    // "One thread" of either tool still runs more than one: binfmt's
    // reading and writing threads beside its one compressing thread, tar
    // beside zstd. Pinned to one core (`taskset -c 0`), where there is
    // taskset, each also runs on one core.
    let pinned = |command: String| shell(format!("taskset -c 0 sh -c {}", quote(&command)));
    let pin = sh("taskset -c 0 true").is_ok();
    let (files_ref, floor_ref) = (&files, &floor);
    let mut sides = vec![
        pack(1),
        pack(threads),
        tar(1),
        tar(threads),
        side(move || limits::pack(files_ref, floor_ref, 1)),
        side(move || limits::pack(files_ref, floor_ref, threads)),
    ];
    if pin {
        sides.push(pinned(pack_command(&binfmt, &tree, &ours, 1)));
        sides.push(pinned(tar_command(&tree, &tarzst, 1)));
    }
    let stats = interleave(ROUNDS, &[&tree], &mut sides)?;
    drop(sides);
    let _ = fs::remove_file(&floor);
    let mut stats = stats.into_iter();
    let [one, many, tar_one, tar_many, limit_one, limit_many] =
        <[Stats; 6]>::try_from(stats.by_ref().take(6).collect::<Vec<_>>())
            .map_err(|_| "six sides".to_owned())?;
    let pinned_one = stats.next().zip(stats.next());
    report
        .compare(
            "arcx",
            "tar + zstd -3 -T1",
            format!("pack {what}, 1 thread"),
            &one,
            &tar_one,
        )
        .limit(&one, &limit_one);
    report
        .compare(
            "arcx",
            "tar + zstd -3, same threads",
            format!("pack {what}, {threads} threads"),
            &many,
            &tar_many,
        )
        .limit(&many, &limit_many);
    if let Some((ours_pinned, tar_pinned)) = &pinned_one {
        report
            .compare(
                "arcx",
                "tar + zstd -3 -T1, one core",
                format!("pack {what}, 1 thread, one core (taskset -c 0)"),
                ours_pinned,
                tar_pinned,
            )
            .limit(ours_pinned, &limit_one);
    }
    let size = |path: &Path| fs::metadata(path).map_or(0, |m| m.len());
    report.megabytes(
        "arcx",
        "tar + zstd -3",
        format!("archive size, {what}"),
        size(&ours),
        size(&tarzst),
    );
    report.speedup(
        "arcx pack",
        threads,
        (&one, &many),
        (&limit_one, &limit_many),
        &format!(
            "; tar | zstd -3: {:.2}x (-T1 {} → -T{threads} {}){}",
            crate::report::speedup(&tar_one, &tar_many),
            tar_one,
            tar_many,
            pinned_one.as_ref().map_or_else(String::new, |(ours, tar)| format!(
                "; from one thread on one core (taskset -c 0): binfmt {:.2}x, tar | zstd -3 {:.2}x",
                crate::report::speedup(ours, &many),
                crate::report::speedup(tar, &tar_many),
            )),
        ),
    );

    // Extraction into a fresh directory each run (on the same file system
    // as the corpus; only the last two kept).
    let packed = limits::prepare_extract(&files)?;
    let fresh = RefCell::new(FreshDirs::keeping(dir.join("extracted"), 2)?);
    let next = || fresh.borrow_mut().next();
    let command = |template: String| -> Side<'_> {
        let next = &next;
        Box::new(move || {
            let out = next();
            let command = template.replace("{out}", &q(&out));
            let start = Instant::now();
            sh(&command)?;
            Ok(start.elapsed())
        })
    };
    let mut sides = vec![
        command(format!(
            "{} arcx extract {} -o {{out}}",
            q(&binfmt),
            q(&ours)
        )),
        command(format!(
            "mkdir -p {{out}} && zstd -dc {} | tar -C {{out}} -xf -",
            q(&tarzst)
        )),
        Box::new(|| {
            let out = next();
            let start = Instant::now();
            limits::extract(&packed, &out, threads)?;
            Ok(start.elapsed())
        }),
    ];
    let stats = interleave(ROUNDS, &[&ours, &tarzst], &mut sides)?;
    drop(sides);
    let [extract, tar_extract, limit_extract] =
        <[Stats; 3]>::try_from(stats).map_err(|_| "three sides".to_owned())?;
    report
        .compare(
            "arcx",
            "zstd -dc | tar -x",
            format!("extract all, {what}, every core"),
            &extract,
            &tar_extract,
        )
        .limit(&extract, &limit_extract);
    Ok(())
}

/// `binfmt arcx pack` of `tree` into `out` on `jobs` compressing threads.
fn pack_command(binfmt: &Path, tree: &Path, out: &Path, jobs: usize) -> String {
    format!(
        "{} arcx pack {} -o {} --jobs {jobs}",
        q(binfmt),
        q(tree),
        q(out)
    )
}

/// `tar | zstd -3 -T{jobs}` of `tree` into `out`.
fn tar_command(tree: &Path, out: &Path, jobs: usize) -> String {
    format!(
        "tar -C {} -cf - . | zstd -3 -T{jobs} -q -f -o {}",
        q(tree),
        q(out)
    )
}
