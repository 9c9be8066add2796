//! `binfmt kast ...`: kastore files, following the conventions of the
//! `kastore` Python CLI (`python -m kastore ls|dump`) where it has them.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use std::io::Write;

use binfmt::Format;
use binfmt_core::{ByteSource, FileSource, Inputs, Source, SourceExt};
use binfmt_kastore::npy::NpyFile;
use binfmt_kastore::{Element, Item, ItemType, Store, Writer};

use crate::cmd::args;
use crate::cmd::generic;
use crate::cmd::info::{Counts, Info};
use crate::cmd::remote::{RemoteArgs, Session};
use crate::output::{self, CommandResult, Status};

/// Inspect and build kastore (.kas, tskit .trees) files.
#[derive(Debug, clap::Subcommand)]
#[command(defer = true)]
pub enum Command {
    Info(args::InfoArgs),
    #[command(visible_alias = "ls")]
    List(ListArgs),
    Get(args::GetArgs),
    Dump(DumpArgs),
    Extract(args::ExtractArgs),
    Verify(args::VerifyArgs),
    Pack(Box<PackArgs>),
}

/// List the keys of a store, in key order.
///
/// Like `python -m kastore ls` (also spelt `binfmt kast ls`): one key per
/// line; with --long, each line is "TYPE LENGTH BYTES KEY" in aligned
/// columns. Control characters in keys are escaped.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt kast ls tables.trees\n  binfmt kast list -l tables.trees\n  binfmt kast list --json tables.trees\n  cat tables.trees | binfmt kast ls -"
)]
pub struct ListArgs {
    /// The kastore file ("-" reads standard input), or its http(s):// or
    /// s3:// URL.
    file: PathBuf,
    /// Show type, length and size of each array.
    #[arg(short, long)]
    long: bool,
    /// With --long, show sizes as 1.5K, 12M, ...
    #[arg(short = 'H', long)]
    human_readable: bool,
    /// Print a JSON array of {"name", "size", "kind", "length"} (kind: the
    /// element type; length: elements).
    #[arg(long, conflicts_with_all = ["long", "human_readable"])]
    json: bool,
    #[command(flatten)]
    remote: RemoteArgs,
}

/// Print the values of one array, one per line.
///
/// Values print as `python -m kastore dump` prints them: integers in
/// decimal, floats as Python's repr of the value as a double (the shortest
/// form that reads back exactly: 0.1, 1e-05; a float32 0.1 is
/// 0.10000000149011612). `binfmt kast get` writes the raw bytes instead.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt kast dump tables.trees nodes/time\n  binfmt kast dump --raw data.kas weights > weights.bin"
)]
pub struct DumpArgs {
    /// The kastore file ("-" reads standard input), or its http(s):// or
    /// s3:// URL.
    file: PathBuf,
    /// The key of the array.
    key: String,
    /// Write the array's little-endian bytes instead of text (as `get`).
    #[arg(long)]
    raw: bool,
    #[command(flatten)]
    remote: RemoteArgs,
}

/// Write a kastore file of typed arrays.
///
/// Each --TYPE KEY=PATH stores PATH's bytes, little-endian values of that
/// type, under KEY ("-" reads standard input); --npy KEY=PATH stores a
/// one-dimensional .npy array with its own type. With --append the arrays
/// are added to the existing store at -o (kastore's append mode); a key it
/// already holds is an error unless --replace. The file is replaced
/// atomically.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt kast pack -o bundle.kas --uint8 config=config.json --float64 weights=weights.f64\n  binfmt kast pack -o tables.kas --npy nodes/time=time.npy --int32 nodes/flags=flags.i32\n  binfmt kast pack -o tables.kas --append --replace --float64 nodes/time=new.f64\n  echo hello | binfmt kast pack -o out.kas --uint8 greeting=-"
)]
pub struct PackArgs {
    /// The file to write (replaced atomically).
    #[arg(short, long)]
    output: PathBuf,
    /// Add to the store at -o instead of starting empty.
    #[arg(long)]
    append: bool,
    /// With --append, replace keys the store already holds.
    #[arg(long, requires = "append")]
    replace: bool,
    /// KEY=PATH of int8 values.
    #[arg(long = "int8", value_name = "KEY=PATH", value_parser = key_and_path)]
    int8: Vec<(String, PathBuf)>,
    /// KEY=PATH of uint8 values (any bytes).
    #[arg(long = "uint8", value_name = "KEY=PATH", value_parser = key_and_path)]
    uint8: Vec<(String, PathBuf)>,
    /// KEY=PATH of little-endian int16 values.
    #[arg(long = "int16", value_name = "KEY=PATH", value_parser = key_and_path)]
    int16: Vec<(String, PathBuf)>,
    /// KEY=PATH of little-endian uint16 values.
    #[arg(long = "uint16", value_name = "KEY=PATH", value_parser = key_and_path)]
    uint16: Vec<(String, PathBuf)>,
    /// KEY=PATH of little-endian int32 values.
    #[arg(long = "int32", value_name = "KEY=PATH", value_parser = key_and_path)]
    int32: Vec<(String, PathBuf)>,
    /// KEY=PATH of little-endian uint32 values.
    #[arg(long = "uint32", value_name = "KEY=PATH", value_parser = key_and_path)]
    uint32: Vec<(String, PathBuf)>,
    /// KEY=PATH of little-endian int64 values.
    #[arg(long = "int64", value_name = "KEY=PATH", value_parser = key_and_path)]
    int64: Vec<(String, PathBuf)>,
    /// KEY=PATH of little-endian uint64 values.
    #[arg(long = "uint64", value_name = "KEY=PATH", value_parser = key_and_path)]
    uint64: Vec<(String, PathBuf)>,
    /// KEY=PATH of little-endian float32 values.
    #[arg(long = "float32", value_name = "KEY=PATH", value_parser = key_and_path)]
    float32: Vec<(String, PathBuf)>,
    /// KEY=PATH of little-endian float64 values.
    #[arg(long = "float64", value_name = "KEY=PATH", value_parser = key_and_path)]
    float64: Vec<(String, PathBuf)>,
    /// KEY=PATH of a one-dimensional .npy file (type from its header).
    #[arg(long = "npy", value_name = "KEY=PATH", value_parser = key_and_path)]
    npy: Vec<(String, PathBuf)>,
}

impl PackArgs {
    /// Every raw input with its type.
    fn typed(&self) -> impl Iterator<Item = (ItemType, &(String, PathBuf))> {
        // In type id order, as `ItemType::ALL` lists the types.
        let inputs = [
            &self.int8,
            &self.uint8,
            &self.int16,
            &self.uint16,
            &self.int32,
            &self.uint32,
            &self.int64,
            &self.uint64,
            &self.float32,
            &self.float64,
        ];
        ItemType::ALL
            .into_iter()
            .zip(inputs)
            .flat_map(|(item_type, inputs)| inputs.iter().map(move |input| (item_type, input)))
    }
}

fn key_and_path(spec: &str) -> Result<(String, PathBuf), String> {
    match spec.split_once('=') {
        Some((key, path)) if !path.is_empty() => Ok((key.to_owned(), PathBuf::from(path))),
        _ => Err(format!("expected KEY=PATH, got {spec:?}")),
    }
}

pub fn run(command: &Command) -> CommandResult {
    let kast = Some(Format::Kast);
    match command {
        Command::Info(args) => info(args),
        Command::List(args) => ls(args),
        Command::Get(args) => generic::get(args, kast),
        Command::Dump(args) => dump(args),
        Command::Extract(args) => generic::extract(args, kast),
        Command::Verify(args) => generic::verify(args, kast),
        Command::Pack(args) => pack(args),
    }
}

/// A store from a file (read by offset, never mapped: a file truncated
/// underneath fails the read with an error instead of ending the process
/// with SIGBUS), a URL (read by ranges) or standard input.
fn open(session: &Session, path: &Path) -> Result<Store<Box<dyn Source>>, String> {
    let store = if path == Path::new("-") {
        Store::read_from(&mut std::io::stdin().lock(), "<stdin>")
            .and_then(|store| Store::new(Box::new(store.into_source()) as Box<dyn Source>))
    } else if binfmt::is_remote(path) {
        Store::new(session.source(path)?.source)
    } else {
        FileSource::open(path)
            .map_err(binfmt_kastore::KastError::from)
            .and_then(|source| Store::new(Box::new(source) as Box<dyn Source>))
    };
    store.map_err(|error| output::about(path, error))
}

fn key_text<'a>(item: &Item<'a>) -> Cow<'a, str> {
    String::from_utf8_lossy(item.key())
}

#[derive(Debug, serde::Serialize)]
struct Listed<'a> {
    name: Cow<'a, str>,
    size: u64,
    kind: &'static str,
    length: u64,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    name_not_utf8: bool,
}

fn ls(args: &ListArgs) -> CommandResult {
    args.remote.counted(|session| ls_in(session, args))
}

fn ls_in(session: &Session, args: &ListArgs) -> CommandResult {
    let store = open(session, &args.file)?;
    if args.json {
        let listed: Vec<Listed<'_>> = store
            .items()
            .map(|item| Listed {
                name: key_text(&item),
                size: item.byte_len(),
                kind: item.item_type().name(),
                length: item.len(),
                name_not_utf8: item.key_str().is_none(),
            })
            .collect();
        output::print_json(&listed)?;
        return Ok(Status::Success);
    }
    if !args.long {
        output::to_stdout(|out| {
            store
                .items()
                .try_for_each(|item| writeln!(out, "{}", output::escape(&key_text(&item))))
        })?;
        return Ok(Status::Success);
    }
    let rows: Vec<[String; 4]> = store
        .items()
        .map(|item| {
            let size = if args.human_readable {
                human_size(item.byte_len())
            } else {
                item.byte_len().to_string()
            };
            [
                item.item_type().name().to_owned(),
                item.len().to_string(),
                size,
                output::escape(&key_text(&item)).into_owned(),
            ]
        })
        .collect();
    let width = |column: usize| {
        rows.iter()
            .filter_map(|row| row.get(column))
            .map(String::len)
            .max()
            .unwrap_or(0)
    };
    let (type_width, length_width, size_width) = (width(0), width(1), width(2));
    output::to_stdout(|out| {
        rows.iter().try_for_each(|[item_type, length, size, key]| {
            writeln!(
                out,
                "{item_type:<type_width$} {length:>length_width$} {size:>size_width$} {key}"
            )
        })
    })?;
    Ok(Status::Success)
}

/// Sizes as GNU `ls -h` prints them (what `humanize.naturalsize(gnu=True)` gives).
fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 8] = ["K", "M", "G", "T", "P", "E", "Z", "Y"];
    if bytes < 1024 {
        return format!("{bytes}B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1}{}", UNITS.get(unit).copied().unwrap_or("Y"))
}

fn dump(args: &DumpArgs) -> CommandResult {
    args.remote.counted(|session| dump_in(session, args))
}

fn dump_in(session: &Session, args: &DumpArgs) -> CommandResult {
    let store = open(session, &args.file)?;
    let item = store
        .get(&args.key)
        .map_err(|error| output::about(&args.file, error))?;
    if args.raw {
        let mut reader = item
            .reader()
            .map_err(|error| output::about(&args.file, error))?;
        output::stream_to_stdout(&mut reader, |error| output::about(&args.file, error))?;
        return Ok(Status::Success);
    }
    let file = &args.file;
    binfmt_kastore::with_element!(
        item.item_type(),
        T => print_values::<T>(file, &item),
        other => Err(format!("{}: no printer for {other} values", file.display()))
    )?;
    Ok(Status::Success)
}

/// Prints an array's values one per line, reading it a piece at a time
/// (memory does not grow with the array; a file cut short underneath is an
/// error naming it). A closed pipe ends quietly.
fn print_values<T: Element>(file: &Path, item: &Item<'_>) -> Result<(), String> {
    let pieces = item
        .pieces::<T>(8192)
        .map_err(|error| output::about(file, error))?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut written = Ok(());
    for piece in pieces {
        let values = piece.map_err(|error| output::about(file, error))?;
        written = values
            .iter()
            .try_for_each(|&value| writeln!(out, "{}", show(value)));
        if written.is_err() {
            break;
        }
    }
    let written = written.and_then(|()| out.flush());
    match written {
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(error) => Err(format!("writing to stdout: {error}")),
        Ok(()) => Ok(()),
    }
}

/// One value as the Python package's CLI prints it: an integer in decimal,
/// a float as Python's `repr()` does.
fn show<T: Element>(value: T) -> String {
    match value.float_value() {
        Some(float) => python_float_repr(float),
        None => value.to_string(),
    }
}

/// A float as Python's `repr()` shows it: the shortest digits that read
/// back exactly, positional when `1e-4 <= |x| < 1e16` or zero (with `.0`
/// for whole numbers), scientific with a signed two-digit exponent
/// otherwise.
fn python_float_repr(value: f64) -> String {
    if value.is_nan() {
        return "nan".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    let magnitude = value.abs();
    if magnitude == 0.0 || (1e-4..1e16).contains(&magnitude) {
        let positional = value.to_string();
        return if positional.contains('.') {
            positional
        } else {
            positional + ".0"
        };
    }
    let scientific = format!("{value:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let sign = if exponent < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exponent.unsigned_abs())
}

/// What `kast info` adds to the counts.
#[derive(Debug, serde::Serialize)]
struct Details {
    version: String,
    file_size: u64,
}

fn info(args: &args::InfoArgs) -> CommandResult {
    args.remote.counted(|session| info_in(session, args))
}

fn info_in(session: &Session, args: &args::InfoArgs) -> CommandResult {
    let store = open(session, &args.file)?;
    let (major, minor) = store.version();
    let counts = Counts {
        format: Format::Kast,
        entries: store.len(),
        // Every array lies inside the file: the sum is at most its size.
        bytes: store.items().map(|item| item.byte_len()).sum(),
    };
    let (entries, bytes) = (counts.entries, counts.bytes);
    let info = Info {
        path: args.file.display().to_string(),
        counts: Some(counts),
        details: Details {
            version: format!("{major}.{minor}"),
            file_size: store.file_size(),
        },
    };
    info.print(args.json, |info| {
        format!(
            "path: {}\nformat: kastore {}\nentries: {}\nfile size: {} bytes\narray data: {} bytes\n",
            info.shown_path(),
            info.details.version,
            entries,
            info.details.file_size,
            bytes
        )
    })
}

/// One pack input, opened before anything is written.
enum Input {
    /// Standard input, read once into memory.
    Stdin(ByteSource),
    /// A file, read by offset (never mapped) when the store is written.
    File(FileSource),
    /// A `.npy` file, its elements read by offset when the store is written.
    Npy(NpyFile),
}

/// Opens one pack input ("-": standard input, once).
fn open_input(path: &Path) -> Result<Input, String> {
    if path == Path::new("-") {
        ByteSource::read_from(&mut std::io::stdin().lock(), "<stdin>").map(Input::Stdin)
    } else {
        FileSource::open(path).map(Input::File)
    }
    .map_err(|error| output::about(path, error))
}

fn pack(args: &PackArgs) -> CommandResult {
    let typed: Vec<(ItemType, &(String, PathBuf))> = args.typed().collect();
    if typed.is_empty() && args.npy.is_empty() && !args.append {
        crate::output::usage_error("give at least one array: --TYPE KEY=PATH or --npy KEY=PATH");
    }
    // The store is replaced by a new file: no input may be it (with
    // --append it is read as the old store, by design).
    let paths = typed
        .iter()
        .map(|(_, (_, path))| path)
        .chain(args.npy.iter().map(|(_, path)| path))
        .filter(|path| path.as_path() != Path::new("-"));
    let gate = Inputs::new(&paths.collect::<Vec<_>>());
    gate.check(&args.output)
        .map_err(|error| error.to_string())?;
    let out = binfmt::outputs::Output::open(
        &args.output,
        std::sync::Arc::new(gate),
        &binfmt_remote::RemoteOptions::default(),
    )
    .map_err(|error| error.to_string())?;
    if args.append && out.is_remote() {
        return Err(format!(
            "{}: --append reads the store it replaces, which must be a local file (download it, append, then upload)",
            output::escape(&out.shown().display().to_string())
        ));
    }
    let mut inputs = Vec::new();
    for &(item_type, (key, path)) in &typed {
        inputs.push((key, Some(item_type), open_input(path)?));
    }
    for (key, path) in &args.npy {
        let npy = NpyFile::open(path).map_err(|error| output::about(path, error))?;
        inputs.push((key, None, Input::Npy(npy)));
    }
    let existing = if args.append {
        let source =
            FileSource::open(&args.output).map_err(|error| output::about(&args.output, error))?;
        Some(Store::new(source).map_err(|error| output::about(&args.output, error))?)
    } else {
        None
    };
    // Every key written, those the old store carries over included, goes
    // through the one key rule (`Writer::with_path_keys`).
    let mut writer = Writer::with_path_keys();
    if let Some(store) = &existing {
        writer
            .append_store(store)
            .map_err(|error| output::about(&args.output, error))?;
    }
    for (key, item_type, input) in &inputs {
        let flag = item_type.map_or("npy", ItemType::name);
        let failed = |error: binfmt_kastore::KastError| format!("--{flag} {key}: {error}");
        if args.replace {
            writer.remove(key);
        }
        match input {
            Input::Stdin(bytes) => {
                let item_type = item_type.unwrap_or(ItemType::Uint8);
                writer.insert_raw(key, item_type, bytes.as_bytes())
            }
            Input::File(file) => {
                let item_type = item_type.unwrap_or(ItemType::Uint8);
                let len = Source::len(file);
                let reader = file.reader(0, len, "input").map_err(|e| failed(e.into()))?;
                writer.insert_reader(key, item_type, len, reader)
            }
            Input::Npy(npy) => {
                let header = npy.header();
                let reader = npy.reader().map_err(failed)?;
                writer.insert_reader(key, header.item_type, header.data_len, reader)
            }
        }
        .map_err(failed)?;
    }
    let created = out.create().map_err(|error| error.to_string())?;
    writer
        .write_destination(created)
        .map_err(|error| output::about(&args.output, error))?;
    Ok(Status::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_as_python_repr_does() {
        // Checked against CPython 3.11: repr(v), and repr(float(np.float32(v))).
        let cases: [(f64, &str); 14] = [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (0.1, "0.1"),
            (1e-4, "0.0001"),
            (1e-5, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (123456789.0, "123456789.0"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.2345e20, "1.2345e+20"),
            (-2.5e-300, "-2.5e-300"),
            (f64::from(0.1f32), "0.10000000149011612"),
            (f64::from(1e-4f32), "9.999999747378752e-05"),
        ];
        for (value, expected) in cases {
            assert_eq!(python_float_repr(value), expected, "{value}");
        }
        assert_eq!(python_float_repr(f64::NAN), "nan");
        assert_eq!(python_float_repr(f64::NEG_INFINITY), "-inf");
        assert_eq!(python_float_repr(f64::INFINITY), "inf");
    }

    #[test]
    fn human_sizes() {
        assert_eq!(human_size(0), "0B");
        assert_eq!(human_size(1023), "1023B");
        assert_eq!(human_size(1536), "1.5K");
        assert_eq!(human_size(5 * 1024 * 1024), "5.0M");
    }
}
