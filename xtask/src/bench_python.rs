//! `cargo xtask bench python`: the Python package against the `kastore`
//! package and against `wids`, each in one Python process.
//!
//! Builds the package (release) with the venv's maturin, installs it into
//! the venv, and runs `crates/binfmt-python/bench/bench_kastore.py`
//! (`binfmt.kastore.load` against `kastore.load`, both engines, on a 1 GiB
//! file and on a 100,000-key file) and `bench_taridx.py`
//! (`binfmt.taridx.Dataset`'s `ds[i]` and `get_batch` against
//! `wids.ShardListDataset`, MosaicML `streaming` when it and torch are
//! installed, and a minimal reader of the same bytes as the machine's
//! limit, sides interleaved, medians; then `Sampler(10**9)`'s memory), and
//! `bench_stream.py` when the test servers run (`taridx.Stream` over a
//! local fold, HTTP and S3, cold and warm), which print their own tables:
//! printed, and returned for `--markdown`.

use std::path::Path;
use std::process::Command;

/// Builds, installs and runs the benchmark; `python` is the venv's
/// interpreter, `dir` where the benchmark writes its files. Returns what
/// the scripts printed (their tables), which is printed as it comes too.
pub fn run(root: &Path, python: &Path, dir: &Path) -> Result<String, String> {
    install_package(root, python, dir)?;
    std::fs::create_dir_all(dir).map_err(|error| format!("{}: {error}", dir.display()))?;
    let mut tables = String::new();
    for bench in ["bench_kastore.py", "bench_taridx.py"] {
        let output = Command::new(python)
            .arg(root.join("crates/binfmt-python/bench").join(bench))
            .arg("--dir")
            .arg(dir)
            .stderr(std::process::Stdio::inherit())
            .output()
            .map_err(|error| format!("{bench}: {error}"))?;
        let text = String::from_utf8_lossy(&output.stdout);
        print!("{text}");
        if !output.status.success() {
            return Err(format!("{bench} failed: {}", output.status));
        }
        if !tables.is_empty() {
            tables.push('\n');
        }
        tables.push_str(&text);
    }
    tables.push('\n');
    tables.push_str(&stream_over_servers(root, python, dir)?);
    Ok(tables)
}

/// `bench_stream.py` (a shuffled epoch through `taridx.Stream` over a local
/// fold and the same fold on the test servers, cold and warm), when the
/// servers run (`bash .ci/servers start`); a line saying so otherwise.
fn stream_over_servers(root: &Path, python: &Path, dir: &Path) -> Result<String, String> {
    let env = std::env::var_os("BINFMT_SERVERS_ENV")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join("target/servers.env"));
    if !env.is_file() {
        let line = "taridx.Stream over HTTP and S3 left out: the test servers are not running (bash .ci/servers start).\n";
        print!("{line}");
        return Ok(line.to_owned());
    }
    let output = Command::new(python)
        .arg(root.join("crates/binfmt-python/bench/bench_stream.py"))
        .arg("--dir")
        .arg(dir)
        .arg("--servers-env")
        .arg(&env)
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|error| format!("bench_stream.py: {error}"))?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    print!("{text}");
    if !output.status.success() {
        return Err(format!("bench_stream.py failed: {}", output.status));
    }
    Ok(text)
}

/// Builds the Python package (release) with the venv's maturin into
/// `dir/wheels` and installs it into the venv of `python`.
pub fn install_package(root: &Path, python: &Path, dir: &Path) -> Result<(), String> {
    let bin = python
        .parent()
        .ok_or_else(|| format!("{}: not a venv's python", python.display()))?;
    let wheels = dir.join("wheels");
    let _ = std::fs::remove_dir_all(&wheels);
    run_command(
        Command::new(bin.join("maturin"))
            .args(["build", "--release", "--quiet", "-m"])
            .arg(root.join("crates/binfmt-python/Cargo.toml"))
            .arg("-o")
            .arg(&wheels)
            .arg("-i")
            .arg(python)
            .env("PYO3_PYTHON", python),
    )?;
    let wheel = std::fs::read_dir(&wheels)
        .map_err(|error| format!("{}: {error}", wheels.display()))?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .find(|path| path.extension().is_some_and(|ext| ext == "whl"))
        .ok_or_else(|| format!("maturin wrote no wheel to {}", wheels.display()))?;
    run_command(
        Command::new(python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--force-reinstall",
                "--no-deps",
            ])
            .arg(&wheel),
    )
}

pub(crate) fn run_command(command: &mut Command) -> Result<(), String> {
    let status = command
        .status()
        .map_err(|error| format!("{:?}: {error}", command.get_program()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{:?} failed: {status}", command.get_program()))
    }
}
