//! The text corpora of `cargo xtask bench arcx` ([`crate::text_corpus`]):
//! pack, archive size and `get` of one small file next to `tar | zstd -3`
//! and the machine's limits, then the size/get trade-off table: every
//! layout the writer's options allow that matters for size (shared blocks
//! of 256 KiB to 16 MiB, zstd levels 3, 4, 6 and 9), each archive's size over
//! `tar | zstd -3`'s and its `get` over the limit program's, all `get`s
//! interleaved in the same rounds.
//!
//! The dictionary rows are an experiment, not a format: the blocks of the
//! level-3 archive of each block size compressed again here, once with a
//! dictionary trained on the corpus's files (`zstd::dict::from_samples`)
//! and the dictionary counted once; their `get` is estimated as the same
//! layout's `get` plus the extra time to decode the small file's block with
//! the dictionary (loading it included), measured in this process.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::bench::Settings;
use crate::limits;
use crate::measure::{Stats, interleave, program, q, sh, shell, side};
use crate::report::{Report, show};
use crate::text_corpus::{self, TextCorpus};

const ROUNDS: usize = 3;
/// `get` lasts a few milliseconds and one process start varies by a
/// third: its medians take many rounds (as in `bench_arcx`).
const GET_ROUNDS: usize = 41;
/// The dictionaries' sizes: about zstd's own default (110 KB), and 1 MiB.
const DICTIONARIES: [usize; 2] = [112 << 10, 1 << 20];
/// At most this many bytes of files train the dictionary.
const TRAINING: usize = 8 << 20;
/// zstd levels of the table.
const LEVELS: [i32; 4] = [3, 4, 6, 9];
/// Shared block sizes of the table.
const BLOCKS: [usize; 4] = [256 << 10, 1 << 20, 4 << 20, 16 << 20];

/// The layout `binfmt arcx pack` writes by default.
const DEFAULT: Layout = Layout {
    block: binfmt_arcx::DEFAULT_BLOCK_SIZE,
    level: 3,
};

/// One archive layout: shared block size and level.
#[derive(Debug, Clone, Copy)]
struct Layout {
    block: usize,
    level: i32,
}

impl Layout {
    fn name(self) -> String {
        format!("{} blocks, level {}", kib(self.block), self.level)
    }

    fn file(self) -> String {
        format!("b{}-l{}.arcx", self.block >> 10, self.level)
    }
}

fn kib(bytes: usize) -> String {
    if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{} KiB", bytes >> 10)
    }
}

fn size(path: &Path) -> u64 {
    fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// Runs every text corpus at `settings.text_mb` MB each: rows into
/// `report`, and the trade-off table as one of its tables.
pub fn run(
    settings: &Settings,
    binfmt: &Path,
    get_floor: &Path,
    report: &mut Report,
) -> Result<(), String> {
    let mut table = String::from(
        "| corpus | layout | archive | archive / tar+zstd -3 | pack (one run) | get one small file | get / its limit | get / default layout's limit | decoding stopped at the file's end (est.) / default layout's limit |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for corpus in &text_corpus::CORPORA {
        one_corpus(settings, binfmt, get_floor, corpus, report, &mut table)?;
    }
    report.table(format!(
        "arcx size/get trade-off on the text corpora ({} MB each; `--text-mb` scales them): \
         archive size over `tar | zstd -3 -T0`'s, and `get` of one small file (median of {GET_ROUNDS} \
         interleaved rounds) over the limit program's for the same archive and for the default \
         layout ({}).\n\n{table}",
        settings.text_mb,
        DEFAULT.name()
    ));
    report.note(
        "arcx trade-off, dictionary rows: an experiment, not the format: the level-3 archive's blocks \
         recompressed at level 3 with one dictionary (112 KiB or 1 MiB) trained on the corpus's files (at most \
         8 MiB of them, `zstd::dict::from_samples`), the dictionary counted once; get is estimated as the \
         same layout's get (without dictionary) plus the extra time to decode the small file's block with the dictionary \
         (loading it included), timed in-process (median of 21).",
    );
    Ok(())
}

/// What one layout's archive measured.
struct Packed {
    layout: Layout,
    path: PathBuf,
    pack: Duration,
}

fn one_corpus(
    settings: &Settings,
    binfmt: &Path,
    get_floor_bin: &Path,
    corpus: &TextCorpus,
    report: &mut Report,
    table: &mut String,
) -> Result<(), String> {
    let dir = settings
        .dir
        .join("arcx-text")
        .join(format!("{}-{}mb", corpus.name, settings.text_mb));
    let tree = dir.join("corpus");
    if !tree.exists() {
        eprintln!(
            "writing the {} text corpus to {}",
            corpus.name,
            tree.display()
        );
        let partial = dir.join("corpus.partial");
        let _ = fs::remove_dir_all(&partial);
        text_corpus::write(&partial, corpus, settings.text_mb * 1_000_000)?;
        fs::rename(&partial, &tree).map_err(|e| e.to_string())?;
    }
    let files = limits::files_under(&tree)?;
    let input: u64 = files.iter().map(|(path, _)| size(path)).sum();
    let what = format!(
        "{} files, {:.0} MB, {} text",
        files.len(),
        input as f64 / 1e6,
        corpus.name
    );
    let small = small_file(&files)?;

    // Pack: binfmt's default layout next to tar | zstd and the limit.
    let default = DEFAULT;
    let ours = dir.join(default.file());
    let (tarzst, floor) = (dir.join("corpus.tar.zst"), dir.join("floor.zst"));
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut sides = vec![
        shell(pack_command(binfmt, &tree, &ours, default)),
        shell(format!(
            "tar -C {} -cf - . | zstd -3 -T0 -q -f -o {}",
            q(&tree),
            q(&tarzst)
        )),
        side(|| limits::pack(&files, &floor, cores)),
    ];
    let stats = interleave(ROUNDS, &[&tree], &mut sides)?;
    drop(sides);
    let _ = fs::remove_file(&floor);
    let [pack_ours, pack_tar, pack_floor] =
        <[Stats; 3]>::try_from(stats).map_err(|_| "three sides".to_owned())?;
    report
        .compare(
            "arcx",
            "tar + zstd -3 -T0",
            format!("pack {what}"),
            &pack_ours,
            &pack_tar,
        )
        .limit(&pack_ours, &pack_floor);
    let tar_size = size(&tarzst);
    report.megabytes(
        "arcx",
        "tar + zstd -3 -T0",
        format!("archive size, {what}"),
        size(&ours),
        tar_size,
    );

    // Every other layout, packed once (timed as one run).
    let mut packed = vec![Packed {
        layout: default,
        path: ours.clone(),
        pack: pack_ours.median(),
    }];
    for level in LEVELS {
        for block in BLOCKS {
            let layout = Layout { block, level };
            if block == default.block && level == default.level {
                continue;
            }
            let path = dir.join(layout.file());
            let start = Instant::now();
            sh(&pack_command(binfmt, &tree, &path, layout))?;
            packed.push(Packed {
                layout,
                path,
                pack: start.elapsed(),
            });
        }
    }

    // get of the small file from every archive and its limit, interleaved;
    // and out of the tar.zst once per round.
    let got = dir.join("got");
    let mut sides = Vec::new();
    for archive in &packed {
        sides.push(program(vec![
            binfmt.display().to_string(),
            "arcx".into(),
            "get".into(),
            archive.path.display().to_string(),
            small.clone(),
            "-o".into(),
            got.display().to_string(),
        ]));
        sides.push(program(crate::bench_arcx::get_floor_command(
            get_floor_bin,
            &archive.path,
            &small,
            &got,
        )?));
    }
    sides.push(shell(format!(
        "zstd -dc {} | tar -xO ./{small} > {}",
        q(&tarzst),
        q(&got)
    )));
    let warm: Vec<&Path> = packed
        .iter()
        .map(|p| p.path.as_path())
        .chain([tarzst.as_path()])
        .collect();
    let stats = interleave(GET_ROUNDS, &warm, &mut sides)?;
    drop(sides);
    let get_tar = stats.last().cloned().unwrap_or_default();
    let gets: Vec<(Stats, Stats)> = stats
        .chunks_exact(2)
        .map(|pair| {
            let mut pair = pair.iter().cloned();
            (
                pair.next().unwrap_or_default(),
                pair.next().unwrap_or_default(),
            )
        })
        .collect();
    let (default_get, default_limit) = gets.first().cloned().unwrap_or_default();
    report
        .compare(
            "arcx",
            "tar + zstd -3 -T0",
            format!("get one small file of {what}"),
            &default_get,
            &get_tar,
        )
        .limit(&default_get, &default_limit);

    let ratio = |bytes: u64| bytes as f64 / tar_size.max(1) as f64;
    let base = default_limit.median().as_secs_f64().max(1e-9);
    for (archive, (get, limit)) in packed.iter().zip(&gets) {
        let bytes = size(&archive.path);
        let (saved, position) = prefix_saving(&archive.path, &small)?;
        let prefix = get.median().saturating_sub(saved);
        let _ = writeln!(
            table,
            "| {} | {} | {:.1} MB | {:.3} | {} | {get} | {:.2}x | {:.2}x | {:.2}x (file at {:.0}% of its block) |",
            corpus.name,
            archive.layout.name(),
            bytes as f64 / 1e6,
            ratio(bytes),
            show(archive.pack),
            get.median().as_secs_f64() / limit.median().as_secs_f64().max(1e-9),
            get.median().as_secs_f64() / base,
            prefix.as_secs_f64() / base,
            position * 100.0,
        );
    }

    // The dictionary experiment, on the level-3 archives, per dictionary size.
    let samples = training_samples(&files)?;
    for dictionary_size in DICTIONARIES {
        let start = Instant::now();
        let dictionary =
            zstd::dict::from_samples(&samples, dictionary_size).map_err(|e| e.to_string())?;
        let trained = start.elapsed();
        for (archive, (get, _)) in packed
            .iter()
            .zip(&gets)
            .filter(|(p, _)| p.layout.level == 3)
        {
            let (bytes, extra) = with_dictionary(&archive.path, &small, &dictionary)?;
            let get = get.median() + extra;
            let _ = writeln!(
                table,
                "| {} | {} + {} dictionary (experiment) | {:.1} MB | {:.3} ({:.3} without the dictionary's own bytes) | trained in {} | {} (est.) | - | {:.2}x (est.) | - |",
                corpus.name,
                archive.layout.name(),
                kib(dictionary.len()),
                bytes as f64 / 1e6,
                ratio(bytes),
                ratio(bytes - dictionary.len() as u64),
                show(trained),
                show(get),
                get.as_secs_f64() / base,
            );
        }
    }
    let _ = fs::remove_file(&got);
    Ok(())
}

fn pack_command(binfmt: &Path, tree: &Path, out: &Path, layout: Layout) -> String {
    format!(
        "{} arcx pack {} -o {} --block-size {} --chunk-size {} --level {}",
        q(binfmt),
        q(tree),
        q(out),
        layout.block,
        layout.block.max(1 << 20),
        layout.level
    )
}

/// The small file `get` reads: the middle one of the files of 2 to 16 KB,
/// in the walk's order.
fn small_file(files: &[(PathBuf, PathBuf)]) -> Result<String, String> {
    let small: Vec<&PathBuf> = files
        .iter()
        .filter(|(path, _)| (2_000..16_000).contains(&size(path)))
        .map(|(_, relative)| relative)
        .collect();
    small
        .get(small.len() / 2)
        .map(|path| path.display().to_string())
        .ok_or_else(|| "no file of 2 to 16 KB in the corpus".to_owned())
}

/// Files spread over the whole corpus, at most [`TRAINING`] bytes.
fn training_samples(files: &[(PathBuf, PathBuf)]) -> Result<Vec<Vec<u8>>, String> {
    let total: u64 = files.iter().map(|(path, _)| size(path)).sum();
    let step = (total / TRAINING as u64).max(1) as usize;
    files
        .iter()
        .step_by(step)
        .map(|(path, _)| fs::read(path).map_err(|e| e.to_string()))
        .collect()
}

/// The first chunk of the file `small` of `opened`, and the block that
/// holds it.
fn small_block<'a>(
    opened: &'a binfmt_arcx::Archive,
    small: &str,
) -> Result<
    (
        binfmt_arcx::manifest::ChunkRecord,
        &'a binfmt_arcx::manifest::BlockRecord,
    ),
    String,
> {
    let file = opened.find(small).ok_or("the small file is missing")?;
    let chunk = file.chunks().next().ok_or("the small file has no chunk")?;
    let block = opened
        .manifest()
        .block(chunk.block)
        .ok_or("the small file's block is missing")?;
    Ok((chunk, block))
}

/// The time `get` would save if it decoded the small file's block only up
/// to the file's end (zstd streams: nothing after it is needed), and where
/// the file ends in its block (0 to 1); timed in-process, medians of 21.
fn prefix_saving(archive: &Path, small: &str) -> Result<(Duration, f64), String> {
    use std::io::Read as _;
    let text = |e: std::io::Error| e.to_string();
    let opened = binfmt_arcx::Archive::open(archive).map_err(|e| e.to_string())?;
    let raw = fs::read(archive).map_err(text)?;
    let (chunk, block) = small_block(&opened, small)?;
    let from = usize::try_from(block.offset + 4).unwrap_or(usize::MAX);
    let stored = raw
        .get(from..from.saturating_add(block.stored_size as usize))
        .ok_or("a block outside the archive")?;
    let end = usize::try_from(chunk.offset + chunk.size).unwrap_or(usize::MAX);
    let (mut whole, mut prefix) = (Vec::new(), Vec::new());
    for _ in 0..21 {
        let start = Instant::now();
        std::hint::black_box(zstd::bulk::decompress(stored, block.size as usize).map_err(text)?);
        whole.push(start.elapsed());
        let start = Instant::now();
        let mut decoder = zstd::stream::read::Decoder::with_buffer(stored).map_err(text)?;
        let mut out = vec![0u8; end];
        decoder.read_exact(&mut out).map_err(text)?;
        std::hint::black_box(out);
        prefix.push(start.elapsed());
    }
    let saved = Stats::new(whole)
        .median()
        .saturating_sub(Stats::new(prefix).median());
    Ok((saved, end as f64 / f64::from(block.size).max(1.0)))
}

/// The size `archive` would have with its zstd blocks compressed with
/// `dictionary` (stored once), and the extra time decoding the block of
/// `small` takes with it.
fn with_dictionary(
    archive: &Path,
    small: &str,
    dictionary: &[u8],
) -> Result<(u64, Duration), String> {
    let text = |e: std::io::Error| e.to_string();
    let opened = binfmt_arcx::Archive::open(archive).map_err(|e| e.to_string())?;
    let raw = fs::read(archive).map_err(text)?;
    let mut compressor = zstd::bulk::Compressor::with_dictionary(3, dictionary).map_err(text)?;
    let (mut before, mut after) = (0u64, 0u64);
    let stored = |block: &binfmt_arcx::manifest::BlockRecord| {
        let from = usize::try_from(block.offset + 4).unwrap_or(usize::MAX);
        raw.get(from..from.saturating_add(block.stored_size as usize))
            .ok_or_else(|| "a block outside the archive".to_owned())
    };
    for block in opened.manifest().blocks() {
        if block.codec != binfmt_arcx::Codec::Zstd {
            continue;
        }
        let bytes = stored(block)?;
        let plain = zstd::bulk::decompress(bytes, block.size as usize).map_err(text)?;
        before += u64::from(block.stored_size);
        after += compressor.compress(&plain).map_err(text)?.len() as u64;
    }
    let size = opened.size() - before + after + dictionary.len() as u64;

    // The small file's block, decoded without and with the dictionary.
    let (_, block) = small_block(&opened, small)?;
    let bytes = stored(block)?;
    let plain = zstd::bulk::decompress(bytes, block.size as usize).map_err(text)?;
    let with = compressor.compress(&plain).map_err(text)?;
    let mut plain_times = Vec::new();
    let mut dict_times = Vec::new();
    for _ in 0..21 {
        let start = Instant::now();
        std::hint::black_box(zstd::bulk::decompress(bytes, block.size as usize).map_err(text)?);
        plain_times.push(start.elapsed());
        let start = Instant::now();
        let mut decompressor =
            zstd::bulk::Decompressor::with_dictionary(dictionary).map_err(text)?;
        std::hint::black_box(
            decompressor
                .decompress(&with, block.size as usize)
                .map_err(text)?,
        );
        dict_times.push(start.elapsed());
    }
    let extra = Stats::new(dict_times)
        .median()
        .saturating_sub(Stats::new(plain_times).median());
    Ok((size, extra))
}
