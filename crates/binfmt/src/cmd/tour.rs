//! `binfmt tour DIR`: what the toolkit does, on the files in DIR.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use binfmt::{ConvertOptions, Format};
use sha2::{Digest, Sha256};

use crate::output::{self, CommandResult, Status};

/// Sniff every file under DIR, show what each holds, and carry one dataset
/// through all four formats and back, checking every entry's SHA-256.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  binfmt tour fixtures/")]
pub struct Args {
    /// A directory of files (the repository's fixtures/ is one).
    dir: PathBuf,
}

fn files_under(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(directory) = stack.pop() {
        let entries = std::fs::read_dir(&directory).map_err(|e| output::about(&directory, e))?;
        for entry in entries {
            let path = entry.map_err(|e| output::about(&directory, e))?.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// Every entry's SHA-256, by name.
fn digests(path: &Path) -> Result<BTreeMap<String, [u8; 32]>, String> {
    let source = binfmt::open(path)?;
    source
        .list()?
        .into_iter()
        .map(|entry| {
            let bytes = source.read(&entry.name)?;
            Ok((entry.name, Sha256::digest(&bytes).into()))
        })
        .collect()
}

pub fn run(args: &Args) -> CommandResult {
    let mut text = String::new();
    let _ = writeln!(text, "1. Formats, from magic bytes alone\n");
    let _ = writeln!(
        text,
        "| file | format | entries | bytes | note |\n|---|---|---:|---:|---|"
    );
    let mut dataset: Option<PathBuf> = None;
    for path in files_under(&args.dir)? {
        let format = binfmt::sniff(&path).map_err(|e| output::about(&path, e))?;
        if format == Format::Unknown {
            continue;
        }
        let shown = path
            .strip_prefix(&args.dir)
            .unwrap_or(&path)
            .display()
            .to_string();
        let (entries, bytes, note) = match binfmt::open(&path).and_then(|source| source.list()) {
            Ok(entries) => (
                entries.len().to_string(),
                entries
                    .iter()
                    .map(|entry| entry.size)
                    .sum::<u64>()
                    .to_string(),
                String::new(),
            ),
            Err(why) => {
                let prefix = format!("{}: ", path.display());
                let why = why.strip_prefix(&prefix).unwrap_or(&why).to_owned();
                ("-".to_owned(), "-".to_owned(), why)
            }
        };
        let _ = writeln!(
            text,
            "| {shown} | {format} | {entries} | {bytes} | {note} |"
        );
        if format == Format::Arcx && dataset.is_none() {
            dataset = Some(path);
        }
    }
    let dataset = dataset.ok_or_else(|| {
        format!(
            "{}: no ARCX archive to carry through the formats",
            args.dir.display()
        )
    })?;

    let _ = writeln!(
        text,
        "\n2. {} through every format and back\n",
        dataset
            .strip_prefix(&args.dir)
            .unwrap_or(&dataset)
            .display()
    );
    let _ = writeln!(
        text,
        "| step | format | entries | bytes on disk | every SHA-256 as in the original |\n|---|---|---:|---:|---|"
    );
    let original = digests(&dataset)?;
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    let steps = [
        (Format::Kast, work.path().join("tour.kas")),
        (Format::Par4, work.path().join("tour.par4")),
        (Format::Taridx, work.path().join("tour.taridx")),
        (Format::Arcx, work.path().join("back.arcx")),
    ];
    let mut input = dataset.clone();
    let mut all_match = true;
    for (number, (format, output)) in steps.iter().enumerate() {
        let summary = binfmt::convert(&input, output, *format, &ConvertOptions::default())?;
        let on_disk: u64 = summary
            .outputs
            .iter()
            .filter_map(|path| std::fs::metadata(path).ok())
            .map(|m| m.len())
            .sum();
        let same = digests(output)? == original;
        all_match &= same;
        let _ = writeln!(
            text,
            "| {} | {format} | {} | {on_disk} | {} |",
            number + 1,
            summary.entries,
            if same { "yes" } else { "NO" }
        );
        input = output.clone();
    }
    let _ = writeln!(
        text,
        "\n{}",
        if all_match {
            "Every entry survived every conversion."
        } else {
            "Some entries changed: see the table."
        }
    );
    output::print(&text)?;
    Ok(if all_match {
        Status::Success
    } else {
        Status::Failed
    })
}
