//! `binfmt kast ...`: kastore files, following the conventions of the
//! `kastore` Python CLI (`python -m kastore ls|dump`) where it has them.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use binfmt_core::ByteSource;
use binfmt_kastore::{Item, ItemType, Store, Writer};

use crate::output::{self, CommandResult, Status};

/// Inspect and build kastore (.kas, tskit .trees) files.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    Ls(LsArgs),
    Dump(DumpArgs),
    Info(InfoArgs),
    Pack(PackArgs),
}

/// List the keys of a store, in key order.
///
/// Like `python -m kastore ls`: one key per line; with --long, each line is
/// "TYPE LENGTH BYTES KEY" in aligned columns.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt kast ls tables.trees\n  binfmt kast ls -l tables.trees\n  binfmt kast ls --json tables.trees\n  cat tables.trees | binfmt kast ls -"
)]
pub struct LsArgs {
    /// The kastore file ("-" reads standard input).
    file: PathBuf,
    /// Show type, length and size of each array.
    #[arg(short, long)]
    long: bool,
    /// With --long, show sizes as 1.5K, 12M, ...
    #[arg(short = 'H', long)]
    human_readable: bool,
    /// Print a JSON array of {"key", "type", "length", "bytes"}.
    #[arg(long, conflicts_with_all = ["long", "human_readable"])]
    json: bool,
}

/// Print the values of one array, one per line.
///
/// Values print as `python -m kastore dump` prints them: integers in
/// decimal, floats as Python's repr of the value as a double (the shortest
/// form that reads back exactly: 0.1, 1e-05; a float32 0.1 is
/// 0.10000000149011612).
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt kast dump tables.trees nodes/time\n  binfmt kast dump --raw data.kas weights > weights.bin"
)]
pub struct DumpArgs {
    /// The kastore file ("-" reads standard input).
    file: PathBuf,
    /// The key of the array.
    key: String,
    /// Write the array's little-endian bytes instead of text.
    #[arg(long)]
    raw: bool,
}

/// Show the format version, item count and sizes of a store.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt kast info tables.trees\n  binfmt kast info --json tables.trees"
)]
pub struct InfoArgs {
    /// The kastore file ("-" reads standard input).
    file: PathBuf,
    /// Print a JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// Write a kastore file holding files' bytes as uint8 arrays.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt kast pack bundle.kas --uint8 config=config.json --uint8 weights=weights.bin\n  echo hello | binfmt kast pack out.kas --uint8 greeting=-"
)]
pub struct PackArgs {
    /// The file to write (replaced atomically).
    out: PathBuf,
    /// KEY=PATH: store PATH's bytes under KEY ("-" for standard input).
    #[arg(long = "uint8", value_name = "KEY=PATH", required = true, value_parser = key_and_path)]
    uint8: Vec<(String, PathBuf)>,
}

fn key_and_path(spec: &str) -> Result<(String, PathBuf), String> {
    match spec.split_once('=') {
        Some((key, path)) if !path.is_empty() => Ok((key.to_owned(), PathBuf::from(path))),
        _ => Err(format!("expected KEY=PATH, got {spec:?}")),
    }
}

pub fn run(command: &Command) -> CommandResult {
    match command {
        Command::Ls(args) => ls(args),
        Command::Dump(args) => dump(args),
        Command::Info(args) => info(args),
        Command::Pack(args) => pack(args),
    }
}

fn open(path: &Path) -> Result<Store, String> {
    let store = if path == Path::new("-") {
        Store::read_from(&mut std::io::stdin().lock(), "<stdin>")
    } else {
        Store::open(path)
    };
    store.map_err(|error| output::about(path, error))
}

fn key_text<'a>(item: &Item<'a>) -> Cow<'a, str> {
    String::from_utf8_lossy(item.key())
}

fn byte_len(item: &Item<'_>) -> u64 {
    item.le_bytes().len() as u64
}

#[derive(Debug, serde::Serialize)]
struct Listed<'a> {
    key: Cow<'a, str>,
    #[serde(rename = "type")]
    item_type: &'static str,
    length: u64,
    bytes: u64,
}

fn ls(args: &LsArgs) -> CommandResult {
    let store = open(&args.file)?;
    if args.json {
        let listed: Vec<Listed<'_>> = store
            .items()
            .map(|item| Listed {
                key: key_text(&item),
                item_type: item.item_type().name(),
                length: item.len(),
                bytes: byte_len(&item),
            })
            .collect();
        output::print_json(&listed)?;
        return Ok(Status::Success);
    }
    if !args.long {
        output::to_stdout(|out| {
            store
                .items()
                .try_for_each(|item| writeln!(out, "{}", key_text(&item)))
        })?;
        return Ok(Status::Success);
    }
    let rows: Vec<[String; 4]> = store
        .items()
        .map(|item| {
            let size = if args.human_readable {
                human_size(byte_len(&item))
            } else {
                byte_len(&item).to_string()
            };
            [
                item.item_type().name().to_owned(),
                item.len().to_string(),
                size,
                key_text(&item).into_owned(),
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
    let store = open(&args.file)?;
    let item = store
        .get(&args.key)
        .map_err(|error| output::about(&args.file, error))?;
    if args.raw {
        output::to_stdout(|out| out.write_all(item.le_bytes()))?;
        return Ok(Status::Success);
    }
    let failure = |error| output::about(&args.file, error);
    match item.item_type() {
        ItemType::Int8 => print_values(&item.values::<i8>().map_err(failure)?, |v| v.to_string()),
        ItemType::Uint8 => print_values(&item.values::<u8>().map_err(failure)?, |v| v.to_string()),
        ItemType::Int16 => print_values(&item.values::<i16>().map_err(failure)?, |v| v.to_string()),
        ItemType::Uint16 => {
            print_values(&item.values::<u16>().map_err(failure)?, |v| v.to_string())
        }
        ItemType::Int32 => print_values(&item.values::<i32>().map_err(failure)?, |v| v.to_string()),
        ItemType::Uint32 => {
            print_values(&item.values::<u32>().map_err(failure)?, |v| v.to_string())
        }
        ItemType::Int64 => print_values(&item.values::<i64>().map_err(failure)?, |v| v.to_string()),
        ItemType::Uint64 => {
            print_values(&item.values::<u64>().map_err(failure)?, |v| v.to_string())
        }
        ItemType::Float32 => print_values(&item.values::<f32>().map_err(failure)?, |v| {
            python_float_repr(f64::from(*v))
        }),
        ItemType::Float64 => print_values(&item.values::<f64>().map_err(failure)?, |v| {
            python_float_repr(*v)
        }),
    }?;
    Ok(Status::Success)
}

fn print_values<T>(values: &[T], show: impl Fn(&T) -> String) -> Result<(), String> {
    output::to_stdout(|out| {
        values
            .iter()
            .try_for_each(|value| writeln!(out, "{}", show(value)))
    })
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

#[derive(Debug, serde::Serialize)]
struct Info {
    path: String,
    version: String,
    items: usize,
    file_size: u64,
    array_bytes: u64,
}

fn info(args: &InfoArgs) -> CommandResult {
    let store = open(&args.file)?;
    let (major, minor) = store.version();
    let info = Info {
        path: args.file.display().to_string(),
        version: format!("{major}.{minor}"),
        items: store.len(),
        file_size: store.file_size(),
        array_bytes: store.items().map(|item| byte_len(&item)).sum(),
    };
    if args.json {
        output::print_json(&info)?;
    } else {
        output::print(&format!(
            "path: {}\nformat: kastore {}\nitems: {}\nfile size: {} bytes\narray data: {} bytes\n",
            info.path, info.version, info.items, info.file_size, info.array_bytes
        ))?;
    }
    Ok(Status::Success)
}

fn pack(args: &PackArgs) -> CommandResult {
    let mut inputs = Vec::with_capacity(args.uint8.len());
    for (key, path) in &args.uint8 {
        let bytes = if path == Path::new("-") {
            ByteSource::read_from(&mut std::io::stdin().lock(), "<stdin>")
        } else {
            ByteSource::open(path)
        }
        .map_err(|error| output::about(path, error))?;
        inputs.push((key, bytes));
    }
    let mut writer = Writer::new();
    for (key, bytes) in &inputs {
        writer
            .insert_raw(key, ItemType::Uint8, bytes.as_bytes())
            .map_err(|error| format!("--uint8 {key}: {error}"))?;
    }
    writer
        .write_file(&args.out)
        .map_err(|error| output::about(&args.out, error))?;
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
