//! The verbs every format shares, through [`binfmt::open`]: `info`, `list`,
//! `get`, `extract`, `verify`, and `convert`. The per-format subcommands
//! (`binfmt arcx list`, `binfmt kast get`, ...) run the same code with the
//! format required, adding what only that format has.
//!
//! Grammar: inputs are positional; every output file or directory is
//! `-o/--output`; `-` reads standard input where the format can be read as
//! a stream (a kastore); `--json` prints the same keys for the same verb.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use binfmt::{EntrySource, Format};

use crate::cmd::args::{
    DialectArg, ExtractArgs, GetArgs, InfoArgs, KeyRuleArg, ListArgs, VerifyArgs,
};
use crate::cmd::info::{Counts, Info, Nothing};
use crate::cmd::remote::{RemoteArgs, Session};
use crate::output::{self, CommandResult, Status, failed};

pub fn info(args: &InfoArgs, expect: Option<Format>) -> CommandResult {
    args.remote
        .counted(|session| info_in(session, args, expect))
}

fn info_in(session: &Session, args: &InfoArgs, expect: Option<Format>) -> CommandResult {
    let source = session.open_listing(&args.file, expect)?;
    // A TARIDX index says both from its rows (no shard is read); the other
    // formats' entries are counted as they are walked, none kept.
    let (entries, bytes) = match source.totals() {
        Some(totals) => totals,
        None => {
            let (mut entries, mut bytes) = (0usize, Some(0u64));
            source
                .each_entry(&mut |entry| {
                    entries += 1;
                    bytes = bytes.and_then(|total| total.checked_add(entry.size));
                    Ok(())
                })
                .map_err(failed)?;
            (entries, bytes)
        }
    };
    let bytes = bytes.ok_or_else(|| {
        output::about(
            &args.file,
            "entry sizes add up to more than 2^64 bytes: the file is corrupt",
        )
    })?;
    let info = Info {
        path: args.file.display().to_string(),
        counts: Some(Counts {
            format: source.format(),
            entries,
            bytes,
        }),
        details: Nothing {},
    };
    info.print(args.json, |info| {
        format!(
            "path: {}\nformat: {}\nentries: {}\nbytes: {}\n",
            info.shown_path(),
            source.format(),
            entries,
            bytes
        )
    })
}

pub fn list(args: &ListArgs, expect: Option<Format>) -> CommandResult {
    args.remote.counted(|session| {
        let source = session.open_listing(&args.file, expect)?;
        print_list(&*source, args.json)
    })
}

/// Prints `source`'s entries as `list` does, each as it is handed on
/// ([`EntrySource::each_entry`]): nothing is printed unless the file's
/// listing checks, and no entry is kept.
fn print_list(source: &dyn EntrySource, json: bool) -> CommandResult {
    to_stdout_streamed(|out| {
        if json {
            json_array(out, |element| {
                source.each_entry(&mut |entry| element(&entry))
            })
        } else {
            source.each_entry(&mut |entry| {
                writeln!(out, "{}\t{}", entry.size, output::escape(&entry.name))
            })
        }
    })
    .map_err(failed)?;
    Ok(Status::Success)
}

/// Runs `write` against buffered stdout, where `write` streams a listing
/// that may fail part way (the file's error is returned). A closed pipe
/// ends quietly, as [`output::to_stdout`]'s does.
pub(crate) fn to_stdout_streamed(
    write: impl FnOnce(&mut dyn Write) -> binfmt::Result<()>,
) -> binfmt::Result<()> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let written = write(&mut out).and_then(|()| out.flush().map_err(stdout_error));
    match written {
        Err(binfmt::Error::Core {
            source: binfmt_core::Error::Io { source, .. },
            ..
        }) if source.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

fn stdout_error(error: std::io::Error) -> binfmt::Error {
    binfmt::Error::Core {
        file: "stdout".into(),
        source: binfmt_core::Error::io("stdout", error),
    }
}

/// Writes a pretty JSON array to `out` (as `serde_json::to_string_pretty`
/// writes a `Vec`) of the elements `each` hands to the function it is
/// given, each written as it comes; then a newline.
pub(crate) fn json_array<T: serde::Serialize>(
    out: &mut dyn Write,
    each: impl FnOnce(&mut dyn FnMut(&T) -> std::io::Result<()>) -> binfmt::Result<()>,
) -> binfmt::Result<()> {
    use serde::ser::{SerializeSeq, Serializer};
    let mut serializer =
        serde_json::Serializer::with_formatter(&mut *out, crate::output::SafeJson::default());
    let mut seq = serializer
        .serialize_seq(None)
        .map_err(|error| stdout_error(error.into()))?;
    each(&mut |element| seq.serialize_element(element).map_err(std::io::Error::from))?;
    seq.end().map_err(|error| stdout_error(error.into()))?;
    writeln!(out).map_err(stdout_error)
}

pub fn get(args: &GetArgs, expect: Option<Format>) -> CommandResult {
    args.remote.counted(|session| get_in(session, args, expect))
}

fn get_in(session: &Session, args: &GetArgs, expect: Option<Format>) -> CommandResult {
    let source = session.open_only(&args.file, expect, &args.name)?;
    let to_file = args
        .output
        .as_deref()
        .filter(|path| !output::is_stdout(path));
    if let Some(path) = to_file {
        refuse_overwriting_inputs(&source.inputs(), path)?;
    }
    // Bytes so far on stderr (a terminal's only), unless the entry itself
    // is printed on that terminal.
    let bar = match to_file.is_some() || !std::io::stdout().is_terminal() {
        true => output::progress(output::Steps::BytesSoFar, "getting"),
        false => indicatif::ProgressBar::hidden(),
    };
    let mut reader = bar.wrap_read(source.open(&args.name).map_err(failed)?);
    let file = source.file().to_owned();
    let _clear = ClearOnDrop(&bar);
    match to_file {
        Some(path) => {
            let mut out = binfmt_core::AtomicFile::create(path).map_err(|e| e.to_string())?;
            copy(&mut reader, &mut out, &file, &args.name)?;
            out.commit().map_err(|e| e.to_string())?;
        }
        None => output::entry_to_stdout(&mut reader, args.output.is_some(), |error| {
            format!("{file}: entry {:?}: {error}", args.name)
        })?,
    }
    Ok(Status::Success)
}

/// Clears a progress bar however the command ends.
struct ClearOnDrop<'a>(&'a indicatif::ProgressBar);

impl Drop for ClearOnDrop<'_> {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

/// Copies an entry to a file, naming the input on a failed check.
fn copy(
    reader: &mut dyn std::io::Read,
    out: &mut dyn Write,
    file: &str,
    name: &str,
) -> Result<u64, String> {
    std::io::copy(reader, out).map_err(|error| format!("{file}: entry {name:?}: {error}"))
}

/// Refuses an output that is the input.
pub fn refuse_overwriting_input(input: &Path, output: &Path) -> Result<(), String> {
    refuse_overwriting_inputs(&[input], output)
}

/// Refuses an output that is one of the files a command reads (a fold's
/// index or one of its shards; device and inode, symlinks followed).
pub fn refuse_overwriting_inputs<P: AsRef<Path>>(
    inputs: &[P],
    output: &Path,
) -> Result<(), String> {
    binfmt_core::Inputs::new(inputs)
        .check(output)
        .map_err(|error| error.to_string())
}

pub fn extract(args: &ExtractArgs, expect: Option<Format>) -> CommandResult {
    args.remote
        .counted(|session| extract_in(session, args, expect))
}

fn extract_in(session: &Session, args: &ExtractArgs, expect: Option<Format>) -> CommandResult {
    let source = session.open(&args.file, expect)?;
    let bar = output::progress(output::Steps::Items("entries"), "extracting");
    let progress = |done, all| {
        bar.set_length(all);
        bar.set_position(done);
    };
    let options = binfmt::ExtractOptions::default()
        .symlinks(args.symlinks)
        .progress(&progress);
    let count = binfmt::extract(source.as_ref(), &args.output, &options);
    bar.finish_and_clear();
    let count = count.map_err(failed)?;
    output::note(format_args!(
        "extracted {count} entries into {}",
        output::escape(&args.output.display().to_string())
    ));
    // Nothing left out silently: symlinks (ARCX only) are restored only
    // with --symlinks, so say how many were not.
    if !args.symlinks && source.format() == Format::Arcx {
        let links = source
            .list()
            .map_err(failed)?
            .iter()
            .filter(|entry| entry.kind == Some("symlink"))
            .count();
        if links > 0 {
            output::note(format_args!(
                "left out {links} symlinks (--symlinks restores those whose targets stay inside the directory)"
            ));
        }
    }
    Ok(Status::Success)
}

pub fn verify(args: &VerifyArgs, expect: Option<Format>) -> CommandResult {
    args.remote
        .counted(|session| verify_in(session, args, expect))
}

fn verify_in(session: &Session, args: &VerifyArgs, expect: Option<Format>) -> CommandResult {
    let source = session.open(&args.file, expect)?;
    source.verify().map_err(failed)?;
    // Verified, a TARIDX index has one row per member: counted from the
    // rows, its shards' headers are not read a second time.
    let entries = match source.totals() {
        Some((entries, _)) => entries,
        None => source.list().map_err(failed)?.len(),
    };
    output::print(&format!(
        "{}: ok, {} {} entries\n",
        output::escape(&args.file.display().to_string()),
        entries,
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
/// To taridx, -o names the index, DIR/FOLD.taridx: the tar shards go beside
/// it as DIR/FOLD_0000.tar, DIR/FOLD_0001.tar, ... To kast, each entry
/// becomes an array: typed as the kastore it came from (element types
/// travel through every format in a __kastore__.json entry), uint8
/// otherwise; to par4, a HashMap<String, Vec<u8>>. A name the target cannot
/// hold is an error naming it; nothing is renamed.
///
/// The target format is --to, or else the output's extension: .arcx, .kas
/// or .trees, .par4, .taridx. To taridx, sample keys follow glzn's rule
/// (the basename before its first dot) unless an entry's name is a path
/// (has a '/', as a tskit file's keys and a WebDataset tree's names do):
/// then WebDataset's rule (the whole path before the basename's first dot),
/// so that edges/metadata and nodes/metadata stay two samples;
/// --taridx-keys chooses either.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt convert data.arcx -o data.kas\n  binfmt convert tables.trees -o tables.arcx --to arcx\n  binfmt convert data.kas -o shards/tables.taridx --to taridx --shard-size 1000000000\n  binfmt convert shards/train.taridx -o train.arcx --to arcx --dialect arcx-cli"
)]
pub struct ConvertArgs {
    /// A TARIDX index (with its shards beside it), ARCX, PAR4 or KAST file,
    /// or its http(s):// or s3:// URL.
    input: PathBuf,
    /// The file to write (for taridx: DIR/FOLD.taridx).
    #[arg(short, long)]
    output: PathBuf,
    /// The target format (default: from the output's extension).
    #[arg(long, value_enum)]
    to: Option<TargetArg>,
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
    /// before its first dot; webdataset: the whole path before it). Default:
    /// webdataset when an entry's name has a '/', glzn otherwise.
    #[arg(long, value_enum)]
    taridx_keys: Option<KeyRuleArg>,
    /// PAR4 only: compress chunks with LZ4.
    #[arg(long)]
    lz4: bool,
    #[command(flatten)]
    pub remote: RemoteArgs,
}

pub fn convert(args: &ConvertArgs) -> CommandResult {
    args.remote.counted(|session| convert_in(session, args))
}

fn convert_in(session: &Session, args: &ConvertArgs) -> CommandResult {
    let to = match args.to {
        Some(TargetArg::Taridx) => Format::Taridx,
        Some(TargetArg::Arcx) => Format::Arcx,
        Some(TargetArg::Kast) => Format::Kast,
        Some(TargetArg::Par4) => Format::Par4,
        None => Format::of_extension(&args.output).unwrap_or_else(|| {
            output::usage_error(format_args!(
                "cannot tell the target format from {}: give --to, or an output ending in \
                 .arcx, .kas, .trees, .par4 or .taridx",
                output::shown(&args.output)
            ))
        }),
    };
    refuse_overwriting_input(&args.input, &args.output)?;
    let source = session.open(&args.input, None)?;
    let options = match args.taridx_keys {
        Some(rule) => binfmt::ConvertOptions::default().taridx_keys(rule.into()),
        // glzn's rule unless a name is a path (the sink sees every name).
        None => binfmt::ConvertOptions::default().taridx_keys_by_names(),
    }
    .arcx_dialect(args.dialect.into())
    .shard_size(args.shard_size)
    .shard_samples(args.shard_samples)
    .par4_compression(if args.lz4 {
        binfmt_parcode::Compression::Lz4
    } else {
        binfmt_parcode::Compression::None
    });
    let out = session.output(&args.output, binfmt::outputs::gate_inputs(source.as_ref()))?;
    let bar = output::progress(output::Steps::Items("entries"), "converting");
    let summary =
        binfmt::convert::convert_source_to(source.as_ref(), &out, to, &options, &|done, all| {
            bar.set_length(all);
            bar.set_position(done);
        });
    bar.finish_and_clear();
    let summary = summary.map_err(failed)?;
    for skipped in &summary.skipped {
        output::note(format_args!(
            "skipped {}: not a regular file, {to} holds bytes only",
            output::escape(skipped)
        ));
    }
    if args.taridx_keys.is_none() && summary.taridx_keys == Some(binfmt_taridx::KeyRule::WebDataset)
    {
        output::note(format_args!(
            "names are paths: sample keys by the WebDataset rule (--taridx-keys glzn for glzn's)"
        ));
    }
    output::note(format_args!(
        "converted {} entries ({} bytes) to {}",
        summary.entries, summary.bytes, to
    ));
    for output in &summary.outputs {
        output::note(format_args!(
            "wrote {}",
            output::escape(&output.display().to_string())
        ));
    }
    Ok(Status::Success)
}
