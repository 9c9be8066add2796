//! `binfmt taridx ...`: index tar shards and read samples through an index.

use std::io::Write;
use std::path::{Path, PathBuf};

use binfmt_taridx::{
    Dataset, Index, IndexOptions, KeyRule, MemberReader, Row, TaridxError, fold_index_path,
    fold_shards, write_index,
};

use crate::output::{self, CommandResult, Status};

/// Index WebDataset-style tar shards and read samples at random.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    Index(IndexArgs),
    Info(InfoArgs),
    Get(GetArgs),
}

/// How member names become sample keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KeyRuleArg {
    /// glzn's iTar rule: the basename up to its first dot (the default; the
    /// index is byte-identical to glzn's).
    Glzn,
    /// WebDataset's rule: the whole path up to the basename's first dot
    /// (recorded in the index: flag bit 1, minor version 1).
    Webdataset,
}

impl From<KeyRuleArg> for KeyRule {
    fn from(arg: KeyRuleArg) -> Self {
        match arg {
            KeyRuleArg::Glzn => KeyRule::Glzn,
            KeyRuleArg::Webdataset => KeyRule::WebDataset,
        }
    }
}

/// Write a .taridx index of tar shards.
///
/// With --fold, index the shards ROOT/FOLD_*.tar (sorted by name, giving fids
/// 0, 1, ...) into ROOT/FOLD.taridx (or -o). Otherwise index the given
/// shards, in the given order, into -o OUT.taridx. Only headers are read;
/// shards are scanned in parallel, and the index is the same whatever the
/// number of jobs. A corrupt shard fails with its name and byte offset and
/// leaves no index behind; an output that is one of the shards is refused.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt taridx index data/ --fold train\n  binfmt taridx index val_0000.tar val_0001.tar -o val.taridx --jobs 4\n  binfmt taridx index data/ --fold train --keys webdataset"
)]
pub struct IndexArgs {
    /// ROOT with --fold; the shards, in fid order, otherwise.
    #[arg(required = true, value_name = "ROOT | SHARD")]
    inputs: Vec<PathBuf>,
    /// The fold to index: shards ROOT/FOLD_*.tar, index ROOT/FOLD.taridx.
    #[arg(long)]
    fold: Option<String>,
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
    /// The .taridx file.
    file: PathBuf,
    /// Print a JSON object instead of text.
    #[arg(long)]
    json: bool,
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
    /// The .taridx file.
    index: PathBuf,
    /// A member's full name, or a sample key.
    name: String,
    /// Only the member with this extension (-o then names a file).
    #[arg(long)]
    ext: Option<String>,
    /// The directory holding the shards (default: the index's directory).
    #[arg(long, value_name = "ROOT")]
    shards: Option<PathBuf>,
    /// Where to write: a file for one member, a directory for a sample.
    #[arg(short, long)]
    output: Option<PathBuf>,
}

pub fn run(command: &Command) -> CommandResult {
    match command {
        Command::Index(args) => index(args),
        Command::Info(args) => info(args),
        Command::Get(args) => get(args),
    }
}

fn failed(path: &Path) -> impl Fn(TaridxError) -> String + '_ {
    move |error| output::about(path, error)
}

fn index(args: &IndexArgs) -> CommandResult {
    let options = IndexOptions::new()
        .jobs(args.jobs)
        .key_rule(args.keys.into());
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
                output::usage_error("give -o OUT.taridx for the shards, or --fold FOLD with a ROOT")
            };
            (args.inputs.clone(), out.clone())
        }
    };
    let bar = output::progress(shards.len() as u64, "indexing shards");
    let written = write_index(&shards, &out, options, || bar.inc(1));
    bar.finish_and_clear();
    // Every failure names its file: the shard at fault or the output.
    written.map_err(|error| error.to_string())?;
    eprintln!("wrote {}", out.display());
    Ok(Status::Success)
}

#[derive(Debug, serde::Serialize)]
struct Info<'a> {
    path: String,
    version: String,
    keys: &'static str,
    rows: u64,
    stems: u64,
    extensions: &'a [String],
    crash_stems: u32,
    contiguous: bool,
}

fn info(args: &InfoArgs) -> CommandResult {
    let index = Index::open(&args.file).map_err(failed(&args.file))?;
    let (major, minor) = index.version();
    let info = Info {
        path: args.file.display().to_string(),
        version: format!("{major}.{minor}"),
        keys: index.key_rule().name(),
        rows: index.num_rows(),
        stems: index.n_stems(),
        extensions: index.extensions(),
        crash_stems: index.num_crash_stems(),
        contiguous: index.is_contiguous(),
    };
    if args.json {
        output::print_json(&info)?;
    } else {
        output::print(&format!(
            "path: {}\nformat: taridx {}\nkeys: {}\nrows: {}\nstems: {}\nextensions: {}\ncrash stems: {}\ncontiguous: {}\n",
            info.path,
            info.version,
            info.keys,
            info.rows,
            info.stems,
            info.extensions
                .iter()
                .map(|ext| if ext.is_empty() { "(none)" } else { ext })
                .collect::<Vec<_>>()
                .join(", "),
            info.crash_stems,
            if info.contiguous { "yes" } else { "no" },
        ))?;
    }
    Ok(Status::Success)
}

/// Opens the dataset of an index: its fold's shards in its directory, or in
/// `shards`.
fn open_dataset(index: &Path, shards: Option<&Path>) -> Result<Dataset, String> {
    let fold = index
        .file_stem()
        .and_then(|stem| stem.to_str())
        .ok_or_else(|| output::about(index, "the index file name has no fold name"))?;
    let root = match shards {
        Some(root) => root.to_path_buf(),
        None => index
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
    };
    let shards = fold_shards(&root, fold).map_err(failed(&root))?;
    Dataset::open(index, &shards).map_err(failed(index))
}

fn get(args: &GetArgs) -> CommandResult {
    let dataset = open_dataset(&args.index, args.shards.as_deref())?;
    let about = failed(&args.index);
    // A full member name first, then a sample key.
    let by_name = match &args.ext {
        None => dataset.find(&args.name).map_err(&about)?,
        Some(_) => None,
    };
    let rows: Vec<(Row, MemberReader)> = match by_name {
        Some(row) => vec![(row, dataset.member(&row).map_err(&about)?)],
        None => {
            let mut members = Vec::new();
            for row in dataset.lookup_verified(&args.name).map_err(&about)? {
                if args
                    .ext
                    .as_ref()
                    .is_none_or(|ext| dataset.extension(&row) == Some(ext.as_str()))
                {
                    members.push((row, dataset.member(&row).map_err(&about)?));
                }
            }
            members
        }
    };
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
            match &args.output {
                Some(path) => write_member(path, &mut member)?,
                None => output::to_stdout(|out| std::io::copy(&mut member, out).map(|_| ()))?,
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
            write_sample(dir, &args.name, &dataset, rows)
        }
    }
}

/// Writes each member of a sample to `DIR/KEY.EXT` through the extraction
/// gate, after checking that no two land on one file.
fn write_sample(
    dir: &Path,
    key: &str,
    dataset: &Dataset,
    members: Vec<(Row, MemberReader)>,
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
    std::fs::create_dir_all(dir).map_err(|error| output::about(dir, error))?;
    for (name, mut member) in targets {
        let target = binfmt_core::extract::safe_target(dir, &name).map_err(|e| e.to_string())?;
        write_member(&target, &mut member)?;
    }
    Ok(Status::Success)
}

/// Streams a member into a file, atomically.
fn write_member(path: &Path, member: &mut MemberReader) -> Result<(), String> {
    let mut file = binfmt_core::AtomicFile::create(path).map_err(|error| error.to_string())?;
    std::io::copy(member, &mut file)
        .map_err(|error| output::about(path, TaridxError::from_io(error, path)))?;
    file.flush().map_err(|error| output::about(path, error))?;
    file.commit().map_err(|error| error.to_string())
}
