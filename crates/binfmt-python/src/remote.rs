//! Remote locations (`http://`, `https://`, `s3://`) for Python.
//!
//! Every entry point that takes a location opens it with `open_options`:
//! the umbrella library's defaults (`spec/remote.md`), with the remote
//! source's warnings (a server that ignores ranges, one without a strong
//! ETag) queued instead of printed. `detach` runs work with the GIL
//! released and then issues the queued warnings as Python warnings of
//! class `binfmt.RemoteWarning`, from the calling thread, so `warnings`
//! filters (and `-W error`) apply to them.

use std::ffi::CString;
use std::path::Path;
use std::sync::Mutex;

use binfmt_core::{ByteSource, Source};
use pyo3::create_exception;
use pyo3::exceptions::PyUserWarning;
use pyo3::prelude::*;

use crate::errors;

create_exception!(
    binfmt,
    RemoteWarning,
    PyUserWarning,
    "A remote object is read in a degraded way: the server ignores range requests (the object was fetched whole) or sends no strong ETag."
);

/// Warnings raised by remote sources, not yet issued to Python.
static PENDING: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Adds `RemoteWarning` and `is_remote` to the module.
pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("RemoteWarning", module.py().get_type::<RemoteWarning>())?;
    module.add_function(wrap_pyfunction!(is_remote, module)?)
}

/// Whether `location` is read remotely: `http:`, `https:` or `s3:`, with or
/// without `//` (those without are refused as URLs, redacted, never taken
/// for file names). The Python modules decide by this, as the Rust side
/// does.
#[pyfunction]
fn is_remote(location: &str) -> bool {
    binfmt::is_remote(location)
}

/// How entry points open locations: the defaults, warnings queued for
/// [`detach`] to issue.
pub(crate) fn open_options() -> binfmt::OpenOptions {
    cached_options(None)
}

/// [`open_options`] with fetched ranges also kept in a disk cache (a
/// directory and its byte limit), shared with other processes naming it.
pub(crate) fn cached_options(cache: Option<(&Path, u64)>) -> binfmt::OpenOptions {
    let mut remote = binfmt_remote::RemoteOptions::default().on_warning(|warning| {
        if let Ok(mut pending) = PENDING.lock() {
            pending.push(warning.to_string());
        }
    });
    if let Some((dir, limit)) = cache {
        remote = remote.with_cache_dir(dir, limit);
    }
    binfmt::OpenOptions::default().remote(remote)
}

/// Runs `work` with the GIL released, then issues the remote warnings it
/// (or any other thread) queued meanwhile. Fails when a warning is turned
/// into an exception by the `warnings` filters, and when `work` panics: a
/// panic (a bug, here or in a dependency) is caught here, at the boundary,
/// and raised as `binfmt.BinfmtError`, never as pyo3's `PanicException`.
pub(crate) fn detach<T: Send>(py: Python<'_>, work: impl Send + FnOnce() -> T) -> PyResult<T> {
    let value = py
        .detach(|| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
                .map_err(|payload| errors::panic_message(payload.as_ref()))
        })
        .map_err(errors::panicked)?;
    let pending = match PENDING.lock() {
        Ok(mut pending) => std::mem::take(&mut *pending),
        Err(_) => Vec::new(),
    };
    let category = py.get_type::<RemoteWarning>();
    for message in pending {
        let message = CString::new(message.replace('\0', " ")).unwrap_or_default();
        PyErr::warn(py, &category, &message, 1)?;
    }
    Ok(value)
}

/// Any error of opening or reading, for work done with the GIL released.
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The bytes at `location`: an `http://`, `https://` or `s3://` object read
/// by range requests, or a local file, memory-mapped when `map` is set
/// (zero-copy views), read by offset otherwise.
pub(crate) fn open_source(location: &str, map: bool) -> Result<Box<dyn Source>, BoxError> {
    if map && !binfmt::is_remote(location) {
        return Ok(Box::new(ByteSource::open(location)?));
    }
    Ok(binfmt::open_source(location, &open_options())?.source)
}
