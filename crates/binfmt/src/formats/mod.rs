//! One module per format, each holding the format's entry source (reading
//! a file of it as named entries, [`crate::EntrySource`]) and its entry
//! sink (writing one by conversion, `EntrySink`); this module
//! opens a file as the format its bytes say and picks a conversion's sink.
//!
//! | module | source | sink |
//! |---|---|---|
//! | [`arcx`] | an archive's files (whole, one by name, or a listing walk) | an archive in the chosen dialect |
//! | [`kast`] | a store's keys, typed | one array per entry, typed |
//! | [`par4`] | a root `HashMap<String, Vec<u8>>` | that map, bucketed |
//! | [`taridx`] | an index with its fold's shards | shards and an index, sample by sample |
//!
//! A fifth format is a new module here with its source and its sink, and a
//! line in [`open_with`] and in the sink dispatch beside it.

use std::path::Path;

use crate::entries::EntrySource;
use crate::error::{Error, InFile, Result};
use crate::origin::{OpenOptions, Opened, open_source};
use crate::sink::EntrySink;
use crate::sniff::Format;

pub mod arcx;
pub mod kast;
pub mod par4;
pub mod taridx;

/// Opens `location` (a path or a URL, see [`open_with`]) as named entries,
/// whatever its format, with default options.
///
/// # Examples
///
/// ```
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("a.txt"), b"alpha")?;
/// let archive = dir.path().join("a.arcx");
/// binfmt_arcx::pack_dir(dir.path(), &archive, Default::default(), |_| {})?;
///
/// let source = binfmt::open(&archive)?;
/// let names: Vec<String> = source.list()?.into_iter().map(|e| e.name).collect();
/// assert_eq!(names, ["a.txt"]);
/// let mut text = String::new();
/// std::io::Read::read_to_string(&mut source.open("a.txt")?, &mut text)?;
/// assert_eq!(text, "alpha");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn open(location: impl AsRef<Path>) -> Result<Box<dyn EntrySource>> {
    open_with(location, &OpenOptions::default())
}

/// Opens `location` as named entries, whatever its format. A local file is
/// read by offset (never mapped), so
/// streaming an entry keeps memory bounded; a URL is read by range requests, fetching only what each
/// operation needs (`spec/remote.md`): the format is told from the object's
/// last bytes when they say it (ARCX, PAR4), and a TARIDX index finds its
/// shards beside it by the fold convention.
pub fn open_with(
    location: impl AsRef<Path>,
    options: &OpenOptions,
) -> Result<Box<dyn EntrySource>> {
    let location = location.as_ref();
    let Opened { source, origin } = open_source(location, options)?;
    let format = if origin.is_remote() {
        crate::sniff::sniff_tail_first(&*source)
    } else {
        crate::sniff::sniff_source(&*source)
    }
    .in_file(origin.file())?;
    match format {
        Format::Arcx => arcx::open(source, origin, options),
        Format::Kast => kast::open(source, origin),
        Format::Par4 => par4::open(source, origin),
        Format::Taridx => taridx::open(location, source, origin),
        Format::Tar => Err(Error::Unsupported {
            file: origin.file().to_owned(),
            why: "a tar file: index it with `binfmt taridx index` to read it as entries".into(),
        }),
        Format::Unknown => Err(Error::Unsupported {
            file: origin.file().to_owned(),
            why: "not a format binfmt reads".into(),
        }),
    }
}

/// The sink that writes `format`, when conversion can write it.
pub(crate) fn sink(format: Format) -> Option<&'static dyn EntrySink> {
    match format {
        Format::Arcx => Some(&arcx::Sink),
        Format::Kast => Some(&kast::Sink),
        Format::Par4 => Some(&par4::Sink),
        Format::Taridx => Some(&taridx::Sink),
        Format::Tar | Format::Unknown => None,
    }
}
