"""binfmt.taridx.Sampler: the orders of spec/sampler.md (its test vectors,
the same in every process), permutations, exact resume over a changed
world size (with chunks, drop_last and padding), DataLoader-style worker
splitting in spawned processes, and constant memory. No PyTorch: the
DataLoader is a harness that deals batches as it does."""

from __future__ import annotations

import itertools
import json
import multiprocessing
import pathlib
import pickle
import random
import subprocess
import sys
import tracemalloc
from collections import Counter
from typing import Optional

import numpy as np
import pytest
from conftest import cls_fold

import binfmt.taridx as taridx
from binfmt import _binfmt

SPEC = pathlib.Path(__file__).resolve().parents[3] / "spec" / "sampler.md"
#: Shard sizes of the test fold: uneven, one of a single sample.
SHARD_SIZES = [13, 7, 20, 1, 9, 30]


def spec_vectors() -> list[tuple[int, int, int, Optional[int], list[int], list[int]]]:
    """The rows of spec/sampler.md §6."""
    table = SPEC.read_text().split("## 6. Test vectors")[1]
    rows = []
    for line in table.splitlines():
        cells = [c.strip() for c in line.split("|")][1:-1]
        if len(cells) != 6 or not cells[0].isdigit():
            continue
        numbers = [[int(v) for v in c.split(",")] if c != "-" else [] for c in cells[3:]]
        size = numbers[0][0] if numbers[0] else None
        rows.append((int(cells[0]), int(cells[1]), int(cells[2]), size, numbers[1], numbers[2]))
    return rows


@pytest.fixture(scope="module")
def fold(tmp_path_factory) -> taridx.Dataset:
    """A dataset of shards of SHARD_SIZES samples, written with tarfile."""
    return cls_fold(tmp_path_factory.mktemp("sampler"), "train", SHARD_SIZES)


def shard_runs(ds: taridx.Dataset) -> list[int]:
    """Each sample's shard."""
    return ds.sample_shards().tolist()


# --- the order ---------------------------------------------------------------


def test_spec_test_vectors():
    rows = spec_vectors()
    assert len(rows) >= 6
    for seed, epoch, n, size, starts, values in rows:
        native = _binfmt._EpochOrder(n, seed, epoch, True, size, starts)
        assert native.take(0, 1, len(values)).tolist() == values, (seed, epoch, n, size)
        if not starts:
            sampler = taridx.Sampler(n, seed=seed, chunk_size=size)
            sampler.set_epoch(epoch)
            assert list(itertools.islice(sampler, len(values))) == values


def _first_values(configs: list[tuple[int, int, int, Optional[int]]]) -> list[list[int]]:
    out = []
    for n, seed, epoch, chunk in configs:
        sampler = taridx.Sampler(n, seed=seed, chunk_size=chunk, rank=1, world_size=3)
        sampler.set_epoch(epoch)
        out.append(list(itertools.islice(sampler, 50)))
    return out


CONFIGS = [(1000, 0, 0, None), (10**12, 7, 3, None), (10**9, 2**64 - 1, 2**64 - 1, 4096), (77, 5, 1, 3)]


def test_the_same_in_every_process():
    here = _first_values(CONFIGS)
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        assert pool.apply(_first_values, (CONFIGS,)) == here
    # A fresh interpreter, another hash seed.
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import test_sampler as t; "
        f"print(json.dumps(t._first_values({CONFIGS!r})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(pathlib.Path(__file__).parent)],
        env={"PYTHONHASHSEED": "12345", "PATH": ""},
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout) == here


@pytest.mark.parametrize("n", [0, 1, 2, 3, 1000, 2**16, 2**16 + 1, 10**6])
def test_orders_are_permutations(n):
    for chunk in (None, 1, 5, 4096):
        order = taridx.Sampler(n, seed=n, chunk_size=chunk).order()
        assert order.dtype == np.int64 and np.array_equal(np.sort(order), np.arange(n))


def test_large_orders_sampled():
    rng = random.Random(1)
    for n in (10**9, 2**40, 2**63 - 1):
        for chunk, starts in ((None, None), (4096, [n // 3, n // 2 + 1])):
            native = _binfmt._EpochOrder(n, 3, 1, True, chunk, starts)
            positions = {rng.randrange(n) for _ in range(2000)} | {0, n - 1}
            values = {p: native.get(p) for p in positions}
            assert len(set(values.values())) == len(values)
            assert all(0 <= v < n and native.position_of(v) == p for p, v in values.items())


def test_chunks_stay_within_shards(fold):
    fids = shard_runs(fold)
    sampler = taridx.Sampler(fold, seed=5, chunk_size=4)
    order = list(sampler)
    assert sorted(order) == list(range(len(fold))) and order != sorted(order)
    # Chunks: shard runs cut every 4 samples; each fills consecutive positions.
    chunk_of = {}
    for fid, size in enumerate(SHARD_SIZES):
        base = sum(SHARD_SIZES[:fid])
        for k in range(size):
            chunk_of[base + k] = (fid, k // 4)
    blocks = [key for key, _ in itertools.groupby(chunk_of[i] for i in order)]
    assert len(blocks) == len(set(blocks)) == sum(-(-s // 4) for s in SHARD_SIZES)
    assert all(len({fids[i] for i in group}) == 1 for _, group in itertools.groupby(order, key=chunk_of.get))


def test_iteration_holds_constant_memory():
    sampler = taridx.Sampler(10**12, seed=0)
    tracemalloc.start()
    try:
        total = sum(1 for _ in itertools.islice(sampler, 300_000))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert total == 300_000 and peak < 8 * 2**20, peak


# --- resume ----------------------------------------------------------------------


def interleave(shares: list[list[int]], count: int) -> list[int]:
    """The first ``count`` samples of each share, dealt round-robin."""
    return [share[k] for k in range(count) for share in shares]


def check_resume(data, w_old: int, w_new: int, chunk: Optional[int], drop_last: bool, rng) -> None:
    n = data if isinstance(data, int) else len(data)
    old = [
        taridx.Sampler(data, seed=9, rank=r, world_size=w_old, chunk_size=chunk, drop_last=drop_last)
        for r in range(w_old)
    ]
    for sampler in old:
        sampler.set_epoch(4)
    g = taridx.Sampler(data, seed=9, chunk_size=chunk).order(4).tolist()  # the epoch's global order
    per_rank = rng.randrange(len(old[0]) + 1)
    consumed = [list(itertools.islice(sampler, per_rank)) for sampler in old]
    seen = per_rank * w_old
    assert interleave(consumed, per_rank) == g[:seen]

    state = json.loads(json.dumps(old[0].state_dict(seen)))
    assert state == old[w_old - 1].state_dict(seen) and len(json.dumps(state)) < 400
    new = [taridx.Sampler.load_state_dict(state, data, rank=r, world_size=w_new) for r in range(w_new)]
    for sampler in new:
        sampler.set_epoch(4)  # the loop's own set_epoch keeps the resume
    shares = [list(sampler) for sampler in new]
    lengths = {len(share) for share in shares}
    assert lengths == {len(new[0])}, lengths
    count = lengths.pop()

    remaining = n - min(seen, n)
    dealt = interleave(shares, count)
    expected = [g[p % n] for p in range(min(seen, n), min(seen, n) + count * w_new)]
    assert dealt == expected
    if drop_last:
        assert len(dealt) == remaining - remaining % w_new
    else:
        # Every sample of the epoch exactly once; the rest is padding from its start.
        once = Counter(itertools.chain(*consumed, dealt[:remaining]))
        assert once == Counter(range(n)) or (drop_last and set(once.values()) == {1})
        assert dealt[remaining:] == [g[p % n] for p in range(len(dealt) - remaining)]


@pytest.mark.parametrize("w_old, w_new", [(1, 4), (4, 3), (8, 2), (3, 3), (2, 7)])
@pytest.mark.parametrize("chunk", [None, 4])
@pytest.mark.parametrize("drop_last", [False, True])
def test_resume_with_another_world_size(fold, w_old, w_new, chunk, drop_last):
    rng = random.Random(w_old * 100 + w_new)
    for data in (fold, 1001):
        for _ in range(4):
            check_resume(data, w_old, w_new, chunk, drop_last, rng)


def test_resume_chains_and_next_epochs(fold):
    state = taridx.Sampler(fold, seed=2, chunk_size=3, world_size=4).state_dict(8)
    g = taridx.Sampler(fold, seed=2, chunk_size=3).order().tolist()
    three = [taridx.Sampler.load_state_dict(state, fold, rank=r, world_size=3) for r in range(3)]
    assert three[0].start == 8
    taken = interleave([list(itertools.islice(s, 5)) for s in three], 5)
    state = three[1].state_dict(8 + 15)
    eight = [taridx.Sampler.load_state_dict(state, fold, rank=r, world_size=8) for r in range(8)]
    rest = interleave([list(s) for s in eight], len(eight[0]))
    assert g[:8] + taken + rest[: len(g) - 23] == g
    # The next epoch starts at its first position, with the new world size.
    eight[0].set_epoch(1)
    assert eight[0].start == 0 and len(eight[0]) == -(-len(fold) // 8)
    assert list(eight[0]) == taridx.Sampler(fold, seed=2, chunk_size=3, world_size=8).order(1).tolist()


def test_a_finished_epoch_resumes_empty():
    sampler = taridx.Sampler(10, world_size=4)  # 12 positions with padding
    state = sampler.state_dict(12)
    assert state["samples_seen"] == 10
    assert [list(taridx.Sampler.load_state_dict(state, 10, rank=r, world_size=3)) for r in range(3)] == [[], [], []]


def test_state_refusals(fold):
    sampler = taridx.Sampler(fold, seed=1, chunk_size=4, world_size=2)
    state = sampler.state_dict(6)
    with pytest.raises(taridx.SamplerStateError, match=f"of {len(fold)} samples; this dataset has 79"):
        taridx.Sampler.load_state_dict(state, 79)
    with pytest.raises(taridx.SamplerStateError, match="runs"):
        taridx.Sampler.load_state_dict(state, len(fold))  # a length has no shard runs
    with pytest.raises(taridx.SamplerStateError, match="version"):
        taridx.Sampler.load_state_dict({**state, "version": 2}, fold)
    with pytest.raises(taridx.SamplerStateError, match="'seed'"):
        taridx.Sampler.load_state_dict({k: v for k, v in state.items() if k != "seed"}, fold)
    with pytest.raises(taridx.SamplerStateError, match="samples_seen"):
        taridx.Sampler.load_state_dict({**state, "samples_seen": len(fold) + 1}, fold)
    with pytest.raises(taridx.SamplerStateError, match="shuffle"):
        taridx.Sampler.load_state_dict({**state, "shuffle": 1}, fold)
    with pytest.raises(taridx.SamplerStateError, match="dict"):
        taridx.Sampler.load_state_dict([("version", 1)], fold)
    assert issubclass(taridx.SamplerStateError, ValueError)
    # Unchunked states need no shard runs: a length does.
    plain = taridx.Sampler(fold, seed=1).state_dict(3)
    assert list(taridx.Sampler.load_state_dict(plain, len(fold))) == list(taridx.Sampler.load_state_dict(plain, fold))
    with pytest.raises(ValueError, match="samples_seen"):
        sampler.state_dict(len(fold) + 2)
    resumed = taridx.Sampler.load_state_dict(state, fold)
    with pytest.raises(ValueError, match="seen before it was loaded"):
        resumed.state_dict(5)
    with pytest.raises(ValueError, match="rank"):
        taridx.Sampler.load_state_dict(state, fold, rank=2, world_size=2)


# --- DataLoader workers ---------------------------------------------------------


@pytest.mark.parametrize("workers, batch", [(1, 1), (3, 1), (2, 5), (4, 3)])
def test_workers_split_a_share_in_batches(workers, batch):
    sampler = taridx.Sampler(1000, seed=3, rank=1, world_size=3)
    share = list(sampler)
    parts = [list(sampler.worker_share(j, workers, batch_size=batch)) for j in range(workers)]
    assert loader_order(parts, batch) == share


def loader_order(parts: list[list[int]], batch: int) -> list[int]:
    """What a DataLoader over an IterableDataset yields: batch ``b`` from
    worker ``b % workers``, skipping workers that are done."""
    batches = [[part[i : i + batch] for i in range(0, len(part), batch)] for part in parts]
    out = []
    for round_ in itertools.zip_longest(*batches):
        for b in round_:
            if b is not None:
                out.extend(b)
    return out


def _worker(payload: bytes) -> list[int]:
    """A spawned DataLoader worker: its sampler arrives pickled."""
    sampler, worker, workers, batch = pickle.loads(payload)
    return list(sampler.worker_share(worker, workers, batch_size=batch))


def run_loader(pool, samplers, workers: int, batch: int) -> list[list[int]]:
    """Each rank's stream through ``workers`` spawned workers."""
    jobs = [pickle.dumps((s, j, workers, batch)) for s in samplers for j in range(workers)]
    parts = pool.map(_worker, jobs)
    return [loader_order(parts[r * workers : (r + 1) * workers], batch) for r in range(len(samplers))]


def test_dataloader_harness_resumes_with_other_workers(fold):
    batch = 2
    g = taridx.Sampler(fold, seed=11, chunk_size=5).order(2).tolist()
    old = [taridx.Sampler(fold, seed=11, chunk_size=5, rank=r, world_size=3) for r in range(3)]
    for sampler in old:
        sampler.set_epoch(2)
    with multiprocessing.get_context("spawn").Pool(3) as pool:
        streams = run_loader(pool, old, workers=2, batch=batch)
        assert streams == [list(s) for s in old]
        steps = 7  # the loop stops after 7 steps of 3 ranks × 2
        consumed = [stream[: steps * batch] for stream in streams]
        state = old[0].state_dict(steps * batch * 3)
        new = [taridx.Sampler.load_state_dict(state, fold, rank=r, world_size=2) for r in range(2)]
        resumed = run_loader(pool, new, workers=3, batch=batch)
    seen = steps * batch * 3
    assert interleave(consumed, steps * batch) == g[:seen]
    assert interleave(resumed, len(resumed[0]))[: len(g) - seen] == g[seen:]
    assert Counter(itertools.chain(*consumed, interleave(resumed, len(resumed[0]))[: len(g) - seen])) == Counter(range(len(g)))


def test_sampler_pickles_without_its_order(fold):
    sampler = taridx.Sampler(fold, seed=4, chunk_size=8, rank=1, world_size=2)
    list(sampler)
    copy = pickle.loads(pickle.dumps(sampler))
    assert list(copy) == list(sampler) and repr(copy) == repr(sampler)
