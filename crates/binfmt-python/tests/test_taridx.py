"""binfmt.taridx: indexing, the map-style Dataset, pickling into workers, the
sampler, and the same samples as webdataset / wids on ShardWriter shards."""

from __future__ import annotations

import glob
import multiprocessing
import os
import pickle
import sys
import tarfile
import types

import numpy as np
import pytest

import binfmt
import binfmt.taridx as taridx

from conftest import reference

SAMPLES = 60


def sample_data(i: int) -> dict[str, bytes]:
    return {
        "jpg": os.urandom(100 + 37 * i) if i % 7 else b"",
        "cls": str(i % 10).encode(),
        "json": f'{{"i": {i}}}'.encode(),
    }


@pytest.fixture(scope="module")
def wds_shards(tmp_path_factory):
    """Shards written by webdataset's ShardWriter (12 samples each), with
    the data of each sample."""
    wds = reference("webdataset")
    root = tmp_path_factory.mktemp("wds")
    data = {}
    with wds.ShardWriter(str(root / "shard-%06d.tar"), maxcount=12, verbose=0) as sink:
        for i in range(SAMPLES):
            key = f"sample{i:06d}"
            data[key] = sample_data(i)
            sink.write({"__key__": key, **data[key]})
    shards = sorted(glob.glob(str(root / "shard-*.tar")))
    index = str(root / "train.taridx")
    taridx.index(shards, index, key_rule="webdataset")
    return index, shards, data


def test_samples_in_order(wds_shards):
    index, shards, data = wds_shards
    ds = taridx.Dataset(index, shards)
    assert len(ds) == SAMPLES
    assert ds.key_rule == "webdataset"
    assert sorted(ds.extensions) == ["cls", "jpg", "json"]
    for i, key in enumerate(data):
        sample = ds[i]
        assert sample["__key__"] == key and sample["__index__"] == i
        assert sample["__shard__"] == shards[i // 12]
        assert {k: v for k, v in sample.items() if not k.startswith("__")} == {
            "." + ext: value for ext, value in data[key].items()
        }
    assert ds[-1]["__key__"] == f"sample{SAMPLES - 1:06d}"
    with pytest.raises(IndexError):
        ds[SAMPLES]
    assert [s["__key__"] for s in ds][:3] == list(data)[:3]
    assert ds.verify() > 0


def test_get_batch_is_many_samples_in_one_call(wds_shards):
    index, shards, data = wds_shards
    ds = taridx.Dataset(index, shards)
    picks = [5, 59, 0, 5, -1, 13, 24]
    expected = [ds[i] for i in picks]
    assert ds.get_batch(picks) == expected
    for kind in (np.int64, np.int32, np.uint16):
        assert ds.get_batch(np.array(picks if kind != np.uint16 else picks[:4], dtype=kind)) == (
            expected if kind != np.uint16 else expected[:4]
        )
    assert ds.get_batch(range(3)) == [ds[0], ds[1], ds[2]]
    assert ds.get_batch(iter([7])) == [ds[7]]
    assert ds.get_batch([]) == []
    assert [s["__key__"] for s in ds.get_batch(range(SAMPLES))] == list(data)
    # The errors of ds[i], before anything is read.
    for bad, error in (
        ([0, SAMPLES], IndexError),
        ([-SAMPLES - 1], IndexError),
        (np.array([3, SAMPLES + 5]), IndexError),
        (np.array([2**63 + 1], dtype=np.uint64), IndexError),
        ([0, "3"], TypeError),
        ([1.5], TypeError),
        (np.array([1.0]), TypeError),
        ([True], TypeError),
        (np.array([1, 0], dtype=bool), TypeError),
        ([b"3"], TypeError),
    ):
        with pytest.raises(error):
            ds.get_batch(bad)
    with pytest.raises(IndexError, match=f"sample {SAMPLES} out of range"):
        ds.get_batch([1, SAMPLES])
    zero_copy = taridx.Dataset(index, shards, zero_copy=True)
    batch = zero_copy.get_batch([3, 4])
    assert isinstance(batch[0][".jpg"], np.ndarray) and not batch[0][".jpg"].flags.writeable
    assert bytes(batch[1][".json"]) == data["sample000004"]["json"]
    filtered = ds.filter_extensions(["cls"])
    assert filtered.get_batch([2]) == [filtered[2]] and set(filtered[2]) == {
        "__key__", "__shard__", "__index__", ".cls"
    }


def test_lookup_by_key(wds_shards):
    index, shards, data = wds_shards
    ds = taridx.Dataset(index, shards)
    sample = ds.get("sample000042")
    assert sample["__index__"] == 42 and sample[".json"] == data["sample000042"]["json"]
    assert ds.get("no-such-sample") is None


def test_filter_extensions(wds_shards):
    index, shards, data = wds_shards
    ds = taridx.Dataset(index, shards).filter_extensions([".jpg", "cls"])
    assert len(ds) == SAMPLES
    assert set(ds[3]) == {"__key__", "__shard__", "__index__", ".jpg", ".cls"}
    with pytest.raises(binfmt.BinfmtError):
        taridx.Dataset(index, shards, extensions=["png"])


def mapped(path: str) -> list[tuple[int, int]]:
    ranges = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and fields[5] == path:
                start, end = (int(x, 16) for x in fields[0].split("-"))
                ranges.append((start, end))
    return ranges


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs /proc")
def test_zero_copy_members_are_views_of_the_shard_map(wds_shards):
    index, shards, data = wds_shards
    ds = taridx.Dataset(index, shards, zero_copy=True)
    sample = ds[13]
    view = sample[".jpg"]
    assert isinstance(view, np.ndarray) and view.dtype == np.uint8
    assert not view.flags.writeable
    assert bytes(view) == data["sample000013"]["jpg"]
    address = np.frombuffer(view, dtype=np.uint8).ctypes.data
    assert any(start <= address < end for start, end in mapped(shards[1]))
    with pytest.raises(ValueError):
        view[0] = 1
    del ds
    assert bytes(view) == data["sample000013"]["jpg"]  # the view keeps the map


def test_zero_copy_samples_survive_dataloader_workers(wds_shards):
    """Issue 28: zero_copy samples were memoryviews, which cannot be pickled,
    so a DataLoader worker could not return them. They pickle as copies, and
    come back through a real worker process."""
    import multiprocessing
    import pickle

    index, shards, data = wds_shards
    ds = taridx.Dataset(index, shards, zero_copy=True)
    sample = ds[13]
    back = pickle.loads(pickle.dumps(sample))
    assert bytes(back[".jpg"]) == data["sample000013"]["jpg"]
    assert back["__key__"] == sample["__key__"]
    with multiprocessing.get_context("fork").Pool(1) as pool:
        got = pool.apply(_read_in_worker, (ds, 21))
    assert bytes(got[".jpg"]) == data["sample000021"]["jpg"]


def _read_in_worker(ds, i):
    return ds[i]


def test_bounded_open_shards(wds_shards):
    index, shards, data = wds_shards
    ds = taridx.Dataset(index, shards, open_shards=2)
    assert ds.open_shard_count() == 0  # nothing opened by the constructor
    rng = np.random.default_rng(1)
    for i in rng.integers(0, SAMPLES, size=100):
        assert ds[int(i)]["__key__"] == list(data)[int(i)]
        assert ds.open_shard_count() <= 2


def test_fold_convention(tmp_path):
    for shard in range(3):
        with tarfile.open(tmp_path / f"train_{shard:04d}.tar", "w") as out:
            for i in range(4):
                path = tmp_path / f"img{shard}_{i}.txt"
                path.write_bytes(f"{shard}/{i}".encode())
                out.add(path, arcname=f"img{shard}_{i}.txt")
    index = taridx.index_fold(tmp_path, "train")
    assert index == str(tmp_path / "train.taridx")
    ds = taridx.Dataset.from_fold(tmp_path, "train")
    assert len(ds) == 12 and ds.key_rule == "glzn"
    assert ds[5] == {
        "__key__": "img1_1",
        "__shard__": str(tmp_path / "train_0001.tar"),
        "__index__": 5,
        ".txt": b"1/1",
    }
    assert binfmt.sniff(index) == "taridx"


# --- pickling, multiprocessing, a DataLoader's workers ---------------------------


def _keys_of(indices):
    return [(_WORKER_DS[i]["__key__"], _WORKER_DS[i].get(".cls")) for i in indices]


_WORKER_DS = None


def _init_worker(payload: bytes) -> None:
    global _WORKER_DS
    _WORKER_DS = pickle.loads(payload)  # as a DataLoader hands each worker the dataset


def test_pickles_as_its_arguments(wds_shards):
    index, shards, _ = wds_shards
    ds = taridx.Dataset(index, shards, extensions=["cls"])
    ds[5]  # opened, shards open: pickling still carries only the arguments
    copy = pickle.loads(pickle.dumps(ds))
    assert copy.open_shard_count() == 0
    assert len(copy) == len(ds) and copy[5] == ds[5]


@pytest.mark.parametrize("start_method", ["spawn", "fork", "forkserver"])
def test_dataloader_style_workers(wds_shards, start_method):
    index, shards, data = wds_shards
    ds = taridx.Dataset(index, shards)
    ds[0]  # used in the parent before the workers start
    sampler = taridx.Sampler(ds, seed=3)
    batches = [list(b) for b in np.array_split(np.array(list(sampler)), 6)]
    context = multiprocessing.get_context(start_method)
    with context.Pool(2, initializer=_init_worker, initargs=(pickle.dumps(ds),)) as pool:
        results = pool.map(_keys_of, batches)
    expected = [[(ds[i]["__key__"], ds[i][".cls"]) for i in batch] for batch in batches]
    assert results == expected


# --- the sampler --------------------------------------------------------------


def test_sampler_orders_are_deterministic_permutations():
    sampler = taridx.Sampler(1000, seed=7)
    first = list(sampler)
    assert sorted(first) == list(range(1000)) and first != list(range(1000))
    assert list(taridx.Sampler(1000, seed=7)) == first
    sampler.set_epoch(1)
    assert list(sampler) != first and sorted(sampler) == list(range(1000))
    assert list(taridx.Sampler(1000, seed=8)) != first
    assert list(taridx.Sampler(10, shuffle=False)) == list(range(10))
    # Fixed here: orders never change with a dependency's version.
    assert list(taridx.Sampler(8, seed=0)) == list(taridx.Sampler(8, seed=0).order())


@pytest.mark.parametrize("drop_last", [False, True])
def test_sampler_splits_by_rank(drop_last):
    n, world = 100, 3
    parts = [
        list(taridx.Sampler(n, seed=1, rank=r, world_size=world, drop_last=drop_last))
        for r in range(world)
    ]
    assert len({len(p) for p in parts}) == 1
    assert len(parts[0]) == len(taridx.Sampler(n, rank=0, world_size=world, drop_last=drop_last))
    seen = [i for part in parts for i in part]
    if drop_last:
        assert len(seen) == 99 and len(set(seen)) == 99
    else:
        assert len(seen) == 102 and set(seen) == set(range(n))
    with pytest.raises(ValueError):
        taridx.Sampler(n, rank=3, world_size=3)


def test_chunked_sampler_stays_shard_local(wds_shards):
    index, shards, _ = wds_shards
    ds = taridx.Dataset(index, shards)
    fids = ds.sample_shards()
    sampler = taridx.Sampler(ds, seed=5, chunk_size=4)
    order = list(sampler)
    assert sorted(order) == list(range(SAMPLES)) and order != list(range(SAMPLES))
    # Chunks of 4 inside shards of 12: 15 chunks, each read from one shard.
    switches = sum(1 for a, b in zip(order, order[1:]) if fids[a] != fids[b])
    assert switches <= 14
    runs = [order[i : i + 4] for i in range(0, SAMPLES, 4)]
    assert all(max(run) - min(run) < 4 and len({fids[i] for i in run}) == 1 for run in runs)


# --- the same samples as wids ----------------------------------------------------


def wids_module():
    """The ``wids`` module. wids imports torch when it is imported; torch
    is not a dependency, so the few names it takes from it are stand-ins
    here."""
    if "torch" not in sys.modules:
        torch = types.ModuleType("torch")
        torch.distributed = types.ModuleType("torch.distributed")
        torch.utils = types.ModuleType("torch.utils")
        torch.utils.data = types.ModuleType("torch.utils.data")

        class Dataset:
            def __class_getitem__(cls, item):
                return cls

        torch.utils.data.Dataset = Dataset
        torch.utils.data.Sampler = Dataset
        torch.utils.data.get_worker_info = lambda: None
        torch.distributed.is_available = lambda: False
        torch.distributed.is_initialized = lambda: False
        for name in ("torch", "torch.distributed", "torch.utils", "torch.utils.data"):
            sys.modules[name] = eval(name, {"torch": torch})
    return reference("wids")


def wids_dataset(shards, data):
    """wids.ShardListDataset over ``shards``."""
    wids = wids_module()
    counts = [len({m.split(".")[0] for m in tarfile.open(s).getnames()}) for s in shards]
    spec = [{"url": s, "nsamples": n} for s, n in zip(shards, counts)]
    return wids.ShardListDataset(spec, transformations=[], cache_dir=os.path.dirname(shards[0]))


def test_same_samples_as_wids(wds_shards, capsys):
    index, shards, data = wds_shards
    theirs = wids_dataset(shards, data)
    ours = taridx.Dataset(index, shards)
    assert len(theirs) == len(ours)
    for i in range(len(ours)):
        a, b = ours[i], theirs[i]
        assert a["__key__"] == b["__key__"] and a["__index__"] == b["__index__"]
        assert {k: v for k, v in a.items() if k.startswith(".")} == {
            k: (v.read() if hasattr(v, "read") else bytes(v))
            for k, v in b.items()
            if k.startswith(".")
        }


def test_same_samples_as_webdataset(wds_shards):
    wds = reference("webdataset")
    index, shards, _ = wds_shards
    ours = [
        {k: v for k, v in s.items() if k != "__shard__" and k != "__index__"}
        for s in taridx.Dataset(index, shards)
    ]
    theirs = [
        {("." + k if not k.startswith("__") else k): v for k, v in s.items()
         if k in ("__key__",) or not k.startswith("__")}
        for s in wds.WebDataset(shards, shardshuffle=False)
    ]
    assert ours == theirs


def test_index(wds_shards):
    index, shards, data = wds_shards
    idx = taridx.Index(index)
    assert idx.num_rows == len(idx) == 3 * SAMPLES
    assert idx.key_rule == "webdataset" and idx.is_contiguous
    assert sorted(idx.extensions) == ["cls", "jpg", "json"]
    assert idx.crash_stems == []
    rows = idx.rows
    assert rows.dtype == taridx.ROW_DTYPE and len(rows) == idx.num_rows
    assert not rows.flags.writeable and not rows.flags.owndata  # the mapped index
    assert set(rows["fid"].tolist()) == set(range(len(shards)))
    jpg = idx.extensions.index("jpg")
    sizes = rows["size"][rows["extid"] == jpg]
    assert sorted(sizes.tolist()) == sorted(len(d["jpg"]) for d in data.values())
    total = sum(len(v) for d in data.values() for v in d.values())
    assert idx.verify() == total == idx.verify(shards)
    del idx
    assert len(rows) == 3 * SAMPLES  # the rows keep the index mapped
