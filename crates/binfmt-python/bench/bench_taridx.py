"""binfmt.taridx.Dataset against wids.ShardListDataset (and MosaicML
streaming, when installed), in one process.

    python crates/binfmt-python/bench/bench_taridx.py [--dir DIR]
        [--shards N] [--samples-per-shard N] [--accesses N] [--rounds N]
        [--batch N]

Writes shards with webdataset's ShardWriter (a ``.jpg`` of 4-20 KB, a
``.cls`` and a ``.json`` per sample), indexes them with binfmt (WebDataset
key rule), and opens the same shards with every reader: wids with
``lru_size`` as large as the number of shards (it never closes one), and,
when ``mosaicml-streaming`` and torch import, a ``StreamingDataset`` over
the same samples converted with its ``MDSWriter``. Every reader is warmed
up first (every shard opened once: wids scans each shard when it first
opens it, binfmt reads the index) and every sample checked to be the same
in all of them. Then, for each operation, every side runs once per round,
the side that goes first rotating from round to round (``--rounds``
rounds); the table gives each side's median in samples per second:

- random access: ``ds[i]`` for ``--accesses`` uniformly random indices;
- in-order epoch: ``ds[i]`` for every index in order;
- ``map_shards=False``: ``ds[i]`` on shards read by ``pread`` (a checked
  sample straight into its ``bytes`` objects, one vectored read);
- ``get_batch``: the same indices, ``--batch`` at a time
  (``Dataset.get_batch``); wids has no batch call, so its row is ``ds[i]``.

``limit`` is the least a Python reader can do for the same samples: a dict
per sample of ``bytes`` sliced from the shards mapped in memory, at offsets
computed beforehand (no index, no check): the machine's ceiling for this
loop. "checks cold" reads with a fresh ``Dataset`` each round, so that no
member's gap check is remembered (spec/taridx.md §4.2).

Last, the memory of ``Sampler(10**9)``: the growth of the peak resident
memory of a fresh interpreter that makes it and takes its first million
indices (``bench_sampler.py``'s measurement).

Prints Markdown tables.
"""

from __future__ import annotations

import os

# OpenBLAS's idle threads spin for a while after numpy starts them: on a
# small machine they take CPU from every side of these loops (none of which
# uses BLAS), so they are kept to one, before numpy is imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import glob
import importlib
import json
import mmap
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import types

import numpy as np

import binfmt.taridx as taridx


def wids_module():
    """wids, which imports torch when imported: the names it takes from
    torch are stand-ins (torch is not a dependency)."""
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
        sys.modules.update(
            {
                "torch": torch,
                "torch.distributed": torch.distributed,
                "torch.utils": torch.utils,
                "torch.utils.data": torch.utils.data,
            }
        )
    return importlib.import_module("wids")


def streaming_module():
    """MosaicML streaming with the real torch, or the reason it is left out."""
    try:
        importlib.import_module("torch")
        if isinstance(sys.modules["torch"], types.ModuleType) and not hasattr(
            sys.modules["torch"], "__version__"
        ):
            return None, "torch is not installed (wids ran with stand-ins for it)"
        return importlib.import_module("streaming"), None
    except ImportError as error:
        return None, f"{error.name or error} is not installed"


def write_shards(directory: str, shards: int, per_shard: int) -> list[str]:
    import webdataset as wds

    rng = np.random.default_rng(0)
    with wds.ShardWriter(
        os.path.join(directory, "shard-%06d.tar"), maxcount=per_shard, verbose=0
    ) as sink:
        for i in range(shards * per_shard):
            sink.write(
                {
                    "__key__": f"sample{i:08d}",
                    "jpg": rng.bytes(int(rng.integers(4096, 20480))),
                    "cls": str(i % 1000).encode(),
                    "json": f'{{"i": {i}}}'.encode(),
                }
            )
    return sorted(glob.glob(os.path.join(directory, "shard-*.tar")))


class Limit:
    """The floor: ``bytes`` sliced from mapped shards at offsets found
    beforehand (tarfile's listing), one dict per sample."""

    def __init__(self, shards: list[str]) -> None:
        self.maps = []
        self.samples = []
        for shard in shards:
            with open(shard, "rb") as f:
                mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            self.maps.append(mapped)
            samples: dict[str, list] = {}
            with tarfile.open(shard) as tar:
                for member in tar:
                    key, _, ext = member.name.partition(".")
                    end = member.offset_data + member.size
                    samples.setdefault(key, []).append(("." + ext, member.offset_data, end))
            self.samples.extend((mapped, key, shard, members) for key, members in samples.items())

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, i: int) -> dict:
        mapped, key, shard, members = self.samples[i]
        sample = {ext: mapped[start:end] for ext, start, end in members}
        sample["__key__"] = key
        sample["__shard__"] = shard
        sample["__index__"] = i
        return sample


def payload(sample: dict) -> dict:
    members = {
        k: (v.read() if hasattr(v, "read") else bytes(v))
        for k, v in sample.items()
        if k.startswith(".")
    }
    return {"__key__": sample["__key__"], **members}


def one_by_one(ds, indices):
    return lambda: [ds[i] for i in indices]


def in_batches(ds, indices, batch):
    array = np.asarray(indices, dtype=np.int64)
    chunks = [array[i : i + batch] for i in range(0, len(array), batch)]
    return lambda: [ds.get_batch(chunk) for chunk in chunks]


def interleaved(sides: dict, rounds: int) -> dict:
    """Each side's times, one run of each per round, the first side
    rotating."""
    names = list(sides)
    times: dict = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            work = sides[name]() if getattr(sides[name], "fresh", False) else sides[name]
            start = time.perf_counter()
            work()
            times[name].append(time.perf_counter() - start)
    return times


def fresh(make):
    """A side that is set up anew (untimed) before each timed run."""
    make.fresh = True
    return make


def sampler_memory(n: int) -> str:
    """Peak RSS growth of ``Sampler(n)`` taking its first 10^6 indices, in
    a fresh interpreter (bench_sampler.py's child)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_sampler import CHILD

    out = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps([n, 10**6, 1, {}])],
        capture_output=True,
        text=True,
        check=True,
    )
    make, take, peak, growth, rate = json.loads(out.stdout)
    return (
        f"| Sampler({n:,}) shuffled: first 10^6 indices | {take * 1e3:.0f} ms "
        f"| peak RSS {peak / 2**20:.1f} MiB, growth {growth / 2**20:.1f} MiB "
        f"| an int64 permutation (what wids' samplers build): {8 * n / 1e9:.0f} GB |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", help="where to write the shards (a temporary directory)")
    parser.add_argument("--shards", type=int, default=16)
    parser.add_argument("--samples-per-shard", type=int, default=1000)
    parser.add_argument("--accesses", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch", type=int, default=256)
    args = parser.parse_args()
    import webdataset  # noqa: F401  (before the torch stand-ins of wids_module)

    streaming, why_not = streaming_module()
    wids = wids_module()

    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        shards = write_shards(directory, args.shards, args.samples_per_shard)
        index = os.path.join(directory, "bench.taridx")
        taridx.index(shards, index, key_rule="webdataset")
        counts = [args.samples_per_shard] * len(shards)
        spec = [{"url": s, "nsamples": n} for s, n in zip(shards, counts)]
        theirs = wids.ShardListDataset(
            spec, transformations=[], cache_dir=directory, lru_size=len(shards)
        )
        ours = taridx.Dataset(index, shards)
        ours_zero_copy = taridx.Dataset(index, shards, zero_copy=True)
        ours_pread = taridx.Dataset(index, shards, map_shards=False)
        limit = Limit(shards)
        readers = {"wids": theirs, "limit": limit}
        if streaming is not None:
            readers["streaming"] = mds_dataset(streaming, directory, ours)
        n = len(ours)
        assert n == len(theirs) == len(limit) == sum(counts)
        for i in range(0, n, max(1, n // 500)):
            expected = payload(ours[i])
            assert expected == payload(ours_zero_copy[i]) == payload(ours.get_batch([i])[0]), i
            assert expected == payload(ours_pread[i]) == payload(ours_pread.get_batch([i])[0]), i
            for name, reader in readers.items():
                assert payload(reader[i]) == expected, (name, i)
        # Warm-up: every shard opened once by each.
        for i in range(0, n, args.samples_per_shard):
            for reader in (ours, ours_zero_copy, ours_pread, *readers.values()):
                reader[i]

        rng = np.random.default_rng(1)
        random_indices = rng.integers(0, n, size=args.accesses).tolist()
        in_order = list(range(n))
        operations = []
        for label, indices in (
            (f"random access ({args.accesses:,} samples)", random_indices),
            (f"in-order epoch ({n:,} samples)", in_order),
        ):
            sides = {
                "binfmt ds[i]": one_by_one(ours, indices),
                f"binfmt get_batch({args.batch})": in_batches(ours, indices, args.batch),
                "binfmt zero_copy ds[i]": one_by_one(ours_zero_copy, indices),
                f"binfmt zero_copy get_batch({args.batch})": in_batches(ours_zero_copy, indices, args.batch),
                "binfmt ds[i], map_shards=False": one_by_one(ours_pread, indices),
                "binfmt ds[i], checks cold": fresh(
                    lambda indices=indices: one_by_one(taridx.Dataset(index, shards), indices)
                ),
                "wids ds[i]": one_by_one(theirs, indices),
                "limit": one_by_one(limit, indices),
            }
            if streaming is not None:
                sides["streaming ds[i]"] = one_by_one(readers["streaming"], indices)
            times = interleaved(sides, args.rounds)
            operations.append((label, len(indices), times))

    print(
        f"binfmt.taridx.Dataset vs wids.ShardListDataset (wids 0.1.11, lru_size={args.shards}); "
        f"{args.shards} shards of {args.samples_per_shard} samples; median of {args.rounds} "
        f"interleaved rounds; samples/s\n"
    )
    if why_not is not None:
        print(f"MosaicML streaming left out: {why_not}.\n")
    names = list(operations[0][2])
    print(
        "| operation | "
        + " | ".join(names)
        + " | ds[i] / wids | get_batch / wids | zero_copy ds[i] / wids "
        + "| zero_copy get_batch / wids | limit / wids |"
    )
    print("|---|" + "---|" * (len(names) + 5))
    batch = next(name for name in names if name.startswith("binfmt get_batch"))
    zero_copy = next(name for name in names if name.startswith("binfmt zero_copy get_batch"))
    for label, count, times in operations:
        rate = {name: count / statistics.median(t) for name, t in times.items()}
        cells = " | ".join(f"{rate[name]:,.0f}" for name in names)
        ratios = " | ".join(
            f"{rate[name] / rate['wids ds[i]']:.1f}x"
            for name in ("binfmt ds[i]", batch, "binfmt zero_copy ds[i]", zero_copy, "limit")
        )
        print(f"| {label} | {cells} | {ratios} |")
    print()
    print("| sampler | time | memory | for comparison |")
    print("|---|---|---|---|")
    print(sampler_memory(10**9))


def mds_dataset(streaming, directory: str, ours):
    """The samples converted with MDSWriter, read by StreamingDataset."""
    out = os.path.join(directory, "mds")
    columns = {"__key__": "str", ".jpg": "bytes", ".cls": "bytes", ".json": "bytes"}
    with streaming.MDSWriter(out=out, columns=columns) as writer:
        for i in range(len(ours)):
            sample = ours[i]
            writer.write({name: sample[name] for name in columns})
    return streaming.StreamingDataset(local=out, shuffle=False, batch_size=1)


if __name__ == "__main__":
    main()
