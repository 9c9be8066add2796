//! TARIDX datasets for Python: `binfmt.taridx` is built on this.
//!
//! [`NativeDataset`] is a [`binfmt_taridx::Dataset`] (an index with its
//! shards, opened lazily with a bounded number kept open) seen as samples:
//! sample `i` is its key, its shard, and each member's extension with its
//! bytes: a copy (`bytes`), or a read-only view of the mapped shard with
//! no copy, kept alive by the view. Every member's tar header is checked
//! against its row before its bytes are handed out.
//!
//! Nothing a file declares sizes memory before it is checked: the index is
//! read by `pread` (its rows copied into a buffer reserved fallibly), and a
//! member's bytes go into a `bytes` object allocated by Python for its
//! checked size, so a member too large for memory is `MemoryError` naming
//! it. Only what is handed out as a view (`zero_copy` samples, `rows`)
//! touches a map: a file truncated underneath any other call is an error,
//! never SIGBUS.

use std::collections::HashMap;
use std::io::Read;
use std::path::PathBuf;
use std::sync::OnceLock;

use binfmt_core::Source;
use binfmt_core::layout::IntoBytes;
use binfmt_taridx::{
    Dataset, DatasetOptions, Index, IndexOptions, KeyRule, MemberReader, Row, ShardFiles,
};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::exceptions::{PyIndexError, PyMemoryError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};

use crate::kastore::view;
use crate::{direct, errors, remote};

/// Adds the TARIDX classes and functions to the module.
pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<NativeDataset>()?;
    module.add_class::<MemberBytes>()?;
    module.add_class::<NativeIndex>()?;
    module.add_function(wrap_pyfunction!(taridx_index, module)?)?;
    module.add_function(wrap_pyfunction!(taridx_index_fold, module)?)?;
    module.add_function(wrap_pyfunction!(taridx_find_shards, module)?)?;
    crate::sampler::register(module)
}

fn taridx_error(error: binfmt_taridx::TaridxError) -> PyErr {
    errors::binfmt(&error)
}

/// The key rule named `name` (the Python argument `key_rule`).
pub(crate) fn key_rule(name: &str) -> PyResult<KeyRule> {
    match name {
        "glzn" => Ok(KeyRule::Glzn),
        "webdataset" => Ok(KeyRule::WebDataset),
        other => Err(PyValueError::new_err(format!(
            "unknown key rule {other:?}: \"glzn\" or \"webdataset\""
        ))),
    }
}

fn index_options(rule: &str, jobs: Option<usize>) -> PyResult<IndexOptions> {
    Ok(IndexOptions::new().key_rule(key_rule(rule)?).jobs(jobs))
}

/// Indexes `shards` (fid = position in the list) into `out`, atomically.
#[pyfunction]
#[pyo3(signature = (shards, out, key_rule = "glzn", jobs = None))]
fn taridx_index(
    py: Python<'_>,
    shards: Vec<PathBuf>,
    out: PathBuf,
    key_rule: &str,
    jobs: Option<usize>,
) -> PyResult<()> {
    let options = index_options(key_rule, jobs)?;
    if binfmt::is_remote(&out) {
        // An `s3://` index: the fold is published there, shards first.
        return remote::detach(py, || -> Result<(), remote::BoxError> {
            let shards = binfmt_taridx::expand_shard_patterns(&shards)?;
            let target = binfmt::outputs::Output::open(
                &out,
                std::sync::Arc::new(binfmt_core::Inputs::new(&shards)),
                &remote::open_options().remote,
            )?;
            binfmt_taridx::publish_fold(
                &shards,
                target.dir.as_ref(),
                &target.name,
                options,
                || {},
            )?;
            Ok(())
        })?
        .map_err(|error| errors::binfmt(error.as_ref()));
    }
    remote::detach(py, || {
        let shards = binfmt_taridx::expand_shard_patterns(&shards)?;
        binfmt_taridx::write_index(&shards, &out, options, || {})
    })?
    .map_err(taridx_error)
}

/// The shards of the index at `index`, in fid order: those its shard list
/// names, else its fold's by name beside it (`binfmt_taridx::find_shards`).
#[pyfunction]
fn taridx_find_shards(index: PathBuf) -> PyResult<Vec<PathBuf>> {
    binfmt_taridx::find_shards(&index).map_err(taridx_error)
}

/// Indexes the shards `ROOT/FOLD_*.tar` into `ROOT/FOLD.taridx`; returns
/// its path.
#[pyfunction]
#[pyo3(signature = (root, fold, key_rule = "glzn", jobs = None))]
fn taridx_index_fold(
    py: Python<'_>,
    root: PathBuf,
    fold: &str,
    key_rule: &str,
    jobs: Option<usize>,
) -> PyResult<PathBuf> {
    let options = index_options(key_rule, jobs)?;
    remote::detach(py, || {
        binfmt_taridx::index_fold(&root, fold, options, || {})
    })?
    .map_err(taridx_error)
}

/// A TARIDX index file, checked when opened (header and blocks; rows are
/// checked by `verify`), read by `pread`: a file truncated underneath it
/// makes a call fail, never kills the process.
#[pyclass(frozen, module = "binfmt.taridx", name = "_NativeIndex")]
#[derive(Debug)]
pub struct NativeIndex {
    index: Index<Box<dyn Source>>,
    location: String,
}

impl NativeIndex {
    /// Reading the rows of an index that is not mapped holds them in memory
    /// (32 bytes a row, the size of the row region present in the file):
    /// that room is asked for first, so memory that cannot be had is
    /// `MemoryError`, not an abort inside the read.
    fn room_for_rows(&self) -> PyResult<()> {
        let bytes = self.index.num_rows().saturating_mul(32);
        let mut room: Vec<u8> = Vec::new();
        usize::try_from(bytes)
            .ok()
            .and_then(|bytes| room.try_reserve_exact(bytes).ok())
            .ok_or_else(|| {
                PyMemoryError::new_err(format!(
                    "{}: its {} rows ({bytes} bytes) cannot be held in memory",
                    self.location,
                    self.index.num_rows()
                ))
            })
    }

    /// Opens `location`, mapped when `map` is set and it is a local path.
    fn open(py: Python<'_>, location: String, map: bool) -> PyResult<Self> {
        let index = remote::detach(py, || -> Result<_, remote::BoxError> {
            Ok(Index::new(remote::open_source(&location, map)?)?)
        })?
        .map_err(|error| errors::binfmt(&*error))?;
        Ok(Self { index, location })
    }
}

#[pymethods]
impl NativeIndex {
    /// Opens the index at `location`: a path (read by offset) or an
    /// `http://`, `https://` or `s3://` URL (header and blocks fetched).
    #[new]
    fn new(py: Python<'_>, location: String) -> PyResult<Self> {
        Self::open(py, location, false)
    }

    /// `(major, minor)`.
    #[getter]
    fn version(&self) -> (u16, u16) {
        self.index.version()
    }

    /// The number of rows (members).
    #[getter]
    fn num_rows(&self) -> u64 {
        self.index.num_rows()
    }

    /// The extensions, in extension-id order.
    #[getter]
    fn extensions(&self) -> Vec<String> {
        self.index.extensions().to_vec()
    }

    /// `"glzn"` or `"webdataset"`.
    #[getter]
    fn key_rule(&self) -> &'static str {
        self.index.key_rule().name()
    }

    /// Whether each sample's rows are one run.
    #[getter]
    fn is_contiguous(&self) -> bool {
        self.index.is_contiguous()
    }

    /// The crash stems: keys whose hash another key already has, in crash-id
    /// order (crash id 1 first).
    fn crash_stems(&self) -> Vec<String> {
        self.index.crash_stems().map(str::to_owned).collect()
    }

    /// The rows' 32-byte records as a uint8 array: of a local index, a
    /// read-only view of the file mapped now (no copy; the array keeps the
    /// map alive, and reading it after the file is truncated raises SIGBUS,
    /// as any map does); of a URL, a copy.
    fn row_bytes<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let this = slf.get();
        if !binfmt::is_remote(&this.location) {
            let mapped = Bound::new(py, Self::open(py, this.location.clone(), true)?)?;
            if let Some(rows) = mapped.get().index.rows_in_memory() {
                return view::<u8>(py, rows.as_bytes(), mapped.as_any());
            }
        }
        this.room_for_rows()?;
        let rows = remote::detach(py, || this.index.rows())?.map_err(taridx_error)?;
        Ok(PyArray1::from_slice(py, rows.as_bytes()).into_any())
    }

    /// Checks every row (and, with `shards` in fid order, every row against
    /// its tar header); returns the payload bytes.
    #[pyo3(signature = (shards = None))]
    fn verify(&self, py: Python<'_>, shards: Option<Vec<PathBuf>>) -> PyResult<u64> {
        self.room_for_rows()?;
        remote::detach(py, || {
            let files = shards.map(ShardFiles::new);
            self.index.verify(
                files
                    .as_ref()
                    .map(|files| files as &dyn binfmt_taridx::ShardSet),
            )
        })?
        .map_err(taridx_error)
    }
}

/// The payload of one member in a mapped shard: the base object of its
/// zero-copy views, keeping the shard's map alive.
#[pyclass(frozen, module = "binfmt.taridx", name = "_MemberBytes")]
#[derive(Debug)]
pub struct MemberBytes {
    reader: MemberReader,
}

/// How many samples of a batch are read between two releases of the GIL.
const BATCH_GROUP: usize = 8;

/// The most shards a dataset keeps open: a fold has at most 65,536 (shard
/// ids are 16 bits).
const MAX_OPEN_SHARDS: usize = 1 << 16;

/// The disk cache's byte limit when `cache_dir` is given alone: 1 GiB, as
/// the command line's `--cache-size`.
const DEFAULT_CACHE_SIZE: u64 = 1 << 30;

/// An index with its shards (local files, or objects beside a remote
/// index), as samples.
#[pyclass(frozen, module = "binfmt.taridx", name = "_NativeDataset")]
#[derive(Debug)]
pub struct NativeDataset {
    dataset: Dataset<Box<dyn Source>>,
    /// Sample number by `(keyhash, crashid)`, once a lookup asks.
    by_key: OnceLock<HashMap<(u64, u32), usize>>,
    /// Whether the shards are local files mapped (zero-copy views).
    mapped: bool,
    /// Whether the shards are remote objects (a batch is announced whole).
    remote: bool,
    /// The Python strings every sample reuses.
    names: Names,
}

/// The strings of a dataset's sample dicts, made once: `"." + extension`
/// by extension id, and each shard's name, made when first needed.
#[derive(Debug)]
struct Names {
    extensions: Vec<(String, Py<PyString>)>,
    shards: Vec<OnceLock<Py<PyString>>>,
}

impl Names {
    fn new(py: Python<'_>, dataset: &Dataset<Box<dyn Source>>) -> Self {
        let extensions = dataset
            .index()
            .extensions()
            .iter()
            .map(|ext| {
                let key = format!(".{ext}");
                let string = PyString::intern(py, &key).unbind();
                (key, string)
            })
            .collect();
        let shards = (0..dataset.shards().set().count())
            .map(|_| OnceLock::new())
            .collect();
        Self { extensions, shards }
    }
}

impl NativeDataset {
    /// Shard `fid`'s path or URL.
    fn shard_name(&self, fid: u16) -> String {
        self.dataset.shards().set().name(fid).display().to_string()
    }

    /// Shard `fid`'s path or URL as the string every sample shares.
    fn shard_string<'py>(&self, py: Python<'py>, fid: u16) -> Bound<'py, PyString> {
        match self.names.shards.get(usize::from(fid)) {
            Some(cell) => cell
                .get_or_init(|| PyString::new(py, &self.shard_name(fid)).unbind())
                .bind(py)
                .clone(),
            None => PyString::new(py, &self.shard_name(fid)),
        }
    }

    /// The dict key of a member named `name` of row `row`: everything
    /// from the first `.` of its base name, as wids names it (the shared
    /// string of its extension when it is written as indexed).
    fn extension_key<'py>(&self, py: Python<'py>, row: &Row, name: &str) -> Bound<'py, PyString> {
        let written = extension_of(name);
        match self.names.extensions.get(usize::from(row.extid.get())) {
            Some((key, string)) if key == written => string.bind(py).clone(),
            _ => PyString::new(py, written),
        }
    }

    fn rows(&self, index: usize) -> PyResult<&[Row]> {
        self.dataset
            .sample(index)
            .map_err(taridx_error)?
            .ok_or_else(|| PyIndexError::new_err(format!("sample {index} out of range")))
    }

    /// The sample dict of `rows`, in the `wids` style, from their members
    /// (headers checked, read by [`Dataset::sample_members`]).
    fn sample_dict<'py>(
        &self,
        py: Python<'py>,
        index: usize,
        rows: &[Row],
        members: Vec<MemberReader>,
        zero_copy: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let sample = PyDict::new(py);
        let rule = self.dataset.index().key_rule();
        let mut key = None;
        for (row, reader) in rows.iter().zip(members) {
            key.get_or_insert_with(|| PyString::new(py, rule.split_parts(reader.name()).0));
            let extension = self.extension_key(py, row, reader.name());
            let value = match reader.as_slice() {
                Some(_) if zero_copy && self.mapped => {
                    let owner = Bound::new(py, MemberBytes { reader })?;
                    let bytes = owner.get().reader.as_slice().unwrap_or_default();
                    // A read-only uint8 array over the map, not a
                    // memoryview: it pickles (as a copy), so a DataLoader
                    // worker can hand the sample back (issue 28).
                    view::<u8>(py, bytes, owner.as_any())?
                }
                // Read already (a sample read in one request): one copy.
                Some(bytes) => PyBytes::new(py, bytes).into_any(),
                None => member_bytes(py, reader, &self.shard_name(row.fid.get()))?.into_any(),
            };
            sample.set_item(extension, value)?;
        }
        self.finish_dict(py, &sample, index, rows, key)?;
        Ok(sample)
    }

    /// Sample `index` read (headers checked, the GIL released) and made a
    /// dict.
    fn read_sample<'py>(
        &self,
        py: Python<'py>,
        index: usize,
        zero_copy: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let rows = self.rows(index)?;
        if let Some(sample) = self.direct_dict(py, index, rows)? {
            return Ok(sample);
        }
        let members =
            remote::detach(py, || self.dataset.sample_members(rows))?.map_err(taridx_error)?;
        self.sample_dict(py, index, rows, members, zero_copy)
    }

    /// The sample dict of `rows`, its members read straight into their
    /// `bytes` objects ([`direct`]), when the shards are not mapped and the
    /// sample is small enough; `None` otherwise.
    fn direct_dict<'py>(
        &self,
        py: Python<'py>,
        index: usize,
        rows: &[Row],
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        if self.mapped {
            return Ok(None);
        }
        let Some((infos, objects)) = direct::read_sample(py, &self.dataset, rows)? else {
            return Ok(None);
        };
        let sample = PyDict::new(py);
        let rule = self.dataset.index().key_rule();
        let mut key = None;
        for ((row, info), object) in rows.iter().zip(&infos).zip(objects) {
            key.get_or_insert_with(|| PyString::new(py, rule.split_parts(&info.name).0));
            sample.set_item(self.extension_key(py, row, &info.name), object)?;
        }
        self.finish_dict(py, &sample, index, rows, key)?;
        Ok(Some(sample))
    }

    /// Adds `__key__`, `__shard__` and `__index__` to a sample dict.
    fn finish_dict<'py>(
        &self,
        py: Python<'py>,
        sample: &Bound<'py, PyDict>,
        index: usize,
        rows: &[Row],
        key: Option<Bound<'py, PyString>>,
    ) -> PyResult<()> {
        sample.set_item(
            intern!(py, "__key__"),
            key.unwrap_or_else(|| PyString::new(py, "")),
        )?;
        let shard = rows.first().map(|row| self.shard_string(py, row.fid.get()));
        sample.set_item(intern!(py, "__shard__"), shard)?;
        sample.set_item(intern!(py, "__index__"), index)?;
        Ok(())
    }
}

/// The payload of `reader` (a member of `shard`) as a `bytes` object of
/// its checked size, allocated by Python (a size memory cannot hold is
/// `MemoryError` naming the member) and filled with the GIL released.
fn member_bytes<'py>(
    py: Python<'py>,
    mut reader: MemberReader,
    shard: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let size = reader.size();
    let name = reader.name().to_owned();
    let too_big = || {
        PyMemoryError::new_err(format!(
            "{shard}: member {name}: its {size} bytes cannot be held in memory"
        ))
    };
    let len = usize::try_from(size)
        .ok()
        .filter(|&len| isize::try_from(len).is_ok())
        .ok_or_else(too_big)?;
    PyBytes::new_with(py, len, |buf| {
        remote::detach(py, || reader.read_exact(buf))?.map_err(|error| errors::binfmt(&error))
    })
    .map_err(|error| {
        if error.is_instance_of::<PyMemoryError>(py) {
            too_big()
        } else {
            error
        }
    })
}

/// The extension of a member name as `wids` gives it: everything from the
/// first `.` of its base name, the dot included.
fn extension_of(name: &str) -> &str {
    let base = name.rsplit('/').next().unwrap_or(name);
    match base.find('.') {
        Some(dot) => base.get(dot..).unwrap_or_default(),
        None => "",
    }
}

#[pymethods]
impl NativeDataset {
    /// Opens `index` with `shards` (in fid order), keeping only samples
    /// that have every extension of `extensions` (and only those members).
    /// An `http://`, `https://` or `s3://` index takes no shards: its
    /// fold's shards are the objects beside it (`binfmt::open_dataset`),
    /// its fetched ranges kept in `cache_dir` (at most `cache_size` bytes)
    /// when given; a local index takes no cache.
    #[new]
    #[pyo3(signature = (index, shards, extensions, open_shards, map_shards, cache_dir = None, cache_size = DEFAULT_CACHE_SIZE))]
    #[allow(clippy::too_many_arguments)] // the Python signature
    fn new(
        py: Python<'_>,
        index: String,
        shards: Option<Vec<PathBuf>>,
        extensions: Vec<String>,
        open_shards: usize,
        map_shards: bool,
        cache_dir: Option<PathBuf>,
        cache_size: u64,
    ) -> PyResult<Self> {
        if !(1..=MAX_OPEN_SHARDS).contains(&open_shards) {
            return Err(PyValueError::new_err(format!(
                "open_shards = {open_shards}: need 1 <= open_shards <= {MAX_OPEN_SHARDS}"
            )));
        }
        let is_remote = binfmt::is_remote(&index);
        if is_remote && shards.is_some() {
            return Err(PyValueError::new_err(format!(
                "{index}: a remote index's shards are the fold's objects beside it; pass no shards"
            )));
        }
        if let Some(dir) = &cache_dir {
            if !is_remote {
                return Err(PyValueError::new_err(format!(
                    "cache_dir {:?}: {index:?} is local; only a remote index's ranges are cached",
                    dir.display().to_string()
                )));
            }
        }
        if cache_size == 0 {
            return Err(PyValueError::new_err(
                "cache_size = 0: need at least 1 byte",
            ));
        }
        let cache = cache_dir.as_deref().map(|dir| (dir, cache_size));
        let options = DatasetOptions::new()
            .open_shards(open_shards)
            .map_shards(map_shards);
        let required: Vec<&str> = extensions.iter().map(String::as_str).collect();
        let dataset = remote::detach(py, || -> Result<_, remote::BoxError> {
            let mut dataset = match shards {
                None if is_remote => binfmt::open_dataset(&index, &remote::cached_options(cache))?,
                _ => {
                    // Read by offset: its rows are copied once, so a file
                    // truncated underneath is never touched through a map.
                    let source = remote::open_source(&index, false)?;
                    let files = ShardFiles::new(shards.unwrap_or_default()).mapped(map_shards);
                    Dataset::new(Index::new(source)?, files, options)?
                }
            };
            dataset.filter_extensions(&required)?;
            dataset.try_enforce_contiguous()?;
            dataset.num_samples()?;
            Ok(dataset)
        })?
        .map_err(|error| errors::binfmt(&*error))?;
        let names = Names::new(py, &dataset);
        Ok(Self {
            dataset,
            by_key: OnceLock::new(),
            mapped: map_shards && !is_remote,
            remote: is_remote,
            names,
        })
    }

    /// The shards' paths (or URLs), in fid order.
    fn shard_names(&self) -> Vec<String> {
        let set = self.dataset.shards().set();
        (0..set.count())
            .filter_map(|fid| u16::try_from(fid).ok())
            .map(|fid| set.name(fid).display().to_string())
            .collect()
    }

    fn __len__(&self) -> PyResult<usize> {
        self.dataset.num_samples().map_err(taridx_error)
    }

    /// Sample `index` as a dict: `__key__`, `__shard__`, `__index__`, and
    /// one entry per member extension (`.jpg`, ...) holding its bytes.
    #[pyo3(signature = (index, zero_copy = false))]
    fn sample<'py>(
        &self,
        py: Python<'py>,
        index: usize,
        zero_copy: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        self.read_sample(py, index, zero_copy)
    }

    /// Samples `indices` (each at most `len - 1`; every one is checked
    /// before any is read) as a list of dicts like `sample`'s: read and
    /// their headers checked with the GIL released, eight samples at a
    /// time, the samples of a remote dataset announced together first (each
    /// shard fetches its share in merged requests, several at once).
    #[pyo3(signature = (indices, zero_copy = false))]
    fn get_batch<'py>(
        &self,
        py: Python<'py>,
        indices: PyReadonlyArray1<'py, i64>,
        zero_copy: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let indices = indices.as_slice()?;
        let count = self.dataset.num_samples().map_err(taridx_error)?;
        let mut samples: Vec<(usize, &[Row])> =
            binfmt_core::alloc::vec_with_capacity(indices.len(), "a batch of samples")
                .map_err(|error| PyMemoryError::new_err(error.to_string()))?;
        for &index in indices {
            let position = usize::try_from(index)
                .ok()
                .filter(|&position| position < count)
                .ok_or_else(|| {
                    PyIndexError::new_err(format!(
                        "sample {index} out of range (the dataset has {count})"
                    ))
                })?;
            samples.push((position, self.rows(position)?));
        }
        if self.remote {
            // Every shard told at once what the batch needs: merged range
            // requests, several in flight.
            remote::detach(py, || {
                let rows: Vec<Row> = samples
                    .iter()
                    .flat_map(|(_, rows)| rows.iter().copied())
                    .collect();
                self.dataset.prefetch(&rows);
            })?;
        }
        let list = PyList::empty(py);
        // A few samples at a time: what they read stays in the processor's
        // caches until it is copied into their dicts.
        if !self.mapped {
            // Each sample straight into its `bytes` objects (the GIL
            // released for each read), where it is small enough.
            let mut rest = &samples[..];
            while let Some(((index, rows), tail)) = rest.split_first() {
                match self.direct_dict(py, *index, rows)? {
                    Some(sample) => list.append(sample)?,
                    None => list.append(self.read_sample(py, *index, zero_copy)?)?,
                }
                rest = tail;
            }
            return Ok(list);
        }
        for group in samples.chunks(BATCH_GROUP) {
            let members = remote::detach(py, || {
                // Every header of the group requested from memory before
                // the first is checked (zero-copy samples touch nothing
                // else): one wait for memory, not one per header.
                for (_, rows) in group {
                    self.dataset.touch_headers(rows);
                }
                group
                    .iter()
                    .map(|(_, rows)| self.dataset.sample_members(rows))
                    .collect::<binfmt_taridx::Result<Vec<_>>>()
            })?
            .map_err(taridx_error)?;
            for ((index, rows), members) in group.iter().zip(members) {
                list.append(self.sample_dict(py, *index, rows, members, zero_copy)?)?;
            }
        }
        Ok(list)
    }

    /// The sample whose key is `key`, or None.
    #[pyo3(signature = (key, zero_copy = false))]
    fn lookup<'py>(
        &self,
        py: Python<'py>,
        key: &str,
        zero_copy: bool,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let by_key = match self.by_key.get() {
            Some(by_key) => by_key,
            None => {
                let count = self.dataset.num_samples().map_err(taridx_error)?;
                let mut by_key = HashMap::new();
                by_key.try_reserve(count).map_err(|_| {
                    PyMemoryError::new_err(format!("the key table of {count} samples"))
                })?;
                by_key.extend(
                    (0..count)
                        .map_while(|i| match self.dataset.sample(i) {
                            Ok(Some(rows)) => Some((i, rows.first().map(Row::key))),
                            _ => None,
                        })
                        .filter_map(|(i, key)| key.map(|key| (key, i))),
                );
                self.by_key.get_or_init(|| by_key)
            }
        };
        let wanted = (
            binfmt_taridx::keyhash(key),
            self.dataset.index().crash_id(key),
        );
        let Some(&index) = by_key.get(&wanted) else {
            return Ok(None);
        };
        let sample = self.read_sample(py, index, zero_copy)?;
        // A different key with the same hash is not this key.
        let found: Option<String> = sample
            .get_item("__key__")?
            .map(|k| k.extract())
            .transpose()?;
        Ok((found.as_deref() == Some(key)).then_some(sample))
    }

    /// The extensions the index knows.
    fn extensions(&self) -> Vec<String> {
        self.dataset.index().extensions().to_vec()
    }

    /// `"glzn"` or `"webdataset"`.
    #[getter]
    fn key_rule(&self) -> &'static str {
        self.dataset.index().key_rule().name()
    }

    /// The shard of each sample's first member (its fid), as an array.
    fn sample_shards<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<u16>>> {
        let count = self.dataset.num_samples().map_err(taridx_error)?;
        let mut fids: Vec<u16> = binfmt_core::alloc::vec_with_capacity(count, "sample shards")
            .map_err(|error| PyMemoryError::new_err(error.to_string()))?;
        for i in 0..count {
            let rows = self.rows(i)?;
            fids.push(rows.first().map_or(u16::MAX, |row| row.fid.get()));
        }
        Ok(fids.into_pyarray(py))
    }

    /// How many shards are open now.
    fn open_shard_count(&self) -> usize {
        self.dataset.shards().open_count()
    }

    /// Checks the index and every row against its shard; returns the total
    /// payload bytes.
    fn verify(&self, py: Python<'_>) -> PyResult<u64> {
        remote::detach(py, || self.dataset.verify())?.map_err(taridx_error)
    }
}
