"""``binfmt.taridx.Mixture``: a deterministic weighted interleaving of
several map-style datasets, itself a map-style dataset (spec/mixture.md)."""

from __future__ import annotations

import hashlib
import math
import numbers
import operator
from typing import Any, Iterable, Optional, Sequence

import numpy as np

from . import _binfmt
from ._sampler import _integer

_MAX = 2**63 - 1
#: Positions per period of the schedule (spec/mixture.md §2).
PERIOD = 2**16


def _weight(position: int, value: Any) -> float:
    """``weights[position]`` as a finite float ``>= 0`` (a real number: no
    bool, string or complex)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"weights[{position}] must be a real number, not {type(value).__name__}")
    weight = float(value)
    if not math.isfinite(weight) or weight < 0:
        raise ValueError(f"weights[{position}] = {value!r}: weights are finite and >= 0")
    return weight


class Mixture:
    """A deterministic weighted interleaving of datasets, itself a
    map-style dataset.

    ``Mixture(sources, weights=None, *, seed=0, samples=None)``: ``sources``
    are map-style datasets (anything with ``__len__`` and ``__getitem__``:
    :class:`Dataset` folds, local or remote, lists, ...); ``weights`` one
    finite number ``>= 0`` per source (normalised; by default the sources'
    lengths); ``samples`` the epoch's budget, ``len(mix)`` (by default the
    lengths of the sources of positive weight, summed).

    Position ``i`` of the epoch set by :meth:`set_epoch` is one source's
    sample (:meth:`locate` says which): which source comes from a fixed
    schedule of 65,536 positions, repeated, in which every window of ``L``
    consecutive positions holds ``L`` × its weight of each source give or
    take less than 2.16 for ``L = 10,000`` (weights are quantised to 1/65,536);
    the ``k``-th draw of a source is position ``k mod len`` of a keyed
    permutation of its samples, a fresh one each time the source is drawn
    through (``k // len``, the cycle) and each epoch. So ``mix[0], mix[1],
    ...`` is already shuffled and balanced: use ``Sampler(mix,
    shuffle=False, ...)``, whose ranks deal that order (a shuffled sampler
    keeps only the expected shares, not the window bound). ``mix[i]`` is the
    source's sample, with ``"__source__"`` (the source's number) added to a
    copy when it is a dict. Memory: 256 KiB of schedule, whatever the
    budget; ``mix[i]`` is O(1). A mixture pickles as its arguments and
    epoch (sources included), so it crosses to ``spawn`` workers.
    """

    # Its public home (pickles name it there).
    __module__ = "binfmt.taridx"

    def __init__(
        self,
        sources: Sequence[Any],
        weights: Optional[Sequence[Any]] = None,
        *,
        seed: int = 0,
        samples: Optional[int] = None,
    ) -> None:
        if isinstance(sources, (str, bytes)) or not hasattr(sources, "__iter__"):
            raise TypeError(f"sources must be a sequence of datasets, not {type(sources).__name__}")
        sources = list(sources)
        if not sources:
            raise ValueError("a mixture needs at least one source")
        lengths = []
        for number, source in enumerate(sources):
            if not (hasattr(source, "__len__") and hasattr(source, "__getitem__")):
                raise TypeError(
                    f"sources[{number}] is a {type(source).__name__}: a source is a map-style "
                    "dataset (__len__ and __getitem__)"
                )
            lengths.append(_integer(f"len(sources[{number}])", len(source), 0, _MAX))
        if weights is None:
            values = [float(n) for n in lengths]
        else:
            if isinstance(weights, (str, bytes)) or not hasattr(weights, "__iter__"):
                raise TypeError(f"weights must be a sequence of numbers, not {type(weights).__name__}")
            values = [_weight(s, w) for s, w in enumerate(weights)]
            if len(values) != len(sources):
                raise ValueError(f"{len(values)} weights for {len(sources)} sources: give one weight a source")
        if samples is None:
            total = sum(n for n, w in zip(lengths, values) if w > 0)
            if total > _MAX:
                raise OverflowError(f"the sources hold {total} samples: give samples= at most 2**63 - 1")
        else:
            total = _integer("samples", samples, 0, _MAX)
        self._sources = sources
        self._weights = values
        self._seed = _integer("seed", seed, 0, 2**64 - 1)
        self._lengths = lengths
        # Checks the rest (every message names the source), and makes the
        # schedule: 256 KiB.
        self._native = _binfmt._Mixture(values, lengths, total, self._seed)
        self._samples = total
        #: The epoch whose positions ``mix[i]`` gives (:meth:`set_epoch`).
        self.epoch = 0

    @property
    def sources(self) -> list[Any]:
        """The sources, in source-number order."""
        return list(self._sources)

    @property
    def weights(self) -> list[float]:
        """The weights as given (or the lengths), as floats."""
        return list(self._weights)

    @property
    def quotas(self) -> list[int]:
        """Each source's positions in every 65,536 of the schedule: the
        weights as used, summing to 65,536."""
        return self._native.quotas

    @property
    def seed(self) -> int:
        """The seed of the sources' permutations."""
        return self._seed

    def set_epoch(self, epoch: int) -> None:
        """The epoch ``mix[i]`` reads: each epoch permutes the sources'
        samples afresh (the schedule stays). A :class:`Sampler` over the
        mixture sets it whenever its own epoch is set."""
        self.epoch = _integer("epoch", epoch, 0, 2**64 - 1)

    def __len__(self) -> int:
        return self._samples

    def _position(self, index: Any) -> int:
        if isinstance(index, (str, bytes)):
            raise TypeError(f"mixture positions are integers, not {type(index).__name__}")
        position = _integer("mixture position", index, -(2**63), 2**63 - 1)
        if position < 0:
            position += self._samples
        if not 0 <= position < self._samples:
            raise IndexError(f"position {index} out of range (the mixture has {self._samples})")
        return position

    def locate(self, index: int, epoch: Optional[int] = None) -> tuple[int, int]:
        """``(source, sample)``: position ``index`` of epoch ``epoch`` (the
        current one by default) is ``sources[source][sample]``."""
        epoch = self.epoch if epoch is None else _integer("epoch", epoch, 0, 2**64 - 1)
        return self._native.locate(epoch, self._position(index))

    def locate_many(self, first: int, count: int, epoch: Optional[int] = None) -> tuple[np.ndarray, np.ndarray]:
        """What :meth:`locate` gives for positions ``first .. first +
        count``, as two int64 arrays (sources, samples), computed natively."""
        epoch = self.epoch if epoch is None else _integer("epoch", epoch, 0, 2**64 - 1)
        first = _integer("first", first, 0, self._samples)
        count = _integer("count", count, 0, self._samples - first)
        return self._native.take(epoch, first, count)

    def __getitem__(self, index: int) -> Any:
        source, sample = self._native.locate(self.epoch, self._position(index))
        item = self._sources[source][sample]
        if isinstance(item, dict):
            item = dict(item)
            item["__source__"] = source
        return item

    def get_batch(self, indices: Iterable[int]) -> list[Any]:
        """The items at ``indices`` (in the order given; repeats allowed),
        as ``mix[i]`` gives them: every position is checked first (the
        errors of ``mix[i]``, for the first bad one, before anything is
        read), then each source's share of the batch is read in one call of
        its ``get_batch`` when it has one (a remote fold then fetches that
        share in merged range requests), else item by item."""
        located = [self._native.locate(self.epoch, self._position(i)) for i in indices]
        by_source: dict[int, list[int]] = {}
        for k, (source, _) in enumerate(located):
            by_source.setdefault(source, []).append(k)
        out: list[Any] = [None] * len(located)
        for source, ks in by_source.items():
            dataset = self._sources[source]
            samples = [located[k][1] for k in ks]
            get_batch = getattr(dataset, "get_batch", None)
            if callable(get_batch):
                items = list(get_batch(samples))
            else:
                items = [dataset[sample] for sample in samples]
            for k, item in zip(ks, items):
                if isinstance(item, dict):
                    # A copy, as mix[i] makes: a source may hand out one
                    # dict for several positions.
                    item = dict(item)
                    item["__source__"] = source
                out[k] = item
        return out

    def sampler_identity(self) -> dict[str, Any]:
        """What a :class:`Sampler` state records of this mixture, so that a
        state is loaded only into the same mixture: the seed, the number of
        sources and a SHA-256 of the quotas and the sources' lengths
        (spec/mixture.md §4)."""
        numbers_ = np.asarray([PERIOD, *self.quotas, *self._lengths], dtype="<u8")
        return {
            "kind": "mixture",
            "seed": self._seed,
            "sources": len(self._sources),
            "sha256": hashlib.sha256(numbers_.tobytes()).hexdigest(),
        }

    def __getstate__(self) -> dict[str, Any]:
        return {
            "sources": self._sources,
            "weights": self._weights,
            "seed": self._seed,
            "samples": self._samples,
            "epoch": self.epoch,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        # A pickle is input: the constructor checks it all again.
        if not isinstance(state, dict) or set(state) != {"sources", "weights", "seed", "samples", "epoch"}:
            raise ValueError("not a Mixture's state")
        self.__init__(state["sources"], state["weights"], seed=state["seed"], samples=state["samples"])
        self.set_epoch(state["epoch"])

    def __repr__(self) -> str:
        weights = ", ".join(f"{w:g}" for w in self._weights[:8]) + (", ..." if len(self._weights) > 8 else "")
        return (
            f"Mixture({len(self._sources)} sources, weights=[{weights}], seed={self._seed}, "
            f"samples={self._samples}, epoch={self.epoch})"
        )
