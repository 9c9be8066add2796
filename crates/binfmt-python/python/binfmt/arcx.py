"""ARCX archives: zstd-compressed blocks, a manifest and a fixed-size footer.

Both dialects are read (the format's specification, ``"spec"``, and what the
``arcx`` 0.3.0 tool writes, ``"arcx-cli"``) and written::

    import binfmt.arcx

    binfmt.arcx.pack("src/", "src.arcx", level=3, dialect="spec")
    with binfmt.arcx.Archive("src.arcx") as archive:
        names = archive.names()
        data = archive.read("src/main.rs")
        with archive.open("big.bin") as f:   # streamed, SHA-256 checked at the end
            head = f.read(1024)
        archive.verify()
        archive.extract("restored/")
"""

from __future__ import annotations

import os
from typing import BinaryIO, Iterator, NamedTuple, Optional, Union

from . import BinfmtError, _binary_file, _binfmt

__all__ = ["Archive", "ArchiveEntry", "BinfmtError", "pack"]

StrPath = Union[str, "os.PathLike[str]"]


class ArchiveEntry(NamedTuple):
    """One entry of an archive."""

    #: Its path inside the archive.
    name: str
    #: Its size in bytes.
    size: int
    #: ``"file"``, ``"directory"`` or ``"symlink"``.
    kind: str
    #: Permission bits.
    mode: int
    #: Modification time, nanoseconds since the Unix epoch.
    mtime_ns: int


class Archive:
    """An ARCX archive opened for reading: ``Archive(path_or_url)``.

    Opening reads the footer, the manifest and the header only (of a URL:
    the footer and the manifest, by range requests; :meth:`verify` checks
    the header); entries are fetched and decompressed when read. ``name in archive``, ``len(archive)`` and
    iteration (over names) work; the archive is also a context manager.
    Raises ``binfmt.BinfmtError`` for a bad archive, ``OSError`` for I/O.
    """

    def __init__(self, path: StrPath) -> None:
        self._native = _binfmt._NativeArchive(os.fspath(path))

    @property
    def path(self) -> str:
        """The path the archive was opened from."""
        return self._native.path

    @property
    def dialect(self) -> str:
        """``"spec"`` or ``"arcx-cli"``."""
        return self._native.dialect

    def names(self) -> list[str]:
        """Every entry's path, in the archive's order (directories and
        symlinks included)."""
        return self._native.names()

    def entries(self) -> list[ArchiveEntry]:
        """Every entry with its size, kind, mode and time."""
        return [ArchiveEntry(*entry) for entry in self._native.entries()]

    def read(self, name: str) -> bytes:
        """The bytes of entry ``name``, checked against its SHA-256
        (``KeyError`` if there is no such entry)."""
        return self._native.read(name)

    def open(self, name: str) -> BinaryIO:
        """Entry ``name`` as a binary file object, decompressed block by
        block as it is read; its SHA-256 is checked when the end is reached
        (that read raises ``binfmt.BinfmtError`` on a mismatch)."""
        return _binary_file(self._native.open(name), name)

    def extract(
        self, directory: StrPath, *, symlinks: bool = False, metadata: bool = True
    ) -> dict:
        """Extracts every entry under ``directory`` (created if missing).
        Names that would land outside it are refused; symlinks are recreated
        only with ``symlinks=True`` (targets inside ``directory``); modes and
        times are restored unless ``metadata=False``. Returns counts:
        ``{"files", "bytes", "directories", "symlinks", "skipped_symlinks"}``."""
        return self._native.extract(
            os.fspath(directory), symlinks=symlinks, metadata=metadata
        )

    def verify(self) -> dict:
        """Checks every block's CRC32 and every entry's SHA-256; raises
        ``binfmt.BinfmtError`` on the first mismatch. Returns
        ``{"files", "bytes", "blocks"}``."""
        return self._native.verify()

    def __len__(self) -> int:
        return len(self._native)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._native

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __enter__(self) -> "Archive":
        return self

    def __exit__(self, *args: object) -> None:
        return None

    def __repr__(self) -> str:
        return f"<binfmt.arcx.Archive {self.path!r} ({self.dialect}, {len(self)} entries)>"


def pack(
    directory: StrPath,
    out: StrPath,
    *,
    level: int = 3,
    dialect: str = "spec",
    jobs: Optional[int] = None,
) -> dict:
    """Packs the tree under ``directory`` into the archive ``out``, which
    appears only when complete. ``level`` is the zstd level, ``dialect``
    ``"spec"`` or ``"arcx-cli"``, ``jobs`` the compressing threads (one per
    core by default). Modes, times, symlinks and empty directories are
    stored; the output is the same bytes whatever the thread count.

    Returns ``{"files", "bytes", "blocks", "archive_size", "skipped"}``,
    where ``skipped`` lists ``(path, reason)`` of what was not stored."""
    return _binfmt.arcx_pack(
        os.fspath(directory), os.fspath(out), level=level, dialect=dialect, jobs=jobs
    )
