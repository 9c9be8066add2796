//! kastore stores for Python: `binfmt.kastore` is built on this.
//!
//! Reading goes through [`binfmt_kastore::Store`], which checks the whole
//! structure before anything is handed out. Where the bytes come from:
//!
//! | input | bytes |
//! |---|---|
//! | a path to a regular file | mapped ([`ByteSource::open`]) |
//! | a descriptor or file object on a regular file | mapped from the current position ([`ByteSource::from_file`]); the position then moves to the end of the store |
//! | a pipe, FIFO, socket, or any other stream | [`Store::read_one`]: exactly one store is read, the stream is left right after it |
//! | bytes (`loads`) | one store read from them |
//!
//! Lazily loaded arrays are read-only numpy arrays *of the mapped bytes*,
//! made without a copy; each has as its base a small object that owns the
//! map, so the map lives as long as any array does, also after the store is
//! closed. `read_all` (and the C engine) gives arrays that own their
//! memory, copied from the map once, and drops the map.

mod write;

use std::ffi::c_void;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::ptr;

use binfmt_core::layout::{IntoBytes, Record};
use binfmt_core::{ByteSource, Source};
use binfmt_kastore::format::{
    ARRAY_ALIGN, DESCRIPTOR_SIZE, HEADER_SIZE, Header, VERSION_MAJOR, VERSION_MINOR,
};
use binfmt_kastore::{ItemType, KastError, SIGNATURE, Store, with_element};
use numpy::PyArray1;
use numpy::npyffi::{self, NpyTypes, PY_ARRAY_API, npy_intp};
use numpy::prelude::*;
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyIterator, PyString, PyTuple};

use crate::errors::{self, StoreClosedError};
use crate::pyio::{PyReader, owned_file};
use crate::remote::detach;

/// Arrays at least this large are copied with the GIL released.
const LARGE_COPY: usize = 1 << 20;

/// Adds the kastore classes and functions to the module.
pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<NativeStore>()?;
    module.add_class::<StoreBytes>()?;
    module.add_class::<ValueInfo>()?;
    module.add_function(wrap_pyfunction!(kastore_load_dict, module)?)?;
    module.add_function(wrap_pyfunction!(write::kastore_dump, module)?)?;
    module.add_function(wrap_pyfunction!(write::kastore_layout, module)?)?;
    module.add_function(wrap_pyfunction!(write::kastore_header, module)?)?;
    module.add_function(wrap_pyfunction!(write::kastore_descriptor, module)?)?;
    module.add_function(wrap_pyfunction!(write::kastore_unpack_descriptor, module)?)?;
    let py = module.py();
    let types = ItemType::ALL
        .iter()
        .map(|item_type| (item_type.name(), item_type.id(), item_type.size()))
        .collect::<Vec<_>>();
    module.add("KASTORE_TYPES", PyTuple::new(py, types)?)?;
    module.add("KASTORE_SIGNATURE", PyBytes::new(py, &SIGNATURE))?;
    module.add("KASTORE_HEADER_SIZE", HEADER_SIZE)?;
    module.add("KASTORE_DESCRIPTOR_SIZE", DESCRIPTOR_SIZE)?;
    module.add("KASTORE_ARRAY_ALIGN", ARRAY_ALIGN)?;
    module.add("KASTORE_VERSION", (VERSION_MAJOR, VERSION_MINOR))?;
    Ok(())
}

/// The bytes of one store: a window of a map (or of bytes read from a
/// stream) from the store's first byte to its last.
#[derive(Debug)]
pub struct Window {
    bytes: ByteSource,
    start: usize,
    len: usize,
}

impl Window {
    /// The store starting at `start` of `bytes`: as long as its header says
    /// when that fits, the rest of the bytes otherwise (the reader then
    /// says what is wrong).
    fn at(bytes: ByteSource, start: u64) -> Self {
        let all = bytes.as_bytes();
        let start = usize::try_from(start).unwrap_or(usize::MAX).min(all.len());
        let rest = all.len() - start;
        let declared = all
            .get(start..)
            .and_then(|tail| Header::ref_at(tail, 0).ok())
            .and_then(|header| usize::try_from(header.file_size.get()).ok());
        let len = match declared {
            Some(size) if (HEADER_SIZE..=rest).contains(&size) => size,
            _ => rest,
        };
        Self { bytes, start, len }
    }

    fn as_slice(&self) -> &[u8] {
        self.bytes
            .as_bytes()
            .get(self.start..self.start + self.len)
            .unwrap_or_default()
    }
}

impl Source for Window {
    fn len(&self) -> u64 {
        self.len as u64
    }

    fn in_memory(&self) -> Option<&[u8]> {
        Some(self.as_slice())
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        self.as_slice().read_exact_at(offset, buf)
    }

    fn name(&self) -> &Path {
        self.bytes.name()
    }
}

/// Where a store is read from, as the Python layer resolved it.
enum Input<'a, 'py> {
    /// A path: mapped when it is a regular file, read as a stream otherwise.
    Path(PathBuf),
    /// A descriptor on a regular file (owned by Rust) and the store's offset.
    Map(File, u64),
    /// A descriptor on a pipe, FIFO or socket (owned by Rust).
    Pipe(File),
    /// A Python file object, read through `read`.
    Stream(Bound<'py, PyAny>),
    /// Bytes holding a store.
    Memory(&'a [u8]),
}

impl<'a, 'py> Input<'a, 'py> {
    fn resolve(kind: &str, value: &'a Bound<'py, PyAny>, start: u64) -> PyResult<Self> {
        Ok(match kind {
            "path" => Self::Path(value.extract()?),
            "map" => Self::Map(owned_file(value.extract()?)?, start),
            "pipe" => Self::Pipe(owned_file(value.extract()?)?),
            "stream" => Self::Stream(value.clone()),
            "bytes" => Self::Memory(value.cast::<PyBytes>()?.as_bytes()),
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown input kind {other:?}"
                )));
            }
        })
    }

    /// The bytes of one store.
    fn read(self, py: Python<'py>) -> PyResult<Window> {
        match self {
            Self::Path(path) => detach(py, || open_path(&path))?.map_err(errors::kast),
            Self::Map(file, start) => detach(py, || {
                let bytes = ByteSource::from_file(file, "<file descriptor>")?;
                Ok(Window::at(bytes, start))
            })?
            .map_err(errors::kast),
            Self::Pipe(mut file) => {
                detach(py, || read_stream(&mut file, "<file descriptor>"))?.map_err(errors::kast)
            }
            Self::Stream(object) => {
                read_stream(&mut PyReader::new(object), "<file object>").map_err(errors::kast)
            }
            Self::Memory(mut bytes) => {
                detach(py, || read_stream(&mut bytes, "<bytes>"))?.map_err(errors::kast)
            }
        }
    }
}

/// A path: a regular file is mapped; a FIFO or device is read as a stream.
fn open_path(path: &Path) -> Result<Window, KastError> {
    let metadata = std::fs::metadata(path).map_err(|error| binfmt_core::Error::io(path, error))?;
    if metadata.is_file() || metadata.is_dir() {
        // A directory is refused by `open` with the error that says so.
        return Ok(Window::at(ByteSource::open(path)?, 0));
    }
    let mut file = File::open(path).map_err(|error| binfmt_core::Error::io(path, error))?;
    read_stream(&mut file, path)
}

/// Exactly one store from a stream.
fn read_stream(
    reader: &mut impl std::io::Read,
    name: impl AsRef<Path>,
) -> Result<Window, KastError> {
    let name = name.as_ref();
    let store = Store::read_one(reader, name)?.ok_or(KastError::Empty)?;
    Ok(Window::at(
        ByteSource::from_vec(store.into_source(), name),
        0,
    ))
}

/// One item of a store.
#[derive(Debug, Clone, Copy)]
struct Entry {
    key_start: usize,
    key_end: usize,
    item_type: ItemType,
    len: u64,
    offset: usize,
    byte_len: usize,
}

/// Keys and array locations of a checked store, in key order.
#[derive(Debug)]
struct Catalog {
    keys: Vec<u8>,
    entries: Vec<Entry>,
}

impl Catalog {
    fn of(window: &Window) -> Result<Self, KastError> {
        let store = Store::new(window)?;
        let mut keys = Vec::new();
        let mut entries = Vec::with_capacity(store.len());
        for item in store.items() {
            let key_start = keys.len();
            keys.extend_from_slice(item.key());
            entries.push(Entry {
                key_start,
                key_end: keys.len(),
                item_type: item.item_type(),
                len: item.len(),
                // The store checked every array lies inside the window.
                offset: item.offset() as usize,
                byte_len: item.byte_len() as usize,
            });
        }
        Ok(Self { keys, entries })
    }

    fn key(&self, entry: &Entry) -> &[u8] {
        self.keys
            .get(entry.key_start..entry.key_end)
            .unwrap_or_default()
    }

    /// The item with `key` (keys are sorted: the store checked it).
    fn find(&self, key: &[u8]) -> Option<usize> {
        self.entries
            .binary_search_by(|entry| self.key(entry).cmp(key))
            .ok()
    }

    fn bytes<'a>(&self, window: &'a Window, entry: &Entry) -> &'a [u8] {
        window
            .as_slice()
            .get(entry.offset..entry.offset + entry.byte_len)
            .unwrap_or_default()
    }
}

/// What a numpy array of a kastore type this version cannot map to numpy
/// raises.
fn no_numpy_type(item_type: ItemType) -> PyErr {
    errors::FileFormatError::new_err(format!("no numpy type for kastore type {item_type}"))
}

/// A read-only numpy array of `bytes`, in place: `owner` keeps them alive
/// and becomes the array's base.
pub(crate) fn view<'py, T: numpy::Element>(
    py: Python<'py>,
    bytes: &[u8],
    owner: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let mut dims = [(bytes.len() / size_of::<T>()) as npy_intp];
    let descr = numpy::dtype::<T>(py).into_dtype_ptr();
    #[allow(unsafe_code)]
    // SAFETY: `bytes` lies in the memory `owner` holds (a map or a buffer,
    // never moved or freed while `owner` lives), and `owner` becomes the
    // array's base, so the memory outlives the array. The array is created
    // without NPY_ARRAY_WRITEABLE (flags 0), so numpy never writes to the
    // read-only map; numpy computes alignment and contiguity itself.
    // `PyArray_NewFromDescr` steals `descr`; `PyArray_SetBaseObject` steals
    // the reference `into_ptr` hands it, also when it fails.
    unsafe {
        let subtype = npyffi::get_type_object(py, NpyTypes::PyArray_Type);
        let array = PY_ARRAY_API.PyArray_NewFromDescr(
            py,
            subtype,
            descr,
            1,
            dims.as_mut_ptr(),
            ptr::null_mut(),
            bytes.as_ptr() as *mut c_void,
            0,
            ptr::null_mut(),
        );
        let array = Bound::from_owned_ptr_or_err(py, array)?;
        let base = owner.clone().into_ptr();
        if PY_ARRAY_API.PyArray_SetBaseObject(py, array.as_ptr().cast(), base) < 0 {
            return Err(PyErr::fetch(py));
        }
        Ok(array)
    }
}

/// A numpy array that owns a copy of `bytes`.
fn owned<'py, T>(py: Python<'py>, bytes: &[u8], writable: bool) -> PyResult<Bound<'py, PyAny>>
where
    T: numpy::Element + binfmt_kastore::Element,
{
    let array = PyArray1::<T>::zeros(py, bytes.len() / size_of::<T>(), false);
    let mut values = array.readwrite();
    let target = values.as_slice_mut()?.as_mut_bytes();
    if target.len() >= LARGE_COPY {
        detach(py, || target.copy_from_slice(bytes))?;
    } else {
        target.copy_from_slice(bytes);
    }
    if !writable {
        values.make_nonwriteable();
    }
    Ok(array.into_any())
}

/// The memory of a lazily loaded store: the base object of its arrays.
#[pyclass(frozen, module = "binfmt.kastore.store", name = "_StoreBytes")]
#[derive(Debug)]
pub struct StoreBytes {
    window: Window,
}

/// How keys are decoded.
#[derive(Debug)]
enum Keys {
    /// UTF-8, checked by Rust.
    Utf8,
    /// Any other Python codec: keys are decoded by Python at load time.
    Codec(Py<PyAny>),
}

impl Keys {
    fn of(encoding: &Bound<'_, PyAny>) -> Self {
        let utf8 = encoding.extract::<String>().is_ok_and(|name| {
            matches!(
                name.to_ascii_lowercase().replace('_', "-").as_str(),
                "utf-8" | "utf8" | "u8" | "utf"
            )
        });
        if utf8 {
            Self::Utf8
        } else {
            Self::Codec(encoding.clone().unbind())
        }
    }

    /// Every key decoded; Python's own exception when one cannot be.
    fn decode_all<'py>(&self, py: Python<'py>, catalog: &Catalog) -> PyResult<Bound<'py, PyTuple>> {
        let decoded = catalog
            .entries
            .iter()
            .map(|entry| self.decode(py, catalog.key(entry)))
            .collect::<PyResult<Vec<_>>>()?;
        PyTuple::new(py, decoded)
    }

    fn decode<'py>(&self, py: Python<'py>, key: &[u8]) -> PyResult<Bound<'py, PyAny>> {
        match (self, std::str::from_utf8(key)) {
            (Self::Utf8, Ok(text)) => Ok(PyString::new(py, text).into_any()),
            // Python raises the UnicodeDecodeError that names the bad byte.
            (Self::Utf8, Err(_)) => PyBytes::new(py, key).call_method1("decode", ("utf-8",)),
            (Self::Codec(codec), _) => PyBytes::new(py, key).call_method1("decode", (codec,)),
        }
    }

    /// The stored bytes of `key`, or None when no stored key can match it.
    fn encode(&self, key: &Bound<'_, PyAny>) -> Option<Vec<u8>> {
        match self {
            Self::Utf8 => key
                .cast::<PyString>()
                .ok()
                .and_then(|text| text.to_str().ok())
                .map(|text| text.as_bytes().to_vec()),
            Self::Codec(codec) => key
                .call_method1("encode", (codec,))
                .ok()
                .and_then(|bytes| bytes.extract::<Vec<u8>>().ok()),
        }
    }
}

/// An open store.
#[derive(Debug)]
struct Loaded {
    catalog: Catalog,
    keys: Keys,
    /// The bytes, for a lazily loaded store (`read_all` copies every array
    /// at load time and drops them).
    bytes: Option<Py<StoreBytes>>,
    /// Arrays handed out so far, by item: `store[k] is store[k]`.
    arrays: Vec<Option<Py<PyAny>>>,
    /// The keys as Python strings, in key order, once asked for.
    names: Option<Py<PyTuple>>,
    /// Key -> item, once the keys are Python strings: a lookup of a key
    /// object is then a hash lookup (its hash is cached) instead of a
    /// binary search through the stored bytes.
    lookup: Option<Py<PyDict>>,
    /// Lookups made by binary search so far.
    searches: usize,
}

/// Lookups by binary search before the key dict is built: a few lookups do
/// not pay for decoding every key, a loop over the store does not pay a
/// search for each.
const SEARCHES_BEFORE_DICT: usize = 32;

impl Loaded {
    /// The keys as Python strings (made once), and the dict from them.
    fn names<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        if let Some(names) = &self.names {
            let names = names.bind(py).clone();
            if self.lookup.is_none() {
                self.lookup = Some(lookup_of(&names)?.unbind());
            }
            return Ok(names);
        }
        let names = self.keys.decode_all(py, &self.catalog)?;
        self.lookup = Some(lookup_of(&names)?.unbind());
        self.names = Some(names.clone().unbind());
        Ok(names)
    }

    fn index(&mut self, key: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
        let py = key.py();
        if let Some(lookup) = &self.lookup {
            // Only str keys can be stored keys (an unhashable key is absent).
            if !key.is_instance_of::<PyString>() {
                return Ok(None);
            }
            return match lookup.bind(py).get_item(key)? {
                Some(index) => Ok(Some(index.extract()?)),
                None => Ok(None),
            };
        }
        self.searches += 1;
        if self.searches > SEARCHES_BEFORE_DICT {
            self.names(py)?;
            return self.index(key);
        }
        Ok(self
            .keys
            .encode(key)
            .and_then(|bytes| self.catalog.find(&bytes)))
    }
}

fn lookup_of<'py>(names: &Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyDict>> {
    let lookup = PyDict::new(names.py());
    for (index, name) in names.iter().enumerate() {
        lookup.set_item(name, index)?;
    }
    Ok(lookup)
}

/// The store of `binfmt.kastore` (the Python class `Store` adds the
/// `Mapping` methods): a read-only mapping of keys to numpy arrays.
#[pyclass(subclass, module = "binfmt.kastore.store", name = "_NativeStore")]
#[derive(Debug)]
pub struct NativeStore {
    state: Option<Loaded>,
    key_encoding: Py<PyAny>,
    nbytes: u64,
}

impl NativeStore {
    fn open(&self) -> PyResult<&Loaded> {
        self.state
            .as_ref()
            .ok_or_else(|| StoreClosedError::new_err(()))
    }

    fn loaded(&mut self) -> PyResult<&mut Loaded> {
        self.state
            .as_mut()
            .ok_or_else(|| StoreClosedError::new_err(()))
    }

    fn index(&mut self, key: &Bound<'_, PyAny>) -> PyResult<usize> {
        self.loaded()?
            .index(key)?
            .ok_or_else(|| PyKeyError::new_err(key.clone().unbind()))
    }
}

#[pymethods]
impl NativeStore {
    /// Loads one store; `kind` and `value` say where from (see `Input`).
    #[new]
    #[pyo3(signature = (kind, value, start, read_all, key_encoding))]
    fn new(
        py: Python<'_>,
        kind: &str,
        value: &Bound<'_, PyAny>,
        start: u64,
        read_all: bool,
        key_encoding: Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let window = Input::resolve(kind, value, start)?.read(py)?;
        let catalog = detach(py, || Catalog::of(&window))?.map_err(errors::kast)?;
        let keys = Keys::of(&key_encoding);
        // Keys are decoded (checked) at load time, as kastore does.
        let names = match &keys {
            Keys::Utf8 => {
                let bad = catalog
                    .entries
                    .iter()
                    .map(|entry| catalog.key(entry))
                    .find(|key| std::str::from_utf8(key).is_err());
                if let Some(bad) = bad {
                    keys.decode(py, bad)?;
                }
                None
            }
            Keys::Codec(_) => Some(keys.decode_all(py, &catalog)?.unbind()),
        };
        let nbytes = window.len as u64;
        let (bytes, arrays) = if read_all {
            let arrays = catalog
                .entries
                .iter()
                .map(|entry| {
                    let data = catalog.bytes(&window, entry);
                    with_element!(
                        entry.item_type,
                        T => owned::<T>(py, data, false),
                        other => Err(no_numpy_type(other))
                    )
                    .map(|array| Some(array.unbind()))
                })
                .collect::<PyResult<Vec<_>>>()?;
            (None, arrays)
        } else {
            let arrays = catalog.entries.iter().map(|_| None).collect();
            (Some(Py::new(py, StoreBytes { window })?), arrays)
        };
        Ok(Self {
            state: Some(Loaded {
                catalog,
                keys,
                bytes,
                arrays,
                names,
                lookup: None,
                searches: 0,
            }),
            key_encoding: key_encoding.unbind(),
            nbytes,
        })
    }

    /// The encoding of the keys.
    #[getter]
    fn key_encoding(&self, py: Python<'_>) -> Py<PyAny> {
        self.key_encoding.clone_ref(py)
    }

    /// The size of the store in bytes.
    #[getter(_nbytes)]
    fn nbytes(&self) -> u64 {
        self.nbytes
    }

    fn __len__(&self) -> PyResult<usize> {
        Ok(self.open()?.catalog.entries.len())
    }

    fn __iter__<'py>(mut slf: PyRefMut<'py, Self>) -> PyResult<Bound<'py, PyIterator>> {
        let py = slf.py();
        slf.loaded()?.names(py)?.try_iter()
    }

    fn __contains__(&mut self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        match self.index(key) {
            Ok(_) => Ok(true),
            Err(error) if error.is_instance_of::<PyKeyError>(key.py()) => Ok(false),
            Err(error) => Err(error),
        }
    }

    fn __getitem__(&mut self, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let py = key.py();
        let index = self.index(key)?;
        let loaded = self.loaded()?;
        if let Some(Some(array)) = loaded.arrays.get(index) {
            return Ok(array.clone_ref(py));
        }
        let (Some(entry), Some(bytes)) = (loaded.catalog.entries.get(index), &loaded.bytes) else {
            return Err(PyKeyError::new_err(key.clone().unbind()));
        };
        let owner = bytes.bind(py);
        let data = loaded.catalog.bytes(&owner.get().window, entry);
        let array = with_element!(
            entry.item_type,
            T => view::<T>(py, data, owner.as_any()),
            other => Err(no_numpy_type(other))
        )?
        .unbind();
        if let Some(slot) = loaded.arrays.get_mut(index) {
            *slot = Some(array.clone_ref(py));
        }
        Ok(array)
    }

    /// The type, shape and size of the array under `key`, without reading it.
    fn info(&mut self, key: &Bound<'_, PyAny>) -> PyResult<ValueInfo> {
        let index = self.index(key)?;
        let entry = self
            .open()?
            .catalog
            .entries
            .get(index)
            .ok_or_else(|| PyKeyError::new_err(key.clone().unbind()))?;
        Ok(ValueInfo {
            dtype: entry.item_type.name().to_owned(),
            len: entry.len,
            size: entry.byte_len as u64,
        })
    }

    /// Closes the store; arrays already handed out stay valid. Closing
    /// twice does nothing.
    fn close(&mut self) {
        self.state = None;
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&mut self, _args: &Bound<'_, PyTuple>) -> bool {
        self.close();
        false
    }
}

/// The type, shape and size of one array of a store.
#[pyclass(frozen, module = "binfmt.kastore.store")]
#[derive(Debug, Clone)]
pub struct ValueInfo {
    dtype: String,
    len: u64,
    size: u64,
}

#[pymethods]
impl ValueInfo {
    #[new]
    fn new(dtype: String, shape: (u64,), size: u64) -> Self {
        Self {
            dtype,
            len: shape.0,
            size,
        }
    }

    /// The numpy type name, such as `"float64"`.
    #[getter]
    fn dtype(&self) -> &str {
        &self.dtype
    }

    /// `(number of elements,)`.
    #[getter]
    fn shape(&self) -> (u64,) {
        (self.len,)
    }

    /// The size in bytes.
    #[getter]
    fn size(&self) -> u64 {
        self.size
    }

    fn __str__(&self) -> String {
        format!(
            "dtype={} shape=({},), size={}",
            self.dtype, self.len, self.size
        )
    }

    fn __repr__(&self) -> String {
        format!(
            "ValueInfo(dtype='{}', shape=({},), size={})",
            self.dtype, self.len, self.size
        )
    }
}

/// The C engine's load: a dict of writable arrays that own their memory,
/// keys decoded as UTF-8, and the store's size.
#[pyfunction]
fn kastore_load_dict<'py>(
    py: Python<'py>,
    kind: &str,
    value: &Bound<'py, PyAny>,
    start: u64,
) -> PyResult<(Bound<'py, PyDict>, u64)> {
    let window = Input::resolve(kind, value, start)?.read(py)?;
    let catalog = detach(py, || Catalog::of(&window))?.map_err(errors::kast)?;
    let dict = PyDict::new(py);
    for entry in &catalog.entries {
        let key = Keys::Utf8.decode(py, catalog.key(entry))?;
        let data = catalog.bytes(&window, entry);
        let array = with_element!(
            entry.item_type,
            T => owned::<T>(py, data, true),
            other => Err(no_numpy_type(other))
        )?;
        dict.set_item(key, array)?;
    }
    Ok((dict, window.len as u64))
}
