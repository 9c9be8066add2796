//! Project automation, run as `cargo xtask <task>`.
//!
//! - `reference-fixtures`: remakes `fixtures/reference/`, files written by
//!   the reference implementations (Python `tarfile` and `kastore`, the iTar
//!   indexer, the `arcx` 0.3.0 tool), with `reference/make_reference_fixtures.py`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Debug, Subcommand)]
enum Task {
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.task {
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

fn reference_fixtures(python: &Path, glzn: &Path, arcx: &Path) -> Result<(), String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("xtask has no parent directory")?;
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
