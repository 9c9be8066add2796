"""binfmt.taridx.Mixture: the rows of spec/mixture.md, balance over every
window of 10,000 positions, each source's draws as permutations per
cycle, the same positions in every process, pickling, and exact resume
of a Sampler over a mixture of real folds with another world size. No
PyTorch."""

from __future__ import annotations

import itertools
import json
import multiprocessing
import pathlib
import pickle
import random
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest
from conftest import cls_fold

import binfmt.taridx as taridx

SPEC = pathlib.Path(__file__).resolve().parents[3] / "spec" / "mixture.md"
PERIOD = 2**16
#: The folds' shard sizes: uneven, one shard of a single sample.
FOLDS = {"a": [13, 7, 20, 1, 9, 30], "b": [11, 12], "c": [5]}


def spec_table(heading: str) -> list[list[str]]:
    """The rows of the spec's table under ``heading``."""
    section = SPEC.read_text().split(heading)[1]
    lines = list(itertools.dropwhile(lambda l: not l.startswith("|"), section.splitlines()))
    rows = list(itertools.takewhile(lambda l: l.startswith("|"), lines))[2:]
    return [[c.strip() for c in row.split("|")[1:-1]] for row in rows]


def floats(cell: str) -> list[float]:
    return [float(v) for v in cell.split(",")]


def integers(cell: str) -> list[int]:
    return [int(v) for v in cell.split(",")]


@pytest.fixture(scope="module")
def folds(tmp_path_factory) -> list[taridx.Dataset]:
    """Three folds of FOLDS' shard sizes, written with tarfile; each
    sample's ``.cls`` is ``FOLD:I``."""
    root = tmp_path_factory.mktemp("mixture")
    return [
        cls_fold(root, name, sizes, label=lambda name, i: f"{name}:{i}")
        for name, sizes in FOLDS.items()
    ]


# --- the spec's rows -----------------------------------------------------------


def test_spec_quota_and_schedule_vectors():
    rows = spec_table("### Quotas")
    assert len(rows) >= 4
    for weights, quotas in rows:
        mix = taridx.Mixture([range(1)] * len(floats(weights)), floats(weights))
        assert mix.quotas == integers(quotas)
    rows = spec_table("### Schedules")
    assert len(rows) >= 3
    for weights, sources in rows:
        expected = integers(sources)
        mix = taridx.Mixture([range(1)] * len(floats(weights)), floats(weights), samples=len(expected))
        assert mix.locate_many(0, len(expected))[0].tolist() == expected


def spec_samples() -> list[tuple[list[float], list[int], int, int, int, list[tuple[int, int]]]]:
    rows = []
    for weights, lengths, n, seed, epoch, pairs in spec_table("### Samples"):
        located = [tuple(int(v) for v in pair.split(":")) for pair in pairs.split(",")]
        rows.append((floats(weights), integers(lengths), int(n), int(seed), int(epoch), located))
    return rows


def test_spec_sample_vectors():
    rows = spec_samples()
    assert len(rows) >= 3
    for weights, lengths, n, seed, epoch, located in rows:
        mix = taridx.Mixture([range(m) for m in lengths], weights, seed=seed, samples=n)
        mix.set_epoch(epoch)
        assert [mix.locate(i) for i in range(len(located))] == located
        # A range's sample is its index.
        assert [(s, mix[i]) for i, (s, _) in enumerate(located)] == located


# --- balance -----------------------------------------------------------------------


def weight_sets() -> list[list[float]]:
    rng = random.Random(5)
    return [
        [0.98, 0.01, 0.01],
        [0.999, 0.001],
        [1, 1, 1],
        [0.5, 0.3, 0.2],
        [2.0**k for k in range(12)],
        [rng.random() + 0.001 for _ in range(10)],
        [rng.random() + 0.001 for _ in range(300)],
        [rng.expovariate(1) + 0.2 for _ in range(2000)],
    ]


@pytest.mark.parametrize("weights", weight_sets(), ids=lambda w: f"{len(w)}-sources")
def test_every_window_of_ten_thousand_is_balanced(weights):
    window = 10_000
    mix = taridx.Mixture([range(1)] * len(weights), weights, samples=2**62)
    # Every window starting in the first period (the schedule repeats: these
    # are all of them), and the same far into the budget.
    sources = mix.locate_many(0, PERIOD + window)[0]
    far = mix.locate_many(2**62 - 3 * PERIOD, PERIOD + window)[0]
    assert np.array_equal(far, sources)
    share = np.asarray(weights) / sum(weights)
    worst = 0.0
    for s in range(len(weights)):
        counts = np.concatenate([[0], np.cumsum(sources == s)])
        in_window = counts[window : window + PERIOD] - counts[:PERIOD]
        worst = max(worst, float(np.abs(in_window - window * share[s]).max()))
    # The spec's bound (2 + 10,000/65,536), far inside 1% of the window.
    assert worst < 2.16, worst
    assert worst < 0.01 * window


def test_quotas_follow_the_weights():
    mix = taridx.Mixture([range(3)] * 3, [0.98, 0.01, 0.01])
    assert mix.quotas == [64225, 656, 655] and sum(mix.quotas) == PERIOD
    # Weights are relative; lengths by default.
    assert taridx.Mixture([range(3)] * 3, [98, 1, 1]).quotas == mix.quotas
    assert taridx.Mixture([range(1), range(3)]).quotas == [16384, 49152]


# --- draws --------------------------------------------------------------------------


def test_each_cycle_of_a_source_is_a_permutation(folds):
    mix = taridx.Mixture(folds, [0.5, 0.3, 0.2], seed=3, samples=2000)
    sources, samples = mix.locate_many(0, len(mix))
    for s, fold in enumerate(folds):
        draws = samples[sources == s].tolist()
        n = len(fold)
        assert len(draws) > 2 * n  # every source wraps around
        cycles = [draws[c : c + n] for c in range(0, len(draws) - n + 1, n)]
        assert all(sorted(cycle) == list(range(n)) for cycle in cycles)
        assert cycles[0] != cycles[1] and cycles[0] != sorted(cycles[0])
    # Fewer draws than samples: all distinct.
    big = taridx.Mixture([range(10**6), range(10**6)], [1, 3], samples=50_000)
    sources, samples = big.locate_many(0, 50_000)
    assert len(set(samples[sources == 0].tolist())) == (sources == 0).sum()


def test_items_are_the_sources_samples(folds):
    mix = taridx.Mixture(folds, [2, 1, 1], seed=8)
    assert len(mix) == sum(len(f) for f in folds)
    mix.set_epoch(2)
    for i in (0, 1, 2, 17, len(mix) - 1, -1):
        s, sample = mix.locate(i)
        item = mix[i]
        assert item["__source__"] == s
        assert item[".cls"] == f"{'abc'[s]}:{sample}".encode()
        assert item["__key__"] == folds[s][sample]["__key__"] and "__source__" not in folds[s][sample]
    assert mix.locate(5) == mix.locate(5, epoch=2) != mix.locate(5, epoch=3)
    # Non-dict samples come as they are.
    assert taridx.Mixture([["x", "y"]], [1])[1] in ("x", "y")


def test_the_same_in_every_process():
    here = _first(CONFIGS)
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        assert pool.apply(_first, (CONFIGS,)) == here
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import test_mixture as t; "
        f"print(json.dumps(t._first({CONFIGS!r})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(pathlib.Path(__file__).parent)],
        env={"PYTHONHASHSEED": "999", "PATH": ""},
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout) == [[list(p) for p in row] for row in here]


CONFIGS = [([0.98, 0.01, 0.01], [100, 7, 10**12], 0, 0), ([1, 2, 3, 4], [5, 6, 7, 8], 2**64 - 1, 9)]


def _first(configs) -> list[list[tuple[int, int]]]:
    out = []
    for weights, lengths, seed, epoch in configs:
        mix = taridx.Mixture([range(n) for n in lengths], weights, seed=seed, samples=10**15)
        mix.set_epoch(epoch)
        out.append([mix.locate(p) for p in itertools.chain(range(50), [10**15 - 1])])
    return out


def test_pickles_with_its_sources_and_epoch(folds):
    mix = taridx.Mixture(folds, [0.6, 0.3, 0.1], seed=4, samples=500)
    mix.set_epoch(7)
    copy = pickle.loads(pickle.dumps(mix))
    assert copy.epoch == 7 and repr(copy) == repr(mix)
    assert [copy[i] for i in range(0, 500, 37)] == [mix[i] for i in range(0, 500, 37)]
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        assert pool.map(_read, [pickle.dumps((mix, i)) for i in (0, 499)]) == [mix[0], mix[499]]


def _read(payload: bytes):
    mix, i = pickle.loads(payload)
    return mix[i]


def test_refusals():
    r = [range(3), range(4)]
    with pytest.raises(ValueError, match="at least one source"):
        taridx.Mixture([])
    with pytest.raises(TypeError, match=r"sources\[1\] is a int"):
        taridx.Mixture([range(3), 5])
    with pytest.raises(TypeError, match="sources must be a sequence"):
        taridx.Mixture(7)
    with pytest.raises(ValueError, match="1 weights for 2 sources"):
        taridx.Mixture(r, [1])
    with pytest.raises(TypeError, match=r"weights\[0\] must be a real number, not str"):
        taridx.Mixture(r, ["1", 2])
    with pytest.raises(TypeError, match=r"weights\[1\] must be a real number, not bool"):
        taridx.Mixture(r, [1, True])
    with pytest.raises(ValueError, match=r"weights\[1\] = -1"):
        taridx.Mixture(r, [1, -1])
    with pytest.raises(ValueError, match=r"weights\[0\] = nan"):
        taridx.Mixture(r, [float("nan"), 1])
    with pytest.raises(ValueError, match="every weight is 0"):
        taridx.Mixture(r, [0, 0.0])
    with pytest.raises(ValueError, match="weight 0.000001 of source 1 .* never be drawn"):
        taridx.Mixture(r, [1, 1e-6])
    with pytest.raises(ValueError, match="source 1 has no samples"):
        taridx.Mixture([range(3), []], [1, 1])
    with pytest.raises(ValueError, match="samples = 9223372036854775808"):
        taridx.Mixture(r, samples=2**63)
    with pytest.raises(OverflowError, match="the sources hold 9223372036854775808 samples"):
        taridx.Mixture([range(2**62)] * 2)
    with pytest.raises(ValueError, match="samples = -1"):
        taridx.Mixture(r, samples=-1)
    with pytest.raises(TypeError, match="seed must be an integer"):
        taridx.Mixture(r, seed=1.5)
    mix = taridx.Mixture([range(3), []], [1, 0], samples=10)  # weight 0: may be empty
    assert {mix.locate(i)[0] for i in range(10)} == {0}
    with pytest.raises(IndexError, match="position 10 out of range"):
        mix[10]
    with pytest.raises(TypeError, match="integers, not str"):
        mix["1"]
    with pytest.raises(ValueError, match="epoch"):
        mix.set_epoch(-1)


# --- with the sampler -------------------------------------------------------------


def test_the_sampler_follows_and_deals_the_mixture(folds):
    mix = taridx.Mixture(folds, [0.5, 0.3, 0.2], seed=1)
    mix.set_epoch(9)
    ranks = [taridx.Sampler(mix, shuffle=False, rank=r, world_size=3) for r in range(3)]
    assert mix.epoch == 0  # the sampler's epoch rules
    for sampler in ranks:
        sampler.set_epoch(5)
    assert mix.epoch == 5
    shares = [list(sampler) for sampler in ranks]
    assert [p for k in range(len(shares[0])) for p in (s[k] for s in shares)][: len(mix)] == list(range(len(mix)))
    # A shuffled sampler over a mixture is allowed (only the expected shares hold).
    shuffled = taridx.Sampler(mix, seed=2)
    assert sorted(shuffled) == list(range(len(mix)))
    # Anything with __len__ is a dataset for the sampler.
    assert len(taridx.Sampler([1, 2, 3])) == 3
    with pytest.raises(TypeError, match="anything with __len__"):
        taridx.Sampler(2.5)


def check_resume(folds, w_old: int, w_new: int, drop_last: bool, rng: random.Random) -> None:
    def mixture():
        return taridx.Mixture(folds, [0.6, 0.25, 0.15], seed=21, samples=301)

    mix = mixture()
    n = len(mix)
    old = [taridx.Sampler(mix, shuffle=False, rank=r, world_size=w_old, drop_last=drop_last) for r in range(w_old)]
    for sampler in old:
        sampler.set_epoch(3)
    items = {p: mix.locate(p) for p in range(n)}  # epoch 3's (source, sample) by position
    per_rank = rng.randrange(len(old[0]) + 1)
    consumed = [list(itertools.islice(sampler, per_rank)) for sampler in old]
    seen = per_rank * w_old
    state = json.loads(json.dumps(old[rng.randrange(w_old)].state_dict(seen)))
    assert state["dataset"]["kind"] == "mixture"

    fresh = mixture()  # a new process: a new mixture object, at epoch 0
    new = [taridx.Sampler.load_state_dict(state, fresh, rank=r, world_size=w_new) for r in range(w_new)]
    assert fresh.epoch == 3
    shares = [list(sampler) for sampler in new]
    count = len(shares[0])
    dealt = [share[k] for k in range(count) for share in shares]
    remaining = n - min(seen, n)
    consumed_positions = [share[k] for k in range(per_rank) for share in consumed]
    assert consumed_positions == list(range(seen)) or seen > n
    if drop_last:
        assert len(dealt) == remaining - remaining % w_new
        assert dealt == list(range(min(seen, n), min(seen, n) + len(dealt)))
    else:
        # Every position of the epoch exactly once overall; padding from its start.
        assert Counter(itertools.chain(*consumed, dealt[:remaining])) == Counter(range(n))
        assert dealt[remaining:] == list(range(len(dealt) - remaining))
    # The positions read the same samples after the resume.
    assert all(fresh.locate(p) == items[p] for p in dealt)
    for p in dealt[:5]:
        s, sample = items[p]
        assert fresh[p][".cls"] == f"{'abc'[s]}:{sample}".encode()


@pytest.mark.parametrize("w_old, w_new", [(1, 4), (4, 3), (8, 2)])
@pytest.mark.parametrize("drop_last", [False, True])
def test_resume_with_another_world_size(folds, w_old, w_new, drop_last):
    rng = random.Random(w_old * 10 + w_new + drop_last)
    for _ in range(6):
        check_resume(folds, w_old, w_new, drop_last, rng)


def test_a_state_resumes_only_its_mixture(folds):
    mix = taridx.Mixture(folds, [0.6, 0.25, 0.15], seed=21, samples=301)
    state = taridx.Sampler(mix, shuffle=False, world_size=2).state_dict(10)
    same = taridx.Mixture(folds, [60, 25, 15], seed=21, samples=301)  # same quotas
    assert taridx.Sampler.load_state_dict(state, same).start == 10
    others = {
        "seed": taridx.Mixture(folds, [0.6, 0.25, 0.15], seed=22, samples=301),
        "sha256": taridx.Mixture(folds, [0.5, 0.35, 0.15], seed=21, samples=301),
        "sources": taridx.Mixture(folds[:2], [0.6, 0.25], seed=21, samples=301),
    }
    for key, other in others.items():
        with pytest.raises(taridx.SamplerStateError, match=f"another mixture: .*{key} "):
            taridx.Sampler.load_state_dict(state, other)
    # Other lengths of the sources: the digest differs.
    lists = taridx.Mixture([range(len(f)) for f in folds[:2]] + [range(6)], [0.6, 0.25, 0.15], seed=21, samples=301)
    with pytest.raises(taridx.SamplerStateError, match="sha256"):
        taridx.Sampler.load_state_dict(state, lists)
    with pytest.raises(taridx.SamplerStateError, match="samples; this dataset has 300"):
        taridx.Sampler.load_state_dict(state, taridx.Mixture(folds, [0.6, 0.25, 0.15], seed=21, samples=300))
    # A mixture's state into a plain length, and a plain state into a mixture.
    with pytest.raises(taridx.SamplerStateError, match="of a 'mixture' dataset"):
        taridx.Sampler.load_state_dict(state, 301)
    plain = taridx.Sampler(301, shuffle=False).state_dict(0)
    with pytest.raises(taridx.SamplerStateError, match="not of a mixture"):
        taridx.Sampler.load_state_dict(plain, mix)
    # States written before mixtures (no "dataset") load into plain datasets.
    old = {k: v for k, v in plain.items() if k != "dataset"}
    assert len(taridx.Sampler.load_state_dict(old, 301)) == 301


def test_a_sampler_pickles_with_its_mixture(folds):
    mix = taridx.Mixture(folds, [0.6, 0.25, 0.15], seed=2)
    sampler = taridx.Sampler(mix, shuffle=False, rank=1, world_size=2)
    sampler.set_epoch(4)
    copy = pickle.loads(pickle.dumps(sampler))
    copy_mix = copy._dataset
    assert copy_mix is not mix and copy_mix.epoch == 4 and list(copy) == list(sampler)
    copy.set_epoch(6)
    assert copy_mix.epoch == 6 and mix.epoch == 4


def test_get_batch_is_mix_i_read_per_source(folds):
    """``get_batch`` gives ``mix[i]`` for each index, in order (repeats and
    negative positions too), each source's share read by one call of its
    own ``get_batch``; a source without one is read item by item; a bad
    position fails before anything is read."""
    calls = []

    class Counting:
        def __init__(self, dataset):
            self.dataset = dataset

        def __len__(self):
            return len(self.dataset)

        def __getitem__(self, i):
            return self.dataset[i]

        def get_batch(self, indices):
            calls.append(list(indices))
            return self.dataset.get_batch(indices)

    plain = [{"n": i} for i in range(37)]
    mix = taridx.Mixture([Counting(folds[0]), Counting(folds[1]), plain], [3, 2, 1], seed=9)
    mix.set_epoch(2)
    rng = random.Random(4)
    indices = [rng.randrange(len(mix)) for _ in range(200)] + [5, 5, -1]
    assert mix.get_batch(indices) == [mix[i] for i in indices]
    assert len(calls) == 2 and sum(len(c) for c in calls) == sum(
        1 for i in indices if mix.locate(i)[0] < 2
    )
    assert mix.get_batch([]) == []
    with pytest.raises(IndexError):
        mix.get_batch([0, len(mix)])
    assert len(calls) == 2
