//! Project automation, run as `cargo xtask <task>`.
//!
//! - `fixtures`: remakes `fixtures/generated/`, small files of every format
//!   and dialect written by this project's writers (see [`xtask::fixtures`]).
//! - `bench [arcx|arcx-text|kast|par4|taridx|remote|python] [--scale]`: this
//!   project's code next to the reference implementations, every format
//!   whose reference is installed (or one), printed as one table: sides
//!   interleaved run by run after warming the page cache, medians with
//!   their spread, and each operation's machine limit (a minimal program,
//!   [`limits`]); `--scale` adds each main operation at 10x and 100x its
//!   size; `--threads N` (default: every core) sets the thread count of
//!   the many-thread runs (TARIDX index, ARCX pack), each printed with its
//!   1→N speed-up next to the limit's own. `bench python` builds the Python package and times
//!   `binfmt.kastore` against the `kastore` package and
//!   `binfmt.taridx.Dataset` against `wids`. `bench ray` builds it too and
//!   times `binfmt.ray` against Ray Data's WebDataset writer and reader on
//!   a two-node Ray cluster (`--ray-samples`, 1,000,000 by default).
//!   `bench scaling` runs only the many-core rows (TARIDX index, ARCX pack
//!   and extract on 1 and `--threads` threads, beside `tar | zstd` and the
//!   limits); it needs no reference tool, and with `XTASK_PREBUILT` and
//!   `XTASK_WORKSPACE` it runs where there is no cargo (xtask/device/).
//!   With `--markdown`, the table (or the Python benchmarks' tables) also
//!   goes into `docs/benchmarks.md`, stamped with the command, the machine
//!   and the date ([`xtask::bench_page`]).
//! - `fuzz --seconds N [TARGET...]`: the libFuzzer targets of `fuzz/`.
//! - `reference-fixtures`: remakes `fixtures/reference/`, files written by
//!   the reference implementations (Python `tarfile` and `kastore`, the iTar
//!   indexer, the `arcx` 0.3.0 tool), with `reference/make_reference_fixtures.py`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::{Parser, Subcommand, ValueEnum};

mod bench;
mod bench_arcx;
mod bench_arcx_size;
mod bench_mount;
mod bench_par4;
mod bench_python;
mod bench_ray;
mod bench_remote;
mod bench_scaling;
mod fuzz;
mod limits;
mod measure;
mod report;
mod text_corpus;

#[derive(Debug, Parser)]
#[command(name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Debug, Subcommand)]
enum Task {
    /// Remake fixtures/generated/ with this project's writers.
    Fixtures {
        /// Where to write them (default: fixtures/generated in the workspace).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Benchmark every format (or one) against its reference
    /// implementation and print one table.
    Bench {
        /// Only this format (default: every format whose reference is installed).
        format: Option<BenchFormat>,
        /// Python with the reference packages (.ci/setup-interop makes it).
        #[arg(long, default_value = "target/interop/venv/bin/python")]
        python: PathBuf,
        /// Where to write the benchmark's files.
        #[arg(long, default_value = "target/bench")]
        dir: PathBuf,
        /// A checkout of the iTar indexer (dsb-ifi/glzn), for `taridx`.
        #[arg(long)]
        glzn: Option<PathBuf>,
        /// The arcx 0.3.0 binary, for `arcx`.
        #[arg(long, default_value = "target/interop/cargo/bin/arcx")]
        arcx: PathBuf,
        /// Also time each main operation at 10x and (where the disk
        /// allows) 100x its default size, flagging super-linear growth.
        #[arg(long)]
        scale: bool,
        /// MB of each text corpus of `arcx` and `arcx-text` (the size/get
        /// trade-off table).
        #[arg(long, default_value_t = 24)]
        text_mb: u64,
        /// Also write the table into docs/benchmarks.md (its block for this
        /// run: every format, or the one asked for), stamped with the
        /// command, the machine and the date.
        #[arg(long)]
        markdown: bool,
        /// Threads of the many-thread runs (TARIDX index, ARCX pack), each
        /// next to a one-thread run, with both speed-ups printed: binfmt's
        /// and its machine limit's (default: every core).
        #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
        threads: Option<u16>,
        /// Samples of `bench ray`.
        #[arg(long, default_value_t = 1_000_000)]
        ray_samples: usize,
    },
    /// Run the fuzz targets of fuzz/ (cargo-fuzz, nightly) for a while each.
    Fuzz {
        /// Seconds per target.
        #[arg(long, default_value_t = 60)]
        seconds: u64,
        /// Only these targets (default: all).
        targets: Vec<String>,
    },
    /// Remake fixtures/reference/ with the reference tools.
    ReferenceFixtures {
        /// Python interpreter with the `kastore` and `xxhash` packages.
        #[arg(long, default_value = "python3")]
        python: PathBuf,
        /// A checkout of the iTar indexer (dsb-ifi/glzn), for the .taridx file.
        #[arg(long)]
        glzn: PathBuf,
        /// The `arcx` 0.3.0 binary, for the .arcx file.
        #[arg(long, default_value = "arcx")]
        arcx: PathBuf,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum BenchFormat {
    Arcx,
    /// Only the text corpora of `arcx` and its size/get trade-off table
    /// (no arcx 0.3.0 needed).
    ArcxText,
    Kast,
    Par4,
    Taridx,
    /// The Python package against the `kastore` package and `wids` (only
    /// when asked for: it builds the package in release mode first).
    Python,
    /// Reading over HTTP from the test nginx (`bash .ci/servers start`).
    Remote,
    /// Mounted files through FUSE, next to `arcx mount` and ratarmount.
    Mount,
    /// `binfmt.ray` against Ray Data's WebDataset writer and reader on a
    /// two-node Ray cluster (only when asked for: it builds the package).
    Ray,
    /// The many-core rows: TARIDX index and ARCX pack on 1 and `--threads`
    /// threads and ARCX extract, next to `tar | zstd` and the limits (only
    /// when asked for; needs no reference tool, so it runs from prebuilt
    /// binaries: `XTASK_PREBUILT`, xtask/device/).
    Scaling,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.task {
        Task::Fixtures { out } => {
            fixtures(&out.unwrap_or_else(|| workspace_root().join("fixtures/generated")))
        }
        Task::Bench {
            format,
            python,
            dir,
            glzn,
            arcx,
            scale,
            text_mb,
            markdown,
            threads,
            ray_samples,
        } => bench(
            format,
            &bench::Settings {
                dir,
                python,
                scale,
                text_mb,
                threads: threads.map_or_else(bench::cores, usize::from),
            },
            ray_samples,
            glzn.as_deref(),
            &arcx,
        )
        .and_then(|(key, table)| {
            if markdown {
                xtask::bench_page::write(workspace_root(), key, &invocation(), &table)
            } else {
                Ok(())
            }
        }),
        Task::Fuzz { seconds, targets } => fuzz::run(workspace_root(), seconds, &targets),
        Task::ReferenceFixtures { python, glzn, arcx } => reference_fixtures(&python, &glzn, &arcx),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

/// This run's command line, as `cargo xtask ...`.
fn invocation() -> String {
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    format!("cargo xtask {}", args.join(" "))
}

/// Runs the benchmarks of `only` (or of every format whose reference tool
/// is there) into one report, and prints it. Returns the key of this kind
/// of run on the benchmarks page (`all`, or the format's name) and the
/// Markdown printed.
fn bench(
    only: Option<BenchFormat>,
    settings: &bench::Settings,
    ray_samples: usize,
    glzn: Option<&Path>,
    arcx: &Path,
) -> Result<(&'static str, String), String> {
    let (python, dir) = (settings.python.as_path(), settings.dir.as_path());
    if only == Some(BenchFormat::Python) {
        let tables = bench_python::run(workspace_root(), python, &dir.join("python"))?;
        return Ok(("python", tables));
    }
    if only == Some(BenchFormat::Ray) {
        let table = bench_ray::run(workspace_root(), python, dir, ray_samples)?;
        return Ok(("ray", table));
    }
    let mut report = report::Report::default();
    let formats = only.map_or_else(
        || {
            vec![
                BenchFormat::Taridx,
                BenchFormat::Arcx,
                BenchFormat::Par4,
                BenchFormat::Kast,
                BenchFormat::Remote,
                BenchFormat::Mount,
            ]
        },
        |format| vec![format],
    );
    for format in formats {
        // Why a format's reference is not there, if it is not.
        let missing = match format {
            BenchFormat::Kast => (!python.exists())
                .then(|| format!("no Python with kastore at {}", python.display())),
            BenchFormat::Taridx => match glzn {
                None => Some("no --glzn CHECKOUT (a checkout of dsb-ifi/glzn)".to_owned()),
                Some(_) if !python.exists() => Some(format!("no Python at {}", python.display())),
                Some(_) => None,
            },
            BenchFormat::Arcx => {
                (!arcx.exists()).then(|| format!("no arcx 0.3.0 at {}", arcx.display()))
            }
            BenchFormat::Par4
            | BenchFormat::ArcxText
            | BenchFormat::Python
            | BenchFormat::Ray
            | BenchFormat::Scaling => None,
            BenchFormat::Mount => {
                if !arcx.exists() {
                    Some(format!("no arcx 0.3.0 at {}", arcx.display()))
                } else if std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open("/dev/fuse")
                    .is_err()
                {
                    Some("/dev/fuse cannot be opened".to_owned())
                } else {
                    None
                }
            }
            BenchFormat::Remote => {
                if !arcx.exists() {
                    Some(format!("no arcx 0.3.0 at {}", arcx.display()))
                } else if binfmt_tests::interop::servers().is_none() {
                    Some("the test servers are not running (bash .ci/servers start)".to_owned())
                } else {
                    None
                }
            }
        };
        let name = format!("{format:?}").to_lowercase();
        if let Some(why) = missing {
            if only.is_some() {
                return Err(format!("bench {name}: {why}"));
            }
            eprintln!("skipping {name}: {why}");
            report.note(format!("{name}: not measured ({why})."));
            continue;
        }
        eprintln!("benchmarking {name}");
        match (format, glzn) {
            (BenchFormat::Kast, _) => bench::kast(settings, &mut report)?,
            (BenchFormat::Taridx, Some(glzn)) => bench::taridx(settings, glzn, &mut report)?,
            (BenchFormat::Taridx, None) => {}
            (BenchFormat::Arcx, _) => bench_arcx::run(settings, arcx, &mut report)?,
            (BenchFormat::ArcxText, _) => bench_arcx::run_text(settings, &mut report)?,
            (BenchFormat::Scaling, _) => bench_scaling::run(settings, &mut report)?,
            (BenchFormat::Par4, _) => bench_par4::run(&dir.join("par4"), &mut report)?,
            (BenchFormat::Python | BenchFormat::Ray, _) => {}
            (BenchFormat::Remote, _) => bench_remote::run(dir, arcx, &mut report)?,
            (BenchFormat::Mount, _) => bench_mount::run(dir, arcx, &mut report)?,
        }
    }
    let table = report.markdown();
    print!("{table}");
    let key = match only {
        None => "all",
        Some(BenchFormat::Arcx) => "arcx",
        Some(BenchFormat::ArcxText) => "arcx-text",
        Some(BenchFormat::Kast) => "kast",
        Some(BenchFormat::Par4) => "par4",
        Some(BenchFormat::Taridx) => "taridx",
        Some(BenchFormat::Python) => "python",
        Some(BenchFormat::Remote) => "remote",
        Some(BenchFormat::Mount) => "mount",
        Some(BenchFormat::Ray) => "ray",
        Some(BenchFormat::Scaling) => "scaling",
    };
    Ok((key, table))
}

/// The repository: where this xtask was built, or `XTASK_WORKSPACE` when set
/// (a copy of the repository on a machine the binary was carried to).
fn workspace_root() -> &'static Path {
    static ROOT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| match std::env::var_os("XTASK_WORKSPACE") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
            manifest.parent().unwrap_or(manifest).to_owned()
        }
    })
}

fn fixtures(out: &Path) -> Result<(), String> {
    // Files a writer no longer makes must not linger, but only a directory
    // this task wrote is ever removed.
    if out.exists() {
        let readme = std::fs::read_to_string(out.join("README.md")).unwrap_or_default();
        if !readme.starts_with(xtask::fixtures::README_TITLE) {
            return Err(format!(
                "{} exists and was not written by `cargo xtask fixtures`; choose another --out",
                out.display()
            ));
        }
        std::fs::remove_dir_all(out).map_err(|error| format!("{}: {error}", out.display()))?;
    }
    let written = xtask::fixtures::generate(out)?;
    println!("wrote {} fixtures into {}", written.len(), out.display());
    Ok(())
}

fn reference_fixtures(python: &Path, glzn: &Path, arcx: &Path) -> Result<(), String> {
    let root = workspace_root();
    // Shards written by `binfmt convert`; the script replaces each index
    // with the reference indexer's.
    let converted = root.join("fixtures/reference/converted");
    if converted.exists() {
        std::fs::remove_dir_all(&converted)
            .map_err(|error| format!("{}: {error}", converted.display()))?;
    }
    xtask::fixtures::convert_folds(&root.join("fixtures/generated"), &converted)?;
    run(Command::new(python)
        .arg(root.join("xtask/reference/make_reference_fixtures.py"))
        .arg(root.join("fixtures/reference"))
        .arg("--glzn")
        .arg(glzn)
        .arg("--arcx")
        .arg(arcx))
}

fn run(command: &mut Command) -> Result<(), String> {
    let status = command
        .status()
        .map_err(|error| format!("{command:?}: {error}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{command:?} failed: {status}"))
    }
}
