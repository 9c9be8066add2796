"""An fsspec filesystem over any file binfmt reads: protocol ``binfmt``.

The entries of a TARIDX fold, an ARCX archive, a kastore (a ``.trees``
file's arrays as little-endian bytes) or a PAR4 map are the files of a
read-only filesystem, so Python's data tools (pandas, xarray, dask,
Hugging Face datasets) open them by URL, chained to where the file is::

    import fsspec, pandas
    fs = fsspec.filesystem("binfmt", fo="data.arcx")
    fs.ls("")
    pandas.read_csv("binfmt://tables/a.csv::s3://bucket/data.arcx")
    fsspec.open("binfmt://nodes/time::https://host/sim.trees").open().read()

The outer location (a path, ``file://``, ``http(s)://`` or ``s3://``) is
read by binfmt's own source: byte ranges, version pinning and retries, not
a download. Listing reads what ``binfmt list`` reads; a file object reads
only the ranges its reads and seeks touch. Registered through the
``fsspec.specs`` entry point when the package is installed (needs
``fsspec``, which binfmt does not depend on).
"""

from __future__ import annotations

import os
from typing import Any, Optional

from fsspec.archive import AbstractArchiveFileSystem

import binfmt

#: Locations binfmt reads itself.
_REMOTE = ("http://", "https://", "s3://")


def _location(fo: Any, target_protocol: Optional[str]) -> str:
    """The path or URL binfmt opens for ``fo``."""
    if isinstance(fo, os.PathLike):
        return os.fspath(fo)
    if not isinstance(fo, str) or not fo:
        raise TypeError(
            "binfmt filesystems take fo= as a path or a file://, http(s):// or s3:// URL"
        )
    if fo.startswith("file://"):
        return fo[len("file://") :]
    if fo.lower().startswith(_REMOTE):
        return fo
    if "://" not in fo:
        if target_protocol in (None, "file", "local"):
            return fo
        if target_protocol in ("http", "https", "s3"):
            return f"{target_protocol}://{fo}"
    scheme = fo.split("://", 1)[0] if "://" in fo else target_protocol
    raise ValueError(
        f"binfmt reads paths, file://, http(s):// and s3:// locations itself, not {scheme}://: "
        "copy the file to one of those first"
    )


class BinfmtFileSystem(AbstractArchiveFileSystem):
    """The entries of one binfmt file as a read-only filesystem.

    ``fo`` is the file: a path, or a ``file://``, ``http(s)://`` or
    ``s3://`` URL (in a chained URL, the part after ``::``). Paths inside
    are entry names (``docs/a.txt``, ``nodes/time``); directories are the
    ``/`` components between.
    """

    protocol = "binfmt"
    root_marker = ""

    def __init__(
        self,
        fo: Any = "",
        target_protocol: Optional[str] = None,
        target_options: Optional[dict] = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.fo = _location(fo, target_protocol)
        self._entries = binfmt.open(self.fo)
        self.dir_cache: Optional[dict[str, dict[str, Any]]] = None

    @classmethod
    def _strip_protocol(cls, path: str) -> str:
        # Paths are always relative to the file's root.
        return super()._strip_protocol(path).lstrip("/")

    def _get_dirs(self) -> None:
        if self.dir_cache is not None:
            return
        files: dict[str, dict[str, Any]] = {}
        for entry in self._entries.list():
            name = entry.name.rstrip("/")
            if entry.kind == "directory":
                files[name] = {"name": name, "size": 0, "type": "directory"}
            else:
                files[name] = {
                    "name": name,
                    "size": entry.size,
                    "type": "file",
                    "kind": entry.kind,
                    "islink": entry.kind == "symlink",
                }
        dirs = {
            name: {"name": name, "size": 0, "type": "directory"}
            for name in self._all_dirnames(files)
        }
        self.dir_cache = {**dirs, **files}

    def _open(
        self,
        path: str,
        mode: str = "rb",
        block_size: Optional[int] = None,
        autocommit: bool = True,
        cache_options: Optional[dict] = None,
        **kwargs: Any,
    ):
        if mode != "rb":
            raise PermissionError(f"{path}: binfmt filesystems are read-only")
        path = self._strip_protocol(path)
        info = self.info(path)
        if info["type"] == "directory":
            raise IsADirectoryError(path)
        return self._entries.open(path)
