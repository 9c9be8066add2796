//! Python file objects and file descriptors as Rust I/O.
//!
//! A Python file object is read through its `read` method and written
//! through its `write` method, so its own buffering and position stay
//! right; an exception it raises travels through Rust as an `io::Error`
//! and comes out unchanged ([`crate::errors`]). A file descriptor is handed
//! over by Python as a duplicate (`os.dup`) that Rust owns and closes: it
//! shares the caller's file position, so reading or writing through it
//! moves the caller's descriptor exactly as far.

use std::fs::File;
use std::io::{self, Read, Write};
use std::sync::Mutex;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes};

use crate::errors::python_in_io;

/// The largest piece handed to a Python file object's `write` at once: a
/// large array is written as a series of bounded copies.
const WRITE_PIECE: usize = 8 << 20;

/// A Python file object's `read(n)` as `std::io::Read`.
#[derive(Debug)]
pub struct PyReader<'py> {
    file: Bound<'py, PyAny>,
}

impl<'py> PyReader<'py> {
    /// Reads through `file.read`.
    pub fn new(file: Bound<'py, PyAny>) -> Self {
        Self { file }
    }

    fn read_python(&self, buf: &mut [u8]) -> PyResult<usize> {
        let data = self.file.call_method1("read", (buf.len(),))?;
        if let Ok(bytes) = data.cast::<PyBytes>() {
            return copy_into(buf, bytes.as_bytes());
        }
        if let Ok(bytes) = data.cast::<PyByteArray>() {
            return copy_into(buf, &bytes.to_vec());
        }
        Err(PyTypeError::new_err(format!(
            "a file opened in binary mode is required: read() returned {}, not bytes",
            data.get_type().name()?
        )))
    }
}

/// Copies what a Python `read(n)` returned into the caller's buffer.
fn copy_into(buf: &mut [u8], bytes: &[u8]) -> PyResult<usize> {
    let Some(target) = buf.get_mut(..bytes.len()) else {
        return Err(PyValueError::new_err(format!(
            "read({}) returned {} bytes",
            buf.len(),
            bytes.len()
        )));
    };
    target.copy_from_slice(bytes);
    Ok(bytes.len())
}

impl Read for PyReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        self.read_python(buf).map_err(python_in_io)
    }
}

/// A Python file object's `write(b)` as `std::io::Write`.
#[derive(Debug)]
pub struct PyWriter<'py> {
    file: Bound<'py, PyAny>,
}

impl<'py> PyWriter<'py> {
    /// Writes through `file.write`.
    pub fn new(file: Bound<'py, PyAny>) -> Self {
        Self { file }
    }

    fn write_python(&self, buf: &[u8]) -> PyResult<usize> {
        let piece = buf.get(..WRITE_PIECE).unwrap_or(buf);
        let written = self
            .file
            .call_method1("write", (PyBytes::new(self.file.py(), piece),))?;
        // Raw files may write less (and say how much); buffered and
        // in-memory files write everything and return the length or None.
        if written.is_none() {
            return Ok(piece.len());
        }
        let count: usize = written.extract()?;
        Ok(count.min(piece.len()))
    }
}

impl Write for PyWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        self.write_python(buf).map_err(python_in_io)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Takes ownership of a descriptor Python duplicated for Rust (`os.dup`).
#[cfg(unix)]
pub fn owned_file(fd: i32) -> PyResult<File> {
    use std::os::fd::{FromRawFd, OwnedFd};
    if fd < 0 {
        return Err(PyValueError::new_err(format!(
            "{fd} is not a file descriptor"
        )));
    }
    // SAFETY: the Python layer passes a descriptor it has just created with
    // `os.dup` and hands over: it is open, and nothing else uses or closes
    // it, so Rust owns it (and closes it when the `File` drops).
    #[allow(unsafe_code)]
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    Ok(File::from(owned))
}

/// File descriptors are a Unix interface of this module.
#[cfg(not(unix))]
pub fn owned_file(fd: i32) -> PyResult<File> {
    Err(PyValueError::new_err(format!(
        "file descriptor {fd}: descriptors are supported on Unix only; pass a path or a file object"
    )))
}

/// A stream of bytes Rust produces (an archive entry being decompressed):
/// what the Python layer wraps in a buffered binary file object.
#[pyclass(frozen, module = "binfmt", name = "_NativeStream")]
pub struct ReadStream {
    reader: Mutex<Option<Stream>>,
    size: Option<u64>,
}

/// What a stream reads: forward only, or from any offset.
enum Stream {
    Forward(Box<dyn Read + Send>),
    Seekable(Box<dyn binfmt::ReadSeek>),
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Forward(reader) => reader.read(buf),
            Stream::Seekable(reader) => reader.read(buf),
        }
    }
}

impl std::fmt::Debug for ReadStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadStream")
            .field("size", &self.size)
            .finish()
    }
}

impl ReadStream {
    /// A stream of `reader`'s bytes, `size` of them when known.
    pub fn new(reader: Box<dyn Read + Send>, size: Option<u64>) -> Self {
        Self {
            reader: Mutex::new(Some(Stream::Forward(reader))),
            size,
        }
    }

    /// A stream of `reader`'s bytes that seeks.
    pub fn new_seekable(reader: Box<dyn binfmt::ReadSeek>, size: Option<u64>) -> Self {
        Self {
            reader: Mutex::new(Some(Stream::Seekable(reader))),
            size,
        }
    }

    /// Runs `work` on the open stream, with the GIL released.
    fn with_stream<T: Send>(
        &self,
        py: Python<'_>,
        work: impl FnOnce(&mut Stream) -> PyResult<T> + Send,
    ) -> PyResult<T> {
        crate::remote::detach(py, || {
            let mut guard = self
                .reader
                .lock()
                .map_err(|_| PyValueError::new_err("the stream failed earlier"))?;
            match guard.as_mut() {
                Some(stream) => work(stream),
                None => Err(PyValueError::new_err("I/O operation on closed file.")),
            }
        })?
    }
}

#[pymethods]
impl ReadStream {
    /// The number of bytes the stream holds, when known.
    #[getter]
    fn size(&self) -> Option<u64> {
        self.size
    }

    /// Up to `size` more bytes (all that remain when `size` is negative);
    /// empty at the end. Formats with a checksum check it on the read that
    /// reaches the end, which fails on a mismatch.
    #[pyo3(signature = (size = -1))]
    fn read<'py>(&self, py: Python<'py>, size: i64) -> PyResult<Bound<'py, PyBytes>> {
        // The lock is taken and released with the GIL released: a thread
        // waiting for it never holds the GIL the reading thread needs back.
        let out = self.with_stream(py, |reader| {
            let mut out = Vec::new();
            match u64::try_from(size) {
                Ok(size) => Read::take(reader, size).read_to_end(&mut out),
                Err(_) => reader.read_to_end(&mut out),
            }
            .map_err(|error| crate::errors::binfmt(&error))?;
            Ok(out)
        })?;
        Ok(PyBytes::new(py, &out))
    }

    /// Whether the stream can move to any offset.
    fn seekable(&self) -> bool {
        matches!(self.reader.lock().as_deref(), Ok(Some(Stream::Seekable(_))))
    }

    /// Moves to `offset` from the start (`whence` 0), the current position
    /// (1) or the end (2); returns the new position. Only what the new
    /// position needs is read.
    #[pyo3(signature = (offset, whence = 0))]
    fn seek(&self, py: Python<'_>, offset: i64, whence: i32) -> PyResult<u64> {
        let to =
            match whence {
                0 => io::SeekFrom::Start(u64::try_from(offset).map_err(|_| {
                    PyValueError::new_err(format!("negative seek position {offset}"))
                })?),
                1 => io::SeekFrom::Current(offset),
                2 => io::SeekFrom::End(offset),
                other => return Err(PyValueError::new_err(format!("whence {other}: 0, 1 or 2"))),
            };
        self.with_stream(py, |stream| match stream {
            Stream::Seekable(reader) => {
                io::Seek::seek(reader, to).map_err(|error| crate::errors::binfmt(&error))
            }
            Stream::Forward(_) => Err(pyo3::exceptions::PyOSError::new_err(
                "this stream does not seek",
            )),
        })
    }

    /// The position of the next byte read.
    fn tell(&self, py: Python<'_>) -> PyResult<u64> {
        self.seek(py, 0, 1)
    }

    /// Releases what the stream reads from; later reads fail.
    fn close(&self, py: Python<'_>) {
        py.detach(|| {
            if let Ok(mut guard) = self.reader.lock() {
                *guard = None;
            }
        });
    }
}
