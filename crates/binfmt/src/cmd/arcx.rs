//! `binfmt arcx ...`: ARCX archives, either dialect.

use std::path::PathBuf;

use binfmt_arcx::{Archive, Dialect, PackOptions};

use crate::output::{self, CommandResult, Status};

/// Pack directories into ARCX archives and get files out of them.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    Pack(PackArgs),
    List(ListArgs),
    Info(ListArgs),
    Get(GetArgs),
    Extract(ExtractArgs),
    Verify(VerifyArgs),
}

/// `--dialect`, for `arcx pack` and `convert --to arcx`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum DialectArg {
    /// The layout of the format's specification (default).
    Spec,
    /// What the arcx 0.3.0 tool reads and writes.
    ArcxCli,
}

impl From<DialectArg> for Dialect {
    fn from(dialect: DialectArg) -> Self {
        match dialect {
            DialectArg::Spec => Dialect::Spec,
            DialectArg::ArcxCli => Dialect::ArcxCli,
        }
    }
}

/// Pack the regular files under DIR into an archive.
///
/// Files are taken in sorted order; symlinks are not followed (each one
/// skipped is named on stderr). Small files share blocks; large files are
/// streamed in block-sized chunks, so memory stays bounded. The archive is
/// the same for any --jobs, and appears only when complete.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt arcx pack src/ src.arcx\n  binfmt arcx pack data/ data.arcx --dialect arcx-cli --level 9 --jobs 4"
)]
pub struct PackArgs {
    /// The directory to pack.
    dir: PathBuf,
    /// The archive to write.
    out: PathBuf,
    /// Which layout to write.
    #[arg(long, value_enum, default_value = "spec")]
    dialect: DialectArg,
    /// zstd level, 1 (fastest) to 22 (smallest).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(i32).range(1..=22))]
    level: i32,
    /// Files smaller than this share blocks of up to this many bytes.
    #[arg(long, default_value_t = 256 * 1024, value_parser = clap::value_parser!(u64).range(1024..=(64 << 20)))]
    block_size: u64,
    /// Larger files are cut into chunks of this many bytes, one block each
    /// (at least the block size).
    #[arg(long, default_value_t = 1024 * 1024, value_parser = clap::value_parser!(u64).range(1024..=(64 << 20)))]
    chunk_size: u64,
    /// Threads compressing blocks (default: one per core).
    #[arg(long, short)]
    jobs: Option<usize>,
}

/// List the files of an archive (info: the archive's layout and totals).
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt arcx list src.arcx\n  binfmt arcx list --json src.arcx\n  binfmt arcx info src.arcx"
)]
pub struct ListArgs {
    /// The archive.
    file: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Write one file of an archive to stdout (or -o OUT).
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt arcx get src.arcx src/lib.rs\n  binfmt arcx get data.arcx big/table.csv -o table.csv"
)]
pub struct GetArgs {
    /// The archive.
    file: PathBuf,
    /// The file's path inside the archive.
    path: String,
    /// Where to write (default: stdout).
    #[arg(short, long)]
    output: Option<PathBuf>,
}

/// Extract every file into DIR.
///
/// Refuses entries with absolute paths, `..` components or NUL bytes, and
/// never writes through a symlink; each file appears only once its SHA-256
/// has been checked.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  binfmt arcx extract src.arcx restored/")]
pub struct ExtractArgs {
    /// The archive.
    file: PathBuf,
    /// The directory to extract into (created if missing).
    dir: PathBuf,
}

/// Check every block's CRC32 and every file's SHA-256.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  binfmt arcx verify src.arcx")]
pub struct VerifyArgs {
    /// The archive.
    file: PathBuf,
}

pub fn run(command: &Command) -> CommandResult {
    match command {
        Command::Pack(args) => pack(args),
        Command::List(args) => list(args),
        Command::Info(args) => info(args),
        Command::Get(args) => get(args),
        Command::Extract(args) => extract(args),
        Command::Verify(args) => verify(args),
    }
}

fn open(path: &std::path::Path) -> Result<Archive, String> {
    Archive::open(path).map_err(|error| output::about(path, error))
}

fn pack(args: &PackArgs) -> CommandResult {
    let options = PackOptions {
        dialect: args.dialect.into(),
        level: args.level,
        block_size: usize::try_from(args.block_size).unwrap_or(256 << 10),
        chunk_size: usize::try_from(args.chunk_size).unwrap_or(1 << 20),
        jobs: args.jobs,
    };
    let total = binfmt_arcx::walk(&args.dir)
        .map(|walk| binfmt_arcx::walked_size(&walk))
        .map_err(|error| output::about(&args.dir, error))?;
    let bar = output::progress(total, "packing");
    let summary = binfmt_arcx::pack_dir(&args.dir, &args.out, options, |bytes| bar.inc(bytes))
        .map_err(|error| error.to_string())?;
    bar.finish_and_clear();
    for skipped in &summary.skipped {
        eprintln!("skipped {}: {}", skipped.path.display(), skipped.why);
    }
    eprintln!(
        "packed {} files ({} bytes) into {} ({} bytes, {} blocks, {} dialect)",
        summary.files,
        summary.bytes_in,
        args.out.display(),
        summary.archive_size,
        summary.blocks,
        options.dialect.name()
    );
    Ok(Status::Success)
}

#[derive(Debug, serde::Serialize)]
struct Listed<'a> {
    path: &'a str,
    size: u64,
    sha256: String,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn list(args: &ListArgs) -> CommandResult {
    let archive = open(&args.file)?;
    if args.json {
        let listed: Vec<Listed<'_>> = archive
            .files()
            .iter()
            .map(|file| Listed {
                path: &file.path,
                size: file.size,
                sha256: hex(&file.sha256),
            })
            .collect();
        output::print_json(&listed)?;
    } else {
        output::to_stdout(|out| {
            archive
                .files()
                .iter()
                .try_for_each(|file| writeln!(out, "{}\t{}", file.size, file.path))
        })?;
    }
    Ok(Status::Success)
}

#[derive(Debug, serde::Serialize)]
struct Info {
    path: String,
    dialect: &'static str,
    files: usize,
    bytes: u64,
    blocks: usize,
    stored_bytes: u64,
    archive_size: u64,
    block_size: u64,
    chunk_size: u64,
    zstd_level: u64,
}

fn info(args: &ListArgs) -> CommandResult {
    let archive = open(&args.file)?;
    let manifest = archive.manifest();
    let info = Info {
        path: args.file.display().to_string(),
        dialect: archive.dialect().name(),
        files: manifest.files.len(),
        bytes: manifest.files.iter().map(|file| file.size).sum(),
        blocks: manifest.blocks.len(),
        stored_bytes: manifest.blocks.iter().map(|block| block.stored_size).sum(),
        archive_size: archive.bytes().len() as u64,
        block_size: manifest.config.small_file_threshold,
        chunk_size: manifest.config.chunk_size,
        zstd_level: manifest.config.zstd_level,
    };
    if args.json {
        output::print_json(&info)?;
    } else {
        output::print(&format!(
            "path: {}\nformat: ARCX 0.1, {} dialect\nfiles: {} ({} bytes)\nblocks: {} ({} bytes stored)\narchive size: {} bytes\nblock size: {} bytes\nchunk size: {} bytes\nzstd level: {}\n",
            info.path,
            info.dialect,
            info.files,
            info.bytes,
            info.blocks,
            info.stored_bytes,
            info.archive_size,
            info.block_size,
            info.chunk_size,
            info.zstd_level
        ))?;
    }
    Ok(Status::Success)
}

fn get(args: &GetArgs) -> CommandResult {
    let archive = open(&args.file)?;
    match &args.output {
        Some(path) => {
            let mut out =
                binfmt_core::AtomicFile::create(path).map_err(|error| error.to_string())?;
            archive
                .copy_to(&args.path, &mut out)
                .map_err(|error| output::about(&args.file, error))?;
            out.commit().map_err(|error| error.to_string())?;
        }
        None => {
            // Decoded and checked in full before anything reaches stdout.
            let bytes = archive
                .read(&args.path)
                .map_err(|error| output::about(&args.file, error))?;
            output::to_stdout(|out| out.write_all(&bytes))?;
        }
    }
    Ok(Status::Success)
}

fn extract(args: &ExtractArgs) -> CommandResult {
    let archive = open(&args.file)?;
    std::fs::create_dir_all(&args.dir).map_err(|error| output::about(&args.dir, error))?;
    let count = archive
        .extract(&args.dir)
        .map_err(|error| output::about(&args.file, error))?;
    eprintln!("extracted {count} files into {}", args.dir.display());
    Ok(Status::Success)
}

fn verify(args: &VerifyArgs) -> CommandResult {
    let archive = open(&args.file)?;
    archive
        .verify()
        .map_err(|error| output::about(&args.file, error))?;
    let manifest = archive.manifest();
    output::print(&format!(
        "{}: ok, {} files, {} blocks\n",
        args.file.display(),
        manifest.files.len(),
        manifest.blocks.len()
    ))?;
    Ok(Status::Success)
}
