//! `binfmt taridx ...`: index tar shards and read samples through an index.

use std::io::Write;
use std::path::{Path, PathBuf};

use binfmt_core::Source;
use binfmt_taridx::{
    Dataset, DatasetOptions, Index, IndexOptions, MemberReader, Row, ShardFiles, TaridxError,
    fold_index_path, fold_shards, write_index,
};

use crate::cmd::args::{self, KeyRuleArg};
use crate::cmd::generic;
use crate::cmd::info::Info;
use crate::cmd::remote::{RemoteArgs, Session};
use crate::output::{self, CommandResult, Status};

mod foreign;

/// Index WebDataset-style tar shards and read samples at random.
#[derive(Debug, clap::Subcommand)]
#[command(defer = true)]
pub enum Command {
    Index(IndexArgs),
    Info(InfoArgs),
    List(args::ListArgs),
    Get(GetArgs),
    Extract(args::ExtractArgs),
    Verify(args::VerifyArgs),
    Status(StatusArgs),
    Pack(PackArgs),
    Export(ExportArgs),
    Import(ImportArgs),
}

/// Write a .taridx index of tar shards.
///
/// With --fold, index the shards ROOT/FOLD_*.tar (sorted by name, giving fids
/// 0, 1, ...), or ROOT/FOLD-N.tar or ROOT/FOLD.N.tar (sorted by number), into
/// ROOT/FOLD.taridx (or -o). Otherwise index the given shards, in the given
/// order, into -o OUT.taridx; a quoted pattern is expanded as webdataset
/// expands shard lists ('train-{000000..000099}.tar', 'data/*.tar'). Unless
/// glzn's names (FOLD_*.tar beside FOLD.taridx) find exactly these shards,
/// their list is written beside the index (OUT.taridx.shards.json, a wids
/// shard list), where every later command finds it. Only headers are read;
/// shards are scanned in parallel, and the index is the same whatever the
/// number of jobs. A corrupt shard fails with its name and byte offset and
/// leaves no index behind; an output that is one of the shards is refused.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt taridx index data/ --fold train\n  binfmt taridx index data/ --all\n  binfmt taridx index val_0000.tar val_0001.tar -o val.taridx --jobs 4\n  binfmt taridx index 'hub/train-{000000..000001}.tar' -o hub/train.taridx\n  binfmt taridx index data/ --fold train --keys webdataset"
)]
pub struct IndexArgs {
    /// ROOT with --fold or --all; the shards, in fid order, or patterns of them, otherwise.
    #[arg(required = true, value_name = "ROOT | SHARD")]
    inputs: Vec<PathBuf>,
    /// The fold to index: shards ROOT/FOLD_*.tar (or FOLD-N.tar, FOLD.N.tar), index ROOT/FOLD.taridx.
    #[arg(long, conflicts_with = "all")]
    fold: Option<String>,
    /// Index every fold under ROOT (FOLD_N.tar, FOLD-N.tar or FOLD.N.tar groups), folds in parallel.
    #[arg(long, conflicts_with = "output")]
    all: bool,
    /// Where to write the index (default with --fold: ROOT/FOLD.taridx).
    #[arg(short, long, value_name = "OUT.taridx", visible_alias = "out")]
    output: Option<PathBuf>,
    /// Shards scanned at once (default: one per core).
    #[arg(long, short)]
    jobs: Option<usize>,
    /// How member names become sample keys.
    #[arg(long, value_enum, default_value = "glzn")]
    keys: KeyRuleArg,
}

/// Show an index's version, key rule, rows, stems, extensions, crash stems
/// and contiguity.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt taridx info data/train.taridx\n  binfmt taridx info --json data/train.taridx"
)]
pub struct InfoArgs {
    /// The .taridx file, or its http(s):// or s3:// URL.
    file: PathBuf,
    /// Print a JSON object instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    remote: RemoteArgs,
}

/// Write one member, or the members of one sample.
///
/// NAME is a member's full name (as `binfmt list` shows it: pax and GNU long
/// names included), or a sample key (glzn: the basename before its first
/// dot; webdataset-keyed indexes: the whole path before it). The shards are
/// INDEX's fold in its directory (or in --shards ROOT). One member goes to
/// stdout or to the file -o names; a sample of several members needs -o DIR,
/// which receives KEY.EXT for every member. Two members that would land on
/// one file are refused, naming both.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt taridx get data/train.taridx 000123 --ext jpg > 000123.jpg\n  binfmt taridx get data/train.taridx 000123 -o sample/\n  binfmt taridx get data/train.taridx cat/000123.jpg -o 000123.jpg"
)]
pub struct GetArgs {
    /// The .taridx file, or its http(s):// or s3:// URL (the shards are
    /// then read beside it by range requests, one per sample).
    index: PathBuf,
    /// A member's full name, or a sample key.
    name: String,
    /// Only the member with this extension (-o then names a file).
    #[arg(long)]
    ext: Option<String>,
    /// The directory holding the shards (default: the index's directory).
    #[arg(long, value_name = "ROOT")]
    shards: Option<PathBuf>,
    /// Where to write: a file for one member, a directory for a sample
    /// (default: stdout, where a member that is not text is refused on a
    /// terminal; "-": stdout, even a terminal).
    #[arg(short, long)]
    output: Option<PathBuf>,
    #[command(flatten)]
    remote: RemoteArgs,
}

/// Report which folds under a root have a missing or stale index.
///
/// A fold is every ROOT/FOLD_N.tar, ROOT/FOLD-N.tar or ROOT/FOLD.N.tar group;
/// its index ROOT/FOLD.taridx is stale when the shards it finds are not the
/// fold's (a fold not named FOLD_N.tar needs its shard list,
/// FOLD.taridx.shards.json), when it is older than a shard, when a row's
/// member ends past its shard's end or lies in a shard that is gone, or
/// when a shard holds a member after its last row (or has members and no
/// rows). Exit status 1 when any index is missing or stale, or when ROOT
/// holds no fold.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt taridx status data/\n  binfmt taridx status --json data/"
)]
pub struct StatusArgs {
    /// The directory holding the folds.
    root: PathBuf,
    /// Print a JSON array of {"fold", "index", "shards", "state", "why"}.
    #[arg(long)]
    json: bool,
}

/// Write a fold of WebDataset samples from a directory tree or any archive.
///
/// Files (or entries) are grouped into samples by key, WebDataset style:
/// the path up to the first dot of the basename; the rest is the member's
/// extension. Samples go in key order, members in extension order, into
/// shards DIR/FOLD_0000.tar, ... that roll over at --max-samples samples or
/// --max-bytes bytes, never splitting a sample. Tar headers are fixed
/// (mode 0644, owner 0, mtime 0), so the same input gives the same bytes;
/// the index is written in the same pass, byte-identical to indexing the
/// shards afterwards.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt taridx pack images/ -o packed/train.taridx --max-samples 10000\n  binfmt taridx pack data.arcx -o shards/val.taridx --max-bytes 1000000000"
)]
pub struct PackArgs {
    /// A directory, or a file binfmt opens (ARCX, KAST, PAR4, TARIDX).
    input: PathBuf,
    /// The index to write, DIR/FOLD.taridx (shards go beside it).
    #[arg(short, long, value_name = "DIR/FOLD.taridx")]
    output: PathBuf,
    /// The most samples in one shard.
    #[arg(long, default_value_t = 100_000)]
    max_samples: u64,
    /// The most bytes in one shard (a larger sample gets a shard of its own).
    #[arg(long, default_value_t = 3_000_000_000)]
    max_bytes: u64,
    /// The index's key rule (glzn's needs keys without directories).
    #[arg(long, value_enum, default_value = "webdataset")]
    keys: KeyRuleArg,
}

/// The foreign indexes `taridx export` and `taridx import` speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ForeignArg {
    /// A wids shard list (JSON): url, nsamples, filesize per shard.
    Wids,
    /// NVIDIA DALI wds2idx index files (SHARD.idx, one line per sample).
    Dali,
    /// ratarmount's SQLite index (SHARD.tar.index.sqlite).
    Ratarmount,
}

/// Write another tool's index of a fold.
///
/// The index is verified against its shards first (as `binfmt verify`
/// does); nothing is written for an index verify refuses, and no output may
/// be the index, a shard, or another output.
/// wids: one shard list, -o LIST.json (urls relative to its directory).
/// dali: one .idx per shard, named as wds2idx names them, into -o DIR
/// (default: beside the shards); v1.1 from the index alone, v1.2 (with
/// member names) with --with-names, which reads each member's header.
/// ratarmount: one SHARD.tar.index.sqlite per shard into -o DIR (default:
/// beside the shards, where ratarmount looks), so ratarmount mounts without
/// indexing.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt taridx export wids data/train.taridx -o data/train.json\n  binfmt taridx export dali data/train.taridx -o idx/\n  binfmt taridx export ratarmount data/train.taridx"
)]
pub struct ExportArgs {
    /// The index format to write.
    #[arg(value_enum)]
    to: ForeignArg,
    /// The .taridx file.
    index: PathBuf,
    /// The directory holding the shards (default: the index's directory).
    #[arg(long, value_name = "ROOT")]
    shards: Option<PathBuf>,
    /// Where to write: a file for wids, a directory for dali and ratarmount.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// dali: write v1.2 lines with member names (reads each member's header).
    #[arg(long)]
    with_names: bool,
}

/// Build a .taridx from another tool's index.
///
/// wids: INPUT is the shard list; its shards are indexed in list order.
/// dali: INPUTs are the shards; each SHARD's .idx is found beside it (as
/// wds2idx names it) or in --from DIR. ratarmount: INPUTs are the shards;
/// each SHARD.tar.index.sqlite is found beside it or in --from DIR. The
/// index is then verified against the shards (every row's tar header, and
/// a row for every member); -o may not be any file read.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt taridx import wids data/train.json -o data/train.taridx\n  binfmt taridx import dali data/train_*.tar -o data/train.taridx\n  binfmt taridx import ratarmount data/train_0000.tar -o data/train.taridx"
)]
pub struct ImportArgs {
    /// The index format to read.
    #[arg(value_enum)]
    from: ForeignArg,
    /// The wids shard list, or the shards in fid order.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Where the .idx or .index.sqlite files are (default: beside the shards).
    #[arg(long = "from", value_name = "DIR")]
    from_dir: Option<PathBuf>,
    /// The index to write.
    #[arg(short, long, value_name = "OUT.taridx")]
    output: PathBuf,
    /// The new index's key rule.
    #[arg(long, value_enum, default_value = "glzn")]
    keys: KeyRuleArg,
}

pub fn run(command: &Command) -> CommandResult {
    match command {
        Command::Index(args) => index(args),
        Command::Info(args) => info(args),
        Command::Get(args) => get(args),
        Command::List(args) => generic::list(args, Some(binfmt::Format::Taridx)),
        Command::Extract(args) => generic::extract(args, Some(binfmt::Format::Taridx)),
        Command::Verify(args) => generic::verify(args, Some(binfmt::Format::Taridx)),
        Command::Status(args) => status(args),
        Command::Pack(args) => foreign::pack(args),
        Command::Export(args) => foreign::export(args),
        Command::Import(args) => foreign::import(args),
    }
}

fn failed(path: &Path) -> impl Fn(TaridxError) -> String + '_ {
    move |error| output::about(path, error)
}

fn index(args: &IndexArgs) -> CommandResult {
    let options = IndexOptions::new()
        .jobs(args.jobs)
        .key_rule(args.keys.into());
    if args.all {
        return index_all(args, options);
    }
    let (shards, out) = match &args.fold {
        Some(fold) => {
            let [root] = args.inputs.as_slice() else {
                output::usage_error("--fold takes exactly one ROOT directory")
            };
            let shards = fold_shards(root, fold).map_err(failed(root))?;
            let out = args
                .output
                .clone()
                .unwrap_or_else(|| fold_index_path(root, fold));
            (shards, out)
        }
        None => {
            let Some(out) = &args.output else {
                output::usage_error(
                    "give -o OUT.taridx for the shards, --fold FOLD with a ROOT, or --all for every fold under a ROOT",
                )
            };
            let shards = binfmt_taridx::expand_shard_patterns(&args.inputs)
                .map_err(|error| error.to_string())?;
            (shards, out.clone())
        }
    };
    if binfmt::is_remote(&out) {
        return publish(&shards, &out, options);
    }
    let bar = output::progress(output::Steps::Items("shards"), "indexing");
    bar.set_length(shards.len() as u64);
    let written = write_index(&shards, &out, options, || bar.inc(1));
    bar.finish_and_clear();
    // Every failure names its file: the shard at fault or the output.
    written.map_err(|error| error.to_string())?;
    output::note(format_args!("wrote {}", output::shown(&out)));
    Ok(Status::Success)
}

/// `taridx index ... -o s3://BUCKET/PREFIX/FOLD.taridx`: the fold goes to
/// the prefix whole, shards first (each under its file name), the index
/// last, so a reader never finds the index before its shards.
fn publish(shards: &[PathBuf], out: &Path, options: IndexOptions) -> CommandResult {
    let target = binfmt::outputs::Output::open(
        out,
        std::sync::Arc::new(binfmt_core::Inputs::new(shards)),
        &binfmt_remote::RemoteOptions::default(),
    )
    .map_err(|error| error.to_string())?;
    if !target.name.ends_with(".taridx") {
        return Err(output::about(out, "an index is named FOLD.taridx"));
    }
    let bar = output::progress(output::Steps::Items("shards"), "indexing");
    bar.set_length(shards.len() as u64);
    let written =
        binfmt_taridx::publish_fold(shards, target.dir.as_ref(), &target.name, options, || {
            bar.inc(1)
        });
    bar.finish_and_clear();
    for name in written.map_err(|error| error.to_string())? {
        output::note(format_args!(
            "wrote {}",
            output::shown(&target.dir.show(&name))
        ));
    }
    Ok(Status::Success)
}

/// What `--all` and `status` say of a directory without folds.
const NO_FOLDS: &str = "no folds here: a fold's shards are named FOLD_N.tar, FOLD-N.tar or FOLD.N.tar; \
     shards named otherwise are indexed by a list or a pattern: binfmt taridx index 'DIR/*.tar' -o OUT.taridx";

fn index_all(args: &IndexArgs, options: IndexOptions) -> CommandResult {
    let [root] = args.inputs.as_slice() else {
        output::usage_error("--all takes exactly one ROOT directory")
    };
    let folds = binfmt_taridx::folds::discover(root).map_err(failed(root))?;
    if folds.is_empty() {
        return Err(output::about(root, NO_FOLDS));
    }
    let results = binfmt_taridx::folds::index_all(&folds, options);
    let mut failures = Vec::new();
    for (fold, result) in folds.iter().zip(results) {
        match result {
            Ok(()) => output::note(format_args!("wrote {}", output::shown(&fold.index))),
            Err(error) => failures.push(format!("fold {:?}: {error}", fold.name)),
        }
    }
    if failures.is_empty() {
        Ok(Status::Success)
    } else {
        Err(failures.join("\n"))
    }
}

#[derive(Debug, serde::Serialize)]
struct FoldReport {
    fold: String,
    index: String,
    shards: usize,
    state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    why: Option<String>,
}

fn status(args: &StatusArgs) -> CommandResult {
    use binfmt_taridx::folds::FoldState;
    let folds = binfmt_taridx::folds::discover(&args.root).map_err(failed(&args.root))?;
    if folds.is_empty() {
        return Err(output::about(&args.root, NO_FOLDS));
    }
    let mut reports = Vec::with_capacity(folds.len());
    for fold in &folds {
        let (state, why) = match fold.state().map_err(failed(&fold.index))? {
            FoldState::Fresh => ("fresh", None),
            FoldState::Missing => ("missing", None),
            FoldState::Stale(why) => ("stale", Some(why)),
            _ => ("unknown", None),
        };
        reports.push(FoldReport {
            fold: fold.name.clone(),
            index: fold.index.display().to_string(),
            shards: fold.shards.len(),
            state,
            why,
        });
    }
    if args.json {
        output::print_json(&reports)?;
    } else {
        let mut text = String::new();
        for report in &reports {
            text.push_str(&format!(
                "{}\t{}\t{} shards{}\n",
                report.state,
                output::escape(&report.fold),
                report.shards,
                report
                    .why
                    .as_ref()
                    .map(|why| format!("\t{}", output::escape(why)))
                    .unwrap_or_default()
            ));
        }
        output::print(&text)?;
    }
    Ok(if reports.iter().all(|report| report.state == "fresh") {
        Status::Success
    } else {
        Status::Failed
    })
}

/// The shards of an index: those it finds beside it, or in the directory
/// `shards` ([`binfmt_taridx::find_shards_in`]: its shard list there, else
/// its fold's by name).
fn index_shards_of(index: &Path, shards: Option<&Path>) -> Result<Vec<PathBuf>, String> {
    match shards {
        None => binfmt_taridx::find_shards(index),
        Some(root) => binfmt_taridx::find_shards_in(index, root),
    }
    .map_err(|error| error.to_string())
}

/// What `taridx info` reports after the path.
#[derive(Debug, serde::Serialize)]
struct Details<'a> {
    version: String,
    keys: &'static str,
    rows: u64,
    stems: u64,
    extensions: &'a [String],
    crash_stems: u32,
    contiguous: bool,
}

fn info(args: &InfoArgs) -> CommandResult {
    args.remote.counted(|session| info_in(session, args))
}

fn info_in(session: &Session, args: &InfoArgs) -> CommandResult {
    let index = Index::new(session.source(&args.file)?.source).map_err(failed(&args.file))?;
    let (major, minor) = index.version();
    let info = Info {
        path: args.file.display().to_string(),
        // An index's rows are not entries: no counts.
        counts: None,
        details: Details {
            version: format!("{major}.{minor}"),
            keys: index.key_rule().name(),
            rows: index.num_rows(),
            stems: index.n_stems(),
            extensions: index.extensions(),
            crash_stems: index.num_crash_stems(),
            contiguous: index.is_contiguous(),
        },
    };
    info.print(args.json, |report| {
        let info = &report.details;
        format!(
            "path: {}\nformat: taridx {}\nkeys: {}\nrows: {}\nstems: {}\nextensions: {}\ncrash stems: {}\ncontiguous: {}\n",
            report.shown_path(),
            info.version,
            info.keys,
            info.rows,
            info.stems,
            info.extensions
                .iter()
                .map(|ext| if ext.is_empty() {
                    "(none)".into()
                } else {
                    output::escape(ext)
                })
                .collect::<Vec<_>>()
                .join(", "),
            info.crash_stems,
            if info.contiguous { "yes" } else { "no" },
        )
    })
}

/// Opens the dataset of an index (a path or a URL): its fold's shards beside
/// it, or in the local directory `shards`.
fn open_dataset(
    session: &Session,
    index: &Path,
    shards: Option<&Path>,
) -> Result<Dataset<Box<dyn Source>>, String> {
    match shards {
        None => binfmt::open_dataset(index, session.options()).map_err(output::failed),
        Some(_) if binfmt::is_remote(index) => Err(output::about(
            index,
            "--shards takes a local directory; a remote index reads its shards beside it",
        )),
        Some(_) => {
            let shards = index_shards_of(index, shards)?;
            let index_source = session.source(index)?.source;
            let index = Index::new(index_source).map_err(failed(index))?;
            Dataset::new(index, ShardFiles::new(shards), DatasetOptions::default())
                .map_err(|error| error.to_string())
        }
    }
}

fn get(args: &GetArgs) -> CommandResult {
    args.remote.counted(|session| get_in(session, args))
}

fn get_in(session: &Session, args: &GetArgs) -> CommandResult {
    let dataset = open_dataset(session, &args.index, args.shards.as_deref())?;
    let shards = dataset.shards().set();
    // The index, the shard lists it may have been read through, the shards.
    let lists = std::iter::once(binfmt_taridx::shard_list_path(&args.index)).chain(
        args.shards.as_deref().map(|dir| {
            let name = args.index.file_name().unwrap_or(args.index.as_os_str());
            binfmt_taridx::shard_list_path(&dir.join(name))
        }),
    );
    let inputs: Vec<PathBuf> = std::iter::once(args.index.clone())
        .chain(lists)
        .chain((0..shards.count()).filter_map(|fid| Some(shards.name(u16::try_from(fid).ok()?))))
        .collect();
    let about = failed(&args.index);
    // A full member name first, then a sample key.
    let by_name = match &args.ext {
        None => dataset.find(&args.name).map_err(&about)?,
        Some(_) => None,
    };
    let wanted: Vec<Row> = match by_name {
        Some(row) => vec![row],
        None => dataset
            .lookup_verified(&args.name)
            .map_err(&about)?
            .into_iter()
            .filter(|row| {
                args.ext
                    .as_ref()
                    .is_none_or(|ext| dataset.extension(row) == Some(ext.as_str()))
            })
            .collect(),
    };
    // A remote shard serves the sample's members in one request.
    dataset.prefetch(&wanted);
    let rows = wanted
        .into_iter()
        .map(|row| Ok((row, dataset.member(&row).map_err(&about)?)))
        .collect::<Result<Vec<(Row, MemberReader)>, String>>()?;
    let names = |members: &[(Row, MemberReader)]| {
        members
            .iter()
            .map(|(_, member)| format!("{:?}", member.name()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match rows.len() {
        0 => Err(output::about(
            &args.index,
            format!(
                "no member named {:?} and no sample with that key{}",
                args.name,
                args.ext
                    .as_ref()
                    .map(|e| format!(" and a member with extension {e:?}"))
                    .unwrap_or_default()
            ),
        )),
        1 => {
            let Some((_, mut member)) = rows.into_iter().next() else {
                return Ok(Status::Success);
            };
            match args
                .output
                .as_deref()
                .filter(|path| !output::is_stdout(path))
            {
                Some(path) => write_member(path, &mut member, &inputs)?,
                None => output::entry_to_stdout(&mut member, args.output.is_some(), |error| {
                    output::about(&args.index, TaridxError::from_io(error, &args.index))
                })?,
            }
            Ok(Status::Success)
        }
        _ if args.ext.is_some() => Err(output::about(
            &args.index,
            format!(
                "sample {:?} has {} members with extension {:?} ({}): get one by its full name",
                args.name,
                rows.len(),
                args.ext.as_deref().unwrap_or_default(),
                names(&rows)
            ),
        )),
        _ => {
            let Some(dir) = &args.output else {
                output::usage_error(format!(
                    "sample {:?} has {} members ({}): write them all with -o DIR, or get one by its full name",
                    args.name,
                    rows.len(),
                    names(&rows)
                ))
            };
            write_sample(dir, &args.name, &dataset, rows, &inputs)
        }
    }
}

/// Writes each member of a sample to `DIR/KEY.EXT` through the extraction
/// gate, after checking that no two land on one file.
fn write_sample(
    dir: &Path,
    key: &str,
    dataset: &Dataset<Box<dyn Source>>,
    members: Vec<(Row, MemberReader)>,
    inputs: &[PathBuf],
) -> CommandResult {
    let mut targets: Vec<(String, MemberReader)> = Vec::with_capacity(members.len());
    for (row, member) in members {
        let ext = dataset.extension(&row).unwrap_or_default();
        let name = if ext.is_empty() {
            key.to_owned()
        } else {
            format!("{key}.{ext}")
        };
        if let Some((_, earlier)) = targets.iter().find(|(target, _)| *target == name) {
            return Err(format!(
                "members {:?} and {:?} would both be written to {}: get each by its full name",
                earlier.name(),
                member.name(),
                dir.join(&name).display()
            ));
        }
        targets.push((name, member));
    }
    binfmt_core::extract::create_dir(dir).map_err(|error| error.to_string())?;
    for (name, mut member) in targets {
        let target = binfmt_core::extract::safe_target(dir, &name).map_err(|e| e.to_string())?;
        write_member(&target, &mut member, inputs)?;
    }
    Ok(Status::Success)
}

/// Streams a member into a file, atomically; never over one of `inputs`.
fn write_member(path: &Path, member: &mut MemberReader, inputs: &[PathBuf]) -> Result<(), String> {
    crate::cmd::generic::refuse_overwriting_inputs(inputs, path)?;
    let mut file = binfmt_core::AtomicFile::create(path).map_err(|error| error.to_string())?;
    // The member's size is in its header: a bar with a total (a remote
    // shard's member arrives over the network).
    let bar = output::progress(output::Steps::Bytes, "getting");
    bar.set_length(member.size());
    let copied = std::io::copy(&mut bar.wrap_read(member), &mut file);
    bar.finish_and_clear();
    copied.map_err(|error| output::about(path, TaridxError::from_io(error, path)))?;
    file.flush().map_err(|error| output::about(path, error))?;
    file.commit().map_err(|error| error.to_string())
}
