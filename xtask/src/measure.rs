//! How every benchmark measures: the sides of a comparison run in turn,
//! run by run (so drift in the machine's load hits them alike), the page
//! cache warmed right before each measured round, medians with their
//! spread, fresh output directories, and the disk space a size needs.
//!
//! ```text
//! round 1: warm(inputs)  A  B  C      round 2: warm(inputs)  B  C  A   ...
//! ```
//!
//! The side that goes first rotates from round to round, so none always
//! runs right after the warming (or right after another side's writeback).

use std::fmt;
use std::fs;
use std::hint::black_box;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The timings of one side over its runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    runs: Vec<Duration>,
}

impl Stats {
    /// The timings of `runs`.
    pub fn new(mut runs: Vec<Duration>) -> Self {
        runs.sort();
        Self { runs }
    }

    /// The median (zero for no runs).
    pub fn median(&self) -> Duration {
        self.runs
            .get(self.runs.len() / 2)
            .copied()
            .unwrap_or_default()
    }

    /// The fastest run.
    pub fn min(&self) -> Duration {
        self.runs.first().copied().unwrap_or_default()
    }

    /// The slowest run.
    pub fn max(&self) -> Duration {
        self.runs.last().copied().unwrap_or_default()
    }

    /// Half the range of the runs, relative to the median: `0.05` for ±5%.
    pub fn spread(&self) -> f64 {
        let median = self.median().as_secs_f64();
        if median == 0.0 {
            return 0.0;
        }
        (self.max().as_secs_f64() - self.min().as_secs_f64()) / 2.0 / median
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ±{:.0}%",
            crate::report::show(self.median()),
            self.spread() * 100.0
        )
    }
}

/// One side of a comparison: run once, returns the time it took (a side
/// may leave setup out of its time, such as making a fresh directory).
pub type Side<'a> = Box<dyn FnMut() -> Result<Duration, String> + 'a>;

/// A side timed as a whole.
pub fn side<'a, T>(mut run: impl FnMut() -> Result<T, String> + 'a) -> Side<'a> {
    Box::new(move || {
        let start = Instant::now();
        black_box(run()?);
        Ok(start.elapsed())
    })
}

/// A side that is a shell command, its output discarded.
pub fn shell<'a>(command: impl Into<String>) -> Side<'a> {
    let command = command.into();
    side(move || sh(&command))
}

/// A side that is one program started directly (no shell in between, whose
/// own start would be added to both sides of a comparison), its output
/// discarded.
pub fn program<'a>(argv: Vec<String>) -> Side<'a> {
    side(move || {
        let (name, args) = argv.split_first().ok_or("an empty command line")?;
        run_quiet(Command::new(name).args(args), &argv.join(" "))
    })
}

/// `rounds` rounds of every side, interleaved: before each round the files
/// under `warm` are read (page cache warm), then each side runs once, the
/// first side rotating. Returns each side's timings, in the order given.
pub fn interleave(
    rounds: usize,
    warm: &[&Path],
    sides: &mut [Side<'_>],
) -> Result<Vec<Stats>, String> {
    let mut times = vec![Vec::with_capacity(rounds); sides.len()];
    for round in 0..rounds {
        warm_cache(warm)?;
        for k in 0..sides.len() {
            let i = (round + k) % sides.len();
            let (Some(side), Some(slot)) = (sides.get_mut(i), times.get_mut(i)) else {
                continue;
            };
            slot.push(side()?);
        }
    }
    Ok(times.into_iter().map(Stats::new).collect())
}

/// Reads every file under `paths` (files or directories), so that what a
/// run reads comes from the page cache.
pub fn warm_cache(paths: &[&Path]) -> Result<(), String> {
    let mut buffer = vec![0u8; 1 << 20];
    let mut stack: Vec<PathBuf> = paths.iter().map(|p| p.to_path_buf()).collect();
    while let Some(path) = stack.pop() {
        let metadata =
            fs::symlink_metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        if metadata.is_dir() {
            for entry in fs::read_dir(&path).map_err(|e| format!("{}: {e}", path.display()))? {
                stack.push(entry.map_err(|e| e.to_string())?.path());
            }
        } else if metadata.is_file() {
            let mut file = fs::File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            while file.read(&mut buffer).map_err(|e| e.to_string())? > 0 {}
        }
    }
    Ok(())
}

/// Runs `command` with `sh -c`, output discarded.
pub fn sh(command: &str) -> Result<(), String> {
    run_quiet(Command::new("sh").args(["-c", command]), command)
}

/// Runs `command` (shown as `shown` in errors) to its end, output
/// discarded; an error unless it succeeds.
fn run_quiet(command: &mut Command, shown: &str) -> Result<(), String> {
    let status = command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("`{shown}`: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{shown}` failed: {status}"))
    }
}

/// Fresh directories under a base, one per run, never reused. On disk they
/// are removed only when the whole benchmark is done: timing an extraction
/// right after `rm -rf` (and `sync`) of the previous one measures the file
/// system reclaiming inodes, not the extractor. On tmpfs, which has no
/// writeback and holds everything in memory, only the last `keep` stay.
#[derive(Debug)]
pub struct FreshDirs {
    base: PathBuf,
    next: u32,
    keep: Option<u32>,
}

impl FreshDirs {
    /// Directories under `base` (which is emptied first), all kept.
    pub fn new(base: impl Into<PathBuf>) -> Result<Self, String> {
        let base = base.into();
        if base.exists() {
            fs::remove_dir_all(&base).map_err(|e| format!("{}: {e}", base.display()))?;
        }
        fs::create_dir_all(&base).map_err(|e| format!("{}: {e}", base.display()))?;
        Ok(Self {
            base,
            next: 0,
            keep: None,
        })
    }

    /// Directories under `base` of which only the last `keep` are kept: for
    /// a tmpfs, where large outputs would fill memory.
    pub fn keeping(base: impl Into<PathBuf>, keep: u32) -> Result<Self, String> {
        let mut dirs = Self::new(base)?;
        dirs.keep = Some(keep.max(1));
        Ok(dirs)
    }

    fn path(&self, n: u32) -> PathBuf {
        self.base.join(format!("run-{n:03}"))
    }

    /// A path that does not exist yet (untimed: call it before the clock starts).
    pub fn next(&mut self) -> PathBuf {
        if let Some(keep) = self.keep
            && let Some(old) = (self.next + 1).checked_sub(keep)
            && old > 0
        {
            let _ = fs::remove_dir_all(self.path(old));
        }
        self.next += 1;
        self.path(self.next)
    }

    /// Where they are.
    pub fn base(&self) -> &Path {
        &self.base
    }
}

impl Drop for FreshDirs {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.base);
    }
}

/// Free bytes on the file system holding `path` (or its nearest existing
/// ancestor), from `df`.
pub fn free_bytes(path: &Path) -> u64 {
    let mut existing = path;
    while !existing.exists() {
        match existing.parent() {
            Some(parent) => existing = parent,
            None => return 0,
        }
    }
    let Ok(output) = Command::new("df").args(["-Pk"]).arg(existing).output() else {
        return 0;
    };
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .nth(1)
        .and_then(|line| line.split_whitespace().nth(3))
        .and_then(|kib| kib.parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// A tmpfs to extract into, when the machine has one (`/dev/shm`).
pub fn tmpfs() -> Option<PathBuf> {
    let shm = Path::new("/dev/shm");
    (shm.is_dir() && free_bytes(shm) > 0)
        .then(|| shm.join(format!("binfmt-bench-{}", std::process::id())))
}

/// Peak resident memory of `command` in bytes, from the children's rusage
/// (Python's `resource`).
pub fn peak_rss(command: &str) -> Result<u64, String> {
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
        .parse::<u64>()
        .map(|kib| kib * 1024)
        .map_err(|e| format!("{e}"))
}

/// Builds binfmt's release binary (once per benchmark run) and returns its path.
pub fn binfmt_binary() -> Result<PathBuf, String> {
    release_binary("binfmt", "binfmt")
}

/// Builds the release binary `bin` of `package` and returns its path; when
/// `XTASK_PREBUILT` names a directory (a machine with no cargo, given the
/// binaries built elsewhere), returns `$XTASK_PREBUILT/<bin>` instead.
pub fn release_binary(package: &str, bin: &str) -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("XTASK_PREBUILT") {
        let path = Path::new(&dir).join(bin);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!(
                "XTASK_PREBUILT: no {} (build it with cargo elsewhere)",
                path.display()
            ))
        };
    }
    let status = Command::new(env!("CARGO"))
        .args(["build", "--release", "--quiet", "-p", package, "--bin", bin])
        .status()
        .map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("building {bin} failed"));
    }
    Ok(Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/release")
        .join(bin))
}

/// Shell-quotes a path.
pub fn q(path: &Path) -> String {
    quote(&path.display().to_string())
}

/// Shell-quotes `text`.
pub fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_median_and_spread() {
        let ms = Duration::from_millis;
        let stats = Stats::new(vec![ms(12), ms(10), ms(11)]);
        assert_eq!(stats.median(), ms(11));
        assert!((stats.spread() - 1.0 / 11.0).abs() < 1e-9);
    }

    #[test]
    fn sides_rotate_and_each_runs_every_round() {
        let order = std::cell::RefCell::new(Vec::new());
        let mut sides: Vec<Side<'_>> = (0..3)
            .map(|i| {
                let order = &order;
                side(move || {
                    order.borrow_mut().push(i);
                    Ok(())
                })
            })
            .collect();
        let stats = interleave(3, &[], &mut sides).unwrap();
        assert_eq!(stats.len(), 3);
        assert_eq!(*order.borrow(), [0, 1, 2, 1, 2, 0, 2, 0, 1]);
    }
}
