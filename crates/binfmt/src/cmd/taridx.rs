//! `binfmt taridx ...`: index tar shards and read samples through an index.

use std::io::Write;
use std::path::{Path, PathBuf};

use binfmt_taridx::{Dataset, Index, IndexOptions, fold_shards, index_fold, index_shards};

use crate::cmd::generic;
use crate::output::{self, CommandResult, Status};

/// Index WebDataset-style tar shards and read samples at random.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    Index(IndexArgs),
    Info(InfoArgs),
    List(generic::ListArgs),
    Get(GetArgs),
    Extract(generic::ExtractArgs),
    Verify(generic::VerifyArgs),
}

/// Write a .taridx index of tar shards.
///
/// With --fold, index the shards ROOT/FOLD_*.tar (sorted by name, giving fids
/// 0, 1, ...) into ROOT/FOLD.taridx. With --out, index the given shards in
/// the given order. Only headers are read; shards are scanned in parallel,
/// and the index is the same whatever the number of jobs. A corrupt shard
/// fails with its name and byte offset and leaves no index behind.
#[derive(Debug, clap::Args)]
#[command(
    group(clap::ArgGroup::new("target").required(true).args(["fold", "output"])),
    after_help = "Examples:\n  binfmt taridx index data/ --fold train\n  binfmt taridx index -o val.taridx val_0000.tar val_0001.tar --jobs 4"
)]
pub struct IndexArgs {
    /// ROOT with --fold; the shards, in fid order, with --out.
    #[arg(required = true, value_name = "ROOT | SHARD")]
    inputs: Vec<PathBuf>,
    /// The fold to index: shards ROOT/FOLD_*.tar, index ROOT/FOLD.taridx.
    #[arg(long)]
    fold: Option<String>,
    /// Where to write the index of explicitly listed shards (with --fold:
    /// instead of ROOT/FOLD.taridx).
    #[arg(short, long, value_name = "OUT.taridx")]
    output: Option<PathBuf>,
    /// Shards scanned at once (default: one per core).
    #[arg(long, short)]
    jobs: Option<usize>,
}

/// Show an index's version, rows, stems, extensions, crash stems and contiguity.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt taridx info data/train.taridx\n  binfmt taridx info --json data/train.taridx"
)]
pub struct InfoArgs {
    /// The .taridx file.
    file: PathBuf,
    /// Print a JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// Write the payload(s) of one sample, found by stem.
///
/// The shards are INDEX's fold in its directory (or in --shards ROOT): an
/// index FOLD.taridx has shards FOLD_*.tar. With --ext, or when the sample
/// has one member, the payload goes to stdout (or -o FILE); otherwise -o
/// names a directory that receives STEM.EXT for every member.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt taridx get data/train.taridx 000123 --ext jpg > 000123.jpg\n  binfmt taridx get data/train.taridx 000123 -o sample/"
)]
pub struct GetArgs {
    /// The .taridx file.
    index: PathBuf,
    /// The sample's stem (the member's basename up to its first '.').
    stem: String,
    /// Only the member with this extension.
    #[arg(long)]
    ext: Option<String>,
    /// The directory holding the shards (default: the index's directory).
    #[arg(long, value_name = "ROOT")]
    shards: Option<PathBuf>,
    /// Where to write: a file for one payload, a directory for several.
    #[arg(short, long)]
    output: Option<PathBuf>,
}

pub fn run(command: &Command) -> CommandResult {
    match command {
        Command::Index(args) => index(args),
        Command::Info(args) => info(args),
        Command::Get(args) => get(args),
        Command::List(args) => generic::list(args, Some(binfmt::Format::Taridx)),
        Command::Extract(args) => generic::extract(args, Some(binfmt::Format::Taridx)),
        Command::Verify(args) => generic::verify(args, Some(binfmt::Format::Taridx)),
    }
}

fn index(args: &IndexArgs) -> CommandResult {
    let options = IndexOptions { jobs: args.jobs };
    for (input, output) in args.inputs.iter().zip(std::iter::repeat(&args.output)) {
        if let Some(output) = output {
            generic::refuse_overwriting_input(input, output)?;
        }
    }
    match (&args.fold, &args.output) {
        (Some(fold), None) => {
            let [root] = args.inputs.as_slice() else {
                output::usage_error("--fold takes exactly one ROOT directory")
            };
            let shards = fold_shards(root, fold).map_err(|error| output::about(root, error))?;
            let bar = output::progress(shards.len() as u64, "indexing shards");
            let path = index_fold(root, fold, options, || bar.inc(1))
                .map_err(|error| error.to_string())?;
            bar.finish_and_clear();
            eprintln!("wrote {}", path.display());
        }
        (None, Some(out)) => {
            let bar = output::progress(args.inputs.len() as u64, "indexing shards");
            let builder = index_shards(&args.inputs, options, || bar.inc(1))
                .map_err(|error| error.to_string())?;
            bar.finish_and_clear();
            builder
                .write_file(out)
                .map_err(|error| output::about(out, error))?;
            eprintln!("wrote {}", out.display());
        }
        _ => output::usage_error("give either --fold FOLD or -o OUT.taridx"),
    }
    Ok(Status::Success)
}

#[derive(Debug, serde::Serialize)]
struct Info<'a> {
    path: String,
    version: String,
    rows: usize,
    stems: u64,
    extensions: &'a [String],
    crash_stems: &'a [String],
    contiguous: bool,
}

fn info(args: &InfoArgs) -> CommandResult {
    let index = Index::open(&args.file).map_err(|error| output::about(&args.file, error))?;
    let (major, minor) = index.version();
    let info = Info {
        path: args.file.display().to_string(),
        version: format!("{major}.{minor}"),
        rows: index.rows().len(),
        stems: index.n_stems(),
        extensions: index.extensions(),
        crash_stems: index.crash_stems(),
        contiguous: index.is_contiguous(),
    };
    if args.json {
        output::print_json(&info)?;
    } else {
        output::print(&format!(
            "path: {}\nformat: taridx {}\nrows: {}\nstems: {}\nextensions: {}\ncrash stems: {}\ncontiguous: {}\n",
            info.path,
            info.version,
            info.rows,
            info.stems,
            info.extensions
                .iter()
                .map(|ext| if ext.is_empty() { "(none)" } else { ext })
                .collect::<Vec<_>>()
                .join(", "),
            info.crash_stems.len(),
            if info.contiguous { "yes" } else { "no" },
        ))?;
    }
    Ok(Status::Success)
}

fn get(args: &GetArgs) -> CommandResult {
    let fold = args
        .index
        .file_stem()
        .and_then(|stem| stem.to_str())
        .ok_or_else(|| output::about(&args.index, "the index file name has no fold name"))?;
    let root = match &args.shards {
        Some(root) => root.clone(),
        None => args
            .index
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
    };
    let shards = fold_shards(&root, fold).map_err(|error| error.to_string())?;
    let dataset =
        Dataset::open(&args.index, &shards).map_err(|error| output::about(&args.index, error))?;
    let mut rows = dataset
        .lookup_verified(&args.stem)
        .map_err(|error| output::about(&args.index, error))?;
    if let Some(ext) = &args.ext {
        rows.retain(|row| dataset.extension(row) == Some(ext.as_str()));
    }
    let missing = || {
        output::about(
            &args.index,
            format!(
                "no member with stem {:?}{}",
                args.stem,
                args.ext
                    .as_ref()
                    .map(|e| format!(" and extension {e:?}"))
                    .unwrap_or_default()
            ),
        )
    };
    match rows.as_slice() {
        [] => Err(missing()),
        [row] => {
            let payload = dataset
                .payload(row)
                .map_err(|error| output::about(&args.index, error))?;
            match &args.output {
                Some(path) => write_file(path, payload)?,
                None => output::to_stdout(|out| out.write_all(payload))?,
            }
            Ok(Status::Success)
        }
        several => {
            let Some(dir) = &args.output else {
                let exts: Vec<&str> = several
                    .iter()
                    .filter_map(|row| dataset.extension(row))
                    .collect();
                output::usage_error(format!(
                    "stem {:?} has {} members ({}): choose one with --ext, or write all with -o DIR",
                    args.stem,
                    several.len(),
                    exts.join(", ")
                ))
            };
            std::fs::create_dir_all(dir).map_err(|error| output::about(dir, error))?;
            for row in several {
                let ext = dataset.extension(row).unwrap_or_default();
                let name = if ext.is_empty() {
                    args.stem.clone()
                } else {
                    format!("{}.{ext}", args.stem)
                };
                let payload = dataset
                    .payload(row)
                    .map_err(|error| output::about(&args.index, error))?;
                write_file(&dir.join(name), payload)?;
            }
            Ok(Status::Success)
        }
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let mut file = binfmt_core::AtomicFile::create(path).map_err(|error| error.to_string())?;
    file.write_all(bytes)
        .map_err(|error| output::about(path, error))?;
    file.commit().map_err(|error| error.to_string())
}
