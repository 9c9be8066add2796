//! The arguments several subcommands share: the verbs every format has
//! (`info`, `list`, `get`, `extract`, `verify`, taken by `binfmt VERB` and
//! by `binfmt FORMAT VERB` alike) and the choices more than one command
//! offers (`--dialect`, `--keys`). A leaf: it knows no subcommand.

use std::path::PathBuf;

use crate::cmd::remote::RemoteArgs;

/// Show a file's format, entry count and total size.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  binfmt info data.arcx\n  binfmt info --json tables.trees")]
pub struct InfoArgs {
    /// A TARIDX index (with its shards beside it), ARCX, PAR4 or KAST file
    /// ("-": a kastore on standard input), or its http(s):// or s3:// URL.
    pub file: PathBuf,
    /// Print a JSON object: {"path", "format", "entries", "bytes"}.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// List a file's entries, one per line: SIZE<TAB>NAME.
///
/// Control characters in names are escaped in the text listing (\n,
/// \u{1b}, ...), so a name cannot forge lines; --json shows names as they
/// are.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt list data.arcx\n  binfmt list --json shards/train.taridx"
)]
pub struct ListArgs {
    /// A TARIDX index (with its shards beside it), ARCX, PAR4 or KAST file
    /// ("-": a kastore on standard input), or its http(s):// or s3:// URL.
    pub file: PathBuf,
    /// Print a JSON array of {"name", "size"} (and "kind" where the format
    /// says what an entry is).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// Write one entry's bytes to stdout (or -o OUT).
///
/// With -o the file appears only once every check passed; on stdout the
/// bytes stream as they are read, and a failed check ends the command with
/// exit status 1.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt get data.arcx src/lib.rs\n  binfmt get shards/train.taridx s/000123.jpg -o 000123.jpg\n  binfmt get tables.trees nodes/time > time.f64"
)]
pub struct GetArgs {
    /// A TARIDX index (with its shards beside it), ARCX, PAR4 or KAST file
    /// ("-": a kastore on standard input), or its http(s):// or s3:// URL.
    pub file: PathBuf,
    /// The entry's name, as `list` shows it.
    pub name: String,
    /// Where to write (default: stdout, where an entry that is not text
    /// is refused on a terminal; "-": stdout, even a terminal).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// Write every entry to a file under DIR named by the entry.
///
/// Names that would land outside DIR (absolute, '..', empty components) are
/// refused, directories on the way are never followed through symlinks,
/// and each file appears whole or not at all. ARCX archives also restore
/// modes, modification times and empty directories (never setuid, setgid
/// or sticky bits); their symlinks only with --symlinks.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt extract data.arcx -o out/\n  binfmt extract shards/train.taridx -o train/\n  binfmt extract tables.trees -o arrays/"
)]
pub struct ExtractArgs {
    /// A TARIDX index (with its shards beside it), ARCX, PAR4 or KAST file
    /// ("-": a kastore on standard input), or its http(s):// or s3:// URL.
    pub file: PathBuf,
    /// The directory to write into (created if missing).
    #[arg(short, long, value_name = "DIR")]
    pub output: PathBuf,
    /// Recreate symlinks stored in an ARCX archive (relative targets inside
    /// DIR only; never followed).
    #[arg(long)]
    pub symlinks: bool,
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// Check everything the file's format can check.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  binfmt verify data.arcx")]
pub struct VerifyArgs {
    /// A TARIDX index (with its shards beside it), ARCX, PAR4 or KAST file
    /// ("-": a kastore on standard input), or its http(s):// or s3:// URL.
    pub file: PathBuf,
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `--dialect`, for `arcx pack` and `convert --to arcx`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum DialectArg {
    /// The layout of the format's specification (default).
    Spec,
    /// What the arcx 0.3.0 tool reads and writes.
    ArcxCli,
}

impl From<DialectArg> for binfmt_arcx::Dialect {
    fn from(dialect: DialectArg) -> Self {
        match dialect {
            DialectArg::Spec => Self::Spec,
            DialectArg::ArcxCli => Self::ArcxCli,
        }
    }
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

impl From<KeyRuleArg> for binfmt_taridx::KeyRule {
    fn from(arg: KeyRuleArg) -> Self {
        match arg {
            KeyRuleArg::Glzn => Self::Glzn,
            KeyRuleArg::Webdataset => Self::WebDataset,
        }
    }
}
