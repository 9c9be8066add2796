//! `cargo xtask fuzz --seconds N [TARGET...]`: runs each libFuzzer target of
//! `fuzz/` for N seconds with cargo-fuzz (which needs a nightly toolchain:
//! `cargo +nightly install cargo-fuzz`), seeded from the fixtures, with an
//! RSS limit of 2 GiB and a single-allocation limit of 512 MiB, and prints
//! the executions and the outcome of each.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Each target and the fixture file names that seed it.
/// Structure-aware targets (`taridx_structured`, `arcx_manifest`, `par4_graph`, `kast_items`,
/// `remote_cache`, `dali_idx`, `ratarmount_import`)
/// take no file seeds: their input is the structure's `arbitrary` encoding.
const TARGETS: [(&str, &[&str]); 16] = [
    ("taridx_index", &["taridx"]),
    ("tar_shard", &["tar"]),
    ("taridx_structured", &[]),
    ("arcx", &["arcx"]),
    ("arcx_manifest", &[]),
    ("par4", &["par4"]),
    ("par4_graph", &[]),
    ("kast", &["kas", "trees"]),
    ("kast_items", &[]),
    ("open_any", &["taridx", "tar", "arcx", "par4", "kas"]),
    ("npy_header", &["npy"]),
    ("remote_url", &[]),
    ("remote_cache", &[]),
    ("wids_list", &["json"]),
    ("dali_idx", &[]),
    ("ratarmount_import", &[]),
];

/// Every file under `dir` whose extension is one of `extensions`.
fn seeds(dir: &Path, extensions: &[&str], found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            seeds(&path, extensions, found);
        } else if path
            .extension()
            .and_then(|ext| ext.to_str())
            .is_some_and(|ext| extensions.contains(&ext))
        {
            found.push(path);
        }
    }
}

/// Runs the chosen targets (all when `only` is empty) for `seconds` each.
pub fn run(root: &Path, seconds: u64, only: &[String]) -> Result<(), String> {
    let fuzz_dir = root.join("fuzz");
    let mut rows = Vec::new();
    for (target, extensions) in TARGETS {
        if !only.is_empty() && !only.iter().any(|name| name == target) {
            continue;
        }
        // The corpus grows across runs; it lives under target/, not in git.
        let corpus = root.join("target/fuzz-corpus").join(target);
        std::fs::create_dir_all(&corpus).map_err(|e| format!("{}: {e}", corpus.display()))?;
        let mut seed_files = Vec::new();
        seeds(&root.join("fixtures"), extensions, &mut seed_files);
        // Hostile inputs built by hand are seeds too.
        seeds(&root.join("tests/regressions"), extensions, &mut seed_files);
        if extensions.contains(&"kas") {
            // The kastore project's own conformance files, valid and malformed.
            seeds(
                &root.join("../shared/kastore-test-data"),
                &["kas"],
                &mut seed_files,
            );
        }
        let seed_dir = root.join("target/fuzz-seeds").join(target);
        std::fs::create_dir_all(&seed_dir).map_err(|e| format!("{}: {e}", seed_dir.display()))?;
        for (number, seed) in seed_files.iter().enumerate() {
            std::fs::copy(seed, seed_dir.join(format!("seed-{number:04}")))
                .map_err(|e| format!("{}: {e}", seed.display()))?;
        }
        eprintln!(
            "fuzzing {target} for {seconds} s from {} seeds",
            seed_files.len()
        );
        let output = Command::new("cargo")
            .current_dir(&fuzz_dir)
            .args(["+nightly", "fuzz", "run", "-O", target])
            .arg(&corpus)
            .arg(&seed_dir)
            .arg("--")
            .arg(format!("-max_total_time={seconds}"))
            // An allocation or a resident set beyond these is a finding.
            .arg("-rss_limit_mb=2048")
            .arg("-malloc_limit_mb=512")
            .arg("-print_final_stats=1")
            .output()
            .map_err(|e| format!("cargo fuzz: {e}"))?;
        let log = String::from_utf8_lossy(&output.stderr);
        let executions = log
            .lines()
            .find_map(|line| line.strip_prefix("stat::number_of_executed_units:"))
            .map_or_else(|| "?".to_owned(), |n| n.trim().to_owned());
        let outcome = if output.status.success() {
            "no crash".to_owned()
        } else {
            let last: Vec<&str> = log.lines().rev().take(30).collect();
            eprintln!("{}", last.into_iter().rev().collect::<Vec<_>>().join("\n"));
            format!("FAILED ({})", output.status)
        };
        rows.push(format!(
            "| {target} | {seconds} s | {executions} | {outcome} |"
        ));
    }
    println!("| target | time | executions | outcome |\n|---|---:|---:|---|");
    for row in &rows {
        println!("{row}");
    }
    if rows.iter().any(|row| row.contains("FAILED")) {
        return Err("a fuzz target failed; the crashing input is under fuzz/artifacts/".into());
    }
    Ok(())
}
