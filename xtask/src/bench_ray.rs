//! `cargo xtask bench ray`: `binfmt.ray` against Ray Data's own WebDataset
//! writer and reader (`Dataset.write_webdataset`, `ray.data.read_webdataset`)
//! on one Ray cluster, the same samples.
//!
//! Builds the Python package (release) into the venv (as `bench python`
//! does), then runs `crates/binfmt-python/bench/ray_bench.py` there against
//! the two-node cluster of `bash .ci/ray-cluster start` (one CPU a node):
//! the running one when `target/ray.env` names it, else one started here
//! and stopped at the end. The script prints its table: printed, and
//! returned for `--markdown`.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::bench_python::{install_package, run_command};

/// Stops the cluster this run started, however the run ends.
struct Cluster<'a> {
    root: &'a Path,
}

impl Drop for Cluster<'_> {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(self.root.join(".ci/ray-cluster"))
            .arg("stop")
            .status();
    }
}

/// Builds and installs the package, makes sure a cluster runs, and runs
/// the benchmark on `samples` samples; `dir` is where it writes.
pub fn run(root: &Path, python: &Path, dir: &Path, samples: usize) -> Result<String, String> {
    install_package(root, python, dir)?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), std::path::PathBuf::from);
    let _cluster = if target.join("ray.env").exists() {
        eprintln!(
            "using the running Ray cluster ({})",
            target.join("ray.env").display()
        );
        None
    } else {
        run_command(
            Command::new("bash")
                .arg(root.join(".ci/ray-cluster"))
                .arg("start"),
        )?;
        Some(Cluster { root })
    };
    let output = Command::new(python)
        .arg(root.join("crates/binfmt-python/bench/ray_bench.py"))
        .arg("--dir")
        .arg(dir.join("ray"))
        .arg("--samples")
        .arg(samples.to_string())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|error| format!("ray_bench.py: {error}"))?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    print!("{text}");
    if !output.status.success() {
        return Err(format!("ray_bench.py failed: {}", output.status));
    }
    Ok(text)
}
