//! Commands that work on any supported file, through [`binfmt::open`].

use std::io::Write;
use std::path::PathBuf;

use crate::cmd::arcx::DialectArg;
use crate::output::{self, CommandResult, Status};

/// Show a file's format, entry count and total size.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  binfmt info data.arcx\n  binfmt info --json tables.trees")]
pub struct InfoArgs {
    /// A TARIDX index (with its shards beside it), ARCX, PAR4 or KAST file.
    file: PathBuf,
    /// Print a JSON object: {"path", "format", "entries", "bytes"}.
    #[arg(long)]
    json: bool,
}

/// List a file's entries, one per line: SIZE<TAB>NAME.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt list data.arcx\n  binfmt list --json shards/train.taridx"
)]
pub struct ListArgs {
    /// A TARIDX index (with its shards beside it), ARCX, PAR4 or KAST file.
    file: PathBuf,
    /// Print a JSON array of {"name", "size"} (and "kind" where the format has one).
    #[arg(long)]
    json: bool,
}

/// Write one entry's bytes to stdout (or -o OUT).
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt get data.arcx src/lib.rs\n  binfmt get shards/train.taridx s/000123.jpg -o 000123.jpg\n  binfmt get tables.trees nodes/time > time.f64"
)]
pub struct GetArgs {
    /// A TARIDX index (with its shards beside it), ARCX, PAR4 or KAST file.
    file: PathBuf,
    /// The entry's name, as `binfmt list` shows it.
    name: String,
    /// Where to write (default: stdout).
    #[arg(short, long)]
    output: Option<PathBuf>,
}

/// Write every entry to a file under DIR named by the entry.
///
/// Names that would land outside DIR (absolute, '..', empty components) are
/// refused, directories on the way are never followed through symlinks,
/// and each file appears whole or not at all.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt extract data.arcx out/\n  binfmt extract shards/train.taridx train/\n  binfmt extract tables.trees arrays/"
)]
pub struct ExtractArgs {
    /// A TARIDX index (with its shards beside it), ARCX, PAR4 or KAST file.
    file: PathBuf,
    /// The directory to write into (created if missing).
    dir: PathBuf,
}

/// Check everything the file's format can check.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  binfmt verify data.arcx")]
pub struct VerifyArgs {
    /// A TARIDX index (with its shards beside it), ARCX, PAR4 or KAST file.
    file: PathBuf,
}

#[derive(Debug, serde::Serialize)]
struct Info {
    path: String,
    format: binfmt::Format,
    entries: usize,
    bytes: u64,
}

pub fn info(args: &InfoArgs) -> CommandResult {
    let source = binfmt::open(&args.file)?;
    let entries = source.list().map_err(|e| output::about(&args.file, e))?;
    let info = Info {
        path: args.file.display().to_string(),
        format: source.format(),
        entries: entries.len(),
        bytes: entries
            .iter()
            .try_fold(0u64, |total, entry| total.checked_add(entry.size))
            .ok_or_else(|| {
                output::about(
                    &args.file,
                    "the entries' sizes add up to more than 2^64 bytes",
                )
            })?,
    };
    if args.json {
        output::print_json(&info)?;
    } else {
        output::print(&format!(
            "path: {}\nformat: {}\nentries: {}\nbytes: {}\n",
            info.path, info.format, info.entries, info.bytes
        ))?;
    }
    Ok(Status::Success)
}

pub fn list(args: &ListArgs) -> CommandResult {
    let source = binfmt::open(&args.file)?;
    let entries = source.list().map_err(|e| output::about(&args.file, e))?;
    if args.json {
        output::print_json(&entries)?;
    } else {
        output::to_stdout(|out| {
            entries
                .iter()
                .try_for_each(|entry| writeln!(out, "{}\t{}", entry.size, entry.name))
        })?;
    }
    Ok(Status::Success)
}

pub fn get(args: &GetArgs) -> CommandResult {
    let source = binfmt::open(&args.file)?;
    let bytes = source
        .read(&args.name)
        .map_err(|e| output::about(&args.file, e))?;
    match &args.output {
        Some(path) => {
            let mut out = binfmt_core::AtomicFile::create(path).map_err(|e| e.to_string())?;
            out.write_all(&bytes).map_err(|e| output::about(path, e))?;
            out.commit().map_err(|e| e.to_string())?;
        }
        None => output::to_stdout(|out| out.write_all(&bytes))?,
    }
    Ok(Status::Success)
}

pub fn extract(args: &ExtractArgs) -> CommandResult {
    let source = binfmt::open(&args.file)?;
    let bar = output::progress(0, "extracting");
    let count = binfmt::extract_with_progress(source.as_ref(), &args.dir, &|done, all| {
        bar.set_length(all);
        bar.set_position(done);
    });
    bar.finish_and_clear();
    let count = count.map_err(|e| output::about(&args.file, e))?;
    eprintln!("extracted {count} entries into {}", args.dir.display());
    Ok(Status::Success)
}

pub fn verify(args: &VerifyArgs) -> CommandResult {
    let source = binfmt::open(&args.file)?;
    source.verify().map_err(|e| output::about(&args.file, e))?;
    let entries = source.list().map_err(|e| output::about(&args.file, e))?;
    output::print(&format!(
        "{}: ok, {} {} entries\n",
        args.file.display(),
        entries.len(),
        source.format()
    ))?;
    Ok(Status::Success)
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum TargetArg {
    Taridx,
    Arcx,
    Kast,
    Par4,
}

/// Convert a file to another format, entry by entry, names and bytes
/// unchanged.
///
/// To taridx, OUT names the index, DIR/FOLD.taridx: the tar shards go beside
/// it as DIR/FOLD_0000.tar, DIR/FOLD_0001.tar, ... To kast, each entry
/// becomes a uint8 array; to par4, a HashMap<String, Vec<u8>>. A name the
/// target cannot hold is an error naming it; nothing is renamed.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt convert data.arcx data.kas --to kast\n  binfmt convert data.kas shards/train.taridx --to taridx --shard-size 1000000000\n  binfmt convert shards/train.taridx train.arcx --to arcx --dialect arcx-cli"
)]
pub struct ConvertArgs {
    /// A TARIDX index (with its shards beside it), ARCX, PAR4 or KAST file.
    input: PathBuf,
    /// The file to write (for taridx: DIR/FOLD.taridx).
    output: PathBuf,
    /// The target format.
    #[arg(long, value_enum)]
    to: TargetArg,
    /// ARCX only: the dialect to write.
    #[arg(long, value_enum, default_value = "spec")]
    dialect: DialectArg,
    /// TARIDX only: the largest shard in bytes (a sample is never split).
    #[arg(long, default_value_t = 1 << 30)]
    shard_size: u64,
    /// TARIDX only: the most samples in one shard.
    #[arg(long, default_value_t = u64::MAX, hide_default_value = true)]
    shard_samples: u64,
    /// TARIDX only: how member names become sample keys (glzn: the basename
    /// before its first dot; webdataset: the whole path before it).
    #[arg(long, value_enum, default_value = "glzn")]
    taridx_keys: crate::cmd::taridx::KeyRuleArg,
    /// PAR4 only: compress chunks with LZ4.
    #[arg(long)]
    lz4: bool,
}

pub fn convert(args: &ConvertArgs) -> CommandResult {
    let to = match args.to {
        TargetArg::Taridx => binfmt::Format::Taridx,
        TargetArg::Arcx => binfmt::Format::Arcx,
        TargetArg::Kast => binfmt::Format::Kast,
        TargetArg::Par4 => binfmt::Format::Par4,
    };
    let options = binfmt::ConvertOptions {
        arcx_dialect: args.dialect.into(),
        shard_size: args.shard_size,
        shard_samples: args.shard_samples,
        taridx_keys: args.taridx_keys.into(),
        par4_compression: if args.lz4 {
            binfmt_parcode::Compression::Lz4
        } else {
            binfmt_parcode::Compression::None
        },
    };
    let bar = output::progress(0, "converting");
    let summary =
        binfmt::convert_with_progress(&args.input, &args.output, to, &options, &|done, all| {
            bar.set_length(all);
            bar.set_position(done);
        });
    bar.finish_and_clear();
    let summary = summary?;
    eprintln!(
        "converted {} entries ({} bytes) to {}",
        summary.entries, summary.bytes, to
    );
    for output in &summary.outputs {
        eprintln!("wrote {}", output.display());
    }
    Ok(Status::Success)
}
