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
    ds = ds.filter_extensions([".jpg", ".cls"])
    sampler = taridx.Sampler(ds, seed=0, rank=0, world_size=8, chunk_size=64)
    sampler.set_epoch(3)
    for i in sampler: ...

Shards are opened on first use and at most ``open_shards`` stay open. A
dataset pickles as its arguments, so it crosses to ``multiprocessing``
workers (``spawn`` included) and to DataLoader worker processes, which
reopen it lazily.

The index may be an ``http://``, ``https://`` or ``s3://`` URL: its fold's
shards are then the objects beside it (``FOLD_*.tar``; over plain HTTP,
which cannot list, ``FOLD_0000.tar``, ``FOLD_0001.tar``, ... as many as the
rows point into), and each sample is fetched with one range request::

    ds = taridx.Dataset("https://example.org/data/train.taridx")
"""

from __future__ import annotations

import os
from typing import Any, Iterator, Optional, Sequence, Union

import numpy as np

from . import BinfmtError, _binfmt

__all__ = ["BinfmtError", "Dataset", "Index", "ROW_DTYPE", "Sampler", "index", "index_fold"]

StrPath = Union[str, "os.PathLike[str]"]


def index(
    shards: Sequence[StrPath],
    out: StrPath,
    *,
    key_rule: str = "glzn",
    jobs: Optional[int] = None,
) -> None:
    """Indexes ``shards`` (shard ids in list order) into ``out``, written
    atomically; the index is byte-identical to the iTar indexer's (glzn's
    key rule). ``key_rule`` is ``"glzn"`` (the base name up to its first
    dot) or ``"webdataset"`` (the whole path up to the first dot of the base
    name, as webdataset and wids group members). ``jobs`` threads scan
    shards (one per core by default)."""
    _binfmt.taridx_index(
        [os.fspath(shard) for shard in shards],
        os.fspath(out),
        key_rule=key_rule,
        jobs=jobs,
    )


def index_fold(
    root: StrPath, fold: str, *, key_rule: str = "glzn", jobs: Optional[int] = None
) -> str:
    """Indexes the shards ``ROOT/FOLD_*.tar`` into ``ROOT/FOLD.taridx``
    and returns that path."""
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
    the mapped index itself, made without a copy (of a URL: the rows
    fetched, in memory the array owns).
    """

    def __init__(self, path: StrPath) -> None:
        self.path = os.fspath(path)
        self._native = _binfmt._NativeIndex(self.path)

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
    """Whether ``location`` is read remotely (``http``, ``https``, ``s3``)."""
    scheme, sep, _ = location.partition("://")
    return bool(sep) and scheme.lower() in ("http", "https", "s3")


def _fold_shards(index_path: str) -> list[str]:
    """The shards of an index by the fold convention: ``ROOT/FOLD_*.tar``
    (the part after ``FOLD_`` has no ``_``), sorted."""
    root = os.path.dirname(index_path) or "."
    fold = os.path.basename(index_path)
    if fold.endswith(".taridx"):
        fold = fold[: -len(".taridx")]
    prefix = f"{fold}_"
    shards = sorted(
        name
        for name in os.listdir(root)
        if name.startswith(prefix)
        and name.endswith(".tar")
        and "_" not in name[len(prefix) : -len(".tar")]
    )
    return [os.path.join(root, name) for name in shards]


class Dataset:
    """A map-style dataset over an index and its tar shards.

    ``Dataset(index, shards=None, *, extensions=None, open_shards=64,
    map_shards=True, zero_copy=False)``: ``index`` is a ``.taridx`` path or
    URL; ``shards`` the shard paths in shard-id order (by default the
    fold's, ``ROOT/FOLD_*.tar`` beside ``ROOT/FOLD.taridx``; for a URL
    always the fold's objects beside it, and ``open_shards`` and
    ``map_shards`` do not apply). ``extensions`` keeps
    only samples having every listed extension, and only those members.
    ``ds[i]`` is a dict in the ``wids`` style: ``"__key__"``, ``"__shard__"``
    (the shard's path), ``"__index__"``, and one entry per member extension
    (``".jpg"``, with the dot, as wids names them) holding its bytes, or,
    with ``zero_copy=True`` and mapped shards, a read-only ``memoryview`` of
    the shard's map (no copy; it keeps the map alive). Every member's tar
    header is checked against the index before its bytes are returned.

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
            self._shards = _fold_shards(self._index)
        self._extensions = [ext.lstrip(".") for ext in extensions or []]
        self._open_shards = open_shards
        self._map_shards = map_shards
        self._zero_copy = zero_copy
        self._native: Optional[_binfmt._NativeDataset] = None
        self._length = len(self._dataset())

    @classmethod
    def from_fold(cls, root: StrPath, fold: str, **options: Any) -> "Dataset":
        """The dataset of ``ROOT/FOLD.taridx`` with the shards ``ROOT/FOLD_*.tar``."""
        return cls(os.path.join(os.fspath(root), f"{fold}.taridx"), **options)

    def _dataset(self) -> _binfmt._NativeDataset:
        # Opened lazily: a dataset unpickled in a worker opens its index
        # there, on first use.
        if self._native is None:
            self._native = _binfmt._NativeDataset(
                self._index,
                self._shards,
                self._extensions,
                self._open_shards,
                self._map_shards,
            )
        return self._native

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, index: int) -> dict[str, Any]:
        index = int(index)
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError(f"sample {index} out of range (the dataset has {self._length})")
        return self._dataset().sample(index, self._zero_copy)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for i in range(self._length):
            yield self[i]

    def get(self, key: str) -> Optional[dict[str, Any]]:
        """The sample whose key is ``key`` (as the index's key rule makes
        keys), or None."""
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
        state = dict(self.__dict__)
        state["_native"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        return f"<binfmt.taridx.Dataset {self._index!r}: {self._length} samples, {len(self.shards)} shards>"


class Sampler:
    """Deterministic sample orders for distributed training.

    ``Sampler(dataset_or_length, *, shuffle=True, seed=0, rank=0,
    world_size=1, chunk_size=None, drop_last=False)``. Each epoch's order
    comes from ``(seed, epoch)`` alone (the same on every machine and run;
    call :meth:`set_epoch`), then every rank takes every ``world_size``-th
    index of it (the order padded by its own start, or cut with
    ``drop_last``, to a multiple of ``world_size``), so ranks see disjoint
    samples of equal count. With ``chunk_size`` (and a :class:`Dataset`),
    samples are shuffled by chunks of at most ``chunk_size`` consecutive
    samples of one shard: the chunks' order is shuffled, then the samples
    in each chunk, as wids' chunked sampler does, so reads stay shard-local.
    Usable as a PyTorch sampler (``__iter__``, ``__len__``, ``set_epoch``).
    """

    def __init__(
        self,
        dataset: Union[Dataset, int],
        *,
        shuffle: bool = True,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
        chunk_size: Optional[int] = None,
        drop_last: bool = False,
    ) -> None:
        self.length = dataset if isinstance(dataset, int) else len(dataset)
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} of world size {world_size}: need 0 <= rank < world_size")
        self.shuffle = shuffle
        self.seed = seed
        self.rank = rank
        self.world_size = world_size
        self.drop_last = drop_last
        self.epoch = 0
        self._chunks: Optional[list[int]] = None
        if chunk_size is not None:
            if chunk_size < 1:
                raise ValueError("chunk_size must be at least 1")
            starts = set(range(0, self.length, chunk_size))
            if isinstance(dataset, Dataset):
                fids = dataset.sample_shards()
                shard_starts = np.flatnonzero(np.diff(fids.astype(np.int64))) + 1
                # Chunks never cross a shard boundary: they restart at each.
                starts = set()
                bounds = [0, *shard_starts.tolist(), self.length]
                for start, end in zip(bounds, bounds[1:]):
                    starts.update(range(start, end, chunk_size))
            self._chunks = sorted(starts)

    def set_epoch(self, epoch: int) -> None:
        """The epoch whose order :meth:`__iter__` gives next."""
        self.epoch = epoch

    def order(self, epoch: Optional[int] = None) -> np.ndarray:
        """This rank's sample indices for ``epoch`` (the current one by
        default), as an array."""
        return _binfmt.sample_order(
            self.length,
            self.seed,
            self.epoch if epoch is None else epoch,
            self.shuffle,
            self._chunks,
            self.rank,
            self.world_size,
            self.drop_last,
        )

    def __iter__(self) -> Iterator[int]:
        return iter(self.order().tolist())

    def __len__(self) -> int:
        if self.drop_last:
            return self.length // self.world_size
        return -(-self.length // self.world_size)
