"""binfmt.taridx.Stream: a sampler's worker shares read ahead in groups by a
background thread, the same samples in the same order as ``ds[i]``, every
sample of an epoch once across ranks and workers (resumed too), errors at
their position, no thread left behind, over a Mixture and in spawned
processes. No PyTorch: workers are named with ``for_worker``."""

from __future__ import annotations

import gc
import itertools
import multiprocessing
import os
import pickle
import threading
from collections import Counter

import pytest
from conftest import cls_fold

import binfmt
import binfmt.taridx as taridx

#: Shard sizes of the test fold: uneven, one of a single sample.
SHARD_SIZES = [13, 7, 20, 1, 9, 30]


def write_fold(root, name: str = "train", sizes=SHARD_SIZES) -> taridx.Dataset:
    """A fold of shards of ``sizes`` samples (``.cls``: the sample's number)."""
    return cls_fold(root, name, sizes)


@pytest.fixture(scope="module")
def fold(tmp_path_factory) -> taridx.Dataset:
    return write_fold(tmp_path_factory.mktemp("stream"))


def numbers(samples) -> list[int]:
    return [int(s[".cls"]) for s in samples]


def loader_order(parts: list[list], batch: int) -> list:
    """What a DataLoader over an IterableDataset yields: batch ``b`` from
    worker ``b % workers``, skipping workers that are done."""
    batches = [[part[i : i + batch] for i in range(0, len(part), batch)] for part in parts]
    out = []
    for round_ in itertools.zip_longest(*batches):
        for b in round_:
            if b is not None:
                out.extend(b)
    return out


@pytest.mark.parametrize("world, workers, batch", [(1, 1, 1), (2, 3, 1), (3, 2, 5), (4, 4, 3), (1, 3, 64)])
@pytest.mark.parametrize("batch_read, prefetch", [(1, 1), (4, 2), (64, 3)])
def test_same_samples_in_the_same_order(fold, world, workers, batch, batch_read, prefetch):
    every = []
    for rank in range(world):
        sampler = taridx.Sampler(fold, seed=5, rank=rank, world_size=world, chunk_size=4)
        sampler.set_epoch(2)
        stream = taridx.Stream(fold, sampler, batch_size=batch, prefetch=prefetch, batch_read=batch_read)
        parts = []
        for worker in range(workers):
            mine = stream.for_worker(worker, workers)
            expected = [fold[i] for i in sampler.worker_share(worker, workers, batch_size=batch)]
            got = list(mine)
            assert got == expected
            assert len(mine) == len(expected)
            parts.append(numbers(got))
        # The rank consumes its share in order.
        assert loader_order(parts, batch) == list(sampler)
        every.extend(itertools.chain(*parts))
    # All ranks and workers: the epoch once, plus the padding of the last round.
    n = len(fold)
    counts = Counter(every)
    assert set(counts) == set(range(n))
    assert len(every) == -(-n // world) * world
    assert len(every) - n < world and max(counts.values()) <= 2


def test_resume_with_other_workers_covers_the_epoch_once(fold):
    batch, old_world, old_workers = 2, 3, 2
    old = [taridx.Sampler(fold, seed=11, rank=r, world_size=old_world) for r in range(old_world)]
    streams = []
    for sampler in old:
        sampler.set_epoch(1)
        stream = taridx.Stream(fold, sampler, batch_size=batch, batch_read=3)
        parts = [numbers(stream.for_worker(j, old_workers)) for j in range(old_workers)]
        streams.append(loader_order(parts, batch))
    steps = 5  # the loop stops after 5 steps of 3 ranks × 2
    consumed = [stream[: steps * batch] for stream in streams]
    state = old[0].state_dict(steps * batch * old_world)

    new_world, new_workers = 2, 3
    rest = []
    for rank in range(new_world):
        sampler = taridx.Sampler.load_state_dict(state, fold, rank=rank, world_size=new_world)
        stream = taridx.Stream(fold, sampler, batch_size=batch, batch_read=5)
        parts = [numbers(stream.for_worker(j, new_workers)) for j in range(new_workers)]
        rest.append(loader_order(parts, batch))
    g = taridx.Sampler(fold, seed=11).order(1).tolist()
    seen = steps * batch * old_world
    dealt = [share[k] for k in range(len(rest[0])) for share in rest]
    assert dealt[: len(g) - seen] == g[seen:]
    assert Counter(itertools.chain(*consumed, dealt[: len(g) - seen])) == Counter(range(len(g)))


def test_a_truncated_shard_fails_at_its_position(tmp_path):
    ds = write_fold(tmp_path)
    os.truncate(ds.shards[2], 0)  # samples 20..39
    ds = taridx.Dataset(str(tmp_path / "train.taridx"))
    sampler = taridx.Sampler(ds, seed=3)
    order = list(sampler)
    # ds[i] one by one: the samples before the first bad one, then its error.
    expected = []
    for i in order:
        try:
            expected.append(ds[i])
        except (binfmt.BinfmtError, OSError) as error:
            kind = type(error)
            break
    else:
        pytest.fail("the truncated shard read")
    assert 0 < len(expected) < len(order)
    for batch_read in (1, 8, 100):
        got = []
        iterator = iter(taridx.Stream(ds, sampler, batch_read=batch_read, prefetch=2))
        with pytest.raises(kind):
            for sample in iterator:
                got.append(sample)
        assert got == expected
        with pytest.raises(StopIteration):
            next(iterator)  # over after the error


def test_a_plain_sequence_and_its_errors():
    class Flaky(list):
        def __getitem__(self, i):
            if i == 17:
                raise KeyError("sample 17")
            return list.__getitem__(self, i)

    data = Flaky(range(40))
    sampler = taridx.Sampler(data, shuffle=False)
    got = []
    with pytest.raises(KeyError, match="sample 17"):
        for item in taridx.Stream(data, sampler, batch_read=5):
            got.append(item)
    assert got == list(range(17))


def reader_threads() -> int:
    return sum(t.name == "binfmt-stream-reader" for t in threading.enumerate())


def test_early_stop_leaves_no_thread(fold):
    before = threading.active_count()
    sampler = taridx.Sampler(fold, seed=1)
    stream = taridx.Stream(fold, sampler, prefetch=1, batch_read=2)
    for count, _ in enumerate(stream):
        if count == 3:
            break  # the iterator is dropped here
    gc.collect()
    assert reader_threads() == 0 and threading.active_count() == before
    iterator = iter(stream)
    assert next(iterator) == fold[next(iter(sampler))]
    assert reader_threads() == 1
    iterator.close()
    assert reader_threads() == 0 and threading.active_count() == before
    with pytest.raises(StopIteration):
        next(iterator)
    # A finished pass stops its thread too.
    assert len(list(stream)) == len(fold)
    assert threading.active_count() == before
    # Many passes abandoned while the reader is blocked on a full queue.
    for _ in range(20):
        iterator = iter(stream)
        next(iterator)
        del iterator
    gc.collect()
    assert threading.active_count() == before


def test_over_a_mixture(tmp_path):
    a = write_fold(tmp_path, "a", [10, 5])
    b = write_fold(tmp_path, "b", [7])
    mix = taridx.Mixture([a, b], weights=[0.6, 0.4], seed=2, samples=50)
    # Read by the mixture's get_batch: each source's share in one call.
    assert callable(mix.get_batch)
    for world in (1, 2):
        for rank in range(world):
            sampler = taridx.Sampler(mix, shuffle=False, rank=rank, world_size=world)
            sampler.set_epoch(3)
            stream = taridx.Stream(mix, sampler, batch_size=2, batch_read=4)
            for j in range(2):
                got = list(stream.for_worker(j, 2))
                assert got == [mix[i] for i in sampler.worker_share(j, 2, batch_size=2)]
                assert {s["__source__"] for s in got} <= {0, 1} and mix.epoch == 3


def _spawned(payload: bytes) -> list[int]:
    stream = pickle.loads(payload)
    return [int(s[".cls"]) for s in stream]


def test_spawned_workers(fold):
    sampler = taridx.Sampler(fold, seed=7, rank=1, world_size=2, chunk_size=5)
    stream = taridx.Stream(fold, sampler, batch_size=3, batch_read=4)
    jobs = [pickle.dumps(stream.for_worker(j, 2)) for j in range(2)]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        parts = pool.map(_spawned, jobs)
    assert loader_order(parts, 3) == list(sampler)
    assert [len(stream.for_worker(j, 2)) for j in range(2)] == [len(p) for p in parts]


def test_arguments(fold):
    sampler = taridx.Sampler(fold)
    with pytest.raises(TypeError, match="dataset"):
        taridx.Stream(42, sampler)
    with pytest.raises(TypeError, match="sampler"):
        taridx.Stream(fold, [1, 2, 3])
    with pytest.raises(ValueError, match="sampler is of 7 samples"):
        taridx.Stream(fold, taridx.Sampler(7))
    for name in ("batch_size", "prefetch", "batch_read"):
        with pytest.raises(ValueError, match=name):
            taridx.Stream(fold, sampler, **{name: 0})
        with pytest.raises(TypeError, match=name):
            taridx.Stream(fold, sampler, **{name: 2.0})
    stream = taridx.Stream(fold, sampler)
    with pytest.raises(ValueError, match="worker_id"):
        stream.for_worker(3, 3)
    with pytest.raises(ValueError, match="num_workers"):
        stream.for_worker(0, 0)
    with pytest.raises(TypeError, match="worker_id"):
        stream.for_worker("0", 2)
    assert stream.worker == (0, 1) and len(stream) == len(fold)
    assert stream.for_worker(1, 4).worker == (1, 4)


def test_set_epoch_and_pickle(fold):
    sampler = taridx.Sampler(fold, seed=8)
    stream = taridx.Stream(fold, sampler, batch_size=4)
    stream.set_epoch(5)
    assert sampler.epoch == 5
    copy = pickle.loads(pickle.dumps(stream.for_worker(1, 3)))
    assert copy.worker == (1, 3) and copy.sampler.epoch == 5
    assert list(copy) == list(stream.for_worker(1, 3))


def _without_shard(samples) -> list[dict]:
    return [{k: v for k, v in s.items() if k != "__shard__"} for s in samples]


def test_over_a_remote_fold_reads_merged_ranges(tmp_path):
    """Over HTTP: every worker's share is the local fold's, sample for
    sample; a pass over a fresh dataset fetches no byte range twice and
    makes a few merged range requests per group, not one per sample."""
    from test_remote import RangeHandler, serve

    sizes = [40, 25, 35]
    local = write_fold(tmp_path, sizes=sizes)
    with serve(tmp_path, RangeHandler) as (url, requests):
        remote = taridx.Dataset(f"{url}/train.taridx")
        for world, workers in ((1, 1), (2, 3)):
            for rank in range(world):
                sampler = taridx.Sampler(local, seed=3, rank=rank, world_size=world, chunk_size=8)
                for worker in range(workers):
                    expected = list(taridx.Stream(local, sampler, batch_read=16).for_worker(worker, workers))
                    got = list(taridx.Stream(remote, sampler, batch_read=16).for_worker(worker, workers))
                    assert _without_shard(got) == _without_shard(expected)
                    assert {s["__shard__"] for s in got} <= set(remote.shards)
        # Chunks of (at most) 10 consecutive samples of a shard: each
        # fetched by one merged request (spec/remote.md: merging never more
        # than doubles the bytes, so scattered picks are fetched apart).
        fresh = taridx.Dataset(f"{url}/train.taridx")
        sampler = taridx.Sampler(fresh, seed=4, chunk_size=10)
        del requests[:]
        got = list(taridx.Stream(fresh, sampler, batch_read=20, prefetch=2))
        assert numbers(got) == list(sampler)
        ranges = [r for r in requests if r[2]]
        assert len(set(ranges)) == len(ranges) == len(requests)
        opens = len(sizes)  # one tail request per shard opened
        chunks = sum(-(-size // 10) for size in sizes)
        assert len(ranges) - opens == chunks, requests


def test_over_an_s3_fold(tmp_path, s3_env):
    """The same fold published to the S3 server: every sample of the epoch
    in the sampler's order, equal to the local fold's."""
    import time
    import uuid

    local = write_fold(tmp_path, sizes=[30, 50, 20])
    prefix = f"s3://{s3_env}/py-stream-{uuid.uuid4().hex}-{int(time.time())}"
    taridx.index(local.shards, f"{prefix}/train.taridx")
    remote = taridx.Dataset(f"{prefix}/train.taridx")
    assert len(remote) == len(local)
    for rank in range(2):
        sampler = taridx.Sampler(local, seed=9, rank=rank, world_size=2, chunk_size=5)
        sampler.set_epoch(1)
        got = list(taridx.Stream(remote, sampler, batch_size=4, batch_read=16))
        assert _without_shard(got) == _without_shard(local[i] for i in sampler)


def test_close_stops_the_sample_by_sample_retry():
    """Found from outside: after a group's read failed (a stalled server),
    the reader went on reading the group sample by sample, each read
    waiting for the server's timeout, and close() waited for all of them.
    After close(), no further sample is read."""
    entered, release, calls = threading.Event(), threading.Event(), []

    class Stalling:
        def __len__(self):
            return 40

        def get_batch(self, group):
            raise OSError("the server stalled")

        def __getitem__(self, i):
            calls.append(i)
            entered.set()
            release.wait()
            return i

    stream = taridx.Stream(Stalling(), taridx.Sampler(40, seed=1), batch_read=8, prefetch=1)
    iterator = iter(stream)
    assert entered.wait(30)
    closer = threading.Thread(target=iterator.close)
    closer.start()
    while not iterator._stop.is_set():
        closer.join(0.01)
    release.set()
    closer.join()
    assert len(calls) == 1 and not any(t.name == "binfmt-stream-reader" for t in threading.enumerate())
