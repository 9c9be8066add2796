"""binfmt: TARIDX, ARCX, PAR4 and KAST files from Python.

Submodules:

- :mod:`binfmt.kastore`: a drop-in replacement for the ``kastore`` package,
  whose arrays are zero-copy views of the mapped file;
- :mod:`binfmt.arcx`: ARCX archives;
- :mod:`binfmt.taridx`: TARIDX indexes and a map-style dataset over tar
  shards for training loops;
- :mod:`binfmt.par4`: PAR4 files: the chunk tree, a
  ``HashMap<String, Vec<u8>>`` root as a lazy mapping.

This module mirrors the umbrella library: :func:`open` reads any supported
file as named entries, :func:`convert` converts between formats, and
:func:`sniff` tells a file's format from its bytes.

Every function and class that reads a file also takes an ``http://``,
``https://`` or ``s3://`` URL, read by range requests (only the bytes an
operation needs); a server that ignores ranges is read whole once (up to
256 MiB), with a :class:`RemoteWarning`. S3 credentials and endpoint come
from the usual ``AWS_*`` environment variables.
"""

from __future__ import annotations

import io
import os
import typing
from typing import BinaryIO, Iterator, NamedTuple, Optional, Union

from . import _binfmt
from ._binfmt import BinfmtError, RemoteWarning

__version__: str = _binfmt.__version__

__all__ = [
    "BinfmtError",
    "Entry",
    "Entries",
    "RemoteWarning",
    "convert",
    "list_prefix",
    "open",
    "remove",
    "rename",
    "sniff",
]

StrPath = Union[str, "os.PathLike[str]"]

#: The formats :func:`convert` writes.
FORMATS = ("taridx", "arcx", "par4", "kast")

#: Native objects a forked child replaced: kept, never dropped there, since
#: their I/O runtime and connections are the parent's (dropping them could
#: block on a lock another thread of the parent held at the fork).
_FORKED_AWAY: list = []


class _PerProcess:
    """A native object (``open()``'s result) that a forked child opens
    again on first use instead of sharing the parent's: a remote reader's
    runtime and connection pool belong to the process that built them, and
    a child reading through them could hang or receive another process's
    response."""

    __slots__ = ("_open", "_pid", "_native")

    def __init__(self, open: "typing.Callable[[], typing.Any]") -> None:
        self._open = open
        self._native = open()
        self._pid = os.getpid()

    def get(self) -> "typing.Any":
        pid = os.getpid()
        if pid != self._pid:
            _FORKED_AWAY.append(self._native)
            self._native = self._open()
            self._pid = pid
        return self._native


class Entry(NamedTuple):
    """One entry of a file: its name, its size in bytes, and what the format
    says it is (the kastore element type such as ``"float64"``, ``"directory"``
    or ``"symlink"`` for ARCX entries that are not files, ``None`` otherwise)."""

    name: str
    size: int
    kind: Optional[str]


class _StreamIO(io.RawIOBase):
    """A raw binary file over a Rust stream (see :meth:`Entries.open`)."""

    def __init__(self, native: _binfmt._NativeStream, name: str) -> None:
        super().__init__()
        self._native = native
        self.name = name

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return self._native.seekable()

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._native.seek(offset, whence)

    def tell(self) -> int:
        return self._native.tell()

    def readinto(self, buffer) -> int:  # type: ignore[override]
        view = memoryview(buffer).cast("B")
        data = self._native.read(len(view))
        view[: len(data)] = data
        return len(data)

    def readall(self) -> bytes:
        return self._native.read(-1)

    def close(self) -> None:
        if not self.closed:
            self._native.close()
        super().close()


def _binary_file(native: _binfmt._NativeStream, name: str) -> BinaryIO:
    """A buffered binary file object reading ``native``."""
    return io.BufferedReader(_StreamIO(native, name), buffer_size=1 << 20)  # type: ignore[return-value]


class Entries:
    """A file of any supported format (TARIDX with its shards, ARCX, PAR4
    with a ``HashMap<String, Vec<u8>>`` root, KAST), seen as named entries.

    Returned by :func:`open`. Iterating yields :class:`Entry` tuples; ``name
    in entries`` tests whether an entry exists.
    """

    def __init__(self, path: StrPath) -> None:
        location = os.fspath(path)
        self._handle = _PerProcess(lambda: _binfmt.open_entries(location))

    @property
    def _native(self) -> "typing.Any":
        return self._handle.get()

    @property
    def format(self) -> str:
        """``"taridx"``, ``"arcx"``, ``"par4"`` or ``"kast"``."""
        return self._native.format

    @property
    def file(self) -> str:
        """The path the file was opened from."""
        return self._native.file

    def list(self) -> list[Entry]:
        """Every entry, in the file's order."""
        return [Entry(*entry) for entry in self._native.list()]

    def names(self) -> list[str]:
        """Every entry's name, in the file's order."""
        return [entry[0] for entry in self._native.list()]

    def read(self, name: str) -> bytes:
        """The bytes of entry ``name`` (``KeyError`` if there is none); the
        format's checksum is checked."""
        return self._native.read(name)

    def open(self, name: str) -> BinaryIO:
        """Entry ``name`` as a binary file object that decompresses or copies
        its bytes as they are read; the format's checksum is checked when the
        end is reached (that read raises on a mismatch). It seeks: a new
        position reads only what it needs (a TARIDX member's or kastore
        array's bytes are ranges of the file; an ARCX file decompresses only
        the chunk it lands in, and after a seek each block's CRC32 is
        checked instead of the file's SHA-256)."""
        return _binary_file(self._native.open(name), name)

    def verify(self) -> None:
        """Checks everything the format can check; raises on the first
        problem."""
        self._native.verify()

    def extract(self, directory: StrPath, *, symlinks: bool = False) -> int:
        """Writes every entry to a file under ``directory`` (created if
        missing) and returns how many were written. Names that would land
        outside ``directory`` are refused; ARCX symlinks are recreated only
        with ``symlinks=True``."""
        return self._native.extract(os.fspath(directory), symlinks=symlinks)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.list())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self.names()

    def __len__(self) -> int:
        return len(self._native.list())

    def __repr__(self) -> str:
        return f"<binfmt.Entries {self.format} {self.file!r}>"


def open(path: StrPath) -> Entries:  # noqa: A001 - mirrors binfmt::open
    """Opens ``path`` (a path or an ``http://``, ``https://`` or ``s3://``
    URL) as named entries, whatever its format (found from its bytes).
    A remote TARIDX index finds its fold's shards beside it. Raises ``binfmt.BinfmtError`` for a file binfmt does not read
    (a tar file needs a TARIDX index first) or a bad file, ``OSError`` for
    I/O failures."""
    return Entries(path)


def sniff(path: StrPath) -> str:
    """The format of the file at ``path`` (or URL) from its first and last bytes:
    ``"taridx"``, ``"arcx"``, ``"par4"``, ``"kast"``, ``"tar"`` or
    ``"unknown"``."""
    return _binfmt.sniff(os.fspath(path))


def convert(
    src: StrPath,
    dst: StrPath,
    to: Optional[str] = None,
    *,
    dialect: str = "spec",
    shard_size: int = 1 << 30,
) -> dict:
    """Converts ``src`` (any format :func:`open` reads, a path or a URL) into
    ``dst`` (a path, ``file://`` or ``s3://`` URL; to S3 as a multipart
    upload that appears only when complete) in format
    ``to`` (``"taridx"``, ``"arcx"``, ``"par4"`` or ``"kast"``; by default
    the one ``dst``'s extension names, as the ``binfmt convert`` command
    does: ``.arcx``, ``.kas``/``.trees``, ``.par4``, ``.taridx``), keeping every
    name, byte and kastore element type. ``dialect`` is the ARCX dialect
    (``"spec"`` or ``"arcx-cli"``); ``shard_size`` the largest TARIDX shard.

    Returns ``{"entries", "bytes", "outputs", "skipped"}``: entries and
    bytes written, the files written, and entries not carried (ARCX
    directories and symlinks)."""
    return _binfmt.convert(
        os.fspath(src), os.fspath(dst), to, dialect=dialect, shard_size=shard_size
    )


def rename(src: StrPath, dst: StrPath) -> None:
    """Moves a file or object: both local (an atomic rename), or both in
    one S3 bucket (a server-side copy, then a delete; objects up to 5 GB)."""
    _binfmt.rename(os.fspath(src), os.fspath(dst))


def remove(location: StrPath) -> None:
    """Removes a local file or an S3 object; a missing one is not an
    error."""
    _binfmt.remove(os.fspath(location))


def list_prefix(location: StrPath) -> list[str]:
    """The names of the regular files directly in a local directory, or of
    the objects directly under an ``s3://`` prefix, sorted."""
    return _binfmt.list_prefix(os.fspath(location))
