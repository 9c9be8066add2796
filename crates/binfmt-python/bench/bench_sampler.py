"""binfmt.taridx.Sampler over a huge epoch: what it costs to make and to
start iterating, and what it holds.

    python crates/binfmt-python/bench/bench_sampler.py [--n N] [--first K]
        [--repeat R]

Each configuration runs in a fresh interpreter (so resident memory is its
own): ``Sampler(N, seed=0, ...)`` is made and its first ``K`` indices taken
with ``itertools.islice``; each is timed best of ``--repeat`` (a new sampler
each time). Resident memory is the process's peak (``VmHWM``) after the
first ``K`` indices, and its growth over the peak after importing
``numpy`` and ``binfmt.taridx``. Also reported: indices per second over
the first million. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r"""
import itertools, json, sys, time
import numpy, binfmt.taridx as taridx

def hwm():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
n, first, repeat, kwargs = json.loads(sys.argv[1])
base = hwm()
make = take = float("inf")
for _ in range(repeat):
    t0 = time.perf_counter()
    sampler = taridx.Sampler(n, seed=0, **kwargs)
    t1 = time.perf_counter()
    values = list(itertools.islice(sampler, first))
    t2 = time.perf_counter()
    make, take = min(make, t1 - t0), min(take, t2 - t1)
assert len(values) == first
peak = hwm()
t0 = time.perf_counter()
count = sum(1 for _ in itertools.islice(taridx.Sampler(n, seed=0, **kwargs), 10**6))
rate = count / (time.perf_counter() - t0)
print(json.dumps([make, take, peak, peak - base, rate]))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10**12)
    parser.add_argument("--first", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    configs = [
        ("shuffled", {}),
        ("shuffled, rank 3 of 8", {"rank": 3, "world_size": 8}),
        ("chunks of 4096", {"chunk_size": 4096}),
        ("not shuffled", {"shuffle": False}),
    ]
    print(f"| Sampler({args.n:,}) | make | first {args.first:,} | peak RSS | RSS growth | indices/s (first 10^6) |")
    print("|---|---|---|---|---|---|")
    for name, kwargs in configs:
        out = subprocess.run(
            [sys.executable, "-c", CHILD, json.dumps([args.n, args.first, args.repeat, kwargs])],
            capture_output=True,
            text=True,
            check=True,
        )
        make, take, peak, growth, rate = json.loads(out.stdout)
        print(
            f"| {name} | {make * 1e3:.3f} ms | {take * 1e3:.2f} ms | {peak / 2**20:.1f} MiB "
            f"| {growth / 2**20:.1f} MiB | {rate / 1e6:.2f} M |"
        )


if __name__ == "__main__":
    main()
