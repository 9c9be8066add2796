//! `cargo xtask bench mount`: a mounted file read through the kernel's
//! FUSE, next to the tools people mount archives with, on the ARCX bench
//! corpus (10,000 source-like files and three large ones, about 200 MB):
//!
//! - `binfmt mount` of the corpus's ARCX archive (packed by `arcx` 0.3.0)
//!   next to `arcx mount` of the same archive (`arcx` 0.3.0 built with its
//!   `fuse` feature: `target/interop/arcx-fuse/bin/arcx`);
//! - `binfmt mount` of a TARIDX index over the corpus's tar next to
//!   `ratarmount` 1.3.0 of that tar (its index made beforehand, as a
//!   second mount would find it: `target/interop/ratarmount/bin/ratarmount`);
//! - the machine's limit: the same operation on the corpus's own files.
//!
//! Each operation is a mount, the work, and the unmount, every tool in the
//! foreground, sides interleaved run by run. A tool that is not installed
//! leaves a note saying how to install it.

use std::fs;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::bench_arcx;
use crate::measure::{self, Side};
use crate::report::Report;

/// Rounds of each operation.
const ROUNDS: usize = 5;
/// Random reads per run, 4 KiB each.
const RANDOM_READS: usize = 2000;

/// Work done on a tree of the corpus's files: returns the bytes it saw.
type Work = fn(&Path, &[(PathBuf, u64)]) -> Result<u64, String>;

/// A way to mount: a program and its arguments, `{file}` and `{mnt}`
/// replaced.
struct Mounter {
    name: &'static str,
    argv: Vec<String>,
}

pub fn run(dir: &Path, arcx: &Path, report: &mut Report) -> Result<(), String> {
    let corpus = bench_arcx::corpus(&dir.join("arcx"))?;
    let binfmt = bench_arcx::release_binfmt()?;
    let work = dir.join("mount");
    fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    let (archive, fold, tar) = inputs(&corpus, &work, arcx, &binfmt)?;
    let interop = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/interop");
    let arcx_fuse = interop.join("arcx-fuse/bin/arcx");
    let ratarmount = interop.join("ratarmount/bin/ratarmount");
    let files = corpus_files(&corpus)?;
    let mnt = work.join("mnt");
    fs::create_dir_all(&mnt).map_err(|e| format!("{}: {e}", mnt.display()))?;

    let binfmt_mount = |file: &Path| Mounter {
        name: "binfmt mount",
        argv: vec![
            binfmt.display().to_string(),
            "mount".into(),
            file.display().to_string(),
            mnt.display().to_string(),
        ],
    };
    let pairs: [(&'static str, &'static str, Mounter, Option<Mounter>, &str); 2] = [
        (
            "arcx",
            "arcx 0.3.0 mount",
            binfmt_mount(&archive),
            arcx_fuse.exists().then(|| Mounter {
                name: "arcx mount",
                argv: vec![
                    arcx_fuse.display().to_string(),
                    "mount".into(),
                    archive.display().to_string(),
                    mnt.display().to_string(),
                ],
            }),
            "not installed, and it cannot be: `cargo install --locked arcx --version 0.3.0 --features fuse` \
             does not compile (arcx 0.3.0's src/fuse_mount.rs implements a later fuser's `getattr`, with a \
             file handle, while its Cargo.toml asks for fuser 0.14: error E0050; the same without --locked); \
             installed as target/interop/arcx-fuse/bin/arcx, it would be measured",
        ),
        (
            "taridx",
            "ratarmount 1.3.0",
            binfmt_mount(&fold),
            ratarmount.exists().then(|| Mounter {
                name: "ratarmount",
                argv: vec![
                    ratarmount.display().to_string(),
                    "-f".into(),
                    tar.display().to_string(),
                    mnt.display().to_string(),
                ],
            }),
            "not installed: `python3 -m venv target/interop/ratarmount && target/interop/ratarmount/bin/pip install ratarmount==1.3.0` installs it",
        ),
    ];
    let operations: [(&str, Work); 3] = [
        ("mount, stat every file, unmount", walk),
        ("mount, read every file, unmount", read_all),
        ("mount, 2,000 random 4 KiB reads, unmount", random_reads),
    ];
    for (format, reference, ours, theirs, install) in &pairs {
        if let Some(theirs) = theirs {
            // A first mount (ratarmount writes its index beside the tar).
            mounted(theirs, &mnt, |root| walk(root, &files))?;
        }
        for (operation, work) in operations {
            let mut sides: Vec<Side<'_>> = vec![
                Box::new(|| timed(ours, &mnt, |root| work(root, &files))),
                Box::new(|| {
                    let start = Instant::now();
                    work(&corpus, &files)?;
                    Ok(start.elapsed())
                }),
            ];
            if let Some(theirs) = theirs {
                sides.push(Box::new(|| timed(theirs, &mnt, |root| work(root, &files))));
            }
            let stats = measure::interleave(ROUNDS, &[], &mut sides)?;
            let (Some(our_stats), Some(limit)) = (stats.first(), stats.get(1)) else {
                return Err("the interleaved runs returned no timings".into());
            };
            let what = format!(
                "{operation} ({} files, {:.0} MB)",
                files.len(),
                total(&files) as f64 / 1e6
            );
            match stats.get(2) {
                Some(their_stats) => {
                    report.compare(format, reference, what, our_stats, their_stats);
                }
                None => {
                    report.only_ours_stats(format, reference, what, our_stats, "not installed");
                }
            }
            report.limit(our_stats, limit);
        }
        if theirs.is_none() {
            report.note(format!("{reference}: not measured: {install}."));
        }
    }
    report.note(
        "Mounts: every tool in the foreground, mounted, worked on, unmounted per run; the limit is \
         the same work on the corpus's own files (page cache warm)."
            .to_owned(),
    );
    Ok(())
}

/// The corpus's ARCX archive (packed by `arcx` 0.3.0), its tar, and a
/// TARIDX index over the tar, made once.
fn inputs(
    corpus: &Path,
    work: &Path,
    arcx: &Path,
    binfmt: &Path,
) -> Result<(PathBuf, PathBuf, PathBuf), String> {
    let archive = work.join("corpus.arcx");
    if !archive.exists() {
        measure::sh(&format!(
            "'{}' pack '{}' '{}'",
            arcx.display(),
            corpus.display(),
            archive.display()
        ))?;
    }
    let tar = work.join("corpus_0000.tar");
    if !tar.exists() {
        measure::sh(&format!(
            "tar cf '{}' -C '{}' .",
            tar.display(),
            corpus.display()
        ))?;
    }
    let fold = work.join("corpus.taridx");
    if !fold.exists() {
        measure::sh(&format!(
            "'{}' taridx index '{}' -o '{}'",
            binfmt.display(),
            tar.display(),
            fold.display()
        ))?;
    }
    Ok((archive, fold, tar))
}

/// Every regular file of the corpus, relative, with its size.
fn corpus_files(corpus: &Path) -> Result<Vec<(PathBuf, u64)>, String> {
    let mut files = Vec::new();
    let mut stack = vec![corpus.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
            let path = entry.map_err(|e| e.to_string())?.path();
            let meta = fs::symlink_metadata(&path).map_err(|e| e.to_string())?;
            if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file() {
                let relative = path.strip_prefix(corpus).map_err(|e| e.to_string())?;
                files.push((relative.to_owned(), meta.len()));
            }
        }
    }
    files.sort();
    Ok(files)
}

fn total(files: &[(PathBuf, u64)]) -> u64 {
    files.iter().map(|(_, size)| size).sum()
}

/// `stat` of every file; returns how many bytes they hold.
fn walk(root: &Path, files: &[(PathBuf, u64)]) -> Result<u64, String> {
    let mut bytes = 0;
    for (name, size) in files {
        let meta = fs::metadata(root.join(name)).map_err(|e| format!("{}: {e}", name.display()))?;
        if meta.len() != *size {
            return Err(format!(
                "{}: {} bytes, not {size}",
                name.display(),
                meta.len()
            ));
        }
        bytes += meta.len();
    }
    Ok(bytes)
}

/// Every file read whole.
fn read_all(root: &Path, files: &[(PathBuf, u64)]) -> Result<u64, String> {
    let mut buf = vec![0u8; 1 << 20];
    let mut bytes = 0;
    for (name, size) in files {
        let mut file =
            fs::File::open(root.join(name)).map_err(|e| format!("{}: {e}", name.display()))?;
        let mut read = 0u64;
        loop {
            let n = file
                .read(&mut buf)
                .map_err(|e| format!("{}: {e}", name.display()))?;
            if n == 0 {
                break;
            }
            read += n as u64;
        }
        if read != *size {
            return Err(format!("{}: read {read} bytes, not {size}", name.display()));
        }
        bytes += read;
    }
    Ok(bytes)
}

/// 4 KiB reads at pseudo-random offsets of pseudo-random files (the same
/// ones every run), weighted by size.
fn random_reads(root: &Path, files: &[(PathBuf, u64)]) -> Result<u64, String> {
    let all = total(files).max(1);
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut buf = vec![0u8; 4096];
    let mut bytes = 0;
    for _ in 0..RANDOM_READS {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let mut at = state % all;
        let Some((name, size)) = files.iter().find(|(_, size)| {
            if at < *size {
                true
            } else {
                at -= size;
                false
            }
        }) else {
            continue;
        };
        let offset = at.min(size.saturating_sub(4096));
        let file =
            fs::File::open(root.join(name)).map_err(|e| format!("{}: {e}", name.display()))?;
        bytes += file
            .read_at(&mut buf, offset)
            .map_err(|e| format!("{}: {e}", name.display()))? as u64;
    }
    Ok(bytes)
}

fn is_mounted(dir: &Path) -> bool {
    let dir = fs::canonicalize(dir).unwrap_or_else(|_| dir.to_owned());
    fs::read_to_string("/proc/self/mountinfo").is_ok_and(|info| {
        info.lines()
            .any(|line| line.split(' ').nth(4) == dir.to_str())
    })
}

/// Mounts with `mounter`, runs `work` on the mount, unmounts, and returns
/// the whole time.
fn timed(
    mounter: &Mounter,
    mnt: &Path,
    work: impl FnOnce(&Path) -> Result<u64, String>,
) -> Result<Duration, String> {
    let start = Instant::now();
    mounted(mounter, mnt, work)?;
    Ok(start.elapsed())
}

fn mounted(
    mounter: &Mounter,
    mnt: &Path,
    work: impl FnOnce(&Path) -> Result<u64, String>,
) -> Result<u64, String> {
    let (program, args) = mounter.argv.split_first().ok_or("an empty command")?;
    let mut child: Child = Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("{}: {e}", mounter.name))?;
    let waited = Instant::now();
    while !is_mounted(mnt) {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("{} exited {status} before mounting", mounter.name));
        }
        if waited.elapsed() > Duration::from_secs(600) {
            let _ = child.kill();
            return Err(format!("{}: not mounted after 10 minutes", mounter.name));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let outcome = work(mnt);
    let _ = Command::new("umount").arg(mnt).status();
    let _ = child.wait();
    outcome
}
