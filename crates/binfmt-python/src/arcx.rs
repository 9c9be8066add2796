//! ARCX archives for Python: `binfmt.arcx` is built on this.
//!
//! An [`Archive`] opens the file by offset (header, footer and manifest
//! only). `read` decompresses one entry straight into a new `bytes`
//! object; `open` gives a [`ReadStream`] over
//! [`binfmt_arcx::FileReader`] that decompresses block by block and checks
//! the entry's SHA-256 when it ends. A [`Writer`] packs entries handed over
//! one at a time (a [`binfmt_arcx::Packer`]); [`arcx_merge`] joins part
//! archives into one ([`binfmt_arcx::Merger`]). Decompression, extraction,
//! packing, merging and verification run with the GIL released.

use std::io::Read;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use binfmt_arcx::{
    ArcxError, Attributes, Dialect, ExtractOptions, FileKind, MergeOptions, Merger, PackOptions,
    PackSummary, Packer,
};
use binfmt_core::{Inputs, Source};
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::pyio::ReadStream;
use crate::{errors, remote};

/// Adds the ARCX classes and functions to the module.
pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<Archive>()?;
    module.add_class::<Writer>()?;
    module.add_function(wrap_pyfunction!(arcx_pack, module)?)?;
    module.add_function(wrap_pyfunction!(arcx_merge, module)?)?;
    Ok(())
}

type Inner = binfmt_arcx::Archive<Box<dyn Source>>;

fn arcx_error(error: binfmt_arcx::ArcxError) -> PyErr {
    errors::binfmt(&error)
}

/// Opens the archive at `location` for reading: a path (the header checked
/// too) or an `http://`, `https://` or `s3://` URL (the header left to
/// `verify`).
fn open_archive(location: &str) -> Result<Inner, remote::BoxError> {
    let options = binfmt_arcx::OpenOptions::default().check_header(!binfmt::is_remote(location));
    let source = remote::open_source(location, false)?;
    Ok(Inner::with_options(source, options)?)
}

/// What writers write into: a file that appears at its path only when
/// complete (the output gate: an `AtomicFile`, or an S3 upload).
type Output = Box<dyn binfmt_core::Destination>;

/// Creates the output at `location` (a path, `file://` or `s3://` URL; to
/// S3 a multipart upload that appears only on commit), refused when it is
/// one of `inputs` (by device and inode, or by URL and ETag): the one place
/// the ARCX writers of this module make their output.
fn create_output(location: &str, inputs: &[String]) -> PyResult<Output> {
    let mut gate = Inputs::new(inputs);
    for input in inputs {
        if let Some(identity) = binfmt_remote::identity(input).filter(|_| binfmt::is_remote(input))
        {
            gate.add_remote(&identity, None);
        }
    }
    let remote = remote::open_options().remote;
    binfmt::outputs::Output::open(location, std::sync::Arc::new(gate), &remote)
        .and_then(|output| output.create())
        .map_err(|error| errors::binfmt(&error))
}

/// The dialect named `name`.
fn dialect_named(name: &str) -> PyResult<Dialect> {
    match name {
        "spec" => Ok(Dialect::Spec),
        "arcx-cli" => Ok(Dialect::ArcxCli),
        other => Err(PyValueError::new_err(format!(
            "unknown ARCX dialect {other:?}: \"spec\" or \"arcx-cli\""
        ))),
    }
}

/// A packing summary as the dict `binfmt.arcx.pack` returns.
fn summary_dict<'py>(py: Python<'py>, summary: &PackSummary) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("files", summary.files)?;
    dict.set_item("bytes", summary.bytes_in)?;
    dict.set_item("blocks", summary.blocks)?;
    dict.set_item("archive_size", summary.archive_size)?;
    let skipped: Vec<(String, &str)> = summary
        .skipped
        .iter()
        .map(|skipped| (skipped.path.display().to_string(), skipped.why))
        .collect();
    dict.set_item("skipped", skipped)?;
    Ok(dict)
}

/// An ARCX archive opened for reading.
#[pyclass(frozen, module = "binfmt.arcx", name = "_NativeArchive")]
#[derive(Debug)]
pub struct Archive {
    archive: Arc<Inner>,
    path: String,
}

impl Archive {
    fn find(&self, name: &str) -> PyResult<binfmt_arcx::FileEntry<'_>> {
        self.archive
            .find(name)
            .ok_or_else(|| PyKeyError::new_err(name.to_owned()))
    }
}

#[pymethods]
impl Archive {
    /// Opens the archive at `location`, a path (header, footer and
    /// manifest read) or an `http://`, `https://` or `s3://` URL (footer and
    /// manifest fetched; the header is left to `verify`).
    #[new]
    fn new(py: Python<'_>, location: String) -> PyResult<Self> {
        let archive = remote::detach(py, || open_archive(&location))?
            .map_err(|error| errors::binfmt(&*error))?;
        Ok(Self {
            archive: Arc::new(archive),
            path: location,
        })
    }

    /// The path the archive was opened from.
    #[getter]
    fn path(&self) -> &str {
        &self.path
    }

    /// `"spec"` or `"arcx-cli"`.
    #[getter]
    fn dialect(&self) -> &'static str {
        self.archive.dialect().name()
    }

    /// Every entry's path, in the archive's order.
    fn names(&self) -> Vec<String> {
        self.archive
            .files()
            .map(|file| file.path().to_string())
            .collect()
    }

    /// `(path, size, kind, mode, mtime_ns)` of every entry; kind is
    /// `"file"`, `"directory"` or `"symlink"`.
    fn entries(&self) -> Vec<(String, u64, &'static str, u32, i64)> {
        self.archive
            .files()
            .map(|file| {
                let attributes = file.attributes();
                let kind = match attributes.kind {
                    FileKind::Directory => "directory",
                    FileKind::Symlink => "symlink",
                    _ => "file",
                };
                (
                    file.path().to_string(),
                    file.size(),
                    kind,
                    attributes.mode,
                    attributes.mtime_ns,
                )
            })
            .collect()
    }

    /// For each entry, in the archive's order, the id of the first block
    /// holding its bytes; `None` for an entry with no chunk (a directory).
    /// Read from the manifest: no block is read. A small entry lies in that
    /// one (shared) block; a large one has blocks of its own from it on.
    fn entry_blocks(&self) -> Vec<Option<u32>> {
        self.archive
            .files()
            .map(|file| file.chunks().next().map(|chunk| chunk.block))
            .collect()
    }

    /// The number of blocks.
    #[getter]
    fn block_count(&self) -> usize {
        self.archive.manifest().blocks().len()
    }

    fn __len__(&self) -> usize {
        self.archive.len()
    }

    fn __contains__(&self, name: &str) -> bool {
        self.archive.find(name).is_some()
    }

    /// The bytes of entry `name`, checked against its SHA-256.
    fn read<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyBytes>> {
        let file = self.find(name)?;
        let size = usize::try_from(file.size()).map_err(|_| {
            PyValueError::new_err(binfmt_core::print::line(format_args!(
                "{name}: too large for memory"
            )))
        })?;
        PyBytes::new_with(py, size, |buf| {
            // Making the reader may fetch (a remote archive's blocks).
            remote::detach(py, || {
                let mut reader = self.archive.reader_for(file);
                reader.read_exact(buf)?;
                // The read that reaches the end checks the SHA-256.
                let mut extra = [0u8; 1];
                match reader.read(&mut extra)? {
                    0 => Ok(()),
                    _ => Err(std::io::Error::other(format!(
                        "entry {name:?} holds more than its {size} bytes"
                    ))),
                }
            })?
            .map_err(|error| errors::binfmt(&error))
        })
    }

    /// A stream of entry `name`'s bytes.
    fn open(&self, py: Python<'_>, name: &str) -> PyResult<ReadStream> {
        let size = self.find(name)?.size();
        let open = remote::detach(py, || {
            OpenEntry::try_new(Arc::clone(&self.archive), |archive| {
                archive.reader(name).map_err(arcx_error)
            })
        })??;
        Ok(ReadStream::new(Box::new(open), Some(size)))
    }

    /// Extracts every entry under `dir`; returns counts of what was written.
    #[pyo3(signature = (dir, *, symlinks = false, metadata = true))]
    fn extract<'py>(
        &self,
        py: Python<'py>,
        dir: PathBuf,
        symlinks: bool,
        metadata: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let options = ExtractOptions::default()
            .symlinks(symlinks)
            .metadata(metadata);
        let summary =
            remote::detach(py, || self.archive.extract(&dir, options))?.map_err(arcx_error)?;
        let dict = PyDict::new(py);
        dict.set_item("files", summary.files)?;
        dict.set_item("bytes", summary.bytes)?;
        dict.set_item("directories", summary.directories)?;
        dict.set_item("symlinks", summary.symlinks)?;
        dict.set_item("skipped_symlinks", summary.skipped_symlinks)?;
        Ok(dict)
    }

    /// Checks every block and every entry's SHA-256.
    fn verify<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let summary = remote::detach(py, || self.archive.verify())?.map_err(arcx_error)?;
        let dict = PyDict::new(py);
        dict.set_item("files", summary.files)?;
        dict.set_item("bytes", summary.bytes)?;
        dict.set_item("blocks", summary.blocks)?;
        Ok(dict)
    }
}

type FileReader<'a> = binfmt_arcx::FileReader<'a, Box<dyn Source>>;

self_cell::self_cell!(
    /// An entry being read, with the archive it reads from.
    struct OpenEntry {
        owner: Arc<Inner>,
        #[not_covariant]
        dependent: FileReader,
    }
);

impl std::fmt::Debug for OpenEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OpenEntry")
    }
}

impl Read for OpenEntry {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.with_dependent_mut(|_, reader| reader.read(buf))
    }
}

/// Packs the tree under `dir` into the archive `out` (written atomically).
#[pyfunction]
#[pyo3(signature = (dir, out, level = 3, dialect = "spec", jobs = None))]
fn arcx_pack<'py>(
    py: Python<'py>,
    dir: PathBuf,
    out: PathBuf,
    level: i32,
    dialect: &str,
    jobs: Option<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    let options = PackOptions::default()
        .dialect(dialect_named(dialect)?)
        .level(level)
        .jobs(jobs);
    let remote = remote::open_options().remote;
    let summary = crate::remote::detach(py, || {
        binfmt::outputs::pack_arcx_dir(&dir, &out, options, &remote, |_| {})
    })?
    .map_err(|error| errors::binfmt(&error))?;
    summary_dict(py, &summary)
}

/// Merges the part archives at `parts` (paths or URLs, opened one at a
/// time, in order) into the archive at `location`, their blocks copied as
/// stored; returns the summary `arcx_pack` returns.
#[pyfunction]
#[pyo3(signature = (parts, location, *, dialect = None))]
fn arcx_merge<'py>(
    py: Python<'py>,
    parts: Vec<String>,
    location: String,
    dialect: Option<&str>,
) -> PyResult<Bound<'py, PyDict>> {
    let mut options = MergeOptions::default();
    if let Some(name) = dialect {
        options = options.dialect(dialect_named(name)?);
    }
    let summary = remote::detach(py, || -> PyResult<PackSummary> {
        let mut merger =
            Merger::new(create_output(&location, &parts)?, options).map_err(arcx_error)?;
        for part in &parts {
            let archive = open_archive(part).map_err(|error| errors::binfmt(&*error))?;
            merger.append(&archive).map_err(arcx_error)?;
        }
        let (out, summary) = merger.finish().map_err(arcx_error)?;
        out.commit()
            .map_err(|error| errors::binfmt(&ArcxError::from(error)))?;
        Ok(summary)
    })??;
    summary_dict(py, &summary)
}

/// An archive being written entry by entry: `binfmt.arcx.Writer`.
#[pyclass(frozen, module = "binfmt.arcx", name = "_NativeWriter")]
#[derive(Debug)]
pub struct Writer {
    /// `None` once finished or aborted.
    packer: Mutex<Option<Packer<Output>>>,
    location: String,
}

impl Writer {
    /// Runs `work` on the packer with the GIL released; a finished writer
    /// is a `ValueError`.
    fn with_packer<T: Send>(
        &self,
        py: Python<'_>,
        work: impl Send + FnOnce(&mut Packer<Output>) -> binfmt_arcx::Result<T>,
    ) -> PyResult<T> {
        remote::detach(py, || {
            let mut packer = self.packer.lock().unwrap_or_else(PoisonError::into_inner);
            let packer = packer.as_mut().ok_or_else(|| finished(&self.location))?;
            work(packer).map_err(writer_error)
        })?
    }
}

/// The error of a writer used after `finish` or `abort`.
fn finished(location: &str) -> PyErr {
    PyValueError::new_err(binfmt_core::print::line(format_args!(
        "the ARCX writer of {location} is closed"
    )))
}

/// A writer's error: a path the archive cannot hold (empty, absolute, with
/// `..`, added twice) is the caller's `ValueError`; anything else as usual.
fn writer_error(error: ArcxError) -> PyErr {
    match error {
        ArcxError::BadInputPath { .. } => PyValueError::new_err(binfmt_core::print::line(&error)),
        other => arcx_error(other),
    }
}

#[pymethods]
impl Writer {
    /// Starts the archive at `location`, which appears only when finished.
    #[new]
    #[pyo3(signature = (location, *, level = 3, dialect = "spec", jobs = None))]
    fn new(
        py: Python<'_>,
        location: String,
        level: i32,
        dialect: &str,
        jobs: Option<usize>,
    ) -> PyResult<Self> {
        let options = PackOptions::default()
            .dialect(dialect_named(dialect)?)
            .level(level)
            .jobs(jobs);
        let packer = remote::detach(py, || -> PyResult<Packer<Output>> {
            Packer::new(create_output(&location, &[])?, options).map_err(arcx_error)
        })??;
        Ok(Self {
            packer: Mutex::new(Some(packer)),
            location,
        })
    }

    /// Where the archive goes.
    #[getter]
    fn location(&self) -> &str {
        &self.location
    }

    /// Whether `finish` or `abort` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.packer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none()
    }

    /// Adds a regular file holding `data` at `path`; returns its size.
    #[pyo3(signature = (path, data, *, mode = None, mtime_ns = None))]
    fn add(
        &self,
        py: Python<'_>,
        path: &str,
        data: &[u8],
        mode: Option<u32>,
        mtime_ns: Option<i64>,
    ) -> PyResult<u64> {
        let attributes =
            Attributes::new(FileKind::File, mode.unwrap_or(0o644), mtime_ns.unwrap_or(0));
        self.with_packer(py, |packer| {
            packer.add_with(path, attributes, &mut &data[..])
        })
    }

    /// Adds an empty directory at `path`.
    #[pyo3(signature = (path, *, mode = None, mtime_ns = None))]
    fn add_directory(
        &self,
        py: Python<'_>,
        path: &str,
        mode: Option<u32>,
        mtime_ns: Option<i64>,
    ) -> PyResult<()> {
        self.with_packer(py, |packer| {
            packer.add_directory(path, mode.unwrap_or(0o755), mtime_ns.unwrap_or(0))
        })
    }

    /// Writes the manifest and puts the archive in place; returns the
    /// summary `arcx_pack` returns.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let summary = remote::detach(py, || -> PyResult<PackSummary> {
            let packer = self
                .packer
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
                .ok_or_else(|| finished(&self.location))?;
            let (out, summary) = packer.finish().map_err(arcx_error)?;
            out.commit()
                .map_err(|error| errors::binfmt(&ArcxError::from(error)))?;
            Ok(summary)
        })??;
        summary_dict(py, &summary)
    }

    /// Gives the archive up: nothing is left at its location (a file that
    /// was there stays as it was). Does nothing once closed.
    fn abort(&self, py: Python<'_>) -> PyResult<()> {
        remote::detach(py, || {
            // Dropping the packer waits for its writer thread and removes
            // the temporary file.
            drop(
                self.packer
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take(),
            );
        })
    }
}
