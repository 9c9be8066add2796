"""``binfmt.taridx.Stream``: an iterable over a sampler's share of a
map-style dataset, split between DataLoader workers, read ahead by a
background thread in batches (``get_batch``)."""

from __future__ import annotations

import importlib.util
import itertools
import queue
import sys
import threading
from typing import Any, Iterator, Optional

from ._sampler import _MAX, _integer

# What the reader thread puts in its queue: a group of samples read, the
# exception that stopped it, or the end.
_SAMPLES, _ERROR, _END = 0, 1, 2
#: Seconds between two looks at the stop flag while the queue is full or
#: empty (never a timeout: a slow read is waited for).
_POLL = 0.1


def _torch_worker() -> Optional[tuple[int, int]]:
    """``(id, num_workers)`` of the DataLoader worker this process is, when
    ``torch.utils.data`` is imported and this is one; else ``None``. torch is
    never imported here (a worker process has imported it already)."""
    data = sys.modules.get("torch.utils.data")
    info = getattr(data, "get_worker_info", None)
    if info is None:
        return None
    worker = info()
    return None if worker is None else (int(worker.id), int(worker.num_workers))


#: Whether ``Stream`` was offered to torch (registered, or torch is absent).
_TORCH_CHECKED = [False]


def _register_with_torch() -> None:
    """Registers ``Stream`` as a virtual subclass of
    ``torch.utils.data.IterableDataset`` (an ABC), once, when torch is
    installed: ``DataLoader`` decides by ``isinstance`` whether a dataset is
    iterable, and would otherwise index a stream as a map-style one. torch
    is imported here only when it is installed and not imported yet."""
    if _TORCH_CHECKED[0]:
        return
    _TORCH_CHECKED[0] = True
    data = sys.modules.get("torch.utils.data")
    if data is None:
        if importlib.util.find_spec("torch") is None:
            return
        import torch.utils.data as data
    register = getattr(getattr(data, "IterableDataset", None), "register", None)
    if callable(register):
        register(Stream)


def _read(dataset: Any, group: list[int]) -> list[Any]:
    """The samples at ``group``: one ``get_batch`` call when the dataset has
    one, else ``dataset[i]`` each."""
    get_batch = getattr(dataset, "get_batch", None)
    if callable(get_batch):
        return list(get_batch(group))
    return [dataset[i] for i in group]


def _reader(
    dataset: Any,
    indices: Iterator[int],
    batch_read: int,
    out: "queue.Queue[tuple[int, Any]]",
    stop: threading.Event,
) -> None:
    """The reader thread: groups of ``batch_read`` indices read in order and
    put in ``out``, until the indices end, a read fails or ``stop`` is set.
    A group that fails is read again sample by sample, so the samples before
    the failing one are delivered and the exception comes at its position.
    Holds no reference to the iterator (which can then be collected)."""

    def put(item: tuple[int, Any]) -> bool:
        while not stop.is_set():
            try:
                out.put(item, timeout=_POLL)
                return True
            except queue.Full:
                continue
        return False

    try:
        while not stop.is_set():
            group = list(itertools.islice(indices, batch_read))
            if not group:
                break
            try:
                samples = _read(dataset, group)
            except BaseException:
                # Which sample failed: read them one by one, unless the
                # pass was closed meanwhile (each read may wait for a
                # stalled server's timeout: found from outside, close()
                # waited minutes).
                samples = []
                for i in group:
                    if stop.is_set():
                        return
                    try:
                        samples.append(dataset[i])
                    except BaseException as error:
                        if samples:
                            put((_SAMPLES, samples))
                        put((_ERROR, error))
                        return
                # A batch failure that no single read repeats (transient):
                # the group read one by one is as good.
            if not put((_SAMPLES, samples)):
                return
    except BaseException as error:  # the sampler's own failure
        put((_ERROR, error))
        return
    put((_END, None))


class _StreamIterator:
    """One pass over a :class:`Stream`: the consumer side of the reader
    thread. Closing it (:meth:`close`, or dropping the last reference) stops
    and joins the thread."""

    def __init__(self, dataset: Any, indices: Iterator[int], prefetch: int, batch_read: int) -> None:
        self._queue: "queue.Queue[tuple[int, Any]]" = queue.Queue(maxsize=prefetch)
        self._stop = threading.Event()
        self._current: list[Any] = []
        self._position = 0
        self._done = False
        self._thread = threading.Thread(
            target=_reader,
            args=(dataset, indices, batch_read, self._queue, self._stop),
            name="binfmt-stream-reader",
            daemon=True,
        )
        self._thread.start()

    def __iter__(self) -> "_StreamIterator":
        return self

    def __next__(self) -> Any:
        while self._position >= len(self._current):
            if self._done:
                raise StopIteration
            kind, value = self._take()
            if kind == _SAMPLES:
                self._current, self._position = value, 0
            else:
                self._current, self._position = [], 0
                self.close()
                if kind == _ERROR:
                    raise value
                raise StopIteration
        sample = self._current[self._position]
        self._current[self._position] = None  # held by the consumer only
        self._position += 1
        return sample

    def _take(self) -> tuple[int, Any]:
        while True:
            try:
                return self._queue.get(timeout=_POLL)
            except queue.Empty:
                if not self._thread.is_alive() and self._queue.empty():
                    # Stopped without a word (it always says why: a bug).
                    return (_ERROR, RuntimeError("the stream's reader thread ended unexpectedly"))

    def close(self) -> None:
        """Stops the reader thread and waits for it (at most the read in
        progress: one group). Iterating further raises ``StopIteration``."""
        self._done = True
        self._stop.set()
        while self._thread.is_alive():
            # Unblock a put: drop what was read ahead.
            try:
                while True:
                    self._queue.get_nowait()
            except queue.Empty:
                pass
            self._thread.join(_POLL)
        self._current = []

    def __del__(self) -> None:
        if getattr(self, "_thread", None) is not None:
            self.close()


class Stream:
    """An iterable over a sampler's share of a map-style dataset, for
    ``IterableDataset``-style pipelines, reading ahead in the background.

    ``Stream(dataset, sampler, *, batch_size=1, prefetch=2, batch_read=64)``:
    ``dataset`` is map-style (a :class:`Dataset`, a :class:`Mixture`, a
    list, anything with ``__len__`` and ``__getitem__``); ``sampler`` a
    :class:`Sampler` of the same length. Iterating yields
    ``dataset[i]`` for ``i`` in ``sampler.worker_share(worker_id,
    num_workers, batch_size=batch_size)``, in that order, so a DataLoader
    taking batch ``b`` from worker ``b % num_workers`` consumes the rank's
    share in order and the sampler's ``state_dict(samples_seen)`` resumes
    exactly (load the state, make a new stream).

    With torch installed, a stream is a ``torch.utils.data.IterableDataset``
    (registered as one when the first stream is made), so
    ``DataLoader(stream, batch_size=..., num_workers=...)`` iterates it.

    The worker is, in this order: the one :meth:`for_worker` set; the
    DataLoader worker this process is, from
    ``torch.utils.data.get_worker_info()`` when torch is imported; else
    worker 0 of 1 (the whole share).

    Each ``iter()`` starts a reader thread that reads the indices in groups
    of ``batch_read`` with ``dataset.get_batch(group)`` (one call, the GIL
    released, a remote dataset's ranges fetched in merged requests per
    shard), or ``dataset[i]`` one by one when it has no ``get_batch``, and
    keeps up to ``prefetch`` groups ready: at most ``prefetch + 2`` groups
    of samples are held (queued, being read, being consumed). A read that
    fails is raised by the iterator where the failing sample would have
    come, after every sample before it. The thread stops when the iterator
    ends, is closed (``close()``) or is dropped: a loop that breaks early
    leaves no thread behind. A stream pickles (dataset and sampler) before
    iteration, for ``spawn`` workers.
    """

    # Its public home (pickles name it there).
    __module__ = "binfmt.taridx"

    def __init__(
        self,
        dataset: Any,
        sampler: Any,
        *,
        batch_size: int = 1,
        prefetch: int = 2,
        batch_read: int = 64,
    ) -> None:
        if not (hasattr(dataset, "__len__") and hasattr(dataset, "__getitem__")):
            raise TypeError(
                f"dataset must be map-style (__len__ and __getitem__), not {type(dataset).__name__}"
            )
        if not (callable(getattr(sampler, "worker_share", None)) and hasattr(sampler, "length")):
            raise TypeError(f"sampler must be a binfmt.taridx.Sampler, not {type(sampler).__name__}")
        if sampler.length != len(dataset):
            raise ValueError(
                f"the sampler is of {sampler.length} samples; the dataset has {len(dataset)}: "
                "make the sampler from this dataset"
            )
        _register_with_torch()
        self.dataset = dataset
        self.sampler = sampler
        self.batch_size = _integer("batch_size", batch_size, 1, _MAX)
        self.prefetch = _integer("prefetch", prefetch, 1, 2**20)
        self.batch_read = _integer("batch_read", batch_read, 1, 2**20)
        self._worker: Optional[tuple[int, int]] = None

    def for_worker(self, worker_id: int, num_workers: int) -> "Stream":
        """A stream of worker ``worker_id`` of ``num_workers`` (the same
        dataset and sampler), whatever torch says."""
        num_workers = _integer("num_workers", num_workers, 1, _MAX)
        worker_id = _integer("worker_id", worker_id, 0, num_workers - 1)
        stream = Stream(
            self.dataset,
            self.sampler,
            batch_size=self.batch_size,
            prefetch=self.prefetch,
            batch_read=self.batch_read,
        )
        stream._worker = (worker_id, num_workers)
        return stream

    @property
    def worker(self) -> tuple[int, int]:
        """``(worker_id, num_workers)`` this stream reads for now."""
        if self._worker is not None:
            return self._worker
        return _torch_worker() or (0, 1)

    def set_epoch(self, epoch: int) -> None:
        """``sampler.set_epoch(epoch)``: the epoch the next pass reads."""
        self.sampler.set_epoch(epoch)

    def __iter__(self) -> Iterator[Any]:
        worker_id, num_workers = self.worker
        indices = self.sampler.worker_share(worker_id, num_workers, batch_size=self.batch_size)
        return _StreamIterator(self.dataset, indices, self.prefetch, self.batch_read)

    def __len__(self) -> int:
        """This worker's samples (its part of ``len(sampler)``)."""
        worker_id, num_workers = self.worker
        count, size = len(self.sampler), self.batch_size
        batches = -(-count // size)
        mine = len(range(worker_id, batches, num_workers))
        total = mine * size
        if batches and (batches - 1) % num_workers == worker_id:
            total -= batches * size - count  # the last batch is short
        return total

    def __repr__(self) -> str:
        worker_id, num_workers = self.worker
        return (
            f"Stream({self.dataset!r}, {self.sampler!r}, batch_size={self.batch_size}, "
            f"prefetch={self.prefetch}, batch_read={self.batch_read}, worker {worker_id} of {num_workers})"
        )
