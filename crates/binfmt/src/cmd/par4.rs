//! `binfmt par4 ...`: look inside Parcode V4 files.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::PathBuf;

use binfmt::Format;
use binfmt_parcode::{Chunk, Compression, ParFile};

use crate::cmd::generic;
use crate::output::{self, CommandResult, Status};

/// Inspect and check Parcode V4 (PAR4) files; read the entries of a
/// `HashMap<String, Vec<u8>>` root.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    #[command(visible_alias = "inspect")]
    Info(InspectArgs),
    List(generic::ListArgs),
    Get(generic::GetArgs),
    Extract(generic::ExtractArgs),
    Verify(VerifyArgs),
}

/// Print the chunk tree without decoding payloads (also `par4 inspect`).
///
/// One line per chunk, indented by depth: offset, length, compression,
/// payload size (after decompression, from the LZ4 size prefix) and number
/// of children. A chunk referenced twice is printed once and then marked
/// "shared".
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt par4 info data.par4\n  binfmt par4 inspect --json data.par4 | jq '.children | length'"
)]
pub struct InspectArgs {
    /// The PAR4 file.
    file: PathBuf,
    /// Print the tree as nested JSON objects.
    #[arg(long)]
    json: bool,
}

/// Walk every chunk and decompress every payload.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  binfmt par4 verify data.par4")]
pub struct VerifyArgs {
    /// The PAR4 file.
    file: PathBuf,
}

pub fn run(command: &Command) -> CommandResult {
    let par4 = Some(Format::Par4);
    match command {
        Command::Info(args) => inspect(args),
        Command::List(args) => generic::list(args, par4),
        Command::Get(args) => generic::get(args, par4),
        Command::Extract(args) => generic::extract(args, par4),
        Command::Verify(args) => verify(args),
    }
}

#[derive(Debug, serde::Serialize)]
struct Node {
    offset: u64,
    length: u64,
    compression: &'static str,
    stored_bytes: u64,
    payload_bytes: u64,
    shared: bool,
    children: Vec<Node>,
}

fn compression_name(compression: Compression) -> &'static str {
    match compression {
        Compression::None => "none",
        Compression::Lz4 => "lz4",
    }
}

/// The tree under `chunk`; a chunk already in `seen` is listed without its children.
fn tree(chunk: Chunk<'_>, seen: &mut HashSet<(u64, u64)>) -> binfmt_parcode::Result<Node> {
    let shared = !seen.insert((chunk.offset(), chunk.length()));
    let mut children = Vec::new();
    if !shared {
        for child in chunk.children() {
            children.push(tree(child?, seen)?);
        }
    }
    Ok(Node {
        offset: chunk.offset(),
        length: chunk.length(),
        compression: compression_name(chunk.compression()),
        stored_bytes: chunk.stored_payload().len() as u64,
        payload_bytes: chunk.payload_len()?,
        shared,
        children,
    })
}

fn render(node: &Node, depth: usize, text: &mut String) {
    let _ = writeln!(
        text,
        "{:indent$}chunk @{} len {} {} payload {} B{}{}",
        "",
        node.offset,
        node.length,
        node.compression,
        node.payload_bytes,
        if node.children.is_empty() {
            String::new()
        } else {
            format!(", {} children", node.children.len())
        },
        if node.shared { " (shared)" } else { "" },
        indent = depth * 2
    );
    for child in &node.children {
        render(child, depth + 1, text);
    }
}

fn inspect(args: &InspectArgs) -> CommandResult {
    let failed = |error: binfmt_parcode::ParError| output::about(&args.file, error);
    let file = ParFile::open(&args.file).map_err(failed)?;
    let root = tree(file.root().map_err(failed)?, &mut HashSet::new()).map_err(failed)?;
    if args.json {
        output::print_json(&root)?;
    } else {
        let mut text = format!(
            "{}: PAR4 version 4, {} bytes\n",
            args.file.display(),
            file.file_size()
        );
        render(&root, 0, &mut text);
        output::print(&text)?;
    }
    Ok(Status::Success)
}

fn verify(args: &VerifyArgs) -> CommandResult {
    let failed = |error: binfmt_parcode::ParError| output::about(&args.file, error);
    let summary = ParFile::open(&args.file)
        .and_then(|file| file.verify())
        .map_err(failed)?;
    output::print(&format!(
        "{}: ok, {} chunks, {} payload bytes\n",
        args.file.display(),
        summary.chunks,
        summary.payload_bytes
    ))?;
    Ok(Status::Success)
}
