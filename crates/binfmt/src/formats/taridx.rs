//! TARIDX: an index with its fold's shards beside it, its rows named by the
//! tar members' full names (GNU long names and pax paths included); and
//! folds written by conversion, `DIR/FOLD.taridx` with shards
//! `DIR/FOLD_0000.tar`, `DIR/FOLD_0001.tar`, ...
//!
//! An index's shards are those its shard list (`INDEX.shards.json`)
//! names, else those its fold's name finds beside it: local files
//! ([`binfmt_taridx::find_shards`]), the objects under the same prefix (S3
//! lists them) or, where the server cannot list (plain HTTP),
//! `FOLD_0000.tar`, ... as many as the rows point into, and one more
//! probed for coverage.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use binfmt_core::Source;

use crate::element_types::{TYPES_ENTRY, Types};
use crate::entries::{Entry, EntrySource};
use crate::error::{Error, InFile, Result};
use crate::origin::{OpenOptions, Opened, Origin, open_source};
use crate::sink::{ConvertOptions, Deferred, EntrySink, Input, Written};
use crate::sniff::Format;

/// Opens the index at `location`, read through `source`, with its fold's
/// shards.
pub(crate) fn open(
    location: &Path,
    source: Box<dyn Source>,
    origin: Origin,
) -> Result<Box<dyn EntrySource>> {
    Ok(Box::new(FoldEntries {
        dataset: fold_dataset(location, source, &origin)?,
        origin,
    }))
}

/// A TARIDX index with its fold's shards beside it, its rows named by the
/// tar members' full names. Opening reads the index only; shards are opened
/// as rows need them, a bounded number at a time, and every member's tar
/// header is checked against its row before its bytes are read.
struct FoldEntries {
    dataset: binfmt_taridx::Dataset<Box<dyn Source>>,
    origin: Origin,
}

/// Opens the TARIDX index at `location` (a path or an `http://`,
/// `https://` or `s3://` URL) with its fold's shards beside it: the
/// `FOLD_*.tar` files in its directory; for a URL, the objects under the
/// same prefix (S3 lists them) or, where the server cannot list (plain
/// HTTP), `FOLD_0000.tar`, `FOLD_0001.tar`, ... as many as the rows point
/// into. Opening reads the index only; each shard is opened when a row
/// first needs it.
///
/// # Examples
///
/// ```no_run
/// let dataset = binfmt::open_dataset("https://example.org/data/train.taridx", &Default::default())?;
/// let rows = dataset.lookup("000123");
/// dataset.prefetch(&rows); // one request for the sample's members
/// for row in &rows {
///     let mut member = dataset.member(row)?;
///     std::io::copy(&mut member, &mut std::io::sink())?;
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn open_dataset(
    location: impl AsRef<Path>,
    options: &OpenOptions,
) -> Result<binfmt_taridx::Dataset<Box<dyn Source>>> {
    let Opened { source, origin } = open_source(location.as_ref(), options)?;
    fold_dataset(location.as_ref(), source, &origin)
}

/// The dataset of the index at `location`, read through `source`.
fn fold_dataset(
    location: &Path,
    source: Box<dyn Source>,
    origin: &Origin,
) -> Result<binfmt_taridx::Dataset<Box<dyn Source>>> {
    let file = origin.file();
    let index = binfmt_taridx::Index::new(source).in_file(file)?;
    let options = binfmt_taridx::DatasetOptions::default();
    match origin.remote() {
        None => {
            let shards = binfmt_taridx::find_shards(location).in_file(file)?;
            binfmt_taridx::Dataset::new(index, binfmt_taridx::ShardFiles::new(shards), options)
        }
        Some(remote) => {
            let shards = RemoteShards::of(remote, &index).in_file(file)?;
            binfmt_taridx::Dataset::new(index, shards, options)
        }
    }
    .in_file(file)
}

/// A remote fold's shards: objects beside its index (or under its
/// directory, as its shard list names them), opened on first use.
#[derive(Debug)]
struct RemoteShards {
    index: Arc<binfmt_remote::RemoteSource>,
    names: Vec<String>,
    /// Where a shard past the rows' would be, when the directory could not
    /// be listed (plain HTTP): probed by coverage.
    next: Option<String>,
    /// Where the shards were looked for, when their names are guessed
    /// (plain HTTP, no shard list): a missing first shard says so.
    guessed: Option<String>,
}

impl RemoteShards {
    /// The shards of the index `index`: those its shard list
    /// (`INDEX.shards.json` beside it) names, else those its fold's name
    /// finds among the objects beside it (S3 lists them) or, where the
    /// server cannot list (plain HTTP), glzn's `FOLD_0000.tar`, ... as
    /// many as the rows point into.
    fn of(
        index: &Arc<binfmt_remote::RemoteSource>,
        rows: &binfmt_taridx::Index<Box<dyn Source>>,
    ) -> binfmt_taridx::Result<Self> {
        let url = index.url();
        let index_name = url.rsplit('/').next().unwrap_or(url);
        let list_name = format!("{index_name}{}", binfmt_taridx::SHARD_LIST_SUFFIX);
        let fold = binfmt_taridx::fold_of_index(Path::new(index_name)).map(str::to_owned);
        let looked = |naming: &str| {
            format!(
                "{url}{}, then {naming} beside it",
                binfmt_taridx::SHARD_LIST_SUFFIX
            )
        };
        let not_found = |naming: &str| binfmt_taridx::TaridxError::NoShards {
            index: PathBuf::from(url),
            looked: looked(naming),
        };
        let listed = match index.list_siblings() {
            Ok(listed) => Some(listed),
            Err(binfmt_remote::RemoteError::Unsupported { .. }) => None,
            Err(error) => return Err(binfmt_core::Error::from(error).into()),
        };
        let list = match &listed {
            Some(listed) if !listed.iter().any(|item| item.name == list_name) => None,
            _ => match index.sibling(&list_name) {
                Ok(list) => Some(list),
                Err(binfmt_remote::RemoteError::NotFound { .. }) => None,
                Err(error) => return Err(binfmt_core::Error::from(error).into()),
            },
        };
        let mut shards = Self {
            index: Arc::clone(index),
            names: Vec::new(),
            next: None,
            guessed: None,
        };
        if let Some(list) = list {
            shards.names = read_remote_shard_list(&list)?;
            for name in &shards.names {
                index.sibling_url(name).map_err(binfmt_core::Error::from)?;
            }
            return Ok(shards);
        }
        let Some(fold) = fold else {
            return Err(not_found("no names (the index is not named FOLD.taridx)"));
        };
        let patterns = format!("{fold}_*.tar, {fold}-N.tar or {fold}.N.tar");
        match listed {
            Some(listed) => {
                let (_, names) = binfmt_taridx::fold_shard_names(
                    &fold,
                    listed.iter().map(|item| item.name.as_str()),
                )?;
                if names.is_empty() {
                    return Err(not_found(&patterns));
                }
                shards.names = names;
            }
            None => {
                let count = rows.shard_count()?;
                shards.names = (0..count)
                    .map(|fid| binfmt_taridx::fold_shard_name(&fold, fid))
                    .collect();
                shards.next = Some(binfmt_taridx::fold_shard_name(&fold, count));
                shards.guessed = Some(looked(&format!(
                    "{} (a server that cannot list is asked for glzn's names only)",
                    binfmt_taridx::fold_shard_name(&fold, 0)
                )));
            }
        }
        Ok(shards)
    }
}

/// The shard names a remote shard list holds: each must be an object
/// under the list's directory (relative, no `..`), which
/// [`binfmt_remote::RemoteSource::sibling`] checks when it is opened.
fn read_remote_shard_list(
    list: &binfmt_remote::RemoteSource,
) -> binfmt_taridx::Result<Vec<String>> {
    use binfmt_core::SourceExt;
    let len = list.len();
    if len > binfmt_taridx::foreign::WIDS_LIST_LIMIT {
        return Err(binfmt_core::Error::corrupt(
            "shard list",
            format!(
                "{} is {len} bytes, more than a shard list may be ({} bytes)",
                list.url(),
                binfmt_taridx::foreign::WIDS_LIST_LIMIT
            ),
        )
        .into());
    }
    let mut bytes: Vec<u8> = binfmt_core::alloc::vec_with_capacity(
        usize::try_from(len).unwrap_or(usize::MAX),
        "shard list",
    )?;
    bytes.resize(usize::try_from(len).unwrap_or(0), 0);
    list.fill_at(0, &mut bytes, "shard list")?;
    let urls = binfmt_taridx::foreign::wids_shard_urls(&bytes, Path::new(list.url()))?;
    // `./x:y-0.tar`: the `./` binfmt writes before a name with a ':' (so
    // wids does not read a scheme) names the same object.
    Ok(urls
        .into_iter()
        .map(|(url, _)| match url.strip_prefix("./") {
            Some(name) => name.to_owned(),
            None => url,
        })
        .collect())
}

impl binfmt_taridx::ShardSet for RemoteShards {
    fn count(&self) -> usize {
        self.names.len()
    }

    fn name(&self, fid: u16) -> PathBuf {
        let name = self.names.get(usize::from(fid)).map_or("?", String::as_str);
        let dir = self.index.url().rsplit_once('/').map_or("", |(dir, _)| dir);
        PathBuf::from(format!("{dir}/{name}"))
    }

    fn open(&self, fid: u16) -> binfmt_taridx::Result<Arc<dyn Source>> {
        let name = self.names.get(usize::from(fid)).ok_or_else(|| {
            binfmt_taridx::TaridxError::from(binfmt_core::Error::corrupt(
                "fold",
                format!("no shard {fid}"),
            ))
        })?;
        match self.index.sibling(name) {
            Ok(shard) => Ok(Arc::new(shard)),
            Err(binfmt_remote::RemoteError::NotFound { .. })
                if fid == 0 && self.guessed.is_some() =>
            {
                Err(binfmt_taridx::TaridxError::NoShards {
                    index: PathBuf::from(self.index.url()),
                    looked: self.guessed.clone().unwrap_or_default(),
                })
            }
            Err(error) => Err(binfmt_core::Error::from(error).into()),
        }
    }

    fn unlisted(&self) -> binfmt_taridx::Result<Option<(PathBuf, Arc<dyn Source>)>> {
        let Some(name) = &self.next else {
            return Ok(None);
        };
        match self.index.sibling(name) {
            Ok(shard) => {
                let url = shard.url().to_owned();
                Ok(Some((PathBuf::from(url), Arc::new(shard))))
            }
            Err(binfmt_remote::RemoteError::NotFound { .. }) => Ok(None),
            Err(error) => Err(binfmt_core::Error::from(error).into()),
        }
    }
}

impl FoldEntries {
    /// The member called `name`, its header checked against its row.
    fn member(&self, name: &str) -> Result<binfmt_taridx::MemberReader> {
        let row = self
            .dataset
            .find(name)
            .in_file(self.origin.file())?
            .ok_or_else(|| Error::NotFound {
                file: self.origin.file().to_owned(),
                name: name.to_owned(),
            })?;
        self.dataset.member(&row).in_file(self.origin.file())
    }

    /// Every member, by its full name (GNU long names and pax paths
    /// included) from its tar header, checked against its row. A remote
    /// fold announces a window of rows at a time: their headers (with what
    /// the row check reads), or with `whole` the members whole.
    fn list_fetching(&self, whole: bool) -> Result<Vec<Entry>> {
        const WINDOW: usize = 1024;
        // The whole fold: a member without a row would be left out silently.
        self.dataset.check_coverage().in_file(self.origin.file())?;
        let rows = self.dataset.rows();
        rows.iter()
            .enumerate()
            .map(|(i, row)| {
                if self.origin.is_remote() && i % WINDOW == 0 {
                    let window = rows.get(i..).unwrap_or_default();
                    let window = window.get(..WINDOW).unwrap_or(window);
                    if whole {
                        self.dataset.prefetch(window);
                    } else {
                        self.dataset.prefetch_headers(window);
                    }
                }
                let member = self.dataset.member_info(row).in_file(self.origin.file())?;
                Ok(Entry {
                    name_not_utf8: member.name_not_utf8,
                    ..Entry::new(member.name, member.size)
                })
            })
            .collect()
    }
}

impl EntrySource for FoldEntries {
    fn format(&self) -> Format {
        Format::Taridx
    }

    fn origin(&self) -> &Origin {
        &self.origin
    }

    fn inputs(&self) -> Vec<PathBuf> {
        let shards = self.dataset.shards().set();
        let index = PathBuf::from(self.origin.file());
        // The shard list is read too: no output may replace it.
        let list = binfmt_taridx::shard_list_path(&index);
        [index, list]
            .into_iter()
            .chain(
                (0..shards.count()).filter_map(|fid| Some(shards.name(u16::try_from(fid).ok()?))),
            )
            .collect()
    }

    fn list(&self) -> Result<Vec<Entry>> {
        self.list_fetching(false)
    }

    fn list_to_read(&self) -> Result<Vec<Entry>> {
        // Fetched whole while listing, the members stay in the memory cache
        // until they are read: only when they fit in it beside the index.
        let fits = self.origin.remote().is_some_and(|remote| {
            let index = self.dataset.index().source().len();
            let members = self.dataset.rows().iter().fold(index, |total, row| {
                let padded = row.size.get().div_ceil(512).saturating_mul(512);
                total.saturating_add(padded).saturating_add(512)
            });
            members <= remote.options().memory_cache()
        });
        self.list_fetching(fits)
    }

    fn totals(&self) -> Option<(usize, Option<u64>)> {
        // One row per member, with the member's size (checked against its
        // header whenever the member is read).
        let rows = self.dataset.rows();
        let bytes = rows
            .iter()
            .try_fold(0u64, |total, row| total.checked_add(row.size.get()));
        Some((rows.len(), bytes))
    }

    fn open(&self, name: &str) -> Result<Box<dyn Read + Send + '_>> {
        Ok(Box::new(self.member(name)?))
    }

    fn open_seekable(&self, name: &str) -> Result<Box<dyn crate::ReadSeek + '_>> {
        // A member's payload is a range of its shard: a seek moves in it.
        Ok(Box::new(self.member(name)?))
    }

    fn verify(&self) -> Result<()> {
        self.dataset
            .verify()
            .map(|_| ())
            .in_file(self.origin.file())
    }

    fn prefetch(&self, names: &[&str]) {
        if self.origin.is_remote() {
            // Unchecked candidates: reading their headers to pick one would
            // cost a request per name before the one merged fetch.
            let rows: Vec<binfmt_taridx::Row> = names
                .iter()
                .flat_map(|name| self.dataset.candidates(name))
                .collect();
            self.dataset.prefetch(&rows);
        }
    }
}

/// A TARIDX writer's error while copying a sample: the entry's own error
/// (naming it) when its reader failed, else the writer's.
fn taridx_copy_error(error: binfmt_taridx::TaridxError, output: &Path) -> Error {
    let file = output.display().to_string();
    match error {
        binfmt_taridx::TaridxError::Core(binfmt_core::Error::Io { source, .. }) => {
            crate::error::from_io(source, &file)
        }
        other => Error::Taridx {
            file,
            source: other,
        },
    }
}

/// Names a TARIDX index cannot tell apart: two members with the same key
/// and extension would be one sample with a duplicated field.
fn check_taridx_names(names: &[&str], output: &Path, rule: binfmt_taridx::KeyRule) -> Result<()> {
    let mut seen: HashMap<(String, String), &str> = HashMap::new();
    for name in names {
        if name.is_empty() {
            return Err(Error::CannotHold {
                file: output.display().to_string(),
                name: String::new(),
                why: "an empty name, which a tar member cannot have".into(),
            });
        }
        let split = rule.split(name);
        if let Some(earlier) = seen.insert((split.key.clone(), split.extension.clone()), name) {
            let advice = match rule {
                binfmt_taridx::KeyRule::Glzn => {
                    " (glzn's key is the file name up to its first dot, without the directory: --taridx-keys webdataset keys samples by their whole path instead)"
                }
                _ => "",
            };
            return Err(Error::CannotHold {
                file: output.display().to_string(),
                name: (*name).to_owned(),
                why: format!(
                    "has the same key {:?} and extension {:?} as {earlier:?} under the {} key rule: one TARIDX sample cannot hold both{advice}",
                    split.key,
                    split.extension,
                    rule.name()
                ),
            });
        }
    }
    Ok(())
}

/// Writes `DIR/FOLD.taridx` and its shards with
/// [`binfmt_taridx::SampleWriter`]: consecutive entries with one key are one
/// sample, never split across shards, each member streamed from its entry.
pub(crate) struct Sink;

impl EntrySink for Sink {
    fn write(
        &self,
        input: &Input<'_>,
        entries: &[Entry],
        types: &Types,
        out: &crate::outputs::Output,
        options: &ConvertOptions,
    ) -> Result<(Vec<PathBuf>, Written)> {
        let output = &out.shown();
        let file = output.display().to_string();
        let fold = output
            .file_stem()
            .and_then(|stem| stem.to_str())
            .filter(|fold| {
                output.extension().is_some_and(|ext| ext == "taridx") && !fold.is_empty()
            })
            .ok_or_else(|| Error::Unsupported {
                file: file.clone(),
                why: "a TARIDX target must be named DIR/FOLD.taridx".into(),
            })?;
        let record = types.record();
        let mut names = types.names(entries);
        if record.is_some() {
            names.push(TYPES_ENTRY);
        }
        let mut seen = HashSet::new();
        names.retain(|name| seen.insert(*name));
        let rule = if options.taridx_keys_by_names && names.iter().any(|name| name.contains('/')) {
            binfmt_taridx::KeyRule::WebDataset
        } else {
            options.taridx_keys
        };
        check_taridx_names(&names, output, rule)?;
        let sizes: HashMap<&str, u64> = entries
            .iter()
            .map(|entry| (entry.name.as_str(), entry.size))
            .collect();
        // Each member streams from its entry, opened when the tar writer
        // reaches it: one entry's reading memory at a time, never its bytes.
        let member = |name: &str| -> binfmt_taridx::MemberSource<Box<dyn Read + '_>> {
            match (&record, name) {
                (Some(record), TYPES_ENTRY) => binfmt_taridx::MemberSource {
                    name: name.to_owned(),
                    size: record.len() as u64,
                    data: Box::new(record.as_slice()),
                },
                _ => binfmt_taridx::MemberSource {
                    name: name.to_owned(),
                    size: sizes.get(name).copied().unwrap_or(0),
                    data: Box::new(Deferred::new(input, name)),
                },
            }
        };
        // Every shard written goes through the output gate with the source's
        // files as inputs.
        let mut writer = binfmt_taridx::SampleWriter::create_in(
            std::sync::Arc::clone(&out.dir),
            fold,
            binfmt_taridx::SampleWriterOptions::new()
                .max_bytes(options.shard_size)
                .max_samples(options.shard_samples)
                .key_rule(rule),
        )
        .in_file(&file)?;
        // A sample: consecutive entries with one key, never split across shards.
        let mut start = 0;
        while let Some(first) = names.get(start) {
            let key = rule.split(first).key;
            let end = names
                .iter()
                .skip(start)
                .position(|name| rule.split(name).key != key)
                .map_or(names.len(), |length| start + length);
            let members = names.get(start..end).unwrap_or_default();
            writer
                .write_members(members.iter().map(|name| member(name)).collect())
                .map_err(|error| taridx_copy_error(error, output))?;
            start = end;
        }
        let fold = writer.finish().in_file(&file)?;
        let mut outputs = fold.shards;
        outputs.push(fold.index);
        Ok((
            outputs,
            Written {
                entries: names.len() as u64,
                extra_bytes: record.map_or(0, |r| r.len() as u64),
                taridx_keys: Some(rule),
            },
        ))
    }
}
