//! `binfmt arcx ...`: ARCX archives, either dialect.

use std::path::PathBuf;

use binfmt::Format;
use binfmt_arcx::{Archive, Dialect, FileKind, PackOptions, PackProgress};

use crate::cmd::args::{self, DialectArg};
use crate::cmd::generic;
use crate::cmd::info::{Counts, Info};
use crate::cmd::remote::Session;
use crate::output::{self, CommandResult, Status};

/// Pack directories into ARCX archives and get files out of them.
#[derive(Debug, clap::Subcommand)]
#[command(defer = true)]
pub enum Command {
    Info(args::InfoArgs),
    List(args::ListArgs),
    Get(args::GetArgs),
    Extract(args::ExtractArgs),
    Verify(args::VerifyArgs),
    Pack(PackArgs),
}

/// Pack the tree under DIR into an archive.
///
/// Entries are taken in sorted order with their permission bits and
/// modification times; symlinks are stored as symlinks (never followed),
/// empty directories as directories. An -o naming a file inside DIR that
/// exists is refused (it would replace a file being packed). FIFOs, devices and sockets are skipped
/// and named on stderr; so are symlinks and empty directories with
/// --dialect arcx-cli (arcx 0.3.0 would extract them as regular files). Small files share blocks; large files are streamed
/// in chunks, so memory stays bounded. The archive is the same for any
/// --jobs, and appears only when complete.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt arcx pack src/ -o src.arcx\n  binfmt arcx pack data/ -o data.arcx --dialect arcx-cli --level 9 --jobs 4"
)]
pub struct PackArgs {
    /// The directory to pack.
    dir: PathBuf,
    /// The archive to write.
    #[arg(short, long)]
    output: PathBuf,
    /// Which layout to write.
    #[arg(long, value_enum, default_value = "spec")]
    dialect: DialectArg,
    /// zstd level, 1 (fastest) to 22 (smallest).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(i32).range(1..=22))]
    level: i32,
    /// Files smaller than this share blocks of up to this many bytes (at
    /// most 16 MiB, the largest shared block readers accept).
    #[arg(long, default_value_t = binfmt_arcx::DEFAULT_BLOCK_SIZE as u64, value_parser = clap::value_parser!(u64).range(1024..=(16 << 20)))]
    block_size: u64,
    /// Larger files are cut into chunks of this many bytes, one block each
    /// (at least the block size).
    #[arg(long, default_value_t = 1024 * 1024, value_parser = clap::value_parser!(u64).range(1024..=(256 << 20)))]
    chunk_size: u64,
    /// Threads compressing blocks (default: one per core).
    #[arg(long, short)]
    jobs: Option<usize>,
}

pub fn run(command: &Command) -> CommandResult {
    let arcx = Some(Format::Arcx);
    match command {
        Command::Info(args) => info(args),
        Command::List(args) => list(args),
        Command::Get(args) => generic::get(args, arcx),
        Command::Extract(args) => generic::extract(args, arcx),
        Command::Verify(args) => verify(args),
        Command::Pack(args) => pack(args),
    }
}

/// The archive at `path` (a path or a URL); a remote one leaves its header
/// to `verify`, saving a request.
fn open(
    session: &Session,
    path: &std::path::Path,
) -> Result<Archive<Box<dyn binfmt_core::Source>>, String> {
    let opened = session.source(path)?;
    let options = binfmt_arcx::OpenOptions::default().check_header(!opened.origin.is_remote());
    Archive::with_options(opened.source, options).map_err(|error| output::about(path, error))
}

fn pack(args: &PackArgs) -> CommandResult {
    let options = PackOptions::default()
        .dialect(args.dialect.into())
        .level(args.level)
        .block_size(usize::try_from(args.block_size).unwrap_or(binfmt_arcx::DEFAULT_BLOCK_SIZE))
        .chunk_size(usize::try_from(args.chunk_size).unwrap_or(1 << 20))
        .jobs(args.jobs);
    let bar = output::progress(output::Steps::Bytes, "packing");
    let summary = binfmt::outputs::pack_arcx_dir(
        &args.dir,
        &args.output,
        options,
        &binfmt_remote::RemoteOptions::default(),
        |progress| match progress {
            PackProgress::Started { bytes, .. } => bar.set_length(bytes),
            PackProgress::Stored(bytes) => bar.inc(bytes),
            _ => {}
        },
    )
    .map_err(|error| error.to_string())?;
    bar.finish_and_clear();
    for skipped in &summary.skipped {
        output::note(format_args!(
            "skipped {}: {}",
            output::escape(&skipped.path.display().to_string()),
            skipped.why
        ));
    }
    output::note(format_args!(
        "packed {} entries ({} bytes) into {} ({} bytes, {} blocks, {} dialect)",
        summary.files,
        summary.bytes_in,
        output::escape(&args.output.display().to_string()),
        summary.archive_size,
        summary.blocks,
        args.dialect_name()
    ));
    Ok(Status::Success)
}

impl PackArgs {
    fn dialect_name(&self) -> &'static str {
        Dialect::from(self.dialect).name()
    }
}

/// One entry of `arcx list --json`: the generic keys and the archive's own.
#[derive(Debug, serde::Serialize)]
struct Listed {
    name: String,
    size: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    mode: String,
    mtime_ns: i64,
    sha256: String,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn list(args: &args::ListArgs) -> CommandResult {
    args.remote.counted(|session| list_in(session, args))
}

/// The archive at `path` (a path or a URL) opened for listing: its
/// manifest walked row by row, no tables built (a remote one leaves its
/// header to `verify`, saving a request).
fn listing(session: &Session, path: &std::path::Path) -> Result<binfmt_arcx::Listing, String> {
    let opened = session.source(path)?;
    let options = binfmt_arcx::OpenOptions::default().check_header(!opened.origin.is_remote());
    binfmt_arcx::Listing::open(&opened.source, options).map_err(|error| output::about(path, error))
}

/// Prints each entry as the manifest's walk hands it on: nothing is kept.
fn list_in(session: &Session, args: &args::ListArgs) -> CommandResult {
    let listing = listing(session, &args.file)?;
    let file = args.file.display().to_string();
    generic::to_stdout_streamed(|out| {
        if args.json {
            generic::json_array(out, |element| {
                listing
                    .for_each(|file| element(&listed(file)).map_err(Stop::Visit))
                    .map_err(|stopped| stopped.into_error(&file))
            })
        } else {
            listing
                .for_each(|entry| {
                    writeln!(
                        out,
                        "{}\t{}",
                        entry.size,
                        output::escape(&entry.path.to_string())
                    )
                    .map_err(Stop::Visit)
                })
                .map_err(|stopped| stopped.into_error(&file))
        }
    })
    .map_err(output::failed)?;
    Ok(Status::Success)
}

/// Why a listing stopped: the archive, or writing it out.
enum Stop {
    Arcx(binfmt_arcx::ArcxError),
    Visit(std::io::Error),
}

impl From<binfmt_arcx::ArcxError> for Stop {
    fn from(error: binfmt_arcx::ArcxError) -> Self {
        Self::Arcx(error)
    }
}

impl Stop {
    fn into_error(self, file: &str) -> binfmt::Error {
        match self {
            Self::Arcx(source) => binfmt::Error::Arcx {
                file: file.to_owned(),
                source,
            },
            Self::Visit(error) => binfmt::Error::Core {
                file: "stdout".into(),
                source: binfmt_core::Error::io("stdout", error),
            },
        }
    }
}

/// One entry as `arcx list --json` shows it.
fn listed(file: binfmt_arcx::Listed<'_>) -> Listed {
    let attributes = file.attributes;
    Listed {
        name: file.path.to_string(),
        size: file.size,
        kind: match attributes.kind {
            FileKind::Directory => Some("directory"),
            FileKind::Symlink => Some("symlink"),
            _ => None,
        },
        mode: format!("{:o}", attributes.mode),
        mtime_ns: attributes.mtime_ns,
        sha256: hex(file.sha256),
    }
}

/// What `arcx info` adds to the counts.
#[derive(Debug, serde::Serialize)]
struct Details {
    dialect: &'static str,
    blocks: usize,
    stored_bytes: u64,
    archive_size: u64,
    block_size: u64,
    chunk_size: u64,
    zstd_level: u64,
}

fn info(args: &args::InfoArgs) -> CommandResult {
    args.remote.counted(|session| info_in(session, args))
}

fn info_in(session: &Session, args: &args::InfoArgs) -> CommandResult {
    // Totals come from one walk of the manifest; no table is built.
    let listing = listing(session, &args.file)?;
    let summary = listing.summary();
    let counts = Counts {
        format: Format::Arcx,
        entries: usize::try_from(summary.files).unwrap_or(usize::MAX),
        bytes: summary.bytes,
    };
    let (entries, bytes) = (counts.entries, counts.bytes);
    let info = Info {
        path: args.file.display().to_string(),
        counts: Some(counts),
        details: Details {
            dialect: summary.dialect.name(),
            blocks: usize::try_from(summary.blocks).unwrap_or(usize::MAX),
            stored_bytes: summary.stored_bytes,
            archive_size: summary.archive_size,
            block_size: summary.config.small_file_threshold,
            chunk_size: summary.config.chunk_size,
            zstd_level: summary.config.zstd_level,
        },
    };
    info.print(args.json, |info| {
        let details = &info.details;
        format!(
            "path: {}\nformat: ARCX 0.1, {} dialect\nentries: {} ({} bytes)\nblocks: {} ({} bytes stored)\narchive size: {} bytes\nblock size: {} bytes\nchunk size: {} bytes\nzstd level: {}\n",
            info.shown_path(),
            details.dialect,
            entries,
            bytes,
            details.blocks,
            details.stored_bytes,
            details.archive_size,
            details.block_size,
            details.chunk_size,
            details.zstd_level
        )
    })
}

fn verify(args: &args::VerifyArgs) -> CommandResult {
    args.remote.counted(|session| verify_in(session, args))
}

fn verify_in(session: &Session, args: &args::VerifyArgs) -> CommandResult {
    let archive = open(session, &args.file)?;
    let summary = archive
        .verify()
        .map_err(|error| output::about(&args.file, error))?;
    output::print(&format!(
        "{}: ok, {} files ({} bytes), {} blocks\n",
        output::escape(&args.file.display().to_string()),
        summary.files,
        summary.bytes,
        summary.blocks
    ))?;
    Ok(Status::Success)
}
