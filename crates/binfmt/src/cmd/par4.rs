//! `binfmt par4 ...`: look inside Parcode V4 files.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use binfmt::Format;
use binfmt_core::Source;
use binfmt_parcode::{Chunk, ParFile};

use crate::cmd::args;
use crate::cmd::generic;
use crate::cmd::remote::{RemoteArgs, Session};
use crate::output::{self, CommandResult, Status};

/// Inspect and check Parcode V4 (PAR4) files; read the entries of a
/// `HashMap<String, Vec<u8>>` root.
#[derive(Debug, clap::Subcommand)]
#[command(defer = true)]
pub enum Command {
    #[command(visible_alias = "inspect")]
    Info(InspectArgs),
    List(args::ListArgs),
    Get(args::GetArgs),
    Extract(args::ExtractArgs),
    Verify(args::VerifyArgs),
}

/// Print the chunk tree without decoding payloads (also `par4 inspect`).
///
/// One line per chunk, indented by depth: offset, length, compression,
/// payload size (after decompression, from the LZ4 size prefix) and number
/// of children. A chunk reached twice (a graph, not a tree) is an error.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt par4 info data.par4\n  binfmt par4 inspect --json data.par4 | jq '.children | length'\n  binfmt par4 info -v https://example.org/data.par4"
)]
pub struct InspectArgs {
    /// The PAR4 file, or its http(s):// or s3:// URL.
    file: PathBuf,
    /// Print the tree as nested JSON objects.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    remote: RemoteArgs,
}

pub fn run(command: &Command) -> CommandResult {
    let par4 = Some(Format::Par4);
    match command {
        Command::Info(args) => args.remote.counted(|session| inspect(session, args)),
        Command::List(args) => generic::list(args, par4),
        Command::Get(args) => generic::get(args, par4),
        Command::Extract(args) => generic::extract(args, par4),
        Command::Verify(args) => args.remote.counted(|session| verify(session, args)),
    }
}

/// A PAR4 file from a path or a URL, read by ranges.
fn open(session: &Session, path: &Path) -> Result<ParFile<Box<dyn Source>>, String> {
    let opened = session.source(path)?;
    ParFile::new(opened.source).map_err(|error| output::about(path, error))
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

fn inspect(session: &Session, args: &InspectArgs) -> CommandResult {
    let file = open(session, &args.file)?;
    let root = file
        .root()
        .and_then(|root| tree(&root.walking()?))
        .map_err(|error| output::about(&args.file, error))?;
    if args.json {
        output::print_json(&root)?;
    } else {
        let mut text = format!(
            "{}: PAR4 version 4, {} bytes\n",
            output::escape(&args.file.display().to_string()),
            file.file_size()
        );
        render(&root, 0, &mut text);
        output::print(&text)?;
    }
    Ok(Status::Success)
}

fn verify(session: &Session, args: &args::VerifyArgs) -> CommandResult {
    let parfile = open(session, &args.file)?;
    let summary = parfile
        .verify()
        .map_err(|error| output::about(&args.file, error))?;
    parfile.verify_entries().map_err(|source| {
        binfmt::Error::Par4 {
            file: args.file.display().to_string(),
            source,
        }
        .to_string()
    })?;
    output::print(&format!(
        "{}: ok, {} chunks, {} payload bytes\n",
        output::escape(&args.file.display().to_string()),
        summary.chunks,
        summary.payload_bytes
    ))?;
    Ok(Status::Success)
}
