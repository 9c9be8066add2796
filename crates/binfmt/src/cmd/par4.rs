//! `binfmt par4 ...`: look inside Parcode V4 files.

use std::fmt::Write as _;
use std::path::PathBuf;

use binfmt_parcode::{Chunk, ParFile};

use crate::output::{self, CommandResult, Status};

/// Inspect and check Parcode V4 (PAR4) files.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    Inspect(InspectArgs),
    Verify(VerifyArgs),
}

/// Print the chunk tree without decoding payloads.
///
/// One line per chunk, indented by depth: offset, length, compression,
/// payload size (after decompression, from the LZ4 size prefix) and number
/// of children. A chunk reached twice (a graph, not a tree) is an error.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt par4 inspect data.par4\n  binfmt par4 inspect --json data.par4 | jq '.children | length'"
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
    match command {
        Command::Inspect(args) => inspect(args),
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
    children: Vec<Node>,
}

/// The tree under `chunk`, walked (a chunk reached twice is an error;
/// recursion is bounded by the reader's depth limit).
fn tree(chunk: &Chunk<'_>) -> binfmt_parcode::error::Result<Node> {
    let mut children = Vec::new();
    for child in chunk.children()? {
        children.push(tree(&child)?);
    }
    Ok(Node {
        offset: chunk.offset(),
        length: chunk.length(),
        compression: chunk.compression().name(),
        stored_bytes: chunk.payload_len(),
        payload_bytes: chunk.decompressed_len()?,
        children,
    })
}

fn render(node: &Node, depth: usize, text: &mut String) {
    let _ = writeln!(
        text,
        "{:indent$}chunk @{} len {} {} payload {} B{}",
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
        indent = depth * 2
    );
    for child in &node.children {
        render(child, depth + 1, text);
    }
}

fn inspect(args: &InspectArgs) -> CommandResult {
    let failed = |error: binfmt_parcode::ParError| output::about(&args.file, error);
    let file = ParFile::open(&args.file).map_err(failed)?;
    let root = file
        .root()
        .and_then(|root| tree(&root.walking()?))
        .map_err(failed)?;
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
