"""The real ``torch.utils.data.DataLoader`` over binfmt's loaders, when torch
is installed (it is too large for CI: these tests are skipped without it;
test_stream.py's harness covers the same orders without torch).

- map-style: ``DataLoader(ds, sampler=Sampler)`` yields the sampler's order;
- iterable: ``DataLoader(Stream)`` with 0, 2 and 3 worker processes consumes
  the rank's share in order;
- resume: ranks with DataLoader workers stop mid-epoch, a new world size with
  another number of workers resumes, and every sample of the epoch is seen
  once."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
from conftest import cls_fold

import binfmt.taridx as taridx

torch_data = pytest.importorskip("torch.utils.data", reason="torch is not installed")

SIZES = [17, 9, 30, 4, 21]


@pytest.fixture(scope="module")
def fold(tmp_path_factory) -> taridx.Dataset:
    return cls_fold(tmp_path_factory.mktemp("torch"), "train", SIZES)


def numbers(samples) -> list[int]:
    return [int(s[".cls"]) for s in samples]


def loader(dataset, **options):
    return torch_data.DataLoader(
        dataset,
        collate_fn=list,
        multiprocessing_context="spawn" if options.get("num_workers") else None,
        **options,
    )


def test_a_stream_is_an_iterable_dataset(fold):
    stream = taridx.Stream(fold, taridx.Sampler(fold, seed=1))
    assert isinstance(stream, torch_data.IterableDataset)


@pytest.mark.parametrize("workers", [0, 2])
def test_map_style_with_the_sampler(fold, workers):
    sampler = taridx.Sampler(fold, seed=3, rank=1, world_size=2, chunk_size=5)
    sampler.set_epoch(4)
    batches = list(loader(fold, sampler=sampler, batch_size=4, num_workers=workers))
    assert numbers(itertools.chain(*batches)) == list(sampler)


@pytest.mark.parametrize("workers", [0, 2, 3])
def test_iterable_stream_consumes_the_share_in_order(fold, workers):
    sampler = taridx.Sampler(fold, seed=5, rank=0, world_size=3)
    stream = taridx.Stream(fold, sampler, batch_size=4, batch_read=6)
    batches = list(loader(stream, batch_size=4, num_workers=workers))
    assert numbers(itertools.chain(*batches)) == list(sampler)


def test_resume_on_another_world_with_other_workers(fold):
    batch, seed = 3, 8
    old_world, old_workers, steps = 4, 2, 3
    consumed = []
    for rank in range(old_world):
        sampler = taridx.Sampler(fold, seed=seed, rank=rank, world_size=old_world)
        stream = taridx.Stream(fold, sampler, batch_size=batch)
        batches = loader(stream, batch_size=batch, num_workers=old_workers)
        consumed.extend(numbers(itertools.chain(*itertools.islice(batches, steps))))
    seen = steps * batch * old_world
    state = taridx.Sampler(fold, seed=seed, world_size=old_world).state_dict(seen)

    rest = []
    for rank in range(3):
        sampler = taridx.Sampler.load_state_dict(state, fold, rank=rank, world_size=3)
        stream = taridx.Stream(fold, sampler, batch_size=batch)
        rest.extend(numbers(itertools.chain(*loader(stream, batch_size=batch, num_workers=3))))
    n = len(fold)
    counts = Counter(consumed + rest)
    assert set(counts) == set(range(n))
    # Only the last round's padding repeats a sample.
    assert sum(counts.values()) - n < 3 and max(counts.values()) <= 2
