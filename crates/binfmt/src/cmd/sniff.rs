//! `binfmt sniff FILE...`: the format of each file, from magic bytes only.

use std::fmt::Write as _;
use std::path::PathBuf;

use binfmt::Format;

use crate::cmd::remote::{RemoteArgs, Session};
use crate::output::{self, CommandResult, Status};

/// Print the format of each file, decided from its magic bytes.
///
/// One line per file, `PATH<TAB>FORMAT`, where FORMAT is one of taridx, arcx,
/// par4, kast, tar or unknown. Only the first 512 and the last 40 bytes of a
/// file are read. A file that cannot be read gets an error line on stderr and
/// makes the exit status 1; the other files are still reported.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt sniff fixtures/generated/*/*\n  binfmt sniff --json shard_0000.tar train.taridx"
)]
pub struct Args {
    /// Print a JSON array of {"path", "format"} objects instead of lines.
    #[arg(long)]
    json: bool,

    /// Files to examine (paths, or http(s):// or s3:// URLs).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,

    #[command(flatten)]
    remote: RemoteArgs,
}

#[derive(Debug, serde::Serialize)]
struct Sniffed<'a> {
    path: std::borrow::Cow<'a, str>,
    format: Format,
}

pub fn run(args: &Args) -> CommandResult {
    args.remote.counted(|session| run_in(session, args))
}

fn run_in(session: &Session, args: &Args) -> CommandResult {
    let mut status = Status::Success;
    let mut sniffed = Vec::with_capacity(args.files.len());
    for path in &args.files {
        let sniffed_format = session.source(path).and_then(|opened| {
            binfmt::sniff_source(&*opened.source).map_err(|e| output::about(path, e))
        });
        match sniffed_format {
            Ok(format) => sniffed.push(Sniffed {
                path: path.to_string_lossy(),
                format,
            }),
            Err(error) => {
                output::note(format_args!("binfmt: {error}"));
                status = Status::Failed;
            }
        }
    }
    if args.json {
        output::print_json(&sniffed)?;
    } else {
        let text = sniffed.iter().fold(String::new(), |mut text, entry| {
            let _ = writeln!(text, "{}\t{}", output::escape(&entry.path), entry.format);
            text
        });
        output::print(&text)?;
    }
    Ok(status)
}
