"""The store behind :func:`binfmt.kastore.load`, and kastore's format constants.

:class:`Store` is a read-only mapping of keys to numpy arrays, as
``kastore.store.Store`` is. The bytes are read by the Rust library
``binfmt_kastore`` (every structural check is made before anything is
handed out), and a store loaded lazily from a regular file is a memory map:
its arrays are read-only numpy views of the map, made without a copy, and
keep the map alive for as long as any of them exists.

The names kastore's Python engine defines here (``MAGIC``, ``HEADER_SIZE``,
the type codes, ``ItemDescriptor``, ``pack_items``, ``write_file``, ...) are
provided for code that builds or inspects files by hand; their byte layouts
come from the Rust library.
"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Mapping
from typing import Any, Callable, Iterator, Optional

import numpy as np

from .. import _binfmt
from .._binfmt import ValueInfo
from .exceptions import StoreClosedError

__all__ = [
    "ARRAY_ALIGN",
    "HEADER_SIZE",
    "ITEM_DESCRIPTOR_SIZE",
    "ItemDescriptor",
    "MAGIC",
    "Store",
    "StoreClosedError",
    "VERSION_MAJOR",
    "VERSION_MINOR",
    "ValueInfo",
    "dump",
    "load",
    "np_dtype_to_type_map",
    "pack_items",
    "type_size",
    "type_to_np_dtype_map",
    "write_file",
]

#: The 8 bytes every kastore file starts with.
MAGIC = bytearray(_binfmt.KASTORE_SIGNATURE)
#: The size of the header.
HEADER_SIZE: int = _binfmt.KASTORE_HEADER_SIZE
#: The size of one item descriptor.
ITEM_DESCRIPTOR_SIZE: int = _binfmt.KASTORE_DESCRIPTOR_SIZE
#: Arrays start on multiples of this many bytes.
ARRAY_ALIGN: int = _binfmt.KASTORE_ARRAY_ALIGN
#: The file format version written.
VERSION_MAJOR, VERSION_MINOR = _binfmt.KASTORE_VERSION

#: numpy type name -> kastore type code.
np_dtype_to_type_map: dict[str, int] = {
    name: code for name, code, _ in _binfmt.KASTORE_TYPES
}
#: kastore type code -> numpy type name.
type_to_np_dtype_map: dict[int, str] = {
    code: name for name, code in np_dtype_to_type_map.items()
}
_TYPE_SIZES: dict[int, int] = {code: size for _, code, size in _binfmt.KASTORE_TYPES}

INT8 = np_dtype_to_type_map["int8"]
UINT8 = np_dtype_to_type_map["uint8"]
INT16 = np_dtype_to_type_map["int16"]
UINT16 = np_dtype_to_type_map["uint16"]
INT32 = np_dtype_to_type_map["int32"]
UINT32 = np_dtype_to_type_map["uint32"]
INT64 = np_dtype_to_type_map["int64"]
UINT64 = np_dtype_to_type_map["uint64"]
FLOAT32 = np_dtype_to_type_map["float32"]
FLOAT64 = np_dtype_to_type_map["float64"]


def type_size(ka_type: int) -> int:
    """The size in bytes of one element of kastore type ``ka_type``."""
    return _TYPE_SIZES[ka_type]


# ---------------------------------------------------------------------------
# Where a store is read from or written to.

#: What the Rust side reads from: (kind, value, offset, after) where
#: ``after(size)`` moves the caller's file position past the store.
_Input = tuple[str, Any, int, Optional[Callable[[int], Any]]]


def _regular_fd(fd: int) -> bool:
    return stat.S_ISREG(os.fstat(fd).st_mode)


def _fd_input(fd: int) -> _Input:
    """A file descriptor: mapped from its position when it is a regular
    file (which then moves past the store), read as a stream otherwise."""
    if _regular_fd(fd):
        start = os.lseek(fd, 0, os.SEEK_CUR)
        return (
            "map",
            os.dup(fd),
            start,
            lambda size: os.lseek(fd, start + size, os.SEEK_SET),
        )
    return ("pipe", os.dup(fd), 0, None)


def _input(file: Any, *, fileno_required: bool = False) -> _Input:
    """Resolves ``file`` as kastore does: a path (str, bytes, PathLike), then
    an int file descriptor, then an object with a ``write`` method. A file
    object on a regular file is mapped from its position; any other file
    object is read through its ``read`` method."""
    try:
        path = os.fspath(file)
    except TypeError:
        path = None
    if path is not None:
        return ("path", os.fsdecode(path), 0, None)
    if isinstance(file, int):
        return _fd_input(file)
    if not hasattr(file, "write"):
        raise TypeError("file object must have a write method")
    if isinstance(file, io.TextIOBase):
        raise TypeError("a file opened in binary mode is required, not a text file")
    if fileno_required:
        fd = file.fileno()
    else:
        try:
            fd = file.fileno()
        except (AttributeError, OSError, ValueError):
            fd = None
    if fd is not None and _regular_fd(fd):
        flush = getattr(file, "flush", None)
        if flush is not None:
            flush()
        start = file.tell()
        return ("map", os.dup(fd), start, lambda size: file.seek(start + size))
    return ("stream", file, 0, None)


def _output(file: Any, *, fileno_required: bool = False) -> tuple[str, Any]:
    """Resolves where ``dump`` writes: a path, a file descriptor (written
    through a duplicate, at its position), or an object with a ``write``
    method (written through it; with ``fileno_required``, as the C engine
    does, through its descriptor after a flush)."""
    try:
        path = os.fspath(file)
    except TypeError:
        path = None
    if path is not None:
        return ("path", os.fsdecode(path))
    if isinstance(file, int):
        return ("fd", os.dup(file))
    if not hasattr(file, "write"):
        raise TypeError("fileobj object must have a write method")
    if fileno_required:
        fd = file.fileno()
        file.flush()
        return ("fd", os.dup(fd))
    return ("stream", file)


# ---------------------------------------------------------------------------
# Writing.

#: One array as the writer takes it: key bytes, numpy type name, bytes.
_Item = tuple[bytes, str, np.ndarray]


def _item(key: bytes, array: np.ndarray) -> _Item:
    return (key, str(array.dtype), np.ascontiguousarray(array).view(np.uint8))


def _prepare(arrays: Any, key_encoding: str = "utf-8") -> list[_Item]:
    """The arrays of ``arrays`` in key order, checked as kastore's Python
    engine checks them (and raising what it raises)."""
    if not isinstance(arrays, Mapping):
        raise TypeError("Input must be dict-like")
    for key in arrays.keys():
        if len(key) == 0:
            raise ValueError("Empty keys not supported")
    items = []
    for key in sorted(arrays.keys()):
        if not isinstance(key, str):
            raise TypeError("Key must be a string")
        array = np.asarray(arrays[key])
        if array.ndim != 1:
            raise ValueError("Only 1D arrays supported")
        encoded = key.encode(key_encoding)
        name = str(array.dtype)
        if name not in np_dtype_to_type_map:
            raise KeyError(name)
        items.append(_item(encoded, array))
    return items


def _prepare_c(data: Any) -> list[_Item]:
    """The arrays of ``data``, checked as kastore's C engine checks them."""
    if not isinstance(data, dict):
        raise TypeError(f"dump() argument 1 must be dict, not {type(data).__name__}")
    items = []
    for key, value in data.items():
        if not isinstance(key, str):
            raise TypeError("Keys must be unicode.")
        array = np.asarray(value)
        if array.ndim != 1:
            raise ValueError(f"object of depth {array.ndim}: only 1D arrays supported")
        if len(key) == 0:
            raise ValueError("Keys cannot be empty")
        if array.dtype.name not in np_dtype_to_type_map or not array.dtype.isnative:
            raise ValueError("Unsupported dtype.")
        items.append(_item(key.encode("utf-8"), array.astype(array.dtype.name, copy=False)))
    return items


def _write(items: list[_Item], target: tuple[str, Any]) -> Optional[bytes]:
    kind, value = target
    return _binfmt.kastore_dump(items, kind, value)


def dump(arrays: Mapping[str, Any], fileobj: Any, key_encoding: str = "utf-8") -> None:
    """Writes the arrays of ``arrays`` to ``fileobj`` (a path, a file
    descriptor or a binary file object) as one store."""
    _write(_prepare(arrays, key_encoding), _output(fileobj))


class ItemDescriptor:
    """Where one key and its array sit in a file (a 64-byte record): the
    type code, the key's offset and length, the array's offset and length in
    elements. ``key`` and ``array`` hold the item itself when the descriptor
    comes from :func:`pack_items`."""

    #: The size of a packed descriptor.
    size = ITEM_DESCRIPTOR_SIZE

    def __init__(
        self,
        type_: int,
        key_start: Optional[int] = None,
        key_len: Optional[int] = None,
        array_start: Optional[int] = None,
        array_len: Optional[int] = None,
    ) -> None:
        self.type = type_
        self.key_start = key_start
        self.key_len = key_len
        self.array_start = array_start
        self.array_len = array_len
        self.key: Optional[bytes] = None
        self.array: Optional[np.ndarray] = None

    def __str__(self) -> str:
        return (
            f"type={self.type};key_start={self.key_start};key_len={self.key_len};"
            f"array_start={self.array_start};array_len={self.array_len}"
        )

    def pack(self) -> bytes:
        """The 64 bytes of the descriptor, fields as they are (good or bad)."""
        return _binfmt.kastore_descriptor(
            self.type, self.key_start, self.key_len, self.array_start, self.array_len
        )

    @classmethod
    def unpack(cls, descriptor: bytes) -> "ItemDescriptor":
        """The descriptor held in 64 bytes."""
        return cls(*_binfmt.kastore_unpack_descriptor(bytes(descriptor)))


def pack_items(
    arrays: Mapping[str, Any], key_encoding: str = "utf-8"
) -> tuple[list[ItemDescriptor], int]:
    """The descriptors (in key order, each with its ``key`` and ``array``)
    and the file size of the store the writer makes of ``arrays``."""
    items = _prepare(arrays, key_encoding)
    layout, file_size = _binfmt.kastore_layout(items)
    descriptors = []
    for (key, _, data), fields in zip(items, layout):
        descriptor = ItemDescriptor(*fields)
        descriptor.key = key
        descriptor.array = data.view(type_to_np_dtype_map[descriptor.type])
        descriptors.append(descriptor)
    return descriptors, file_size


def write_file(fileobj: Any, descriptors: list[ItemDescriptor], file_size: int) -> None:
    """Writes a file exactly as ``descriptors`` say (changed ones included,
    to build bad files): the header, the descriptors, the keys, then each
    array after zero bytes up to its ``array_start``."""
    fileobj.write(_binfmt.kastore_header(len(descriptors), file_size))
    for descriptor in descriptors:
        fileobj.write(descriptor.pack())
    offset = HEADER_SIZE + len(descriptors) * ITEM_DESCRIPTOR_SIZE
    for descriptor in descriptors:
        fileobj.write(descriptor.key)
        offset += descriptor.key_len
    for descriptor in descriptors:
        fileobj.write(bytes(max(0, descriptor.array_start - offset)))
        data = np.ascontiguousarray(descriptor.array).tobytes()
        fileobj.write(data)
        offset = descriptor.array_start + len(data)


# ---------------------------------------------------------------------------
# Reading.


class Store(_binfmt._NativeStore, Mapping):
    """A read-only mapping of keys to numpy arrays (``kastore.store.Store``).

    ``Store(file, read_all=False, key_encoding="utf8")`` loads one store
    from ``file``: a path (str, bytes, ``os.PathLike``), a file descriptor,
    or a binary file object (which needs a ``write`` attribute, as kastore
    requires). Several stores written one after another into one file or
    stream are loaded by calling it again: the position is left right after
    the store.

    Lazily (the default), a regular file is memory-mapped and each array is
    a read-only numpy view of the map, made on first access without a copy;
    arrays keep the map alive, also after :meth:`close`. With
    ``read_all=True`` every array is copied into memory it owns when the
    store is loaded (still read-only, as kastore's are). ``store[k] is
    store[k]``. After :meth:`close` (or the end of a ``with`` block) every
    access raises :class:`~binfmt.kastore.StoreClosedError`.
    """

    __slots__ = ()

    def __new__(
        cls, file: Any, read_all: bool = False, key_encoding: str = "utf8"
    ) -> "Store":
        kind, value, start, after = _input(file)
        store = super().__new__(cls, kind, value, start, bool(read_all), key_encoding)
        if after is not None:
            after(store._nbytes)
        return store

    @classmethod
    def _from_bytes(cls, data: bytes, key_encoding: str) -> "Store":
        """The store at the start of ``data``, every array copied."""
        return _binfmt._NativeStore.__new__(cls, "bytes", data, 0, True, key_encoding)

    def __repr__(self) -> str:
        try:
            return f"<binfmt.kastore.Store with {len(self)} arrays>"
        except StoreClosedError:
            return "<binfmt.kastore.Store (closed)>"


def load(file: Any, read_all: bool = False, key_encoding: str = "utf-8") -> Store:
    """Loads one store from ``file``: see :class:`Store`."""
    return Store(file, read_all=read_all, key_encoding=key_encoding)
