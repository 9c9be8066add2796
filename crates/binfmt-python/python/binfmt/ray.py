"""Ray Data: TARIDX folds, ARCX archives and kastores as ``ray.data.Dataset``\\ s.

Reading and writing go through Ray Data's public extension points (a
``ray.data.Datasource`` read with ``ray.data.read_datasource``, a
``ray.data.Datasink`` written with ``Dataset.write_datasink``); Ray
schedules the tasks, this module only says what each task reads or
writes::

    import ray
    import binfmt.ray

    ds = binfmt.ray.read_taridx("s3://bucket/data/train.taridx", extensions=["jpg", "cls"])
    ds = ds.map(preprocess)
    binfmt.ray.write_taridx(ds, "s3://bucket/data/clean.taridx", shard_samples=10_000)

    files = binfmt.ray.read_arcx("corpus.arcx")            # rows path, bytes, mode, mtime
    binfmt.ray.write_arcx(files, "copy.arcx")
    arrays = binfmt.ray.read_kast(["a.trees", "b.trees"])  # rows file, key, dtype, length, array

- :func:`read_taridx`: one row per sample, as :class:`binfmt.taridx.Dataset`
  gives them (``__key__``, ``__shard__``, ``__index__``, one ``bytes``
  column per extension, named with its dot: ``.jpg``); read tasks are
  planned from the index alone, by shard ranges; no shard is opened to plan.
- :func:`write_taridx`: each write task writes whole shards (a sample is
  never split) under temporary names; when every task is done the shards
  are renamed to the fold's names and the index, built from what the tasks
  reported, is written last: a reader never sees an index without its
  shards. A task boundary always ends a shard.
- :func:`read_arcx` / :func:`write_arcx`: rows ``path``, ``bytes``,
  ``mode``, ``mtime`` (nanoseconds); reads are planned from the manifest
  by groups of blocks; writes compress in the tasks, and one merge on the
  driver copies the compressed blocks into the archive.
- :func:`read_kast`: one row per array of one or more kastores (tskit
  ``.trees`` files included).

Locations are local paths or ``http(s)://`` and ``s3://`` URLs (writes:
local paths and ``s3://``). Ray's workers read and write them, so a local
path must be one every node sees (one machine, or a shared filesystem), and
the ``AWS_*`` variables must be in the workers' environment too (for
example ``ray.init(runtime_env={"env_vars": {...}})``). See
docs/scaling.md.
"""

from __future__ import annotations

import concurrent.futures
import os
import re
import shutil
import warnings
from typing import Any, Iterable, Iterator, Mapping, Optional, Sequence, Union

import numpy as np
import pyarrow as pa
import ray.data
from ray.data.block import Block, BlockAccessor, BlockMetadata
from ray.data.datasource import Datasink, Datasource, ReadTask

import binfmt
import binfmt.arcx
import binfmt.taridx
from binfmt import _binfmt

__all__ = [
    "ArcxDatasink",
    "ArcxDatasource",
    "KastDatasource",
    "TaridxDatasink",
    "TaridxDatasource",
    "kast_array",
    "read_arcx",
    "read_kast",
    "read_taridx",
    "write_arcx",
    "write_taridx",
]

StrPath = Union[str, "os.PathLike[str]"]
Locations = Union[StrPath, Sequence[StrPath]]

#: A read task yields a block whenever this many payload bytes have been
#: read (and at its end).
BLOCK_BYTES = 64 << 20

#: Samples of a remote fold a read task fetches at once (threads).
REMOTE_FETCHES = 16

#: When a fold has fewer shards than read tasks, shards are cut into
#: sample ranges, none shorter than this.
MIN_TASK_SAMPLES = 1024

#: The name of the temporary directory beside a fold or archive being
#: written: ``DIR/.binfmt-ray-NAME``.
TEMPORARY_PREFIX = ".binfmt-ray-"


def _locations(locations: Locations, what: str) -> list[str]:
    """``locations`` as a list of strings (one location or a sequence)."""
    if isinstance(locations, (str, os.PathLike)):
        return [os.fspath(locations)]
    if isinstance(locations, bytes):
        raise TypeError(f"{what}: a location is a str or a path, not bytes")
    out = [os.fspath(location) for location in locations]
    if not out:
        raise ValueError(f"{what}: no locations given")
    return out


def _is_url(location: str) -> bool:
    """Whether ``location`` is read remotely, by the Rust side's rule."""
    return _binfmt.is_remote(location)


def _is_s3(location: str) -> bool:
    return location[:5].lower() == "s3://"


def _split(location: str) -> tuple[str, str]:
    """``(directory, name)`` of a local path or an ``s3://`` URL."""
    if _is_s3(location):
        directory, _, name = location.rstrip("/").rpartition("/")
        if not name or directory.count("/") < 2:
            raise ValueError(f"{location}: an S3 location is s3://BUCKET/[PREFIX/]NAME")
        return directory, name
    if _is_url(location):
        raise ValueError(f"{location}: only local paths and s3:// URLs can be written")
    directory, name = os.path.split(os.path.abspath(location))
    return directory, name


def _join(directory: str, name: str) -> str:
    return f"{directory}/{name}" if _is_s3(directory) else os.path.join(directory, name)


def _names(directory: str) -> list[str]:
    """The names directly under a local directory or S3 prefix (none when
    it does not exist)."""
    if not _is_s3(directory) and not os.path.isdir(directory):
        return []
    return binfmt.list_prefix(directory)


def _remove_tree(directory: str) -> None:
    """Removes a temporary directory of this module: locally the whole
    tree, on S3 every object directly under the prefix."""
    if _is_s3(directory):
        for name in _names(directory):
            binfmt.remove(_join(directory, name))
    elif os.path.isdir(directory):
        shutil.rmtree(directory)


def _split_evenly(total: int, parts: int) -> list[int]:
    """``parts + 1`` cut points dividing ``range(total)`` into ``parts``
    runs whose lengths differ by at most one."""
    return [total * i // parts for i in range(parts + 1)]


def _group(weights: Sequence[int], groups: int) -> list[tuple[int, int]]:
    """Consecutive units (by their weights) in at most ``groups`` runs of
    about equal weight, as ``(first, stop)`` pairs; no run is empty."""
    if not weights:
        return []
    groups = max(1, min(groups, len(weights)))
    total = sum(weights)
    runs: list[tuple[int, int]] = []
    first, acc = 0, 0
    for i, weight in enumerate(weights):
        acc += weight
        remaining_units = len(weights) - (i + 1)
        remaining_runs = groups - len(runs) - 1
        # Cut when this run reached its share, or when every later unit is
        # needed to make the runs still to come non-empty.
        share = total * (len(runs) + 1) / groups
        if remaining_runs > 0 and (acc >= share or remaining_units == remaining_runs):
            runs.append((first, i + 1))
            first = i + 1
    runs.append((first, len(weights)))
    return [run for run in runs if run[0] < run[1]]


def _binary_table(columns: dict[str, list], schema: pa.Schema) -> pa.Table:
    return pa.Table.from_pydict(columns, schema=schema)


# ---------------------------------------------------------------------------
# TARIDX: reading.


class _Fold:
    """One index of a :class:`TaridxDatasource`, as planned on the driver."""

    def __init__(self, location: str, extensions: Optional[list[str]]) -> None:
        self.location = location
        dataset = binfmt.taridx.Dataset(location, extensions=extensions)
        self.dataset = dataset
        self.length = len(dataset)
        self.extensions = dataset.extensions if extensions is None else list(extensions)
        fids = dataset.sample_shards().astype(np.int64)
        # Sample ranges of consecutive samples of one shard.
        cuts = np.flatnonzero(np.diff(fids)) + 1
        starts = np.concatenate(([0], cuts)) if self.length else np.zeros(0, np.int64)
        stops = np.concatenate((cuts, [self.length])) if self.length else np.zeros(0, np.int64)
        self.shard_runs = [(int(a), int(b)) for a, b in zip(starts, stops)]
        self.fids = fids
        self.shards = dataset.shards
        rows = binfmt.taridx.Index(location).rows
        # Every member's bytes plus its key, for the size estimate: the
        # extension filter is not applied here (an upper bound).
        self.payload = int(rows["size"].sum()) if len(rows) else 0
        self.rows = len(rows)


class TaridxDatasource(Datasource):
    """The samples of one or more TARIDX folds (see :func:`read_taridx`)."""

    def __init__(
        self, locations: Locations, *, extensions: Optional[Sequence[str]] = None
    ) -> None:
        super().__init__()
        wanted = None if extensions is None else [ext.lstrip(".") for ext in extensions]
        self._folds = [_Fold(location, wanted) for location in _locations(locations, "read_taridx")]
        names: list[str] = []
        for fold in self._folds:
            for ext in fold.extensions:
                if ext not in names:
                    names.append(ext)
        self._columns = ["." + ext if ext else "" for ext in names]
        self._schema = pa.schema(
            [("__key__", pa.string()), ("__shard__", pa.string()), ("__index__", pa.int64())]
            + [(column, pa.large_binary()) for column in self._columns]
        )

    def get_name(self) -> str:
        return "ReadTaridx"

    def estimate_inmemory_data_size(self) -> Optional[int]:
        return sum(fold.payload + 64 * fold.rows for fold in self._folds)

    def _units(self, parallelism: int) -> list[tuple[int, int, int]]:
        """``(fold, start, stop)`` sample ranges, each within one shard:
        the shards, and, when there are fewer shards than ``parallelism``,
        each cut into even parts (their share of ``parallelism``, none
        shorter than :data:`MIN_TASK_SAMPLES` samples)."""
        units = [
            (f, start, stop)
            for f, fold in enumerate(self._folds)
            for start, stop in fold.shard_runs
        ]
        if 0 < len(units) < parallelism:
            total = sum(stop - start for _, start, stop in units)
            split: list[tuple[int, int, int]] = []
            for f, start, stop in units:
                parts = round(parallelism * (stop - start) / total)
                parts = max(1, min(parts, (stop - start) // MIN_TASK_SAMPLES))
                cuts = _split_evenly(stop - start, parts)
                split.extend((f, start + a, start + b) for a, b in zip(cuts, cuts[1:]))
            units = split
        return units

    def get_read_tasks(
        self,
        parallelism: int,
        per_task_row_limit: Optional[int] = None,
        data_context: Any = None,
    ) -> list[ReadTask]:
        units = self._units(max(1, parallelism))
        tasks = []
        for first, stop in _group([b - a for _, a, b in units], max(1, parallelism)):
            ranges = units[first:stop]
            samples = sum(b - a for _, a, b in ranges)
            size = 0
            for f, a, b in ranges:
                fold = self._folds[f]
                size += (fold.payload + 64 * fold.rows) * (b - a) // max(1, fold.length)
            files = sorted(
                {
                    shard
                    for f, a, b in ranges
                    for shard in self._shard_names(f, a, b)
                }
            )
            metadata = BlockMetadata(
                num_rows=samples, size_bytes=int(size), exec_stats=None, input_files=files
            )
            tasks.append(
                ReadTask(
                    _TaridxReader(
                        [(self._folds[f].dataset, a, b) for f, a, b in ranges],
                        self._columns,
                        self._schema,
                    ),
                    metadata,
                    schema=self._schema,
                    per_task_row_limit=per_task_row_limit,
                )
            )
        return tasks

    def _shard_names(self, f: int, start: int, stop: int) -> list[str]:
        fold = self._folds[f]
        return [fold.shards[int(fid)] for fid in np.unique(fold.fids[start:stop])]


class _TaridxReader:
    """A read task's work: sample ranges of datasets, as Arrow blocks."""

    def __init__(
        self,
        ranges: list[tuple[binfmt.taridx.Dataset, int, int]],
        columns: list[str],
        schema: pa.Schema,
    ) -> None:
        self.ranges = ranges
        self.columns = columns
        self.schema = schema

    def _samples(self) -> Iterator[dict[str, Any]]:
        """Every sample of the ranges, in order. A remote fold's samples
        are fetched by :data:`REMOTE_FETCHES` threads at once (each sample
        is one range request; the dataset's reads release the GIL)."""
        pool = None
        try:
            for dataset, start, stop in self.ranges:
                if not _is_url(dataset.shards[0] if len(dataset) else ""):
                    for i in range(start, stop):
                        yield dataset[i]
                    continue
                if pool is None:
                    pool = concurrent.futures.ThreadPoolExecutor(REMOTE_FETCHES)
                for first in range(start, stop, 1024):
                    yield from pool.map(dataset.__getitem__, range(first, min(first + 1024, stop)))
        finally:
            if pool is not None:
                pool.shutdown(cancel_futures=True)

    def __call__(self) -> Iterator[Block]:
        table: dict[str, list] = {name: [] for name in self.schema.names}
        size = 0
        for sample in self._samples():
            for name in self.schema.names:
                value = sample.get(name)
                table[name].append(value)
                if isinstance(value, bytes):
                    size += len(value)
            if size >= BLOCK_BYTES:
                yield _binary_table(table, self.schema)
                table = {name: [] for name in self.schema.names}
                size = 0
        if table["__key__"] or size:
            yield _binary_table(table, self.schema)


def read_taridx(
    locations: Locations,
    *,
    extensions: Optional[Sequence[str]] = None,
    override_num_blocks: Optional[int] = None,
    concurrency: Optional[int] = None,
    ray_remote_args: Optional[dict[str, Any]] = None,
) -> ray.data.Dataset:
    """The samples of the TARIDX folds at ``locations`` (one index or a
    list: paths or ``http(s)://``/``s3://`` URLs, each index's shards found
    as :class:`binfmt.taridx.Dataset` finds them), one row per sample: folds
    in the order given and samples in index order when
    ``ray.data.DataContext.get_current().execution_options.preserve_order``
    is true (otherwise Ray hands blocks on as their tasks finish).

    Columns: ``__key__`` (str), ``__shard__`` (the shard's path or URL),
    ``__index__`` (the sample's position in its fold's
    :class:`binfmt.taridx.Dataset`), and one ``large_binary`` column per
    extension, named as the dataset names it (``.jpg``; members without an
    extension: ``""``), null where a sample lacks that member.
    ``extensions`` keeps only samples having every one listed, and only
    those columns.

    The read is planned on the driver from the indexes alone (no shard is
    opened): each read task reads a run of consecutive samples that starts
    and ends at shard boundaries, except when there are fewer shards than
    tasks, where shards are cut into equal sample ranges (of at least
    1,024 samples). Each task opens the index and the shards it reads
    itself (a remote fold's samples are fetched 16 at a time, one range
    request each), and yields a block every 64 MiB of payload.
    ``override_num_blocks``, ``concurrency`` and ``ray_remote_args`` are
    ``ray.data.read_datasource``'s.
    """
    return ray.data.read_datasource(
        TaridxDatasource(locations, extensions=extensions),
        override_num_blocks=override_num_blocks,
        concurrency=concurrency,
        ray_remote_args=ray_remote_args,
    )


# ---------------------------------------------------------------------------
# TARIDX: writing.

#: webdataset's ``base_plus_ext``: the key and extension of a member name.
_WEBDATASET_NAME = re.compile(r"^((?:.*/|)[^.]+)[.]([^/]*)$")


def _member_key(name: str, key_rule: str) -> str:
    """The sample key the index will give member ``name`` (spec/taridx.md §2.1)."""
    if key_rule == "webdataset":
        match = _WEBDATASET_NAME.match(name)
        return match.group(1) if match else name
    return name.rsplit("/", 1)[-1].split(".", 1)[0]


def _as_bytes(value: Any, key: str, column: str) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, np.ndarray) and value.dtype == np.uint8 and value.ndim == 1:
        return value.tobytes()
    raise TypeError(
        f"sample {key!r}, column {column!r}: a member is bytes or str, not "
        f"{type(value).__name__} (map the column to bytes first, or drop it)"
    )


def _extension_columns(names: Iterable[str]) -> list[tuple[str, str]]:
    """``(column, extension)`` of every member column of a block, sorted
    by extension (``binfmt taridx pack``'s and webdataset's order):
    columns starting with ``__`` are metadata and not written."""
    out: dict[str, str] = {}
    for column in names:
        if column.startswith("__"):
            continue
        ext = column[1:] if column.startswith(".") else column
        if not ext:
            raise ValueError(
                "a column with an empty extension cannot be written: every member "
                "of a written sample is KEY.EXT with a non-empty EXT"
            )
        if ext in out:
            raise ValueError(f"columns {out[ext]!r} and {column!r} are both extension {ext!r}")
        out[ext] = column
    return sorted(((column, ext) for ext, column in out.items()), key=lambda item: item[1])


class TaridxDatasink(Datasink):
    """Writes a dataset as a TARIDX fold (see :func:`write_taridx`)."""

    def __init__(
        self,
        location: StrPath,
        *,
        shard_bytes: Optional[int] = None,
        shard_samples: Optional[int] = None,
        key_rule: str = "webdataset",
    ) -> None:
        self.location = os.fspath(location)
        self.directory, name = _split(self.location)
        if not name.endswith(".taridx") or name == ".taridx":
            raise ValueError(f"{self.location}: the index's name is FOLD.taridx")
        self.fold = name[: -len(".taridx")]
        if self.fold.startswith("."):
            raise ValueError(f"{self.location}: a fold's name does not start with '.'")
        self.location = _join(self.directory, name)
        self.temporary = _join(self.directory, f"{TEMPORARY_PREFIX}{self.fold}")
        if key_rule not in ("webdataset", "glzn"):
            raise ValueError(f"key_rule is 'webdataset' or 'glzn', not {key_rule!r}")
        self.shard_bytes = shard_bytes
        self.shard_samples = shard_samples
        self.key_rule = key_rule
        #: What the write did, once complete: ``{"samples", "shards", "index"}``.
        self.result: Optional[dict[str, Any]] = None
        self._started = False

    def get_name(self) -> str:
        return "WriteTaridx"

    @property
    def min_rows_per_write(self) -> Optional[int]:
        # Blocks bundled up to a shard's samples per task: a task boundary
        # ends a shard, so tasks smaller than a shard make small shards.
        return self.shard_samples

    @property
    def min_bytes_per_write(self) -> Optional[int]:
        return self.shard_bytes if self.shard_samples is None else None

    def _fold_names(self, names: Iterable[str]) -> list[str]:
        """The names of ``names`` that belong to this fold: its index, its
        shard list, and shards of any naming (spec/taridx.md §9.1:
        ``FOLD_X.tar`` with no ``_`` in ``X``, ``FOLD-N.tar``, ``FOLD.N.tar``)."""
        fold = re.escape(self.fold)
        shard = re.compile(rf"^{fold}(?:_[^_]+|-[0-9]+|\.[0-9]+)\.tar$")
        own = (f"{self.fold}.taridx", f"{self.fold}.taridx.shards.json")
        return [name for name in names if name in own or shard.match(name)]

    def on_write_start(self, schema: Optional[pa.Schema] = None) -> None:
        # `schema` is that of the write operator's first input, which may be
        # the input of a map fused with the write: columns are checked in
        # the tasks, on the blocks they write.
        self._start()

    def _start(self) -> None:
        if self._started:
            return
        if not _is_s3(self.directory):
            os.makedirs(self.directory, exist_ok=True)
        taken = self._fold_names(_names(self.directory))
        if taken:
            raise FileExistsError(
                f"{self.location}: fold {self.fold!r} already exists there ({', '.join(sorted(taken)[:4])}"
                f"{', ...' if len(taken) > 4 else ''}): remove it first or write another fold"
            )
        # Leftovers of an earlier write of this fold that did not finish.
        _remove_tree(self.temporary)
        if not _is_s3(self.temporary):
            os.makedirs(self.temporary)
        self._started = True

    def write(self, blocks: Iterable[Block], ctx: Any) -> dict[str, Any]:
        task = int(ctx.task_idx)
        options: dict[str, Any] = {"key_rule": self.key_rule}
        if self.shard_bytes is not None:
            options["shard_bytes"] = self.shard_bytes
        if self.shard_samples is not None:
            options["shard_samples"] = self.shard_samples
        samples = 0
        writer = binfmt.taridx.ShardWriter(self.temporary, f"task-{task:06d}-", **options)
        # Leaving the block finishes the last shard; an exception removes
        # the shards this attempt wrote.
        with writer:
            for block in blocks:
                table = BlockAccessor.for_block(block).to_arrow()
                if table.num_rows == 0:
                    continue
                if "__key__" not in table.column_names:
                    raise ValueError(
                        f"writing {self.location}: a block has no __key__ column "
                        f"(its columns: {table.column_names})"
                    )
                members = _extension_columns(table.column_names)
                keys = table.column("__key__").to_pylist()
                values = [table.column(column).to_pylist() for column, _ in members]
                for row, key in enumerate(keys):
                    if not isinstance(key, str) or not key:
                        raise TypeError(
                            f"writing {self.location}: row {row} of a block of task {task} "
                            f"has __key__ {key!r}, not a non-empty str"
                        )
                    sample = {
                        ext: _as_bytes(column[row], key, name)
                        for (name, ext), column in zip(members, values)
                        if column[row] is not None
                    }
                    if not sample:
                        raise ValueError(f"writing {self.location}: sample {key!r} has no members")
                    writer.write(key, sample)
                    samples += 1
        return {
            "task": task,
            "samples": samples,
            "shards": [
                (name, [tuple(member) for member in members], size)
                for name, members, size in writer.reports
            ],
        }

    def on_write_complete(self, write_result: Any) -> None:
        self._start()
        reports = sorted(write_result.write_returns, key=lambda report: report["task"])
        tasks = [report["task"] for report in reports]
        if len(set(tasks)) != len(tasks):
            raise RuntimeError(f"writing {self.location}: a task reported twice ({tasks})")
        # Every key once in the fold, as one writer would require.
        seen: dict[str, int] = {}
        for report in reports:
            for shard, members, _ in report["shards"]:
                last = None
                for member, _, _ in members:
                    key = _member_key(member, self.key_rule)
                    if key == last:
                        continue
                    last = key
                    if key in seen:
                        raise ValueError(
                            f"writing {self.location}: sample key {key!r} written by task "
                            f"{seen[key]} and again by task {report['task']} ({shard})"
                        )
                    seen[key] = report["task"]
        shards: list[tuple[str, list[tuple[str, int, int]], int]] = []
        self._renamed: list[str] = []
        for report in reports:
            for name, members, size in report["shards"]:
                final = f"{self.fold}_{len(shards):04d}.tar"
                binfmt.rename(_join(self.temporary, name), _join(self.directory, final))
                self._renamed.append(_join(self.directory, final))
                shards.append((final, members, size))
        binfmt.taridx.write_index(self.location, shards, key_rule=self.key_rule)
        self._renamed = []
        try:
            _remove_tree(self.temporary)
        except OSError as error:
            # The fold is written and whole: what is left is only litter.
            warnings.warn(f"{self.location} is written, but {self.temporary} could not be removed: {error}")
        self.result = {
            "samples": sum(report["samples"] for report in reports),
            "shards": [_join(self.directory, name) for name, _, _ in shards],
            "index": self.location,
        }

    def on_write_failed(self, error: Exception) -> None:
        # No fold is left half-made: shards already renamed go, and so do
        # the temporary ones. (Best effort: the error raised is the write's.)
        for path in getattr(self, "_renamed", []):
            try:
                binfmt.remove(path)
            except OSError:
                pass
        try:
            _remove_tree(self.temporary)
        except OSError:
            pass


def write_taridx(
    dataset: ray.data.Dataset,
    location: StrPath,
    *,
    shard_bytes: Optional[int] = None,
    shard_samples: Optional[int] = None,
    key_rule: str = "webdataset",
    concurrency: Optional[int] = None,
    ray_remote_args: Optional[dict[str, Any]] = None,
) -> dict[str, Any]:
    """Writes ``dataset`` as the TARIDX fold whose index is ``location``
    (``DIR/FOLD.taridx``, a local path every node sees or
    ``s3://BUCKET/PREFIX/FOLD.taridx``), its shards ``FOLD_0000.tar``,
    ``FOLD_0001.tar``, ... beside it, as ``binfmt taridx pack`` names them.
    Returns ``{"samples", "shards", "index"}``.

    Each row is one sample: its ``__key__`` (a str) and one member per
    other column whose value is not null (``bytes``, or ``str`` written as
    UTF-8), named ``KEY.EXT`` with ``EXT`` the column's name without a
    leading dot, members in extension order (as ``taridx pack`` and
    webdataset's ``TarWriter`` write them). Columns whose name starts with
    ``__`` (``__shard__``, ``__index__``, ...) are not written, so a dataset
    from :func:`read_taridx` writes back as it was.

    Each write task writes whole shards, cut by the rule ``taridx pack``
    uses (``shard_samples`` samples or ``shard_bytes`` bytes at most, a
    sample never split), under temporary names in ``DIR/.binfmt-ray-FOLD/``
    that depend only on the task's index, each written atomically: a
    killed task that Ray runs again rewrites the same names and leaves no
    partial shard. A task boundary always ends a shard, so Ray is asked to
    bundle blocks into tasks of at least ``shard_samples`` rows (or
    ``shard_bytes`` bytes; Datasink's ``min_rows_per_write``). When every task is
    done the driver renames the shards to the fold's names in task order,
    writes the index from the members the tasks reported (no shard is read
    again), last, so a reader never sees an index without its shards, and
    removes the temporary directory (on S3 a rename is a server-side copy
    then a delete, for objects up to 5 GB: keep ``shard_bytes`` below
    that; the default is 3 GB). The fold is byte for byte the one
    ``binfmt taridx pack`` writes for the same samples in the same order
    whenever the shards are cut at the same samples (one block, or
    ``shard_samples`` dividing every block's row count).

    Order: samples in each task's row order, tasks in task-index order,
    which is the dataset's block order when
    ``ray.data.DataContext.get_current().execution_options.preserve_order``
    is true (otherwise the order in which blocks reached the write). A
    fold that already exists at ``location`` is refused
    (``FileExistsError``), and so is a key written twice. A failed write
    leaves no fold (shards already renamed are removed).
    """
    sink = TaridxDatasink(
        location, shard_bytes=shard_bytes, shard_samples=shard_samples, key_rule=key_rule
    )
    dataset.write_datasink(sink, concurrency=concurrency, ray_remote_args=ray_remote_args)
    assert sink.result is not None
    return sink.result


# ---------------------------------------------------------------------------
# ARCX.

_ARCX_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("bytes", pa.large_binary()),
        ("mode", pa.int64()),
        ("mtime", pa.int64()),
    ]
)


class ArcxDatasource(Datasource):
    """The regular files of one or more ARCX archives (see :func:`read_arcx`)."""

    def __init__(self, locations: Locations, *, task_bytes: int = 64 << 20) -> None:
        super().__init__()
        self._task_bytes = int(task_bytes)
        if self._task_bytes < 1:
            raise ValueError(f"task_bytes = {task_bytes}: need at least 1")
        # Per archive: its location and its files as (name, size, mode,
        # mtime, first block), from the manifest only.
        self._archives: list[tuple[str, list[tuple[str, int, int, int, int]]]] = []
        for location in _locations(locations, "read_arcx"):
            archive = binfmt.arcx.Archive(location)
            entries = archive.entries()
            blocks = archive.entry_blocks()
            if len(blocks) != len(entries):
                raise binfmt.BinfmtError(
                    f"{location}: {len(entries)} entries but {len(blocks)} first blocks"
                )
            files = [
                (entry.name, entry.size, entry.mode, entry.mtime_ns, block)
                for entry, block in zip(entries, blocks)
                if entry.kind == "file"
            ]
            self._archives.append((location, files))

    def get_name(self) -> str:
        return "ReadArcx"

    def estimate_inmemory_data_size(self) -> Optional[int]:
        return sum(size + len(name) + 32 for _, files in self._archives for name, size, *_ in files)

    def _groups(self, target: int) -> list[tuple[int, int, int]]:
        """``(archive, first, stop)`` runs of files of about ``target``
        bytes, cut only where the next file starts in another block than
        the one before it, so that no block starts two tasks' files."""
        groups = []
        for a, (_, files) in enumerate(self._archives):
            first, acc = 0, 0
            for i, (_, size, _, _, block) in enumerate(files):
                if i > first and acc >= target and block != files[i - 1][4]:
                    groups.append((a, first, i))
                    first, acc = i, 0
                acc += size
            if first < len(files):
                groups.append((a, first, len(files)))
        return groups

    def get_read_tasks(
        self,
        parallelism: int,
        per_task_row_limit: Optional[int] = None,
        data_context: Any = None,
    ) -> list[ReadTask]:
        total = sum(size for _, files in self._archives for _, size, *_ in files)
        # About task_bytes a task, but at least `parallelism` tasks when
        # the files allow it.
        target = max(1, min(self._task_bytes, total // max(1, parallelism)))
        tasks = []
        for a, first, stop in self._groups(target):
            location, files = self._archives[a]
            chosen = files[first:stop]
            metadata = BlockMetadata(
                num_rows=len(chosen),
                size_bytes=sum(size + len(name) + 32 for name, size, *_ in chosen),
                exec_stats=None,
                input_files=[location],
            )
            tasks.append(
                ReadTask(
                    _ArcxReader(location, [(name, mode, mtime) for name, _, mode, mtime, _ in chosen]),
                    metadata,
                    schema=_ARCX_SCHEMA,
                    per_task_row_limit=per_task_row_limit,
                )
            )
        return tasks


class _ArcxReader:
    """A read task's work: some files of one archive, as Arrow blocks."""

    def __init__(self, location: str, files: list[tuple[str, int, int]]) -> None:
        self.location = location
        self.files = files

    def __call__(self) -> Iterator[Block]:
        archive = binfmt.arcx.Archive(self.location)
        table: dict[str, list] = {name: [] for name in _ARCX_SCHEMA.names}
        size = 0
        for name, mode, mtime in self.files:
            data = archive.read(name)
            table["path"].append(name)
            table["bytes"].append(data)
            table["mode"].append(mode)
            table["mtime"].append(mtime)
            size += len(data)
            if size >= BLOCK_BYTES:
                yield _binary_table(table, _ARCX_SCHEMA)
                table = {name: [] for name in _ARCX_SCHEMA.names}
                size = 0
        if table["path"]:
            yield _binary_table(table, _ARCX_SCHEMA)


def read_arcx(
    locations: Locations,
    *,
    task_bytes: int = 64 << 20,
    override_num_blocks: Optional[int] = None,
    concurrency: Optional[int] = None,
    ray_remote_args: Optional[dict[str, Any]] = None,
) -> ray.data.Dataset:
    """The regular files of the ARCX archives at ``locations`` (paths or
    URLs), one row per file, in the archives' order (under
    ``preserve_order``, as for :func:`read_taridx`): ``path`` (str, the
    entry's name), ``bytes`` (``large_binary``, checked against its
    SHA-256), ``mode`` (the permission bits) and ``mtime`` (nanoseconds
    since the Unix epoch). Directories and symlinks are not rows.

    Planned on the driver from the manifests alone: one read task per run
    of consecutive files of about ``task_bytes`` uncompressed bytes (fewer
    bytes when that makes at least as many tasks as Ray asks for), cut only
    between files that start in different blocks. Each task opens the
    archive and decompresses only its blocks.
    """
    return ray.data.read_datasource(
        ArcxDatasource(locations, task_bytes=task_bytes),
        override_num_blocks=override_num_blocks,
        concurrency=concurrency,
        ray_remote_args=ray_remote_args,
    )


def _task_threads() -> int:
    """The CPUs Ray gave the running task (at least 1)."""
    try:
        assigned = ray.get_runtime_context().get_assigned_resources()
    except Exception:  # noqa: BLE001 - outside a task: one thread
        return 1
    return max(1, int(assigned.get("CPU", 1)))


class ArcxDatasink(Datasink):
    """Writes a dataset's rows as one ARCX archive (see :func:`write_arcx`)."""

    def __init__(self, location: StrPath, *, level: int = 3, dialect: str = "spec") -> None:
        self.location = os.fspath(location)
        self.directory, self.name = _split(self.location)
        self.location = _join(self.directory, self.name)
        self.temporary = _join(self.directory, f"{TEMPORARY_PREFIX}{self.name}")
        self.level = level
        self.dialect = dialect
        #: ``binfmt.arcx.merge``'s summary, once complete.
        self.result: Optional[dict[str, Any]] = None
        self._started = False

    def get_name(self) -> str:
        return "WriteArcx"

    def on_write_start(self, schema: Optional[pa.Schema] = None) -> None:
        # `schema` is that of the write operator's first input, which may be
        # the input of a map fused with the write: columns are checked in
        # the tasks, on the blocks they write.
        self._start()

    def _start(self) -> None:
        if self._started:
            return
        if not _is_s3(self.directory):
            os.makedirs(self.directory, exist_ok=True)
        _remove_tree(self.temporary)
        if not _is_s3(self.temporary):
            os.makedirs(self.temporary)
        self._started = True

    def write(self, blocks: Iterable[Block], ctx: Any) -> dict[str, Any]:
        task = int(ctx.task_idx)
        part = _join(self.temporary, f"part-{task:06d}.arcx")
        writer: Optional[binfmt.arcx.Writer] = None
        paths: list[str] = []
        try:
            for block in blocks:
                table = BlockAccessor.for_block(block).to_arrow()
                if table.num_rows == 0:
                    continue
                names = table.column_names
                missing = {"path", "bytes"} - set(names)
                if missing:
                    raise ValueError(
                        f"writing {self.location}: a block has no {sorted(missing)} column "
                        f"(its columns: {names})"
                    )
                path_column = table.column("path").to_pylist()
                data_column = table.column("bytes").to_pylist()
                modes = table.column("mode").to_pylist() if "mode" in names else None
                mtimes = table.column("mtime").to_pylist() if "mtime" in names else None
                if writer is None:
                    writer = binfmt.arcx.Writer(
                        part, level=self.level, dialect=self.dialect, jobs=_task_threads()
                    )
                for row, path in enumerate(path_column):
                    if not isinstance(path, str) or not path:
                        raise TypeError(
                            f"writing {self.location}: task {task} has a row whose path is {path!r}"
                        )
                    writer.add(
                        path,
                        _as_bytes(data_column[row], path, "bytes"),
                        mode=None if modes is None else modes[row],
                        mtime_ns=None if mtimes is None else mtimes[row],
                    )
                    paths.append(path)
            if writer is not None:
                writer.finish()
        except BaseException:
            # Nothing of this attempt is left at the part's name.
            if writer is not None and not writer.closed:
                writer.abort()
            raise
        return {"task": task, "part": part if writer is not None else None, "paths": paths}

    def on_write_complete(self, write_result: Any) -> None:
        self._start()
        reports = sorted(write_result.write_returns, key=lambda report: report["task"])
        seen: dict[str, int] = {}
        for report in reports:
            for path in report["paths"]:
                if path in seen:
                    raise ValueError(
                        f"writing {self.location}: path {path!r} is in task {seen[path]}'s "
                        f"rows and in task {report['task']}'s"
                    )
                seen[path] = report["task"]
        parts = [report["part"] for report in reports if report["part"] is not None]
        # No parts (no rows): an empty archive.
        self.result = binfmt.arcx.merge(parts, self.location, dialect=self.dialect)
        try:
            _remove_tree(self.temporary)
        except OSError as error:
            warnings.warn(f"{self.location} is written, but {self.temporary} could not be removed: {error}")

    def on_write_failed(self, error: Exception) -> None:
        try:
            _remove_tree(self.temporary)
        except OSError:
            pass


def write_arcx(
    dataset: ray.data.Dataset,
    location: StrPath,
    *,
    level: int = 3,
    dialect: str = "spec",
    concurrency: Optional[int] = None,
    ray_remote_args: Optional[dict[str, Any]] = None,
) -> dict[str, Any]:
    """Writes the rows of ``dataset`` as one ARCX archive at ``location``
    (a local path every node sees, or ``s3://``): one file per row, from
    its ``path`` (str) and ``bytes`` (``bytes`` or ``str``, written as
    UTF-8), with its ``mode`` and ``mtime`` (nanoseconds) when the dataset
    has those columns (as :func:`read_arcx` gives them). Returns
    ``binfmt.arcx.merge``'s summary.

    Each write task compresses its rows (zstd ``level``, ``dialect`` as
    :func:`binfmt.arcx.pack`'s, one thread per CPU Ray gave the task) into
    a part archive ``DIR/.binfmt-ray-NAME/part-TASK.arcx``, named by the
    task's index (a retried task rewrites its own part); then the driver
    merges the parts, copying their compressed blocks unchanged, into the
    archive, which appears only when complete, and removes the parts.

    Order: entries in each task's row order, tasks in task-index order:
    the dataset's block order when ``DataContext.execution_options.
    preserve_order`` is true, else the order in which blocks reached the
    write. A path in two rows is an error (``ValueError``), found before
    anything is merged.
    """
    sink = ArcxDatasink(location, level=level, dialect=dialect)
    dataset.write_datasink(sink, concurrency=concurrency, ray_remote_args=ray_remote_args)
    assert sink.result is not None
    return sink.result


# ---------------------------------------------------------------------------
# KAST.

_KAST_SCHEMA = pa.schema(
    [
        ("file", pa.string()),
        ("key", pa.string()),
        ("dtype", pa.string()),
        ("length", pa.int64()),
        ("array", pa.large_binary()),
    ]
)


class KastDatasource(Datasource):
    """The arrays of one or more kastores (see :func:`read_kast`)."""

    def __init__(self, locations: Locations, *, task_bytes: int = 64 << 20) -> None:
        super().__init__()
        self._task_bytes = int(task_bytes)
        if self._task_bytes < 1:
            raise ValueError(f"task_bytes = {task_bytes}: need at least 1")
        self._stores: list[tuple[str, list[tuple[str, int, str]]]] = []
        for location in _locations(locations, "read_kast"):
            entries = binfmt.open(location)
            if entries.format != "kast":
                raise binfmt.BinfmtError(f"{location}: a {entries.format} file, not a kastore")
            self._stores.append(
                (location, [(e.name, e.size, str(e.kind)) for e in entries.list()])
            )

    def get_name(self) -> str:
        return "ReadKast"

    def estimate_inmemory_data_size(self) -> Optional[int]:
        return sum(size + len(key) + 48 for _, items in self._stores for key, size, _ in items)

    def get_read_tasks(
        self,
        parallelism: int,
        per_task_row_limit: Optional[int] = None,
        data_context: Any = None,
    ) -> list[ReadTask]:
        total = sum(size for _, items in self._stores for _, size, _ in items)
        target = max(1, min(self._task_bytes, total // max(1, parallelism)))
        tasks = []
        for location, items in self._stores:
            first, acc = 0, 0
            runs = []
            for i, (_, size, _) in enumerate(items):
                if i > first and acc >= target:
                    runs.append((first, i))
                    first, acc = i, 0
                acc += size
            if first < len(items):
                runs.append((first, len(items)))
            for a, b in runs:
                chosen = items[a:b]
                metadata = BlockMetadata(
                    num_rows=len(chosen),
                    size_bytes=sum(size + len(key) + 48 for key, size, _ in chosen),
                    exec_stats=None,
                    input_files=[location],
                )
                tasks.append(
                    ReadTask(
                        _KastReader(location, chosen),
                        metadata,
                        schema=_KAST_SCHEMA,
                        per_task_row_limit=per_task_row_limit,
                    )
                )
        return tasks


class _KastReader:
    """A read task's work: some arrays of one store."""

    def __init__(self, location: str, items: list[tuple[str, int, str]]) -> None:
        self.location = location
        self.items = items

    def __call__(self) -> Iterator[Block]:
        store = binfmt.open(self.location)
        table: dict[str, list] = {name: [] for name in _KAST_SCHEMA.names}
        size = 0
        for key, nbytes, dtype in self.items:
            data = store.read(key)
            table["file"].append(self.location)
            table["key"].append(key)
            table["dtype"].append(dtype)
            table["length"].append(len(data) // np.dtype(dtype).itemsize)
            table["array"].append(data)
            size += len(data)
            if size >= BLOCK_BYTES:
                yield _binary_table(table, _KAST_SCHEMA)
                table = {name: [] for name in _KAST_SCHEMA.names}
                size = 0
        if table["key"]:
            yield _binary_table(table, _KAST_SCHEMA)


def read_kast(
    locations: Locations,
    *,
    task_bytes: int = 64 << 20,
    override_num_blocks: Optional[int] = None,
    concurrency: Optional[int] = None,
    ray_remote_args: Optional[dict[str, Any]] = None,
) -> ray.data.Dataset:
    """The arrays of the kastores at ``locations`` (paths or URLs; tskit
    ``.trees`` files are kastores), one row per array, stores in the order
    given and keys in each store's order (under ``preserve_order``):
    ``file`` (its location), ``key``
    (str), ``dtype`` (the numpy type name, such as ``"float64"``),
    ``length`` (elements) and ``array``: the array's bytes, little-endian
    as the store holds them, in a ``large_binary`` column (Arrow columns
    have one type, and a store's arrays have many). :func:`kast_array`
    (``np.frombuffer(row["array"], row["dtype"])``) turns a row back into
    its numpy array without a copy.

    Read tasks are planned from the stores' descriptors: per store, runs of
    consecutive keys of about ``task_bytes`` bytes (fewer when that makes at
    least as many tasks as Ray asks for).
    """
    return ray.data.read_datasource(
        KastDatasource(locations, task_bytes=task_bytes),
        override_num_blocks=override_num_blocks,
        concurrency=concurrency,
        ray_remote_args=ray_remote_args,
    )


def kast_array(row: Mapping[str, Any]) -> np.ndarray:
    """The numpy array of a :func:`read_kast` row (read-only, over the
    row's bytes)."""
    return np.frombuffer(row["array"], dtype=np.dtype(row["dtype"]))
