"""PAR4 (Parcode V4) files: the chunk tree, and a ``HashMap<String, Vec<u8>>``
root read as a lazy mapping::

    import binfmt.par4 as par4

    f = par4.open("assets.par4")          # a path or an http(s):// / s3:// URL
    f.print_tree()                        # the chunk tree, as parcode's inspector prints it
    f.tree()["children"][0]["kind"]      # the same tree as nested dicts
    assets = f.map()                      # keys and value lengths only
    png = assets["logo.png"]              # one value read: its bucket and its bytes
    assets.size("logo.png")               # its length, without reading it

Every chunk a read touches is checked (offsets, lengths, children disjoint,
hashes and buckets of map entries); :meth:`File.verify` checks them all.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any, Iterator, Optional, TextIO, Union

from . import BinfmtError, _binfmt, _PerProcess

__all__ = ["BinfmtError", "File", "LazyMap", "open"]

StrPath = Union[str, "os.PathLike[str]"]


class LazyMap(Mapping):
    """A ``HashMap<String, Vec<u8>>`` root as a read-only mapping of ``str``
    to ``bytes``. Made by :meth:`File.map`, which reads every key and value
    length (no value); ``m[key]`` reads one value."""

    def __init__(self, file: "File") -> None:
        self._file = file
        self._lens: dict[str, int] = dict(file._native.map_lens())

    def __getitem__(self, key: str) -> bytes:
        if not isinstance(key, str) or key not in self._lens:
            raise KeyError(key)
        value = self._file._native.map_get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        return key in self._lens

    def __len__(self) -> int:
        return len(self._lens)

    def __iter__(self) -> Iterator[str]:
        return iter(self._lens)

    def size(self, key: str) -> int:
        """The length of ``key``'s value in bytes, without reading it."""
        return self._lens[key]

    def __repr__(self) -> str:
        return f"<binfmt.par4.LazyMap: {len(self)} entries>"


class File:
    """A PAR4 file opened for reading: ``File(path_or_url)``. Opening reads
    the global header and the root chunk's trailer only.

    Raises ``binfmt.BinfmtError`` for a bad file, ``OSError`` for I/O.
    """

    def __init__(self, path: StrPath) -> None:
        self.path = os.fspath(path)
        location = self.path
        self._handle = _PerProcess(lambda: _binfmt._NativePar4(location))

    @property
    def _native(self) -> _binfmt._NativePar4:
        return self._handle.get()

    @property
    def file_size(self) -> int:
        """The file's size in bytes."""
        return self._native.file_size

    def inspect(self) -> str:
        """The chunk tree as parcode's inspector reports it (text)."""
        return self._native.inspect()

    def print_tree(self, file: Optional[TextIO] = None) -> None:
        """Prints :meth:`inspect` (to ``sys.stdout`` by default)."""
        print(self.inspect(), end="", file=file if file is not None else sys.stdout)

    def tree(self) -> dict[str, Any]:
        """The chunk tree as nested dicts: ``offset``, ``length`` (trailer
        included), ``payload_size`` (as stored), ``compression``, ``kind``
        (what the layout says the chunk is: ``"Map Container"``,
        ``"Map Bucket"``, ``"Vec Shard"``, ...), ``info`` (counts, or None)
        and ``children``."""
        return self._native.tree()

    def verify(self) -> dict[str, int]:
        """Checks every chunk; returns ``{"chunks", "payload_bytes"}``."""
        chunks, payload_bytes = self._native.verify()
        return {"chunks": chunks, "payload_bytes": payload_bytes}

    def map(self) -> LazyMap:
        """The root as a ``HashMap<String, Vec<u8>>``; raises
        ``binfmt.BinfmtError`` when the root is not such a map."""
        return LazyMap(self)

    def __enter__(self) -> "File":
        return self

    def __exit__(self, *args: object) -> None:
        pass

    def __repr__(self) -> str:
        return f"<binfmt.par4.File {self.path!r}: {self.file_size} bytes>"


def open(path: StrPath) -> File:  # noqa: A001 - mirrors the other modules
    """Opens the PAR4 file at ``path`` (or URL)."""
    return File(path)
