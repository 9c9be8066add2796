//! ARCX archives for Python: `binfmt.arcx` is built on this.
//!
//! An [`Archive`] opens the file by offset (header, footer and manifest
//! only). `read` decompresses one entry straight into a new `bytes`
//! object; `open` gives a [`ReadStream`] over
//! [`binfmt_arcx::FileReader`] that decompresses block by block and checks
//! the entry's SHA-256 when it ends. Decompression, extraction, packing
//! and verification run with the GIL released.

use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

use binfmt_arcx::{Dialect, ExtractOptions, FileKind, PackOptions};
use binfmt_core::Source;
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::pyio::ReadStream;
use crate::{errors, remote};

/// Adds the ARCX classes and functions to the module.
pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<Archive>()?;
    module.add_function(wrap_pyfunction!(arcx_pack, module)?)?;
    Ok(())
}

type Inner = binfmt_arcx::Archive<Box<dyn Source>>;

fn arcx_error(error: binfmt_arcx::ArcxError) -> PyErr {
    errors::binfmt(&error)
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
        let archive = remote::detach(py, || -> Result<_, remote::BoxError> {
            let options =
                binfmt_arcx::OpenOptions::default().check_header(!binfmt::is_remote(&location));
            let source = remote::open_source(&location, false)?;
            Ok(Inner::with_options(source, options)?)
        })?
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
    let dialect = match dialect {
        "spec" => Dialect::Spec,
        "arcx-cli" => Dialect::ArcxCli,
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown ARCX dialect {other:?}: \"spec\" or \"arcx-cli\""
            )));
        }
    };
    let options = PackOptions::default()
        .dialect(dialect)
        .level(level)
        .jobs(jobs);
    let remote = remote::open_options().remote;
    let summary = crate::remote::detach(py, || {
        binfmt::outputs::pack_arcx_dir(&dir, &out, options, &remote, |_| {})
    })?
    .map_err(|error| errors::binfmt(&error))?;
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
