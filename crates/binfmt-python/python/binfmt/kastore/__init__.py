"""A drop-in replacement for the ``kastore`` package, on binfmt's Rust reader.

``import binfmt.kastore as kastore`` and use it as ``kastore``: the same
functions, arguments, exceptions and store objects::

    import numpy as np
    import binfmt.kastore as kastore

    kastore.dump({"positions": np.arange(10.0)}, "data.kas")
    with kastore.load("data.kas") as store:     # mapped: nothing is copied
        positions = store["positions"]           # a read-only view of the map

Differences from ``kastore`` are listed in docs/python.md ("kastore compatibility").
The main ones: a store loaded from a regular file is memory-mapped and its
arrays are views of the map (no copy; they stay valid after the store is
closed); the C engine (``engine=C_ENGINE``) is emulated by the same Rust
code and returns, like kastore's, a plain dict of writable arrays that own
their memory; ``dump`` to a path replaces the file atomically.
"""

from __future__ import annotations

import contextlib
import io
import os
from typing import Any, Iterator, Mapping, Union

from .. import _binfmt
from . import exceptions, store
from .exceptions import (
    FileFormatError,
    KastoreException,
    StoreClosedError,
    VersionTooNewError,
    VersionTooOldError,
)
from .store import Store, ValueInfo

__version__: str = _binfmt.__version__

__all__ = [
    "C_ENGINE",
    "DEFAULT_KEY_ENCODING",
    "FileFormatError",
    "KastoreException",
    "PY_ENGINE",
    "Store",
    "StoreClosedError",
    "ValueInfo",
    "VersionTooNewError",
    "VersionTooOldError",
    "dump",
    "dumps",
    "load",
    "loads",
]

#: The Python engine: ``load`` returns a lazy :class:`Store`.
PY_ENGINE = "python"
#: The C engine: ``load`` returns a dict of arrays copied into memory.
C_ENGINE = "c"
#: The encoding of keys.
DEFAULT_KEY_ENCODING = "utf-8"

# kastore checks this at call time (tests switch it off to simulate a
# missing C extension); here the "C engine" is the same Rust library.
_kastore_loaded = True


def _check_engine(engine: Any) -> None:
    if isinstance(engine, str) and engine == PY_ENGINE:
        return
    if isinstance(engine, str) and engine == C_ENGINE:
        if not _kastore_loaded:
            raise RuntimeError("C engine not available")
        return
    raise ValueError("unknown engine")


def load(
    file: Any,
    read_all: bool = False,
    key_encoding: str = DEFAULT_KEY_ENCODING,
    engine: str = PY_ENGINE,
) -> Union[Store, dict]:
    """Loads one store from ``file``: a path (str, bytes, ``os.PathLike``), a
    file descriptor, or a binary file object (pipes, FIFOs and sockets
    included). Stores written one after another are loaded by calling
    ``load`` again; ``EOFError`` says there are no more.

    With the Python engine (the default) the result is a :class:`Store`, a
    read-only mapping of keys to numpy arrays: read-only views of the
    memory-mapped file, made without a copy (``read_all=False``), or arrays
    copied into memory they own when the store is loaded (``read_all=True``).
    With ``engine=C_ENGINE`` it is a plain ``dict`` of writable arrays that
    own their memory, keys decoded as UTF-8 (``key_encoding`` is ignored, as
    kastore's C engine ignores it).

    Raises ``FileFormatError``, ``VersionTooOldError`` or
    ``VersionTooNewError`` for a bad file, ``EOFError`` when there are no
    bytes at all, ``OSError`` for I/O, ``ValueError`` for an unknown engine.
    """
    _check_engine(engine)
    if engine == PY_ENGINE:
        return store.load(file, read_all=read_all, key_encoding=key_encoding)
    kind, value, start, after = store._input(file, fileno_required=True)
    data, size = _binfmt.kastore_load_dict(kind, value, start)
    if after is not None:
        after(size)
    return data


def loads(encoded_data: Any, key_encoding: str = DEFAULT_KEY_ENCODING) -> Store:
    """Loads the store at the start of ``encoded_data`` (bytes, bytearray,
    memoryview); bytes after it are ignored. Every array owns its memory."""
    data = (
        encoded_data
        if isinstance(encoded_data, bytes)
        else bytes(memoryview(encoded_data))
    )
    return Store._from_bytes(data, key_encoding)


def dump(
    data: Mapping[str, Any],
    file: Any,
    key_encoding: str = DEFAULT_KEY_ENCODING,
    engine: str = PY_ENGINE,
) -> None:
    """Writes the arrays of ``data`` (a mapping of non-empty str keys to
    one-dimensional arrays of a kastore type) to ``file`` as one store: a
    path (replaced atomically when it is a regular file), a file descriptor
    or a binary file object (written at its position, so stores can follow
    one another). The bytes are those ``kastore.dump`` writes.

    Raises what kastore raises for bad input: ``TypeError`` (not a mapping,
    a key that is not a str), ``ValueError`` (an empty key, an array that is
    not 1-D), ``KeyError`` (an element type kastore does not store; with the
    C engine, ``ValueError``)."""
    _check_engine(engine)
    if engine == PY_ENGINE:
        target = store._output(file)
        items = store._prepare(data, key_encoding)
    else:
        target = store._output(file, fileno_required=True)
        items = store._prepare_c(data)
    store._write(items, target)


def dumps(data: Mapping[str, Any], key_encoding: str = DEFAULT_KEY_ENCODING) -> bytes:
    """The bytes of the store ``dump`` would write for ``data``."""
    return store._write(store._prepare(data, key_encoding), ("bytes", None))


@contextlib.contextmanager
def _open_file(fileobj: Any, mode: str) -> Iterator[Any]:
    """kastore's helper: ``fileobj`` opened in ``mode`` when it is a path
    (closed afterwards), an unbuffered file over it when it is a file
    descriptor (which stays open), or ``fileobj`` itself when it has a
    ``write`` method."""
    try:
        path = os.fspath(fileobj)
    except TypeError:
        path = None
    if path is not None:
        with io.open(path, mode) as f:
            yield f
        return
    try:
        fd = int(fileobj)
    except TypeError:
        fd = None
    if fd is not None:
        with io.open(fileobj, mode, closefd=False, buffering=0) as f:
            yield f
        return
    if not hasattr(fileobj, "write"):
        raise TypeError("fileobj object must have a write method")
    yield fileobj


def get_include() -> str:
    """Where kastore's C headers would be (``<package>/include``). binfmt
    ships no C API, so the directory does not exist; the function is here
    for code that only asks for the path."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")
