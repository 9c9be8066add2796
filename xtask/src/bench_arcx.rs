//! `cargo xtask bench arcx`: `binfmt arcx` next to the `arcx` 0.3.0 tool and
//! `tar | zstd -3 -T0`, on the same generated corpus, in the same run,
//! every tool run as a process, interleaved round by round; each operation
//! next to the machine's floor ([`crate::limits`]). Extraction writes into
//! a fresh directory every run, on tmpfs and on disk.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use binfmt_tests::pseudo_random_bytes;

use crate::bench::Settings;
use crate::limits;
use crate::measure::{
    FreshDirs, Side, Stats, free_bytes, interleave, program, q, sh, shell, side, tmpfs,
};
use crate::report::{Report, Scaling};

/// The small and the large file of the corpus that `get` benchmarks read.
pub const SMALL: &str = "src/module_042/file_04242.rs";
pub const LARGE: &str = "data/noise.bin";

pub use crate::measure::binfmt_binary as release_binfmt;

/// The bench corpus (one copy) under `dir`, written on first use.
pub fn corpus(dir: &Path) -> Result<PathBuf, String> {
    corpus_at(dir, 1)
}

/// The corpus at `factor` times its size under `dir/x{factor}`, written on
/// first use.
fn corpus_at(dir: &Path, factor: u32) -> Result<PathBuf, String> {
    let corpus = dir.join(format!("x{factor}")).join("corpus");
    if !corpus.exists() {
        eprintln!("writing the corpus to {}", corpus.display());
        make_corpus(&corpus, factor)?;
    }
    Ok(corpus)
}

/// Rounds of the slow operations and of `get`: a `get` lasts a few
/// milliseconds, and one process start varies by a third on a shared
/// machine, so its median needs many more rounds.
const ROUNDS: usize = 5;
const GET_ROUNDS: usize = 41;

/// About 200 MB per copy: 10,000 source-like files, two large compressible
/// files and one large incompressible file; `copies` copies side by side.
fn make_corpus(root: &Path, copies: u32) -> Result<u64, String> {
    let io = |e: std::io::Error| e.to_string();
    let mut total = 0u64;
    for copy in 0..copies {
        let root = if copies == 1 {
            root.to_path_buf()
        } else {
            root.join(format!("copy_{copy:03}"))
        };
        for i in 0..10_000u64 {
            let dir = root.join(format!("src/module_{:03}", i / 100));
            fs::create_dir_all(&dir).map_err(io)?;
            let mut text = String::new();
            for line in 0..(60 + i % 200) {
                let _ = writeln!(
                    text,
                    "pub fn item_{i}_{line}(x: u64) -> u64 {{ x.wrapping_mul({}) ^ {} }}",
                    i * 31 + line + u64::from(copy),
                    line * 7 + i % 13
                );
            }
            total += text.len() as u64;
            fs::write(dir.join(format!("file_{i:05}.rs")), text).map_err(io)?;
        }
        fs::create_dir_all(root.join("data")).map_err(io)?;
        for (name, rows) in [("events.csv", 1_000_000u64), ("metrics.csv", 900_000)] {
            let mut text = String::with_capacity(45 << 20);
            for row in 0..rows {
                let _ = writeln!(
                    text,
                    "{row},user_{},{}.{},event_{}",
                    (row + u64::from(copy)) % 977,
                    row % 1000,
                    row % 97,
                    row % 13
                );
            }
            total += text.len() as u64;
            fs::write(root.join("data").join(name), text).map_err(io)?;
        }
        let noise = pseudo_random_bytes(11 + u64::from(copy), 30 << 20);
        total += noise.len() as u64;
        fs::write(root.join("data/noise.bin"), noise).map_err(io)?;
    }
    Ok(total)
}

fn size(path: &Path) -> u64 {
    fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// The tools, and where the benchmark writes.
struct Tools {
    binfmt: PathBuf,
    arcx: PathBuf,
    /// The floor of `get` (`xtask/src/bin/arcx_get_floor.rs`).
    get_floor: PathBuf,
    dir: PathBuf,
    /// Threads of the many-thread pack (`--threads`).
    threads: usize,
}

/// What one size of the corpus measured.
struct Measured {
    pack: (Stats, Stats),
    get: (Stats, Stats),
    extract_tmpfs: Option<(Stats, Stats)>,
}

pub fn run(settings: &Settings, arcx: &Path, report: &mut Report) -> Result<(), String> {
    let tools = Tools {
        binfmt: release_binfmt()?,
        arcx: arcx.to_owned(),
        get_floor: crate::measure::release_binary("xtask", "arcx_get_floor")?,
        dir: settings.dir.join("arcx"),
        threads: settings.threads,
    };
    let one = measure(&tools, 1, report, true)?;
    peak_memory(&tools, report)?;
    crate::bench_arcx_size::run(settings, &tools.binfmt, &tools.get_floor, report)?;
    if settings.scale {
        let mut points = [Vec::new(), Vec::new(), Vec::new()];
        // binfmt's median and its limit's, from the same rounds.
        let point =
            |factor, (ours, limit): &(Stats, Stats)| (factor, ours.median(), Some(limit.median()));
        let record = |points: &mut [Vec<_>; 3], factor, m: &Measured| {
            points[0].push(point(factor, &m.pack));
            points[1].push(point(factor, &m.get));
            if let Some(extract) = &m.extract_tmpfs {
                points[2].push(point(factor, extract));
            }
        };
        record(&mut points, 1, &one);
        let mut skipped = None;
        for factor in [10u32, 100] {
            // The corpus, two archives and a tar.zst, with room to spare.
            let needed = u64::from(factor) * 200_000_000 * 2;
            if free_bytes(&tools.dir) < needed {
                skipped = Some(format!(
                    "{factor}x needs {:.0} GB free at {}",
                    needed as f64 / 1e9,
                    tools.dir.display()
                ));
                break;
            }
            let measured = measure(&tools, factor, report, false)?;
            record(&mut points, factor, &measured);
        }
        for (operation, points) in ["pack", "get one small file", "extract all (tmpfs)"]
            .into_iter()
            .zip(points)
        {
            report.scaling(Scaling {
                format: "arcx",
                operation: format!("{operation}, 198 MB x size"),
                points,
                skipped: skipped.clone(),
            });
        }
    }
    Ok(())
}

/// Only the text corpora and their size/get trade-off table
/// ([`crate::bench_arcx_size`]).
pub fn run_text(settings: &Settings, report: &mut Report) -> Result<(), String> {
    let binfmt = release_binfmt()?;
    let get_floor = crate::measure::release_binary("xtask", "arcx_get_floor")?;
    crate::bench_arcx_size::run(settings, &binfmt, &get_floor, report)
}

/// Packs, gets from and extracts the corpus at `factor` times its size,
/// with every tool; the extraction on disk only at 1x (`full`).
fn measure(
    tools: &Tools,
    factor: u32,
    report: &mut Report,
    full: bool,
) -> Result<Measured, String> {
    let corpus = corpus_at(&tools.dir, factor)?;
    let dir = tools.dir.join(format!("x{factor}"));
    let (binfmt, arcx) = (&tools.binfmt, &tools.arcx);
    let files = limits::files_under(&corpus)?;
    let input: u64 = files.iter().map(|(path, _)| size(path)).sum();
    let (ours, theirs, tarzst, floor) = (
        dir.join("ours.arcx"),
        dir.join("theirs.arcx"),
        dir.join("corpus.tar.zst"),
        dir.join("floor.zst"),
    );
    let what = format!("{} files, {:.0} MB", files.len(), input as f64 / 1e6);

    // Packing: every tool, and the floor, reading the same warm corpus;
    // binfmt and the floor on `threads` threads and (at 1x) on one.
    let threads = tools.threads;
    let pack = |jobs: usize| {
        shell(format!(
            "{} arcx pack {} -o {} --jobs {jobs}",
            q(binfmt),
            q(&corpus),
            q(&ours)
        ))
    };
    let mut sides = vec![
        pack(threads),
        shell(format!("{} pack {} {}", q(arcx), q(&corpus), q(&theirs))),
        shell(format!(
            "tar -C {} -cf - . | zstd -3 -T0 -q -f -o {}",
            q(&corpus),
            q(&tarzst)
        )),
        side(|| limits::pack(&files, &floor, threads)),
    ];
    if full {
        sides.push(pack(1));
        sides.push(side(|| limits::pack(&files, &floor, 1)));
    }
    let rounds = if factor == 1 { ROUNDS } else { 3 };
    let mut stats = interleave(rounds, &[&corpus], &mut sides)?.into_iter();
    drop(sides);
    let [pack_ours, pack_arcx, pack_tar, pack_floor] = four(stats.by_ref().take(4).collect())?;
    // binfmt's and the floor's one-thread packs, when run.
    let pack_one = stats.next().zip(stats.next());
    let _ = fs::remove_file(&floor);
    let sizes = [size(&ours), size(&theirs), size(&tarzst)];

    // One small file out of each archive.
    let small_in = if factor == 1 {
        SMALL.to_owned()
    } else {
        format!("copy_000/{SMALL}")
    };
    let got = dir.join("got");
    // The tools are started directly: a shell in front would add its own
    // start (a fork and an exec) to every side alike.
    let text = |path: &Path| path.display().to_string();
    let mut sides = vec![
        program(vec![
            text(binfmt),
            "arcx".into(),
            "get".into(),
            text(&ours),
            small_in.clone(),
            "-o".into(),
            text(&got),
        ]),
        program(vec![
            text(arcx),
            "get".into(),
            text(&theirs),
            small_in.clone(),
            "-o".into(),
            text(&got),
        ]),
        shell(format!(
            "zstd -dc {} | tar -xO ./{small_in} > {}",
            q(&tarzst),
            q(&got)
        )),
        // The floor: a minimal program told where the manifest and the
        // file's block are, started the same way.
        program(get_floor_command(&tools.get_floor, &ours, &small_in, &got)?),
    ];
    let [get_ours, get_arcx, get_tar, get_floor] = four(interleave(
        GET_ROUNDS,
        &[&ours, &theirs, &tarzst],
        &mut sides,
    )?)?;
    drop(sides);

    // arcx 0.3.0 cannot extract its own files over 1 MiB: tried once.
    let arcx_extracts = {
        let probe = FreshDirs::new(dir.join("probe"))?;
        let out = probe.base().join("out");
        sh(&format!("{} extract {} {}", q(arcx), q(&theirs), q(&out))).is_ok()
    };
    let packed = limits::prepare_extract(&files)?;
    let mut places = Vec::new();
    if let Some(shm) = tmpfs() {
        places.push(("tmpfs", shm));
    }
    // Every side's output stays on disk until the end (3 rounds).
    // On disk even when --dir is a tmpfs: beside the workspace's target/.
    let on_disk = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-extract");
    let disk_needed = input * 3 * 5;
    if full && free_bytes(&on_disk) > disk_needed {
        places.push(("disk", on_disk));
    } else if full {
        report.note(format!(
            "arcx: extraction on disk not run: it needs {:.1} GB free at {}.",
            disk_needed as f64 / 1e9,
            on_disk.display()
        ));
    }
    let mut extract_tmpfs = None;
    for (fs_name, base) in places {
        let fresh = std::cell::RefCell::new(if fs_name == "tmpfs" {
            FreshDirs::keeping(&base, 2)?
        } else {
            FreshDirs::new(&base)?
        });
        let next = || fresh.borrow_mut().next();
        let command = |template: &str| {
            let template = template.to_owned();
            let next = &next;
            let side: Side<'_> = Box::new(move || {
                let out = next();
                let command = template.replace("{out}", &q(&out));
                let start = Instant::now();
                sh(&command)?;
                Ok(start.elapsed())
            });
            side
        };
        let mut sides = vec![
            command(&format!(
                "{} arcx extract {} -o {{out}}",
                q(binfmt),
                q(&ours)
            )),
            command(&format!("{} extract {} -o {{out}}", q(binfmt), q(&ours))),
            command(&format!(
                "mkdir -p {{out}} && zstd -dc {} | tar -C {{out}} -xf -",
                q(&tarzst)
            )),
            Box::new(|| {
                let out = next();
                let start = Instant::now();
                limits::extract(&packed, &out, crate::bench::cores())?;
                Ok(start.elapsed())
            }),
        ];
        if arcx_extracts {
            sides.push(command(&format!(
                "{} extract {} {{out}}",
                q(arcx),
                q(&theirs)
            )));
        }
        let rounds = if factor == 1 && fs_name == "tmpfs" {
            ROUNDS
        } else {
            3
        };
        let stats = interleave(rounds, &[&ours, &theirs, &tarzst], &mut sides)?;
        drop(sides);
        let mut stats = stats.into_iter();
        let mut take = || stats.next().ok_or("missing side");
        let (arcx_cmd, generic, tar, floor) = (take()?, take()?, take()?, take()?);
        let theirs_arcx = take().ok();
        let operation = format!("extract all, {what}, {fs_name}");
        match &theirs_arcx {
            Some(theirs) => report.compare("arcx", "arcx 0.3.0", &operation, &arcx_cmd, theirs),
            None => report.only_ours_stats("arcx", "arcx 0.3.0", &operation, &arcx_cmd, "fails"),
        }
        .limit(&arcx_cmd, &floor);
        report
            .compare("arcx", "tar + zstd -3 -T0", &operation, &arcx_cmd, &tar)
            .limit(&arcx_cmd, &floor);
        report
            .compare(
                "arcx",
                "tar + zstd -3 -T0",
                format!("{operation}, by `binfmt extract`"),
                &generic,
                &tar,
            )
            .limit(&generic, &floor);
        if fs_name == "tmpfs" {
            extract_tmpfs = Some((arcx_cmd, floor));
        }
    }

    let pack_what = format!("pack {what}, {threads} threads");
    report
        .compare("arcx", "arcx 0.3.0", &pack_what, &pack_ours, &pack_arcx)
        .limit(&pack_ours, &pack_floor);
    if let Some((ours_one, floor_one)) = &pack_one {
        report
            .compare(
                "arcx",
                "arcx 0.3.0",
                format!("pack {what}, 1 thread"),
                ours_one,
                &pack_arcx,
            )
            .limit(ours_one, floor_one);
        report.speedup(
            "arcx pack",
            threads,
            (ours_one, &pack_ours),
            (floor_one, &pack_floor),
            "",
        );
    }
    report
        .compare(
            "arcx",
            "tar + zstd -3 -T0",
            &pack_what,
            &pack_ours,
            &pack_tar,
        )
        .limit(&pack_ours, &pack_floor);
    if full {
        report.megabytes("arcx", "arcx 0.3.0", "archive size", sizes[0], sizes[1]);
        report.megabytes(
            "arcx",
            "tar + zstd -3 -T0",
            "archive size",
            sizes[0],
            sizes[2],
        );
    }
    let get_what = format!("get one small file of {what}");
    report
        .compare("arcx", "arcx 0.3.0", &get_what, &get_ours, &get_arcx)
        .limit(&get_ours, &get_floor);
    report
        .compare("arcx", "tar + zstd -3 -T0", &get_what, &get_ours, &get_tar)
        .limit(&get_ours, &get_floor);
    if full {
        report.note(
            "arcx limits: pack = read, SHA-256 and zstd -3 every file in 1 MiB groups on the threads binfmt has \
             (--threads, or one), frames written; extract = decompress 1 MiB groups, SHA-256 and create every file on every core; \
             get = a minimal program (std and zstd) that reads the footer and the manifest, decompresses the manifest, \
             reads and decompresses the file's block and writes the file, told where each is (xtask/src/bin/arcx_get_floor.rs).",
        );
    } else {
        for file in [&ours, &theirs, &tarzst] {
            let _ = fs::remove_file(file);
        }
        let _ = fs::remove_dir_all(&corpus);
    }
    Ok(Measured {
        pack: (pack_ours, pack_floor),
        get: (get_ours, get_floor),
        extract_tmpfs,
    })
}

/// The command line (program and arguments) of the `get` floor
/// `get_floor` for `path` in `archive` (a spec archive), with the
/// manifest's and the block's places found by binfmt.
pub fn get_floor_command(
    get_floor: &Path,
    archive: &Path,
    path: &str,
    out: &Path,
) -> Result<Vec<String>, String> {
    let opened = binfmt_arcx::Archive::open(archive).map_err(|e| e.to_string())?;
    let file = opened
        .find(path)
        .ok_or_else(|| format!("{path}: not found"))?;
    let mut chunks = file.chunks();
    let (Some(chunk), None) = (chunks.next(), chunks.next()) else {
        return Err(format!("{path}: the floor reads a file of one chunk"));
    };
    let block = opened
        .manifest()
        .block(chunk.block)
        .filter(|block| block.codec == binfmt_arcx::Codec::Zstd)
        .ok_or_else(|| format!("{path}: the floor reads a zstd block"))?;
    let (manifest_offset, manifest_len) = opened.manifest_region();
    Ok([
        get_floor.display().to_string(),
        archive.display().to_string(),
        manifest_offset.to_string(),
        manifest_len.to_string(),
        block.offset.to_string(),
        block.stored_size.to_string(),
        block.size.to_string(),
        chunk.offset.to_string(),
        chunk.size.to_string(),
        out.display().to_string(),
    ]
    .into())
}

fn four(stats: Vec<Stats>) -> Result<[Stats; 4], String> {
    <[Stats; 4]>::try_from(stats).map_err(|_| "four sides".to_owned())
}

/// Peak memory packing one 1 GiB file.
fn peak_memory(tools: &Tools, report: &mut Report) -> Result<(), String> {
    let dir = &tools.dir;
    let big = dir.join("big");
    if !big.join("one.bin").exists() {
        fs::create_dir_all(&big).map_err(|e| e.to_string())?;
        let mut content = Vec::with_capacity(1 << 30);
        for i in 0..1024u64 {
            let mut piece = pseudo_random_bytes(i, 1 << 19);
            piece.extend(std::iter::repeat_n(b'a' + (i % 26) as u8, 1 << 19));
            content.extend_from_slice(&piece);
        }
        fs::write(big.join("one.bin"), content).map_err(|e| e.to_string())?;
    }
    let (ours, theirs) = (dir.join("big-ours.arcx"), dir.join("big-theirs.arcx"));
    let ours_rss = crate::measure::peak_rss(&format!(
        "{} arcx pack {} -o {}",
        q(&tools.binfmt),
        q(&big),
        q(&ours)
    ))?;
    let theirs_rss = crate::measure::peak_rss(&format!(
        "{} pack {} {}",
        q(&tools.arcx),
        q(&big),
        q(&theirs)
    ))?;
    report.megabytes(
        "arcx",
        "arcx 0.3.0",
        "peak RSS packing one 1 GiB file",
        ours_rss,
        theirs_rss,
    );
    for file in [ours, theirs] {
        let _ = fs::remove_file(file);
    }
    Ok(())
}
