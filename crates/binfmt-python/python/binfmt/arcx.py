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

Archives are also written entry by entry, and part archives (written by
several workers) merged into one, their compressed blocks copied as
stored::

    with binfmt.arcx.Writer("part-0.arcx") as writer:
        writer.add("rows/0.json", b'{"x": 1}', mode=0o644, mtime_ns=0)
    binfmt.arcx.merge(["part-0.arcx", "part-1.arcx"], "all.arcx")
"""

from __future__ import annotations

import os
from types import TracebackType
from typing import BinaryIO, Iterator, NamedTuple, Optional, Sequence, Type, Union

from . import BinfmtError, _binary_file, _binfmt

__all__ = ["Archive", "ArchiveEntry", "BinfmtError", "Writer", "merge", "pack"]

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

    def entry_blocks(self) -> list[Optional[int]]:
        """For each entry, in the order of :meth:`names`, the id of the
        first block holding its bytes (``None`` for an entry with no bytes
        stored: a directory). Read from the manifest alone, so a reader can
        plan its work (one task per group of blocks) without reading data.

        In archives this project writes (``pack``, :class:`Writer`,
        :func:`merge`), an entry smaller than the block size (1 MiB) lies
        in that one block, which it shares with other small entries, and
        the shared blocks of small entries never go back along the entries
        (each is decoded once when entries are read in order); a larger
        entry has blocks of its own, consecutive ids from this one. A large
        entry's blocks may come before the shared block of the small
        entries listed before it (a shared block is written when full), so
        ids need not increase along all entries."""
        return self._native.entry_blocks()

    @property
    def block_count(self) -> int:
        """The number of blocks (ids run from 0 to ``block_count - 1``)."""
        return self._native.block_count

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


class Writer:
    """An ARCX archive written entry by entry:
    ``Writer(path, *, level=3, dialect="spec", jobs=None)``, where ``path``
    may be an ``s3://`` URL (a multipart upload, streamed).

    Entries are added with :meth:`add` (a regular file's bytes) and
    :meth:`add_directory` (an empty directory); small files share
    compressed blocks, large ones are cut into chunks, compressed on
    ``jobs`` threads (one per core by default), as :func:`pack` does. The
    archive appears at ``path`` only when :meth:`finish` succeeds; as a
    context manager, leaving the ``with`` block finishes it, and an
    exception inside it leaves nothing at ``path`` (:meth:`abort`).
    A path added twice, or one an extractor would refuse (empty,
    absolute, with ``.`` or ``..`` components), raises ``ValueError``.
    """

    def __init__(
        self,
        location: StrPath,
        *,
        level: int = 3,
        dialect: str = "spec",
        jobs: Optional[int] = None,
    ) -> None:
        self._native = _binfmt._NativeWriter(
            os.fspath(location), level=level, dialect=dialect, jobs=jobs
        )

    @property
    def location(self) -> str:
        """Where the archive goes."""
        return self._native.location

    @property
    def closed(self) -> bool:
        """Whether :meth:`finish` or :meth:`abort` was called."""
        return self._native.closed

    def add(
        self,
        path: str,
        data: Union[bytes, bytearray, memoryview],
        *,
        mode: Optional[int] = None,
        mtime_ns: Optional[int] = None,
    ) -> int:
        """Adds a regular file holding ``data`` at ``path`` (``/``
        separated, relative), with permission bits ``mode`` (default
        ``0o644``; only the low 12 bits are kept, so ``os.stat().st_mode``
        works) and modification time ``mtime_ns`` (nanoseconds since the
        epoch, default 0). Returns its size."""
        if not isinstance(data, bytes):
            data = bytes(data)
        return self._native.add(path, data, mode=mode, mtime_ns=mtime_ns)

    def add_directory(
        self, path: str, *, mode: Optional[int] = None, mtime_ns: Optional[int] = None
    ) -> None:
        """Adds an empty directory at ``path`` (mode default ``0o755``).
        Directories that hold entries need not be added. The
        ``"arcx-cli"`` dialect holds regular files only: ``ValueError``."""
        self._native.add_directory(path, mode=mode, mtime_ns=mtime_ns)

    def finish(self) -> dict:
        """Writes the manifest and puts the archive in place. Returns
        ``{"files", "bytes", "blocks", "archive_size", "skipped"}``, as
        :func:`pack` does (``skipped`` is empty)."""
        return self._native.finish()

    def abort(self) -> None:
        """Gives the archive up: nothing is left at its location (a file
        that was there stays as it was)."""
        self._native.abort()

    def __enter__(self) -> "Writer":
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        if exc_type is not None:
            self.abort()
        elif not self.closed:
            self.finish()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<binfmt.arcx.Writer {self.location!r} ({state})>"


def merge(
    parts: Sequence[StrPath], location: StrPath, *, dialect: Optional[str] = None
) -> dict:
    """Merges the part archives ``parts`` (paths or ``http(s)://`` /
    ``s3://`` URLs, opened as :class:`Archive` opens them, one at a time)
    into one archive at ``location``, which appears only when complete.

    The result holds every entry of every part, in part order, then each
    part's own order; the parts' compressed blocks are copied as stored
    (never compressed again), each checked on the way (CRC32, sizes). Parts
    must share a dialect (``dialect``, when given, or the first part's) and
    the settings they were packed with (level, block and chunk sizes).
    Merging no parts writes an empty archive (``"spec"`` unless
    ``dialect`` says otherwise).

    Raises ``binfmt.BinfmtError`` naming the part (its position and path)
    for a corrupt part, one of other settings or dialect, and a path two
    parts hold (naming both). Returns the dict :func:`pack` returns."""
    if isinstance(parts, (str, bytes, os.PathLike)):
        raise TypeError("parts must be a sequence of paths, not one path")
    return _binfmt.arcx_merge(
        [os.fspath(part) for part in parts], os.fspath(location), dialect=dialect
    )
