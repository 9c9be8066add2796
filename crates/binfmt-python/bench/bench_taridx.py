"""binfmt.taridx.Dataset against wids.ShardListDataset, in one process.

    python crates/binfmt-python/bench/bench_taridx.py [--dir DIR]
        [--shards N] [--samples-per-shard N] [--accesses N]

Writes shards with webdataset's ShardWriter (a ``.jpg`` of 4-20 KB, a
``.cls`` and a ``.json`` per sample), indexes them with binfmt (WebDataset
key rule), and opens the same shards with both datasets. Both are warmed up
first (every shard opened once: wids scans each shard when it first opens
it, binfmt reads the index). Measured, best of ``--repeat``:

- random access: ``ds[i]`` for ``--accesses`` uniformly random indices;
- full epoch: ``ds[i]`` for every index in order.

Every sample is checked to be the same in both before timing. Prints a
Markdown table in samples per second and binfmt's speed over wids'.
"""

from __future__ import annotations

import argparse
import glob
import importlib
import os
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


def payload(sample: dict) -> dict:
    members = {
        k: (v.read() if hasattr(v, "read") else bytes(v))
        for k, v in sample.items()
        if k.startswith(".")
    }
    return {"__key__": sample["__key__"], **members}


def rate(function, count: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return count / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", help="where to write the shards (a temporary directory)")
    parser.add_argument("--shards", type=int, default=16)
    parser.add_argument("--samples-per-shard", type=int, default=1000)
    parser.add_argument("--accesses", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import webdataset  # noqa: F401  (before the torch stand-ins of wids_module)

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
        n = len(ours)
        assert n == len(theirs) == sum(counts)
        for i in range(0, n, max(1, n // 500)):
            assert payload(ours[i]) == payload(theirs[i]) == payload(ours_zero_copy[i]), i
        # Warm-up: every shard opened once by each.
        for i in range(0, n, args.samples_per_shard):
            theirs[i], ours[i], ours_zero_copy[i]

        rng = np.random.default_rng(1)
        random_indices = rng.integers(0, n, size=args.accesses).tolist()
        in_order = list(range(n))
        rows = []
        for label, indices in (
            (f"random access ({args.accesses:,} samples)", random_indices),
            (f"full epoch in order ({n:,} samples)", in_order),
        ):
            speeds = {}
            for name, ds in (
                ("binfmt", ours),
                ("binfmt zero_copy", ours_zero_copy),
                ("wids", theirs),
            ):
                speeds[name] = rate(lambda ds=ds: [ds[i] for i in indices], len(indices), args.repeat)
            rows.append((label, speeds))

    print(
        f"binfmt.taridx.Dataset vs wids.ShardListDataset (wids 0.1.11 mmap-indexed tars); "
        f"{args.shards} shards of {args.samples_per_shard} samples; best of {args.repeat}\n"
    )
    print("| operation | binfmt (samples/s) | binfmt zero_copy | wids | binfmt / wids | zero_copy / wids |")
    print("|---|---|---|---|---|---|")
    for label, s in rows:
        print(
            f"| {label} | {s['binfmt']:,.0f} | {s['binfmt zero_copy']:,.0f} | {s['wids']:,.0f} "
            f"| {s['binfmt'] / s['wids']:.1f}x | {s['binfmt zero_copy'] / s['wids']:.1f}x |"
        )


if __name__ == "__main__":
    main()
