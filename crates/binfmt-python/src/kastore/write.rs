//! Writing kastore stores from Python, and the byte-level builders the
//! Python tests make files (good or bad) with: a store's layout, its header,
//! one item descriptor.
//!
//! ```text
//! header (64 bytes)  "\x89KAS\r\n\x1a\n", version 1.0, num_items u32, file_size u64, 40 zero bytes
//! descriptor (64)    type u8, 7 zero bytes, key_start, key_len, array_start, array_len (u64 each), 24 zero bytes
//! ```

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use binfmt_core::layout::{IntoBytes, Record, U16, U32, U64};
use binfmt_kastore::format::{
    DESCRIPTOR_SIZE, HEADER_SIZE, Header, ItemDescriptor, VERSION_MAJOR, VERSION_MINOR,
};
use binfmt_kastore::{ItemType, KastError, SIGNATURE, Writer};
use numpy::PyReadonlyArray1;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::PyBytes;

use crate::errors;
use crate::pyio::{PyWriter, owned_file};
use crate::remote::detach;

/// One array to write: its key's bytes, its type's name and its bytes.
type Item<'py> = (PyBackedBytes, String, PyReadonlyArray1<'py, u8>);

/// Writes a store of `items` to `target`, as `kind` says: `"path"`,
/// `"fd"` (a descriptor Rust owns), `"stream"` (a Python file object) or
/// `"bytes"` (returned).
#[pyfunction]
pub(super) fn kastore_dump<'py>(
    py: Python<'py>,
    items: Vec<Item<'py>>,
    kind: &str,
    target: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let arrays = items
        .iter()
        .map(|(key, type_name, array)| {
            let item_type = ItemType::from_name(type_name).ok_or_else(|| {
                PyTypeError::new_err(format!("kastore stores no {type_name} arrays"))
            })?;
            Ok((&key[..], item_type, array.as_slice()?))
        })
        .collect::<PyResult<Vec<_>>>()?;
    match kind {
        "bytes" => {
            let writer = writer(&arrays).map_err(errors::kast)?;
            let size = usize::try_from(writer.file_size())
                .map_err(|_| PyValueError::new_err("the store does not fit in memory"))?;
            let bytes = PyBytes::new_with(py, size, |buf| {
                let mut out = &mut *buf;
                writer.write_to(&mut out).map(|_| ()).map_err(errors::kast)
            })?;
            Ok(Some(bytes))
        }
        "path" => {
            let path: PathBuf = target.extract()?;
            detach(py, || write_path(&arrays, &path))?.map_err(errors::kast)?;
            Ok(None)
        }
        "fd" => {
            let file = owned_file(target.extract()?)?;
            detach(py, || {
                let mut out = BufWriter::with_capacity(1 << 20, file);
                writer(&arrays)?.write_to(&mut out)?;
                out.flush()
                    .map_err(|error| binfmt_core::Error::io("<file descriptor>", error))?;
                Ok::<_, KastError>(())
            })?
            .map_err(errors::kast)?;
            Ok(None)
        }
        "stream" => {
            let mut out = BufWriter::with_capacity(1 << 20, PyWriter::new(target.clone()));
            writer(&arrays)
                .and_then(|writer| writer.write_to(&mut out))
                .map_err(errors::kast)?;
            out.flush()
                .map_err(|error| errors::io_error(&error, None, &error.to_string()))?;
            Ok(None)
        }
        other => Err(PyValueError::new_err(format!(
            "unknown output kind {other:?}"
        ))),
    }
}

fn writer<'a>(arrays: &[(&'a [u8], ItemType, &'a [u8])]) -> Result<Writer<'a>, KastError> {
    let mut writer = Writer::new();
    for &(key, item_type, bytes) in arrays {
        writer.insert_raw(key, item_type, bytes)?;
    }
    Ok(writer)
}

/// Writes to a path: a regular file (or a new one) is replaced atomically,
/// through its symlink if it is one, so arrays still mapped from the old
/// file stay valid; a FIFO or device is written in place.
fn write_path(arrays: &[(&[u8], ItemType, &[u8])], path: &Path) -> Result<(), KastError> {
    let io = |error| KastError::Core(binfmt_core::Error::io(path, error));
    if binfmt::is_remote(path) {
        // An `s3://` object: one upload, appearing whole when complete.
        let remote = crate::remote::open_options().remote;
        let out = binfmt::outputs::Output::open(path, std::sync::Arc::default(), &remote)
            .map_err(|error| io(std::io::Error::other(error.to_string())))?;
        let created = out
            .create()
            .map_err(|error| io(std::io::Error::other(error.to_string())))?;
        writer(arrays)?.write_destination(created)?;
        return Ok(());
    }
    match std::fs::metadata(path) {
        Ok(metadata) if metadata.is_dir() => {
            // EISDIR, what `open(path, "wb")` fails with.
            Err(io(std::io::Error::from_raw_os_error(21)))
        }
        Ok(metadata) if !metadata.is_file() => {
            let file = File::options().write(true).open(path).map_err(io)?;
            let mut out = BufWriter::with_capacity(1 << 20, file);
            writer(arrays)?.write_to(&mut out)?;
            out.flush().map_err(io)
        }
        _ => {
            let target = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
            writer(arrays)?.write_file(target)?;
            Ok(())
        }
    }
}

/// A descriptor's fields: `(type, key_start, key_len, array_start, array_len)`.
type Fields = (u8, u64, u64, u64, u64);

/// Collects the first `keep` bytes written and counts the rest.
struct Head {
    keep: usize,
    bytes: Vec<u8>,
}

impl Write for Head {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let room = self.keep.saturating_sub(self.bytes.len());
        self.bytes
            .extend_from_slice(buf.get(..room.min(buf.len())).unwrap_or_default());
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Where the writer puts each of `items` (in key order): a list of
/// `(type, key_start, key_len, array_start, array_len)`, and the file size.
#[pyfunction]
pub(super) fn kastore_layout<'py>(items: Vec<Item<'py>>) -> PyResult<(Vec<Fields>, u64)> {
    let arrays = items
        .iter()
        .map(|(key, type_name, array)| {
            let item_type = ItemType::from_name(type_name)
                .ok_or_else(|| PyTypeError::new_err(format!("no kastore type {type_name}")))?;
            Ok((&key[..], item_type, array.as_slice()?))
        })
        .collect::<PyResult<Vec<_>>>()?;
    let writer = writer(&arrays).map_err(errors::kast)?;
    let keep = HEADER_SIZE + arrays.len() * DESCRIPTOR_SIZE;
    let mut head = Head {
        keep,
        bytes: Vec::with_capacity(keep),
    };
    // Only descriptors are kept: the arrays' bytes pass through uncopied.
    let file_size = writer.write_to(&mut head).map_err(errors::kast)?;
    let descriptors =
        ItemDescriptor::slice_at(&head.bytes, HEADER_SIZE as u64, arrays.len() as u64)
            .map_err(|error| errors::binfmt(&error))?;
    let layout = descriptors
        .iter()
        .map(|d| {
            (
                d.item_type,
                d.key_start.get(),
                d.key_len.get(),
                d.array_start.get(),
                d.array_len.get(),
            )
        })
        .collect();
    Ok((layout, file_size))
}

/// The 64-byte header of a store of `num_items` items and `file_size` bytes.
#[pyfunction]
pub(super) fn kastore_header(py: Python<'_>, num_items: u32, file_size: u64) -> Bound<'_, PyBytes> {
    let header = Header {
        signature: SIGNATURE,
        version_major: U16::new(VERSION_MAJOR),
        version_minor: U16::new(VERSION_MINOR),
        num_items: U32::new(num_items),
        file_size: U64::new(file_size),
        reserved: [0; 40],
    };
    PyBytes::new(py, header.as_bytes())
}

/// The 64 bytes of one item descriptor, fields as given (checked by no one:
/// this builds files, good or bad).
#[pyfunction]
pub(super) fn kastore_descriptor(
    py: Python<'_>,
    item_type: u8,
    key_start: u64,
    key_len: u64,
    array_start: u64,
    array_len: u64,
) -> Bound<'_, PyBytes> {
    let descriptor = ItemDescriptor {
        item_type,
        reserved: [0; 7],
        key_start: U64::new(key_start),
        key_len: U64::new(key_len),
        array_start: U64::new(array_start),
        array_len: U64::new(array_len),
        reserved_tail: [0; 24],
    };
    PyBytes::new(py, descriptor.as_bytes())
}

/// The fields of a 64-byte item descriptor:
/// `(type, key_start, key_len, array_start, array_len)`.
#[pyfunction]
pub(super) fn kastore_unpack_descriptor(bytes: &[u8]) -> PyResult<Fields> {
    let d = ItemDescriptor::ref_at(bytes, 0).map_err(|error| errors::binfmt(&error))?;
    Ok((
        d.item_type,
        d.key_start.get(),
        d.key_len.get(),
        d.array_start.get(),
        d.array_len.get(),
    ))
}
