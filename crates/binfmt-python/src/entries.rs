//! The umbrella library for Python: `binfmt.open`, `binfmt.convert` and
//! `binfmt.sniff` are built on this.
//!
//! [`Entries`] is any supported file seen as named entries
//! ([`binfmt::EntrySource`]): listed, read whole, streamed, verified and
//! extracted, with the GIL released while bytes move.

use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

use binfmt::{ConvertOptions, EntrySource, ExtractOptions, Format};
use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::pyio::ReadStream;
use crate::{errors, remote};

/// Adds the umbrella's class and functions to the module.
pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<Entries>()?;
    module.add_function(wrap_pyfunction!(open_entries, module)?)?;
    module.add_function(wrap_pyfunction!(sniff, module)?)?;
    module.add_function(wrap_pyfunction!(convert, module)?)?;
    Ok(())
}

fn umbrella_error(error: binfmt::Error) -> PyErr {
    errors::binfmt(&error)
}

type Source = Arc<dyn EntrySource>;

/// A file of any supported format, as named entries.
#[pyclass(frozen, module = "binfmt", name = "_NativeEntries")]
pub struct Entries {
    source: Source,
}

impl std::fmt::Debug for Entries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entries")
            .field("file", &self.source.file())
            .finish()
    }
}

/// Opens `location` (a path or an `http://`, `https://` or `s3://` URL) as
/// named entries, whatever its format.
#[pyfunction]
fn open_entries(py: Python<'_>, location: PathBuf) -> PyResult<Entries> {
    let source = remote::detach(py, || binfmt::open_with(&location, &remote::open_options()))?
        .map_err(umbrella_error)?;
    Ok(Entries {
        source: Arc::from(source),
    })
}

#[pymethods]
impl Entries {
    /// `"taridx"`, `"arcx"`, `"par4"` or `"kast"`.
    #[getter]
    fn format(&self) -> &'static str {
        self.source.format().name()
    }

    /// The file's path.
    #[getter]
    fn file(&self) -> &str {
        self.source.file()
    }

    /// `(name, size, kind)` of every entry in the file's order; kind is the
    /// kastore element type, `"directory"` or `"symlink"` for ARCX entries
    /// that are not files, None otherwise.
    fn list(&self, py: Python<'_>) -> PyResult<Vec<(String, u64, Option<&'static str>)>> {
        let entries = remote::detach(py, || self.source.list())?.map_err(umbrella_error)?;
        Ok(entries
            .into_iter()
            .map(|entry| (entry.name, entry.size, entry.kind))
            .collect())
    }

    /// The bytes of entry `name`.
    fn read<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = remote::detach(py, || read_whole(self.source.as_ref(), name))??;
        Ok(PyBytes::new(py, &bytes))
    }

    /// A stream of entry `name`'s bytes, which seeks (only what a new
    /// position needs is read).
    fn open(&self, py: Python<'_>, name: &str) -> PyResult<ReadStream> {
        let open = remote::detach(py, || {
            OpenEntry::try_new(Arc::clone(&self.source), |source| {
                source.open_seekable(name).map_err(umbrella_error)
            })
        })??;
        Ok(ReadStream::new_seekable(Box::new(open), None))
    }

    /// Checks everything the format can check.
    fn verify(&self, py: Python<'_>) -> PyResult<()> {
        remote::detach(py, || self.source.verify())?.map_err(umbrella_error)
    }

    /// Writes every entry under `dir`; returns how many were written.
    #[pyo3(signature = (dir, *, symlinks = false))]
    fn extract(&self, py: Python<'_>, dir: PathBuf, symlinks: bool) -> PyResult<u64> {
        remote::detach(py, || {
            let options = ExtractOptions::default().symlinks(symlinks);
            binfmt::extract(self.source.as_ref(), &dir, &options)
        })?
        .map_err(umbrella_error)
    }
}

type EntryStream<'a> = Box<dyn binfmt::ReadSeek + 'a>;

self_cell::self_cell!(
    /// An entry being read, with the source it reads from.
    struct OpenEntry {
        owner: Source,
        #[covariant]
        dependent: EntryStream,
    }
);

impl Read for OpenEntry {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.with_dependent_mut(|_, reader| reader.read(buf))
    }
}

impl std::io::Seek for OpenEntry {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        self.with_dependent_mut(|_, reader| reader.seek(to))
    }
}

/// The bytes of entry `name`, read into a buffer grown fallibly: an entry
/// whose size no memory can hold (a sparse tar member declaring 64 GiB) is
/// `MemoryError` naming it, never an abort.
fn read_whole(source: &dyn EntrySource, name: &str) -> PyResult<Vec<u8>> {
    const STEP: usize = 1 << 20;
    let mut reader = source.open(name).map_err(umbrella_error)?;
    // `bytes` is all initialized room; `used` of it is filled.
    let mut bytes = Vec::new();
    let mut used = 0;
    loop {
        if used == bytes.len() {
            // Doubling, as read_to_end does, but a refusal is an error.
            let more = bytes.len().max(STEP);
            bytes.try_reserve(more).map_err(|_| {
                PyMemoryError::new_err(format!(
                    "{}: entry {name}: more than {} bytes cannot be held in memory",
                    source.file(),
                    bytes.len().saturating_add(more)
                ))
            })?;
            bytes.resize(bytes.capacity(), 0);
        }
        let read = loop {
            match reader.read(bytes.get_mut(used..).unwrap_or_default()) {
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                other => break other,
            }
        };
        match read.map_err(|error| errors::binfmt(&error))? {
            0 => {
                bytes.truncate(used);
                return Ok(bytes);
            }
            read => used += read,
        }
    }
}

/// The format of the file at `location` (a path or a URL): `"taridx"`,
/// `"arcx"`, `"par4"`, `"kast"`, `"tar"` or `"unknown"`. A URL is sniffed
/// from its end first (one request fewer for ARCX and PAR4).
#[pyfunction]
fn sniff(py: Python<'_>, location: PathBuf) -> PyResult<&'static str> {
    let format = remote::detach(py, || -> Result<_, remote::BoxError> {
        let opened = binfmt::open_source(&location, &remote::open_options())?;
        Ok(if opened.origin.is_remote() {
            binfmt::sniff_tail_first(&*opened.source)?
        } else {
            binfmt::sniff_source(&*opened.source)?
        })
    })?
    .map_err(|error| errors::binfmt(&*error))?;
    Ok(format.name())
}

/// Converts `src` (any format `open` reads, a path or a URL) into `dst` in
/// format `to`.
#[pyfunction]
#[pyo3(signature = (src, dst, to = None, dialect = "spec", shard_size = 1 << 30))]
fn convert<'py>(
    py: Python<'py>,
    src: PathBuf,
    dst: PathBuf,
    to: Option<&str>,
    dialect: &str,
    shard_size: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let to = match to {
        Some("taridx") => Format::Taridx,
        Some("arcx") => Format::Arcx,
        Some("par4") => Format::Par4,
        Some("kast") => Format::Kast,
        Some(other) => {
            return Err(PyValueError::new_err(format!(
                "cannot convert to {other:?}: \"taridx\", \"arcx\", \"par4\" or \"kast\""
            )));
        }
        None => Format::of_extension(&dst).ok_or_else(|| {
            PyValueError::new_err(format!(
                "{}: cannot tell the target format from its name: give to=, or a name ending in .arcx, .kas, .trees, .par4 or .taridx",
                dst.display()
            ))
        })?,
    };
    let dialect = match dialect {
        "spec" => binfmt_arcx::Dialect::Spec,
        "arcx-cli" => binfmt_arcx::Dialect::ArcxCli,
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown ARCX dialect {other:?}: \"spec\" or \"arcx-cli\""
            )));
        }
    };
    let options = ConvertOptions::default()
        .arcx_dialect(dialect)
        .shard_size(shard_size);
    let summary = remote::detach(py, || {
        if !binfmt::is_remote(&src) {
            return binfmt::convert(&src, &dst, to, &options);
        }
        let source = binfmt::open_with(&src, &remote::open_options())?;
        binfmt::convert_source(&*source, &dst, to, &options, &|_, _| {})
    })?
    .map_err(umbrella_error)?;
    let dict = PyDict::new(py);
    dict.set_item("entries", summary.entries)?;
    dict.set_item("bytes", summary.bytes)?;
    let outputs: Vec<String> = summary
        .outputs
        .iter()
        .map(|path| path.display().to_string())
        .collect();
    dict.set_item("outputs", outputs)?;
    dict.set_item("skipped", summary.skipped)?;
    Ok(dict)
}
