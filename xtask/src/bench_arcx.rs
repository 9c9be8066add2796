//! `cargo xtask bench arcx`: `binfmt arcx` next to the `arcx` 0.3.0 tool and
//! `tar | zstd -3`, on the same generated corpus, in the same run, every
//! tool run as a process.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use binfmt_tests::pseudo_random_bytes;

use crate::report::{Report, median};

/// About 200 MB: 10,000 source-like files, two large compressible files and
/// one large incompressible file.
fn make_corpus(root: &Path) -> Result<u64, String> {
    let io = |e: std::io::Error| e.to_string();
    let mut total = 0u64;
    for i in 0..10_000u64 {
        let dir = root.join(format!("src/module_{:03}", i / 100));
        fs::create_dir_all(&dir).map_err(io)?;
        let mut text = String::new();
        for line in 0..(60 + i % 200) {
            let _ = writeln!(
                text,
                "pub fn item_{i}_{line}(x: u64) -> u64 {{ x.wrapping_mul({}) ^ {} }}",
                i * 31 + line,
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
                row % 977,
                row % 1000,
                row % 97,
                row % 13
            );
        }
        total += text.len() as u64;
        fs::write(root.join("data").join(name), text).map_err(io)?;
    }
    let noise = pseudo_random_bytes(11, 30 << 20);
    total += noise.len() as u64;
    fs::write(root.join("data/noise.bin"), noise).map_err(io)?;
    Ok(total)
}

fn sh(command: &str) -> Result<(), String> {
    let status = Command::new("sh")
        .args(["-c", command])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| e.to_string())?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{command}` failed: {status}"))
    }
}

fn timed(runs: usize, command: &str, before: Option<&str>) -> Result<Duration, String> {
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        if let Some(before) = before {
            sh(before)?;
        }
        let start = Instant::now();
        sh(command)?;
        times.push(start.elapsed());
    }
    Ok(median(times))
}

/// Peak resident memory of `command` in KiB, from the children's rusage.
fn peak_rss_kib(command: &str) -> Result<u64, String> {
    let script = format!(
        "import resource, subprocess, sys\nsubprocess.run(['sh', '-c', {command:?}], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\nprint(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    );
    let output = Command::new("python3")
        .args(["-c", &script])
        .output()
        .map_err(|e| e.to_string())?;
    if !output.status.success() {
        return Err(format!(
            "measuring {command}: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .map_err(|e| format!("{e}"))
}

fn size(path: &Path) -> u64 {
    fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// The small and the large file of the corpus that `get` benchmarks read.
pub const SMALL: &str = "src/module_042/file_04242.rs";
pub const LARGE: &str = "data/noise.bin";

/// `target/release/binfmt`, built first.
pub fn release_binfmt() -> Result<PathBuf, String> {
    let status = Command::new(env!("CARGO"))
        .args(["build", "--release", "--quiet", "-p", "binfmt"])
        .status()
        .map_err(|e| e.to_string())?;
    if !status.success() {
        return Err("building binfmt failed".into());
    }
    Ok(Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release/binfmt"))
}

/// The bench corpus under `dir`, written on first use.
pub fn corpus(dir: &Path) -> Result<PathBuf, String> {
    let corpus = dir.join("corpus");
    if !corpus.exists() {
        eprintln!("writing the corpus to {}", corpus.display());
        make_corpus(&corpus)?;
    }
    Ok(corpus)
}

pub fn run(dir: &Path, arcx: &Path, report: &mut Report) -> Result<(), String> {
    let binfmt = release_binfmt()?;
    let corpus = corpus(dir)?;
    let input = dir_size(&corpus);
    let q = |p: &Path| p.display().to_string();
    let (ours, theirs, tarzst) = (
        dir.join("ours.arcx"),
        dir.join("theirs.arcx"),
        dir.join("corpus.tar.zst"),
    );
    let small = SMALL;
    let out = dir.join("out");
    // Flushing the previous run's files first, so no run pays for another's
    // writeback.
    let clean = format!("rm -rf {} && sync", q(&out));

    let pack = [
        timed(
            3,
            &format!("{} arcx pack {} {}", q(&binfmt), q(&corpus), q(&ours)),
            None,
        )?,
        timed(
            3,
            &format!("{} pack {} {}", q(arcx), q(&corpus), q(&theirs)),
            None,
        )?,
        timed(
            3,
            &format!(
                "tar -C {} -cf - . | zstd -3 -q -f -o {}",
                q(&corpus),
                q(&tarzst)
            ),
            None,
        )?,
    ];
    let sizes = [size(&ours), size(&theirs), size(&tarzst)];
    let get = [
        timed(
            11,
            &format!(
                "{} arcx get {} {small} -o {}/got",
                q(&binfmt),
                q(&ours),
                q(dir)
            ),
            None,
        )?,
        timed(
            11,
            &format!("{} get {} {small} -o {}/got", q(arcx), q(&theirs), q(dir)),
            None,
        )?,
        timed(
            11,
            &format!(
                "zstd -dc {} | tar -xO ./{small} > {}/got",
                q(&tarzst),
                q(dir)
            ),
            None,
        )?,
    ];
    // arcx 0.3.0 cannot extract its own files over 1 MiB: it fails here.
    let extract = [
        timed(
            3,
            &format!("{} arcx extract {} {}", q(&binfmt), q(&ours), q(&out)),
            Some(&clean),
        ),
        timed(
            3,
            &format!("{} extract {} {}", q(arcx), q(&theirs), q(&out)),
            Some(&clean),
        ),
        timed(
            3,
            &format!(
                "mkdir -p {o} && zstd -dc {} | tar -C {o} -xf -",
                q(&tarzst),
                o = q(&out)
            ),
            Some(&clean),
        ),
    ];
    sh(&clean)?;

    let corpus_mb = input as f64 / 1e6;
    let [pack_ours, pack_arcx, pack_tar] = pack;
    let [size_ours, size_arcx, size_tar] = sizes;
    let [get_ours, get_arcx, get_tar] = get;
    let [extract_ours, extract_arcx, extract_tar] = extract;
    let extract_ours = extract_ours?;
    for (reference, pack, size, get, extract) in [
        ("arcx 0.3.0", pack_arcx, size_arcx, get_arcx, extract_arcx),
        ("tar + zstd -3", pack_tar, size_tar, get_tar, extract_tar),
    ] {
        report.time(
            "arcx",
            reference,
            format!("pack 10,003 files, {corpus_mb:.0} MB"),
            pack_ours,
            pack,
        );
        report.megabytes("arcx", reference, "archive size", size_ours, size);
        report.time("arcx", reference, "get one small file", get_ours, get);
        match extract {
            Ok(theirs) => report.time("arcx", reference, "extract all", extract_ours, theirs),
            // arcx 0.3.0 cannot extract its own files over 1 MiB.
            Err(_) => report.only_ours("arcx", reference, "extract all", extract_ours, "fails"),
        }
    }

    // Peak memory packing one 1 GiB file.
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
    let ours_rss = peak_rss_kib(&format!(
        "{} arcx pack {} {}/big-ours.arcx",
        q(&binfmt),
        q(&big),
        q(dir)
    ))?;
    let theirs_rss = peak_rss_kib(&format!(
        "{} pack {} {}/big-theirs.arcx",
        q(arcx),
        q(&big),
        q(dir)
    ))?;
    report.megabytes(
        "arcx",
        "arcx 0.3.0",
        "peak RSS packing one 1 GiB file",
        ours_rss * 1024,
        theirs_rss * 1024,
    );
    for file in ["big-ours.arcx", "big-theirs.arcx"] {
        let _ = fs::remove_file(dir.join(file));
    }
    Ok(())
}

fn dir_size(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack: Vec<PathBuf> = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        if let Ok(entries) = fs::read_dir(&path) {
            for entry in entries.flatten() {
                match entry.file_type() {
                    Ok(kind) if kind.is_dir() => stack.push(entry.path()),
                    Ok(_) => total += entry.metadata().map(|m| m.len()).unwrap_or(0),
                    Err(_) => {}
                }
            }
        }
    }
    total
}
