//! `binfmt tour DIR`: what the toolkit does, on the files in DIR.

use std::collections::{BTreeMap, HashSet};
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
            let entry = entry.map_err(|e| output::about(&directory, e))?;
            // Not followed through symlinks, so a link to a parent cannot loop.
            let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
            if is_dir {
                stack.push(entry.path());
            } else {
                files.push(entry.path());
            }
        }
    }
    files.sort();
    Ok(files)
}

/// The file in DIR that names the files meant to be refused, and why:
/// one `PATH<TAB>WHY` per line (PATH relative to DIR), `#` for comments.
const NOTES: &str = "tour-notes.tsv";

/// What `DIR/tour-notes.tsv` says, by path relative to DIR (none when the
/// file is absent). It is read through the input gate, like every input.
fn deliberate(dir: &Path) -> Result<BTreeMap<PathBuf, String>, String> {
    let path = dir.join(NOTES);
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(BTreeMap::new());
    }
    let text = binfmt_core::input::read_to_string(&path, 64 << 10, "tour notes")
        .map_err(|error| error.to_string())?;
    Ok(text
        .lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
        .filter_map(|line| line.split_once('\t'))
        .map(|(file, why)| (PathBuf::from(file.trim()), why.trim().to_owned()))
        .collect())
}

/// Every entry's SHA-256, by name.
fn digests(path: &Path) -> Result<BTreeMap<String, [u8; 32]>, String> {
    let source = binfmt::open(path).map_err(output::failed)?;
    source
        .list()
        .map_err(output::failed)?
        .into_iter()
        .map(|entry| {
            let mut hasher = Sha256::new();
            let mut reader = source.open(&entry.name).map_err(output::failed)?;
            std::io::copy(&mut reader, &mut hasher).map_err(|e| output::about(path, e))?;
            Ok((entry.name, hasher.finalize().into()))
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
    let files = files_under(&args.dir)?;
    let notes = deliberate(&args.dir)?;
    let mut refused_as_meant = 0;
    // Shards of a fold are shown with its index, not on rows of their own.
    let mut shards_of = BTreeMap::new();
    for path in files
        .iter()
        .filter(|path| path.extension().is_some_and(|ext| ext == "taridx"))
    {
        if let Ok(shards) = binfmt_taridx::find_shards(path) {
            shards_of.insert(path.clone(), shards);
        }
    }
    let shards: HashSet<PathBuf> = shards_of.values().flatten().cloned().collect();
    // The dataset carried through the formats: the ARCX archive with the
    // most entries (the first, on a tie).
    let mut dataset: Option<(usize, PathBuf)> = None;
    for path in files {
        let format = binfmt::sniff(&path).map_err(|e| output::about(&path, e))?;
        if format == Format::Unknown || shards.contains(&path) {
            continue;
        }
        let relative = path.strip_prefix(&args.dir).unwrap_or(&path);
        let shown = output::shown(relative);
        let (entries, bytes, note) = match binfmt::open(&path).and_then(|source| source.list()) {
            Ok(entries) => {
                if format == Format::Arcx
                    && dataset
                        .as_ref()
                        .is_none_or(|(most, _)| entries.len() > *most)
                {
                    dataset = Some((entries.len(), path.clone()));
                }
                let note =
                    shards_of
                        .get(&path)
                        .map_or_else(String::new, |shards| match shards.len() {
                            1 => "1 tar shard beside it".to_owned(),
                            count => format!("{count} tar shards beside it"),
                        });
                (
                    entries.len().to_string(),
                    entries
                        .iter()
                        .map(|entry| entry.size)
                        .sum::<u64>()
                        .to_string(),
                    note,
                )
            }
            Err(why) => {
                let why = why.to_string();
                let prefix = format!("{}: ", path.display());
                let why = why.strip_prefix(&prefix).unwrap_or(&why);
                // The reason, without the detail of where it was found.
                let why = binfmt_core::print::line(why.split(" (").next().unwrap_or(why));
                let why = match notes.get(relative) {
                    Some(meant) => {
                        refused_as_meant += 1;
                        format!(
                            "refused, as meant: {} (binfmt: {why})",
                            binfmt_core::print::line(meant)
                        )
                    }
                    None => why,
                };
                ("-".to_owned(), "-".to_owned(), why)
            }
        };
        let _ = writeln!(
            text,
            "| {shown} | {format} | {entries} | {bytes} | {note} |"
        );
    }
    if refused_as_meant > 0 {
        let _ = writeln!(
            text,
            "\n{refused_as_meant} of these files are meant to be refused: {} says why.",
            output::escape(&args.dir.join(NOTES).display().to_string())
        );
    }
    let (_, dataset) = dataset.ok_or_else(|| {
        format!(
            "{}: no ARCX archive to carry through the formats",
            args.dir.display()
        )
    })?;

    let _ = writeln!(
        text,
        "\n2. {} through every format and back\n",
        output::shown(dataset.strip_prefix(&args.dir).unwrap_or(&dataset))
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
        let summary = binfmt::convert(&input, output, *format, &ConvertOptions::default())
            .map_err(output::failed)?;
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
