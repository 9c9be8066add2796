"""``binfmt.taridx.Sampler``: deterministic epoch orders for distributed
training, computed position by position, with exact and elastic resume
(spec/sampler.md)."""

from __future__ import annotations

import hashlib
import operator
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Optional, Sized, Union

import numpy as np

from . import _binfmt

if TYPE_CHECKING:  # pragma: no cover - typing only (taridx imports this module)
    from ._mixture import Mixture
    from .taridx import Dataset

#: The version of :meth:`Sampler.state_dict`'s dicts.
STATE_VERSION = 1
#: Positions computed per native call while iterating: few first (the
#: first samples come at once), doubling up to ``_BLOCK`` (memory stays
#: constant whatever the epoch).
_FIRST_BLOCK = 1024
_BLOCK = 65536
_MAX = 2**63 - 1


class SamplerStateError(ValueError):
    """A sampler state that cannot be loaded: not a state, of another
    version, or of another dataset (the message says what differs)."""

    __module__ = "binfmt.taridx"


def _integer(name: str, value: Any, low: int, high: int) -> int:
    """``value`` as an ``int`` (``operator.index``: no float, string or
    bool), checked to lie in ``[low, high]``; the errors name ``name``."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}")
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}") from None
    if not low <= number <= high:
        raise ValueError(f"{name} = {number}: need {low} <= {name} <= {high}")
    return number


def _length(dataset: Any) -> int:
    """The samples of ``dataset``: an integer itself, or ``len()`` of
    anything with ``__len__`` (a :class:`Dataset`, a :class:`Mixture`, a
    list)."""
    if isinstance(dataset, (bool, np.bool_)):
        raise TypeError("a sampler takes a dataset (anything with __len__) or a length, not a bool")
    try:
        length = operator.index(dataset)
    except TypeError:
        if not hasattr(dataset, "__len__"):
            raise TypeError(
                f"a sampler takes a dataset (anything with __len__) or a length, not {type(dataset).__name__}"
            ) from None
        length = len(dataset)
    return _integer("length", length, 0, _MAX)


def _digest(starts: list[int]) -> str:
    """SHA-256 (hex) of the run starts as little-endian ``u64``s."""
    return hashlib.sha256(np.asarray(starts, dtype="<u8").tobytes()).hexdigest()


def _iterate(order: _binfmt._EpochOrder, runs: Iterable[tuple[int, int, int]]) -> Iterator[int]:
    """The samples at positions ``first + k * stride`` (mod n), ``k <
    count``, of each run, computed a block at a time."""
    n = order.n
    block = _FIRST_BLOCK
    for first, stride, count in runs:
        done = 0
        while done < count:
            size = min(block, count - done)
            yield from order.take((first + done * stride) % n, stride % n, size).tolist()
            done += size
            block = min(2 * block, _BLOCK)


def _check_identity(stored: Any, given: Optional[dict[str, Any]]) -> None:
    """Refuses a state whose dataset identity (``sampler_identity()``, or
    ``None`` for a plain dataset or length) is not ``given``, saying
    what differs."""
    if stored == given:
        return
    if given is None:
        raise SamplerStateError(
            f"the state is of a {stored.get('kind') if isinstance(stored, dict) else stored!r} dataset "
            "(its 'dataset'); this dataset has no identity: give the dataset the state was made from"
        )
    if not isinstance(stored, dict):
        raise SamplerStateError(
            f"the state is not of a {given.get('kind')} (its 'dataset' is {stored!r}): give the dataset "
            "the state was made from"
        )
    differ = [key for key in sorted(set(stored) | set(given)) if stored.get(key) != given.get(key)]
    details = ", ".join(f"{key} {stored.get(key)!r} in the state, {given.get(key)!r} here" for key in differ)
    raise SamplerStateError(
        f"the state is of another {given.get('kind')}: {details} (sha256 covers the weights as quantised "
        "and the sources' lengths)"
    )


class Sampler:
    """Deterministic sample orders for distributed training, with exact
    resume.

    ``Sampler(dataset_or_length, *, shuffle=True, seed=0, rank=0,
    world_size=1, chunk_size=None, drop_last=False)``. Each epoch's global
    order comes from ``(seed, epoch, n)`` alone: the same on every machine,
    platform, process and run (spec/sampler.md gives the algorithm and test
    vectors; call :meth:`set_epoch`). It is a keyed permutation computed
    position by position in constant memory, so ``Sampler(10**12)`` costs
    nothing to make and iterating it holds one block of 64K indices at
    most. With ``chunk_size`` (and a :class:`Dataset`), the shuffle is
    shard-local: chunks of at most ``chunk_size`` consecutive samples of one
    shard, the chunks in a permuted order and the samples of each chunk in a
    permuted order, so reads stay shard-local (memory: O(shards)).

    Rank ``rank`` of ``world_size`` takes positions ``rank``, ``rank +
    world_size``, ... of the epoch's order (padded by the epoch's first
    positions, or cut with ``drop_last``, so ranks get equal counts), from
    :attr:`start` on: 0, or the ``samples_seen`` of a state loaded with
    :meth:`load_state_dict`, after which the ranks of any new world size
    together get exactly the positions not yet seen, each once, in the
    epoch's order. :meth:`worker_share` splits a rank's share between
    DataLoader workers. Usable as a PyTorch sampler (``__iter__``,
    ``__len__``, ``set_epoch``).

    ``dataset`` is a length or anything with ``__len__``. A dataset with a
    ``set_epoch`` method (a :class:`Mixture`) is kept and follows the
    sampler's epoch: set at construction, by :meth:`set_epoch`, by
    :meth:`load_state_dict` and at every iteration. One with a
    ``sampler_identity()`` method has that identity recorded in states,
    and a state is loaded only into a dataset of the same identity.

    Every integer is checked: the length is below 2**63 (indices are
    int64), ``seed`` and epochs below 2**64.
    """

    # Its public home (pickles name it there).
    __module__ = "binfmt.taridx"

    def __init__(
        self,
        dataset: Union["Dataset", "Mixture", Sized, int],
        *,
        shuffle: bool = True,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
        chunk_size: Optional[int] = None,
        drop_last: bool = False,
    ) -> None:
        from .taridx import Dataset

        self.length = _length(dataset)
        self.world_size = _integer("world_size", world_size, 1, _MAX)
        self.rank = _integer("rank", rank, 0, _MAX)
        if not self.rank < self.world_size:
            raise ValueError(f"rank {rank} of world size {world_size}: need 0 <= rank < world_size")
        self.shuffle = bool(shuffle)
        self.seed = _integer("seed", seed, 0, 2**64 - 1)
        self.drop_last = bool(drop_last)
        #: The epoch :meth:`__iter__` gives (:meth:`set_epoch`).
        self.epoch = 0
        #: Positions of :attr:`epoch` seen before this sampler's share: 0,
        #: or the loaded state's ``samples_seen``.
        self.start = 0
        self._chunk_size: Optional[int] = None
        # Where the dataset's shard changes (runs of one shard start):
        # chunks never cross one.
        self._shard_starts: list[int] = []
        if chunk_size is not None:
            self._chunk_size = _integer("chunk_size", chunk_size, 1, _MAX)
            if isinstance(dataset, Dataset):
                fids = dataset.sample_shards()
                self._shard_starts = (np.flatnonzero(np.diff(fids.astype(np.int64))) + 1).tolist()
        self._cached: Optional[tuple[int, _binfmt._EpochOrder]] = None
        # A dataset whose epoch follows the sampler's, and what states
        # record of the dataset.
        self._dataset = dataset if callable(getattr(dataset, "set_epoch", None)) else None
        identity = getattr(dataset, "sampler_identity", None)
        self._identity: Optional[dict[str, Any]] = identity() if callable(identity) else None
        self._follow()

    def _follow(self) -> None:
        """Sets the kept dataset's epoch to the sampler's."""
        if self._dataset is not None:
            self._dataset.set_epoch(self.epoch)

    @property
    def chunk_size(self) -> Optional[int]:
        """The most samples a chunk holds, or ``None`` (samples shuffled
        one by one)."""
        return self._chunk_size

    def set_epoch(self, epoch: int) -> None:
        """The epoch whose order :meth:`__iter__` gives next. Another epoch
        than the current one starts at its first position (:attr:`start`
        becomes 0); the current one keeps its start, so a training loop
        calling ``set_epoch`` on the epoch it resumes stays resumed."""
        epoch = _integer("epoch", epoch, 0, 2**64 - 1)
        if epoch != self.epoch:
            self.start = 0
        self.epoch = epoch
        self._follow()

    def _order(self, epoch: int) -> _binfmt._EpochOrder:
        """The native order of ``epoch`` (the last one kept)."""
        if self._cached is None or self._cached[0] != epoch:
            native = _binfmt._EpochOrder(
                self.length,
                self.seed,
                epoch,
                self.shuffle,
                self._chunk_size,
                self._shard_starts,
            )
            self._cached = (epoch, native)
        return self._cached[1]

    def _share(self, epoch: int) -> tuple[int, int, int]:
        """``(first, stride, count)``: this rank's positions of ``epoch``."""
        start = self.start if epoch == self.epoch else 0
        return _binfmt.sample_share(self.length, start, self.rank, self.world_size, self.drop_last)

    def order(self, epoch: Optional[int] = None) -> np.ndarray:
        """This rank's sample indices for ``epoch`` (the current one by
        default, from :attr:`start`), as one int64 array: 8 bytes a sample
        (``MemoryError`` when memory cannot hold them); iterating needs no
        more than a block."""
        epoch = self.epoch if epoch is None else _integer("epoch", epoch, 0, 2**64 - 1)
        first, stride, count = self._share(epoch)
        return self._order(epoch).take(first, stride, count)

    def __iter__(self) -> Iterator[int]:
        self._follow()
        share = self._share(self.epoch)
        return _iterate(self._order(self.epoch), [share])

    def __len__(self) -> int:
        return self._share(self.epoch)[2]

    def worker_share(self, worker_id: int, num_workers: int, *, batch_size: int = 1) -> Iterator[int]:
        """The part of this rank's share (of the current epoch, from
        :attr:`start`) that DataLoader worker ``worker_id`` of
        ``num_workers`` yields: the share's batches of ``batch_size``
        numbered ``worker_id``, ``worker_id + num_workers``, ... As a
        DataLoader takes batch ``b`` from worker ``b % num_workers``, the
        rank consumes its share in order, so ``samples_seen`` stays a prefix
        of the epoch; after a resume the remaining share is split again, for
        any ``num_workers``. In an ``IterableDataset``::

            info = torch.utils.data.get_worker_info()
            yield from sampler.worker_share(info.id, info.num_workers, batch_size=B)
        """
        num_workers = _integer("num_workers", num_workers, 1, _MAX)
        worker_id = _integer("worker_id", worker_id, 0, num_workers - 1)
        batch_size = _integer("batch_size", batch_size, 1, _MAX)
        self._follow()
        first, stride, count = self._share(self.epoch)
        batches = -(-count // batch_size)
        if batch_size == 1:
            runs: Iterable[tuple[int, int, int]] = [
                (first + worker_id * stride, stride * num_workers, len(range(worker_id, count, num_workers)))
            ]
        else:
            runs = (
                (first + b * batch_size * stride, stride, min(batch_size, count - b * batch_size))
                for b in range(worker_id, batches, num_workers)
            )
        return _iterate(self._order(self.epoch), runs)

    def state_dict(self, samples_seen: int) -> dict[str, Any]:
        """What resumes the current epoch after ``samples_seen`` samples: the
        global number the job consumed this epoch, counted from the epoch's
        first position (steps × global batch, plus :attr:`start` after a
        resume), so positions ``0..samples_seen`` of the epoch's order. A
        small JSON-serialisable dict (spec/sampler.md §4); padding past the
        epoch's end is stored as ``n``."""
        count = self._share(self.epoch)[2]
        most = self.start + count * self.world_size
        seen = _integer("samples_seen", samples_seen, 0, 2**64 - 1)
        if not self.start <= seen <= most:
            raise ValueError(
                f"samples_seen = {seen}: this sampler deals positions {self.start} to {most} of epoch "
                f"{self.epoch} (counted from the epoch's start, including the {self.start} seen "
                "before it was loaded)"
            )
        chunked = self._chunk_size is not None
        return {
            "version": STATE_VERSION,
            "seed": self.seed,
            "epoch": self.epoch,
            "n": self.length,
            "samples_seen": min(seen, self.length),
            "shuffle": self.shuffle,
            "chunk_size": self._chunk_size,
            "drop_last": self.drop_last,
            "shard_starts_sha256": _digest(self._shard_starts) if chunked else None,
            "runs": len(self._shard_starts) + 1 if chunked else None,
            "dataset": self._identity,
        }

    @classmethod
    def load_state_dict(
        cls,
        state: Mapping[str, Any],
        dataset: Union["Dataset", "Mixture", Sized, int],
        *,
        rank: int = 0,
        world_size: int = 1,
    ) -> "Sampler":
        """A sampler for rank ``rank`` of ``world_size`` (any world size)
        resuming :meth:`state_dict`'s ``state`` over ``dataset`` (the same
        samples: a :class:`Dataset` or a length): the state's seed, epoch,
        shuffle, chunking and ``drop_last``, from position
        ``samples_seen`` on. The ranks together yield every remaining
        position of the epoch once, in the epoch's order (padded or cut by
        ``drop_last`` for the new world size). Raises
        :class:`SamplerStateError` for a state that is not one, of another
        version, or whose ``n``, shard runs or dataset identity (a
        :class:`Mixture`'s seed, weights and sources' lengths) differ from
        ``dataset``'s. A dataset that follows the sampler's epoch (a
        :class:`Mixture`) is set to the state's epoch."""
        if not isinstance(state, Mapping):
            raise SamplerStateError(f"a sampler state is a dict, not {type(state).__name__}")
        if state.get("version") != STATE_VERSION:
            raise SamplerStateError(
                f"sampler state version {state.get('version')!r}: this binfmt reads version {STATE_VERSION}"
            )

        def field(name: str, high: int, *, low: int = 0, optional: bool = False) -> Any:
            if name not in state:
                raise SamplerStateError(f"the sampler state has no {name!r}")
            value = state[name]
            if optional and value is None:
                return None
            try:
                return _integer(f"the state's {name}", value, low, high)
            except (TypeError, ValueError) as error:
                raise SamplerStateError(str(error)) from None

        def flag(name: str) -> bool:
            value = state.get(name)
            if not isinstance(value, bool):
                raise SamplerStateError(f"the state's {name} must be true or false, not {value!r}")
            return value

        n = field("n", _MAX)
        chunk_size = field("chunk_size", _MAX, low=1, optional=True)
        sampler = cls(
            dataset,
            shuffle=flag("shuffle"),
            seed=field("seed", 2**64 - 1),
            rank=rank,
            world_size=world_size,
            chunk_size=chunk_size,
            drop_last=flag("drop_last"),
        )
        if sampler.length != n:
            raise SamplerStateError(f"the state is of {n} samples; this dataset has {sampler.length}")
        if chunk_size is not None and state.get("shard_starts_sha256") != _digest(sampler._shard_starts):
            raise SamplerStateError(
                f"the state's chunks follow {state.get('runs')!r} runs of shards; this dataset's "
                f"{len(sampler._shard_starts) + 1} runs start elsewhere (shard_starts_sha256 differs), "
                "so the chunks would differ: give the dataset the state was made from"
            )
        _check_identity(state.get("dataset"), sampler._identity)
        sampler.epoch = field("epoch", 2**64 - 1)
        sampler.start = field("samples_seen", n)
        sampler._follow()
        return sampler

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_cached"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        # Samplers pickled before resume existed have no start and may
        # have None for no shard starts.
        self.__dict__.update({"start": 0, "_dataset": None, "_identity": None, **state, "_cached": None})
        if self._shard_starts is None:
            self._shard_starts = []

    def __repr__(self) -> str:
        chunks = "" if self._chunk_size is None else f", chunk_size={self._chunk_size}"
        return (
            f"Sampler({self.length}, seed={self.seed}, epoch={self.epoch}, start={self.start}, "
            f"rank={self.rank}, world_size={self.world_size}{chunks}, shuffle={self.shuffle}, "
            f"drop_last={self.drop_last})"
        )
