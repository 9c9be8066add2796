//! Rust errors as Python exceptions.
//!
//! Every exception carries the Rust error's message (what is wrong, in which
//! file, where), through the printer gate (`binfmt_core::print::line`:
//! control and bidi characters escaped, URL userinfo and secrets redacted). The class says what kind of failure it is:
//!
//! | failure | exception |
//! |---|---|
//! | I/O with an OS error code | `OSError` with `errno`, `strerror` and `filename`, so Python picks the subclass (`FileNotFoundError`, `PermissionError`, ...) |
//! | a directory where a file was expected | `IsADirectoryError` |
//! | another non-regular file (FIFO, device) where a file is needed | `OSError` |
//! | an exception raised by a Python file object while Rust read or wrote through it | that exception, unchanged |
//! | no entry of that name | `KeyError` |
//! | kastore: no bytes at all | `EOFError` |
//! | kastore: major version too old / too new | `VersionTooOldError` / `VersionTooNewError` |
//! | kastore: anything else wrong with a file | `FileFormatError` |
//! | kastore writing: an empty, repeated or ragged input | `ValueError` |
//! | memory that could not be had for what an input describes | `MemoryError` |
//! | any other format error, and a panic caught at the boundary (a bug) | `binfmt.BinfmtError` |

use std::error::Error as StdError;
use std::io;
use std::path::Path;

use pyo3::create_exception;
use pyo3::exceptions::{
    PyEOFError, PyException, PyIsADirectoryError, PyKeyError, PyMemoryError, PyOSError,
    PyValueError,
};
use pyo3::prelude::*;

use binfmt_kastore::KastError;

create_exception!(
    binfmt,
    BinfmtError,
    PyException,
    "A file is not what its format requires, or could not be handled: the message names the file, what is wrong and where."
);
create_exception!(
    binfmt.kastore,
    KastoreException,
    BinfmtError,
    "Superclass of all exceptions defined in kastore."
);
create_exception!(
    binfmt.kastore,
    FileFormatError,
    KastoreException,
    "An error was detected in the file format."
);
create_exception!(
    binfmt.kastore,
    VersionTooOldError,
    KastoreException,
    "File version is too old. Please upgrade using the 'kastore upgrade' command line utility."
);
create_exception!(
    binfmt.kastore,
    VersionTooNewError,
    KastoreException,
    "File version is too new. Please upgrade your kastore library version if you wish to read this file."
);
create_exception!(
    binfmt.kastore,
    StoreClosedError,
    KastoreException,
    "The store has been closed and cannot be accessed."
);

/// Adds the exception classes to the module.
pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    module.add("BinfmtError", py.get_type::<BinfmtError>())?;
    module.add("KastoreException", py.get_type::<KastoreException>())?;
    module.add("FileFormatError", py.get_type::<FileFormatError>())?;
    module.add("VersionTooOldError", py.get_type::<VersionTooOldError>())?;
    module.add("VersionTooNewError", py.get_type::<VersionTooNewError>())?;
    module.add("StoreClosedError", py.get_type::<StoreClosedError>())?;
    Ok(())
}

/// Which exception a format error that is not I/O becomes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Family {
    /// kastore: `FileFormatError`.
    Kastore,
    /// Everything else: `binfmt.BinfmtError`.
    Binfmt,
}

impl Family {
    fn format_error(self, message: String) -> PyErr {
        match self {
            Self::Kastore => FileFormatError::new_err(message),
            Self::Binfmt => BinfmtError::new_err(message),
        }
    }
}

/// A kastore error as a Python exception.
pub(crate) fn kast(error: KastError) -> PyErr {
    // The printer gate: a message is shown to a person (a traceback), so it
    // carries no raw control character and no secret, whatever its origin.
    let message = binfmt_core::print::line(&error);
    match error {
        KastError::Empty => PyEOFError::new_err(message),
        KastError::VersionTooOld { .. } => VersionTooOldError::new_err(message),
        KastError::VersionTooNew { .. } => VersionTooNewError::new_err(message),
        KastError::EmptyKeyInput
        | KastError::DuplicateKeyInput { .. }
        | KastError::RaggedArray { .. }
        | KastError::TooManyItemsToWrite { .. }
        | KastError::ShortArray { .. } => PyValueError::new_err(message),
        KastError::KeyNotFound { key } => PyKeyError::new_err(key),
        other => classify(&other, message, Family::Kastore),
    }
}

/// Any other error of the workspace as a Python exception.
pub(crate) fn binfmt(error: &(dyn StdError + 'static)) -> PyErr {
    classify(error, binfmt_core::print::line(error), Family::Binfmt)
}

/// Walks `error`'s chain of causes for what decides the exception class
/// (an I/O failure, a missing entry, a directory); a format error otherwise.
fn classify(error: &(dyn StdError + 'static), message: String, family: Family) -> PyErr {
    binfmt_core::carry::chain(error)
        .find_map(|layer| decisive(layer, &message))
        .unwrap_or_else(|| family.format_error(message))
}

/// The exception `layer` decides on, if it decides one.
fn decisive(layer: &(dyn StdError + 'static), message: &str) -> Option<PyErr> {
    // Format errors carry core errors transparently: their `source()` skips
    // the core error, so it is looked at here.
    if let Some(core) = binfmt::core_error(layer).map(binfmt_core::Error::innermost) {
        return match core {
            binfmt_core::Error::Io { path, source } => Some(io_error(source, Some(path), message)),
            binfmt_core::Error::NotRegularFile { path, kind } => {
                Some(not_regular(path, kind, message))
            }
            binfmt_core::Error::OutOfMemory { .. } => {
                Some(PyMemoryError::new_err(message.to_owned()))
            }
            _ => None,
        };
    }
    if let Some(io_error) = layer.downcast_ref::<io::Error>() {
        if let Some(python) = io_error
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<PyErr>())
        {
            return Some(Python::attach(|py| python.clone_ref(py)));
        }
        if io_error.get_ref().is_none() {
            return Some(self::io_error(io_error, None, message));
        }
        return None;
    }
    if let Some(binfmt::Error::NotFound { name, .. }) = layer.downcast_ref::<binfmt::Error>() {
        return Some(PyKeyError::new_err(name.clone()));
    }
    if let Some(KastError::Empty) = layer.downcast_ref::<KastError>() {
        return Some(PyEOFError::new_err(message.to_owned()));
    }
    None
}

/// An I/O error: `OSError(errno, strerror, filename)` when it has an OS
/// error code (Python then picks the subclass and words it as it words its
/// own), `OSError(message)` otherwise.
pub(crate) fn io_error(error: &io::Error, path: Option<&Path>, message: &str) -> PyErr {
    if let Some(python) = error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<PyErr>())
    {
        return Python::attach(|py| python.clone_ref(py));
    }
    let Some(code) = os_code(error) else {
        return PyOSError::new_err(message.to_owned());
    };
    let strerror = io::Error::from_raw_os_error(code).to_string();
    let strerror = match strerror.rfind(" (os error ") {
        Some(end) => strerror.get(..end).unwrap_or(&strerror).to_owned(),
        None => strerror,
    };
    // A remote object's failure says what the server answered and what to
    // check (a 403 names the credential variables): its own line, not the
    // bare "Permission denied" of a local file (found from outside).
    let strerror = match path {
        Some(path) if binfmt::is_remote(path) => message.to_owned(),
        _ => strerror,
    };
    match path {
        // The filename goes through the printer's redaction as messages
        // do: a URL's userinfo and query never reach `e.filename`.
        Some(path) => PyOSError::new_err((
            code,
            strerror,
            binfmt_core::print::redact(&path.display().to_string()).into_owned(),
        )),
        None => PyOSError::new_err((code, strerror)),
    }
}

/// The OS error code of `error`, or of an I/O error it wraps (temporary
/// files wrap theirs with the path).
fn os_code(error: &io::Error) -> Option<i32> {
    if let Some(code) = binfmt_core::carry::chain(error).find_map(|layer| {
        layer
            .downcast_ref::<io::Error>()
            .and_then(io::Error::raw_os_error)
    }) {
        return Some(code);
    }
    // Some wrappers hide the code but keep the kind: the codes of the kinds
    // Python has subclasses for (the same numbers on Linux and macOS).
    match error.kind() {
        io::ErrorKind::NotFound => Some(2),
        io::ErrorKind::PermissionDenied => Some(13),
        io::ErrorKind::AlreadyExists => Some(17),
        io::ErrorKind::NotADirectory => Some(20),
        io::ErrorKind::IsADirectory => Some(21),
        _ => None,
    }
}

fn not_regular(path: &Path, kind: &str, message: &str) -> PyErr {
    if kind == "a directory" {
        // EISDIR, the code `open` fails with on a directory.
        const EISDIR: i32 = 21;
        return PyIsADirectoryError::new_err((
            EISDIR,
            message.to_owned(),
            binfmt_core::print::redact(&path.display().to_string()).into_owned(),
        ));
    }
    PyOSError::new_err(message.to_owned())
}

/// The message of a caught panic.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("no message")
        .to_owned()
}

/// A panic caught at the boundary (a bug: inputs are checked before they
/// reach code that could panic) as `binfmt.BinfmtError`, with the panic's
/// message.
pub(crate) fn panicked(message: String) -> PyErr {
    BinfmtError::new_err(format!(
        "internal error (a bug in binfmt or a dependency): {message}"
    ))
}

/// A Python exception carried through Rust I/O (a Python file object's
/// `read` or `write` failed).
pub(crate) fn python_in_io(error: PyErr) -> io::Error {
    binfmt_core::carry::into_io(error)
}
