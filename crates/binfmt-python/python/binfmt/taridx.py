"""TARIDX: random access into WebDataset-style tar shards, for training loops.

An index (``.taridx``, the iTar layout) lists every member of a fold's tar
shards; :class:`Dataset` uses it as a map-style dataset::

    import binfmt.taridx as taridx

    taridx.index(["data/shard-000000.tar", "data/shard-000001.tar"], "data/train.taridx",
                 key_rule="webdataset")
    ds = taridx.Dataset("data/train.taridx",
                        shards=["data/shard-000000.tar", "data/shard-000001.tar"])
    len(ds)                       # samples
    ds[7]                         # {"__key__": ..., "__shard__": ..., "__index__": 7,
                                  #  ".jpg": b"...", ".cls": b"3"}
    ds.get("sample000042")        # by key
    ds.get_batch([7, 3, 9])       # [ds[7], ds[3], ds[9]], read with the GIL released
    ds = ds.filter_extensions([".jpg", ".cls"])
    sampler = taridx.Sampler(ds, seed=0, rank=0, world_size=8, chunk_size=64)
    sampler.set_epoch(3)
    for i in sampler: ...
    state = sampler.state_dict(samples_seen)   # resume with any world size:
    sampler = taridx.Sampler.load_state_dict(state, ds, rank=0, world_size=4)
    mix = taridx.Mixture([ds, other_ds], weights=[0.9, 0.1], seed=0)   # interleaved, balanced
    sampler = taridx.Sampler(mix, shuffle=False, rank=0, world_size=8)
    stream = taridx.Stream(ds, sampler, batch_size=32)   # an iterable, read ahead:
    for sample in stream.for_worker(0, 4): ...           # worker 0 of 4's samples

Shards are opened on first use and at most ``open_shards`` stay open. A
dataset pickles as its arguments, so it crosses to ``multiprocessing``
workers (``spawn`` included) and to DataLoader worker processes, which
reopen it lazily.

The index may be an ``http://``, ``https://`` or ``s3://`` URL: its
shards are then the objects its shard list names (``INDEX.shards.json``,
written by :func:`index` whenever the names are not glzn's), else the
fold's objects beside it (``FOLD_*.tar``; over plain HTTP, which cannot
list, ``FOLD_0000.tar``, ``FOLD_0001.tar``, ... as many as the rows point
into), and each sample is fetched with one range request::

    ds = taridx.Dataset("https://example.org/data/train.taridx")

and ``cache_dir=`` keeps what is fetched on local disk, shared by every
worker process of the machine::

    ds = taridx.Dataset("s3://bucket/train.taridx", cache_dir="/var/tmp/me/binfmt",
                        cache_size=20 << 30)
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Iterator, Mapping, Optional, Sequence, Union

import numpy as np

from . import _FORKED_AWAY, BinfmtError, _binfmt, _PerProcess
from ._mixture import Mixture
from ._sampler import Sampler, SamplerStateError, _integer
from ._stream import Stream

__all__ = [
    "BinfmtError",
    "Dataset",
    "Index",
    "Mixture",
    "ROW_DTYPE",
    "Sampler",
    "SamplerStateError",
    "ShardWriter",
    "Stream",
    "index",
    "index_fold",
    "write_index",
]

StrPath = Union[str, "os.PathLike[str]"]

#: How many times this process was forked into the current one: a
#: dataset opened before a fork opens its own readers in the child, found
#: by this count (not by ``os.getpid()``, a system call on every sample).
_FORKS = [0]


def _forked() -> None:
    _FORKS[0] += 1


os.register_at_fork(after_in_child=_forked)

#: The most shards a dataset keeps open: a fold has at most 65,536 (shard
#: ids are 16 bits).
MAX_OPEN_SHARDS = 1 << 16


def index(
    shards: Union[StrPath, Sequence[StrPath]],
    out: StrPath,
    *,
    key_rule: str = "glzn",
    jobs: Optional[int] = None,
) -> None:
    """Indexes ``shards`` (shard ids in list order) into ``out``, written
    atomically; the index is byte-identical to the iTar indexer's (glzn's
    key rule). ``shards`` may be (or hold) patterns, expanded as
    webdataset expands shard lists: ``"data/train-{000000..000099}.tar"``,
    ``"data/*.tar"`` (a path naming an existing file is taken as it is).
    Unless glzn's names (``FOLD_*.tar`` beside ``FOLD.taridx``) find exactly
    these shards, their list is written beside the index
    (``OUT.shards.json``, a wids shard list), where :class:`Dataset` and
    every ``binfmt`` command find it. ``key_rule`` is ``"glzn"`` (the base name up to its first
    dot) or ``"webdataset"`` (the whole path up to the first dot of the base
    name, as webdataset and wids group members). ``jobs`` threads scan
    shards (one per core by default). An ``s3://`` ``out`` publishes the
    fold there: each shard is copied under its file name, then the index
    is written (as ``binfmt taridx index ... -o s3://...`` does)."""
    if isinstance(shards, (str, bytes, os.PathLike)):
        shards = [shards]
    _binfmt.taridx_index(
        [os.fspath(shard) for shard in shards],
        os.fspath(out),
        key_rule=key_rule,
        jobs=jobs,
    )


def index_fold(
    root: StrPath, fold: str, *, key_rule: str = "glzn", jobs: Optional[int] = None
) -> str:
    """Indexes the shards ``ROOT/FOLD_*.tar`` (or ``FOLD-N.tar``,
    ``FOLD.N.tar``) into ``ROOT/FOLD.taridx`` and returns that path."""
    return os.fspath(
        _binfmt.taridx_index_fold(os.fspath(root), fold, key_rule=key_rule, jobs=jobs)
    )


#: One 32-byte row of an index: the member's shard id, the offset of its
#: tar header, its payload size, its extension id, its crash id and the
#: xxh64 of its sample key.
ROW_DTYPE = np.dtype(
    [
        ("fid", "<u2"),
        ("offset", "<u8"),
        ("size", "<u8"),
        ("extid", "<u2"),
        ("crashid", "<u4"),
        ("keyhash", "<u8"),
    ]
)


class Index:
    """A TARIDX index file (a path or a URL), checked when opened
    (header, extension and crash-stem blocks); :meth:`verify` checks the
    rows.

    ``rows`` is a read-only numpy structured array (:data:`ROW_DTYPE`) of
    the index file mapped when ``rows`` is read, made without a copy (of a
    URL: the rows fetched, in memory the array owns). Like any view of a
    map, reading that array after the file is truncated raises SIGBUS and
    kills the process: copy it (``rows.copy()``) to keep it safe. Every
    other call reads the file by offset, so a file changed underneath
    makes it raise, never die.
    """

    def __init__(self, path: StrPath) -> None:
        self.path = os.fspath(path)
        location = self.path
        self._handle = _PerProcess(lambda: _binfmt._NativeIndex(location))

    @property
    def _native(self) -> _binfmt._NativeIndex:
        return self._handle.get()

    @property
    def version(self) -> tuple[int, int]:
        """``(major, minor)``."""
        return self._native.version

    @property
    def num_rows(self) -> int:
        """The number of members indexed."""
        return self._native.num_rows

    @property
    def extensions(self) -> list[str]:
        """The extensions, by extension id."""
        return self._native.extensions

    @property
    def key_rule(self) -> str:
        """``"glzn"`` or ``"webdataset"``."""
        return self._native.key_rule

    @property
    def is_contiguous(self) -> bool:
        """Whether every sample's rows are one run."""
        return self._native.is_contiguous

    @property
    def crash_stems(self) -> list[str]:
        """Keys whose hash an earlier key has, by crash id (from 1)."""
        return self._native.crash_stems()

    @property
    def rows(self) -> np.ndarray:
        """Every row, as a structured array (:data:`ROW_DTYPE`)."""
        return self._native.row_bytes().view(ROW_DTYPE)

    def verify(self, shards: Optional[Sequence[StrPath]] = None) -> int:
        """Checks every row (ids in range, no aliasing or overlap, totals);
        with ``shards`` (in shard-id order) also every row against its tar
        header. Returns the payload bytes; raises ``binfmt.BinfmtError`` on
        the first problem."""
        return self._native.verify(
            None if shards is None else [os.fspath(shard) for shard in shards]
        )

    def __len__(self) -> int:
        return self.num_rows

    def __repr__(self) -> str:
        return f"<binfmt.taridx.Index {self.path!r}: {self.num_rows} rows>"


def _is_url(location: str) -> bool:
    """Whether ``location`` is read remotely (``http:``, ``https:``,
    ``s3:``), decided by the Rust side's rule."""
    return _binfmt.is_remote(location)


class Dataset:
    """A map-style dataset over an index and its tar shards.

    ``Dataset(index, shards=None, *, extensions=None, open_shards=64,
    map_shards=True, zero_copy=False)``: ``index`` is a ``.taridx`` path or
    URL; ``shards`` the shard paths in shard-id order (by default those its
    shard list ``INDEX.shards.json`` names, else the fold's by name beside
    it: ``ROOT/FOLD_*.tar``, ``FOLD-N.tar`` or ``FOLD.N.tar`` beside
    ``ROOT/FOLD.taridx``, and an error naming where it looked when there
    are none; for a URL always found that way among the objects beside it,
    and ``open_shards`` and ``map_shards`` do not apply). ``extensions`` keeps
    only samples having every listed extension, and only those members.
    ``ds[i]`` is a dict in the ``wids`` style: ``"__key__"``, ``"__shard__"``
    (the shard's path), ``"__index__"``, and one entry per member extension
    (``".jpg"``, with the dot, as wids names them) holding its bytes, or,
    with ``zero_copy=True`` and mapped shards, a read-only ``numpy`` uint8
    array over the shard's map (no copy; it keeps the map alive; a buffer,
    so ``bytes(a)``, ``memoryview(a)`` and ``io.BytesIO(a)`` take it) that
    pickles as a copy, so a DataLoader worker can return it. Every member's tar
    header is checked against the index before its bytes are returned (the
    gap before it once while its shard is open, spec/taridx.md §4.2);
    :meth:`get_batch` reads many samples in one call.
    ``i`` is an integer (``operator.index``: ``ds["3"]``, ``ds[1.5]`` and
    ``ds[b"3"]`` are ``TypeError``); a sample is looked up by key with
    :meth:`get`.

    ``open_shards`` is between 1 and 65,536. The index is read by offset
    (its rows copied once) and, unless ``zero_copy=True``, so are the
    shards: a file truncated or changed underneath makes ``ds[i]`` raise,
    never kills the process. Only ``zero_copy`` samples touch the shards'
    maps: reading them (or building them) after a shard is truncated
    raises SIGBUS, as any map does. A member too large for memory is
    ``MemoryError`` naming it. A dataset used in a forked child (a
    DataLoader worker) opens its own readers there on first use: a remote
    dataset never shares its connections with the parent.

    ``cache_dir`` (a remote index only; with a local one it is
    ``ValueError``) keeps the ranges fetched of the index and its shards
    in that directory, at most ``cache_size`` bytes (default 1 GiB, at
    least 1; a size without a directory is ``ValueError``), least recently
    used first out, for every process of the machine that names it: the
    workers of a DataLoader, later runs. Every file is checked against its
    SHA-256 when read (a damaged one is a miss: deleted, its range
    fetched again), no symlink in it is ever followed, and a directory that is
    a symlink, not yours or writable by others is refused with an error
    naming it (docs/python.md, "A shared cache of remote shards"). The
    settings pickle with the dataset.

    Raises ``IndexError`` past the end, ``binfmt.BinfmtError`` for a bad
    index or shard, ``OSError`` for I/O.
    """

    def __init__(
        self,
        index: StrPath,
        shards: Optional[Sequence[StrPath]] = None,
        *,
        extensions: Optional[Sequence[str]] = None,
        open_shards: int = 64,
        map_shards: bool = True,
        zero_copy: bool = False,
        cache_dir: Optional[StrPath] = None,
        cache_size: Optional[int] = None,
    ) -> None:
        self._index = os.fspath(index)
        self._shards: Optional[list[str]]
        if _is_url(self._index):
            if shards is not None:
                raise ValueError(
                    "a remote index's shards are the fold's objects beside it: pass no shards"
                )
            self._shards = None
        elif shards is not None:
            self._shards = [os.fspath(shard) for shard in shards]
        else:
            self._shards = [os.fspath(shard) for shard in _binfmt.taridx_find_shards(self._index)]
        self._extensions = [ext.lstrip(".") for ext in extensions or []]
        self._open_shards = _integer("open_shards", open_shards, 1, MAX_OPEN_SHARDS)
        self._map_shards = bool(map_shards)
        self._zero_copy = bool(zero_copy)
        self._cache_dir, self._cache_size = _cache(self._index, cache_dir, cache_size)
        self._native: Optional[_binfmt._NativeDataset] = None
        self._forks = _FORKS[0]
        self._length = len(self._dataset())

    @classmethod
    def from_fold(cls, root: StrPath, fold: str, **options: Any) -> "Dataset":
        """The dataset of ``ROOT/FOLD.taridx`` with the shards ``ROOT/FOLD_*.tar``."""
        return cls(os.path.join(os.fspath(root), f"{fold}.taridx"), **options)

    def _dataset(self) -> _binfmt._NativeDataset:
        # Opened lazily: a dataset unpickled in a worker opens its index
        # there, on first use.
        # A forked child opens its own: the parent's remote readers (their
        # runtime, their connections) are never used from another process.
        native = self._native
        if native is not None and self._forks == _FORKS[0]:
            return native
        if native is not None:
            _FORKED_AWAY.append(native)
            self._native = None
        self._native = _binfmt._NativeDataset(
            self._index,
            self._shards,
            self._extensions,
            self._open_shards,
            # Shards are mapped only for zero-copy views: every other
            # read is by offset, so a truncated shard is an error.
            self._map_shards and self._zero_copy,
            self._cache_dir,
            self._cache_size or DEFAULT_CACHE_SIZE,
        )
        self._forks = _FORKS[0]
        return self._native

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, index: int) -> dict[str, Any]:
        # An int in range, with the native dataset open in this process,
        # takes the short way (no call to _dataset: a Python call is a tenth
        # of a sample's cost); anything else is checked in full (the same
        # errors either way).
        native = self._native
        if (
            type(index) is int
            and 0 <= index < self._length
            and native is not None
            and self._forks == _FORKS[0]
        ):
            return native.sample(index, self._zero_copy)
        return self._dataset().sample(self._position(index), self._zero_copy)

    def _position(self, index: Any) -> int:
        """``index`` as a sample position: an integer (``operator.index``),
        negative ones counted from the end; ``TypeError`` or
        ``IndexError`` otherwise."""
        if isinstance(index, (str, bytes)):
            raise TypeError(
                f"sample positions are integers, not {type(index).__name__}: "
                "look a key up with ds.get(key)"
            )
        position = _integer("sample position", index, -(2**63), 2**63 - 1)
        if position < 0:
            position += self._length
        if not 0 <= position < self._length:
            raise IndexError(f"sample {index} out of range (the dataset has {self._length})")
        return position

    def get_batch(self, indices: Iterable[int]) -> list[dict[str, Any]]:
        """The samples at ``indices``, as a list of dicts like ``ds[i]``'s
        (in the order given; repeats allowed), read in one call: every
        position is checked first (the errors of ``ds[i]``, for the first
        bad one, before anything is read), then the samples are read and
        their members' headers checked with the GIL released (eight samples
        between two releases), a remote
        dataset's samples announced together so that each shard fetches
        its share in merged range requests. ``indices`` is any iterable of
        integers (a list, a ``range``, a numpy integer array)."""
        n = self._length
        array = indices if isinstance(indices, np.ndarray) else None
        if array is None or array.dtype.kind not in "iu" or array.ndim != 1:
            # Each one as ds[i] takes it: the same errors, in order.
            positions = [
                i if type(i) is int and 0 <= i < n else self._position(i) for i in indices
            ]
            array = np.fromiter(positions, dtype=np.int64, count=len(positions))
        else:
            if array.dtype.kind == "u" and array.size and int(array.max()) >= 2**63:
                raise IndexError(f"sample {int(array.max())} out of range (the dataset has {n})")
            array = array.astype(np.int64, copy=True)
            negative = array < 0
            array[negative] += n
            bad = np.flatnonzero((array < 0) | (array >= n))
            if bad.size:
                first = int(bad[0])
                original = int(indices[first])
                raise IndexError(f"sample {original} out of range (the dataset has {n})")
        return self._dataset().get_batch(np.ascontiguousarray(array), self._zero_copy)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for i in range(self._length):
            yield self[i]

    def get(self, key: str) -> Optional[dict[str, Any]]:
        """The sample whose key is ``key`` (as the index's key rule makes
        keys), or None."""
        if not isinstance(key, str):
            raise TypeError(f"keys are str, not {type(key).__name__}")
        return self._dataset().lookup(key, self._zero_copy)

    def filter_extensions(self, extensions: Sequence[str]) -> "Dataset":
        """A dataset of the samples having every one of ``extensions``
        (with or without the leading dot), with only those members. An
        extension the index does not know raises ``binfmt.BinfmtError``."""
        return Dataset(
            self._index,
            self._shards,
            extensions=list(extensions),
            open_shards=self._open_shards,
            map_shards=self._map_shards,
            zero_copy=self._zero_copy,
            cache_dir=self._cache_dir,
            cache_size=self._cache_size,
        )

    @property
    def extensions(self) -> list[str]:
        """The extensions the index knows (without dots)."""
        return self._dataset().extensions()

    @property
    def key_rule(self) -> str:
        """``"glzn"`` or ``"webdataset"``: how the index made keys."""
        return self._dataset().key_rule

    @property
    def shards(self) -> list[str]:
        """The shard paths (or URLs), in shard-id order."""
        if self._shards is None:
            return self._dataset().shard_names()
        return list(self._shards)

    def sample_shards(self) -> np.ndarray:
        """The shard id of every sample (an array of ``len(self)``)."""
        return self._dataset().sample_shards()

    def open_shard_count(self) -> int:
        """How many shards are open now (at most ``open_shards``)."""
        return 0 if self._native is None else self._native.open_shard_count()

    def verify(self) -> int:
        """Checks the index and every row against its shard's tar header;
        returns the payload bytes. Raises ``binfmt.BinfmtError`` on the first
        problem."""
        return self._dataset().verify()

    def __getstate__(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _STATE}

    def __setstate__(self, state: dict[str, Any]) -> None:
        # A pickle is input: every field is checked, then the index is
        # opened and must give the length the state claims.
        # States pickled before the cache settings existed lack them.
        if not isinstance(state, dict) or set(state) not in (set(_STATE), set(_STATE) - set(_CACHE)):
            fields = sorted(state) if isinstance(state, dict) else type(state).__name__
            raise ValueError(f"a Dataset's state has the fields {sorted(_STATE)}, not {fields}")
        index, shards = state["_index"], state["_shards"]
        extensions = state["_extensions"]
        if not isinstance(index, str):
            raise TypeError("_index must be a str")
        if shards is not None and not (
            isinstance(shards, list) and all(isinstance(shard, str) for shard in shards)
        ):
            raise TypeError("_shards must be None or a list of str")
        if not (isinstance(extensions, list) and all(isinstance(ext, str) for ext in extensions)):
            raise TypeError("_extensions must be a list of str")
        for flag in ("_map_shards", "_zero_copy"):
            if not isinstance(state[flag], bool):
                raise TypeError(f"{flag} must be a bool")
        if _is_url(index) and shards is not None:
            raise ValueError("a remote index's shards are the fold's objects beside it")
        cache_dir, cache_size = state.get("_cache_dir"), state.get("_cache_size")
        if cache_dir is not None and not isinstance(cache_dir, str):
            raise TypeError("_cache_dir must be None or a str")
        self._cache_dir, self._cache_size = _cache(index, cache_dir, cache_size)
        self._index = index
        self._shards = shards
        self._extensions = list(extensions)
        self._open_shards = _integer("open_shards", state["_open_shards"], 1, MAX_OPEN_SHARDS)
        self._map_shards = state["_map_shards"]
        self._zero_copy = state["_zero_copy"]
        length = _integer("_length", state["_length"], 0, 2**63 - 1)
        self._native = None
        self._forks = _FORKS[0]
        self._length = len(self._dataset())
        if length != self._length:
            raise ValueError(
                f"the pickled dataset had {length} samples; {index} gives {self._length} now"
            )

    def __repr__(self) -> str:
        return f"<binfmt.taridx.Dataset {self._index!r}: {self._length} samples, {len(self.shards)} shards>"


#: The disk cache's settings in a pickled dataset.
_CACHE = ("_cache_dir", "_cache_size")

#: What a pickled dataset holds: its arguments and its length.
_STATE = (
    "_index", "_shards", "_extensions", "_open_shards", "_map_shards", "_zero_copy", "_length",
) + _CACHE

#: The disk cache's byte limit when only ``cache_dir`` is given: 1 GiB, as
#: the command line's ``--cache-size``.
DEFAULT_CACHE_SIZE = 1 << 30


def _cache(
    index: str, cache_dir: Optional[StrPath], cache_size: Optional[int]
) -> tuple[Optional[str], Optional[int]]:
    """``cache_dir`` and ``cache_size`` checked: a size needs a directory
    and is at least 1; a directory needs a remote index (a local one is
    read from its own disk). The size stays ``None`` when not given."""
    if cache_dir is None:
        if cache_size is not None:
            raise ValueError("cache_size needs cache_dir: the directory the ranges are kept in")
        return None, None
    directory = os.fspath(cache_dir)
    if not isinstance(directory, str) or not directory:
        raise ValueError(f"cache_dir must name a directory, not {directory!r}")
    if not _is_url(index):
        raise ValueError(
            f"cache_dir {directory!r}: {index!r} is local; only a remote index's ranges are cached"
        )
    if cache_size is not None:
        cache_size = _integer("cache_size", cache_size, 1, (1 << 64) - 1)
    return directory, cache_size


#: One shard as :meth:`ShardWriter.finish` reports it: its name, its
#: members ``(name, header offset, size)`` and its size in bytes.
ShardReport = tuple[str, list[tuple[str, int, int]], int]


class ShardWriter:
    """Writes samples into tar shards ``PREFIX000000.tar``,
    ``PREFIX000001.tar``, ... under ``directory`` (a path, ``file://`` or
    ``s3://`` URL), cut exactly as ``binfmt taridx pack`` cuts a fold's
    (at ``shard_bytes`` bytes or ``shard_samples`` samples, never splitting
    a sample), the same bytes for the same samples. No index is written:
    :meth:`finish` reports each shard's members, and :func:`write_index`
    indexes them all without reading a shard again (how ``binfmt.ray``
    writes a fold from many tasks)::

        with taridx.ShardWriter("out", "part-0-", shard_samples=1000) as w:
            w.write("sample000", {"jpg": b"...", "cls": b"3"})
        taridx.write_index("out/train.taridx", w.reports)

    Each shard appears whole or not at all (an S3 shard is a multipart
    upload completed when the shard is); leaving a ``with`` block by an
    exception removes the shards already written."""

    def __init__(
        self,
        directory: StrPath,
        prefix: str,
        *,
        shard_bytes: Optional[int] = None,
        shard_samples: Optional[int] = None,
        key_rule: str = "webdataset",
    ) -> None:
        if shard_bytes is not None:
            shard_bytes = _integer("shard_bytes", shard_bytes, 1, (1 << 64) - 1)
        if shard_samples is not None:
            shard_samples = _integer("shard_samples", shard_samples, 1, (1 << 64) - 1)
        self._native = _binfmt._NativeShardWriter(
            os.fspath(directory),
            prefix,
            shard_bytes=shard_bytes,
            shard_samples=shard_samples,
            key_rule=key_rule,
        )
        #: What :meth:`finish` reported (empty until then).
        self.reports: list[ShardReport] = []

    def write(self, key: str, members: Mapping[str, bytes]) -> None:
        """Writes one sample: a member ``KEY.EXT`` for each ``EXT: bytes``,
        in the mapping's order (extensions without their dot)."""
        self._native.write(key, [(ext.lstrip("."), bytes(data)) for ext, data in members.items()])

    def finish(self) -> list[ShardReport]:
        """Closes the last shard; returns (and keeps in :attr:`reports`)
        ``(name, [(member, offset, size), ...], size)`` per shard."""
        self.reports = self._native.finish()
        return self.reports

    def __enter__(self) -> "ShardWriter":
        return self

    def __exit__(self, kind: object, value: object, traceback: object) -> None:
        if kind is None:
            self.finish()
        else:
            self._native.abort()


def write_index(
    location: StrPath,
    shards: Sequence[ShardReport],
    *,
    key_rule: str = "webdataset",
) -> int:
    """Writes the index ``location`` (``DIR/FOLD.taridx``, a path or
    ``s3://`` URL) of ``shards`` as :meth:`ShardWriter.finish` reported
    them, in fid order, names relative to the index's directory; it is the
    index indexing the shards would give. A shard list
    (``FOLD.taridx.shards.json``) is written beside it unless the names are
    the fold's own (``FOLD_0000.tar``, ...). The reports are checked (every
    member's header on a 512-byte block, in order, within its shard), never
    trusted.
    Returns the number of rows."""
    reports = [(name, [tuple(m) for m in members], size) for name, members, size in shards]
    return _binfmt.taridx_write_index(os.fspath(location), reports, key_rule=key_rule)
