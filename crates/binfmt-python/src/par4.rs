//! PAR4 files for Python: `binfmt.par4` is built on this.
//!
//! A [`Par4File`] is a [`binfmt_parcode::ParcodeFile`] over a local file
//! read by offset (never mapped: a file truncated underneath is an error,
//! not SIGBUS) or a remote object. Its chunk tree comes from the inspector (the
//! reference's report, as text or as nested dicts); a root that is a
//! `HashMap<String, Vec<u8>>` is read as a lazy map: listing reads keys and
//! length prefixes only, a lookup its bucket and its own value.

use binfmt_parcode::inspector::{ChunkInfo, ParcodeInspector};
use binfmt_parcode::{LazyMap, ParcodeFile};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::{errors, remote};

/// Adds the PAR4 class to the module.
pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<Par4File>()
}

fn par4_error(error: binfmt_parcode::ParcodeError) -> PyErr {
    errors::binfmt(&error)
}

/// A PAR4 file opened for reading.
#[pyclass(frozen, module = "binfmt.par4", name = "_NativePar4")]
pub struct Par4File {
    file: ParcodeFile,
}

impl std::fmt::Debug for Par4File {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Par4File")
            .field("file_size", &self.file.file_size())
            .finish()
    }
}

impl Par4File {
    /// The root as a `HashMap<String, Vec<u8>>`.
    fn map(&self) -> Result<LazyMap<'_, String, Vec<u8>>, binfmt_parcode::ParError> {
        LazyMap::new(self.file.par_file().root()?)
    }
}

/// One chunk of the inspector's report as a dict, its children below it.
fn chunk_dict<'py>(py: Python<'py>, chunk: &ChunkInfo) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("offset", chunk.offset)?;
    dict.set_item("length", chunk.total_length)?;
    dict.set_item("payload_size", chunk.payload_size)?;
    dict.set_item("compression", &chunk.compression_algo)?;
    dict.set_item("kind", &chunk.node_type_hint)?;
    dict.set_item("info", chunk.distribution_info.as_deref())?;
    let children = PyList::empty(py);
    for child in &chunk.children {
        children.append(chunk_dict(py, child)?)?;
    }
    dict.set_item("children", children)?;
    Ok(dict)
}

#[pymethods]
impl Par4File {
    /// Opens `location`: a path (read by offset) or an `http://`, `https://` or
    /// `s3://` URL (the header and the root's trailer fetched).
    #[new]
    fn new(py: Python<'_>, location: String) -> PyResult<Self> {
        let file = remote::detach(py, || -> Result<_, remote::BoxError> {
            // Read by offset, never mapped: every call returns copies, so
            // a file truncated underneath fails the call instead of
            // killing the process.
            Ok(ParcodeFile::from_source(remote::open_source(
                &location, false,
            )?)?)
        })?
        .map_err(|error| errors::binfmt(&*error))?;
        Ok(Self { file })
    }

    /// The file's size in bytes.
    #[getter]
    fn file_size(&self) -> u64 {
        self.file.file_size()
    }

    /// The inspector's report: the chunk tree as text, as parcode prints it.
    fn inspect(&self, py: Python<'_>) -> PyResult<String> {
        let report = remote::detach(py, || ParcodeInspector::inspect_file(&self.file))?
            .map_err(par4_error)?;
        Ok(report.to_string())
    }

    /// The chunk tree as nested dicts (`offset`, `length`, `payload_size`,
    /// `compression`, `kind`, `info`, `children`).
    fn tree<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let report = remote::detach(py, || ParcodeInspector::inspect_file(&self.file))?
            .map_err(par4_error)?;
        chunk_dict(py, &report.tree)
    }

    /// Checks every chunk; returns `(chunks, payload bytes)`.
    fn verify(&self, py: Python<'_>) -> PyResult<(u64, u64)> {
        let summary = remote::detach(py, || self.file.verify())?.map_err(par4_error)?;
        Ok((summary.chunks, summary.payload_bytes))
    }

    /// Every key of a `HashMap<String, Vec<u8>>` root with its value's
    /// length, in the file's order (no value is read).
    fn map_lens(&self, py: Python<'_>) -> PyResult<Vec<(String, u64)>> {
        remote::detach(py, || {
            let map = self.map()?;
            map.value_lens()
        })?
        .map_err(|error| errors::binfmt(&error))
    }

    /// The value of `key` in a `HashMap<String, Vec<u8>>` root, or None.
    fn map_get<'py>(&self, py: Python<'py>, key: &str) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let value =
            remote::detach(py, || self.map()?.get(key))?.map_err(|error| errors::binfmt(&error))?;
        Ok(value.map(|bytes| PyBytes::new(py, &bytes)))
    }
}
