"""binfmt.kastore.load against kastore.load (both engines), in one process.

    python crates/binfmt-python/bench/bench_kastore.py [--dir DIR] [--repeat N]
        [--gib X] [--keys N]

Writes two files with kastore's C engine (the bytes binfmt writes are identical): a
large one (``--gib``, 1 GiB by default, 32 arrays of the ten element types)
and one of many small arrays (``--keys``, 100,000 by default). The files are
in the page cache when timed (each operation runs ``--repeat`` times after
one warm-up, fast ones in batches of at least 50 ms; the best time per
call is reported). Operations:

- ``open``: ``load(path)``: what a program pays before it uses anything;
- ``open + get every array``: also ``store[key]`` for every key;
- ``open + read every page``: also reads one byte of every 4 KiB page of
  every array, so every byte of data is brought in (page faults for a map,
  copies for the readers that copy).

Every configuration is checked to give the same arrays before it is timed.
Prints a Markdown table: seconds per operation and kastore's time divided by
binfmt's (above 1: binfmt is faster).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time

import numpy as np

import binfmt.kastore as bk

try:
    import kastore
except ImportError:  # pragma: no cover - the venv of .ci/setup-interop has it
    sys.exit("kastore is not installed: bash .ci/setup-interop")

DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32"] + [
    "int64",
    "uint64",
    "float32",
    "float64",
]


def large_data(gib: float) -> dict[str, np.ndarray]:
    """32 arrays adding up to ``gib`` GiB."""
    total = int(gib * (1 << 30))
    per_array = total // 32
    rng = np.random.default_rng(42)
    data = {}
    for i in range(32):
        dtype = np.dtype(DTYPES[i % len(DTYPES)])
        n = per_array // dtype.itemsize
        data[f"array_{i:02d}"] = rng.integers(0, 100, size=n).astype(dtype)
    return data


def many_keys_data(keys: int) -> dict[str, np.ndarray]:
    """``keys`` small arrays (0 to 15 elements) of every type."""
    return {
        f"table_{i % 97:02d}/column_{i:06d}": np.arange(i % 16, dtype=DTYPES[i % 10])
        for i in range(keys)
    }


def read_pages(array: np.ndarray) -> int:
    """Reads one byte of every 4 KiB page of ``array``."""
    raw = array.view(np.uint8)
    return int(raw[::4096].sum()) if len(raw) else 0


OPERATIONS = {
    "open": lambda store: None,
    "open + get every array": lambda store: [store[key] for key in store],
    "open + read every page": lambda store: [read_pages(store[key]) for key in store],
}

CONFIGS = {
    "binfmt.kastore": lambda path: bk.load(path),
    "binfmt.kastore read_all": lambda path: bk.load(path, read_all=True),
    "kastore python": lambda path: kastore.load(path),
    "kastore python read_all": lambda path: kastore.load(path, read_all=True),
    "kastore c": lambda path: kastore.load(path, engine="c"),
}
#: The kastore configurations binfmt's default load is compared with.
BASELINES = ["kastore c", "kastore python", "kastore python read_all"]


def best_time(function, repeat: int) -> float:
    """The best time per call over ``repeat`` batches (after a warm-up);
    fast operations run in batches of at least 50 ms, so that a batch
    measures more than the clock's and the scheduler's noise."""
    gc.collect()
    start = time.perf_counter()
    del_result = function()
    once = time.perf_counter() - start
    del del_result
    number = max(1, int(0.05 / max(once, 1e-7)))
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        results = []
        start = time.perf_counter()
        for _ in range(number):
            results.append(function())
        elapsed = (time.perf_counter() - start) / number
        del results
        best = min(best, elapsed)
    return best


def check(path: str, data: dict[str, np.ndarray]) -> None:
    for name, load in CONFIGS.items():
        store = load(path)
        assert sorted(store.keys()) == sorted(data), name
        for key in list(data)[:50] + list(data)[-50:]:
            np.testing.assert_array_equal(store[key], data[key], err_msg=name)


def bench_file(label: str, path: str, repeat: int) -> list[tuple[str, dict[str, float]]]:
    rows = []
    for op_name, operation in OPERATIONS.items():
        times = {}
        for name, load in CONFIGS.items():

            def run(load=load, operation=operation):
                store = load(path)
                return store, operation(store)

            times[name] = best_time(run, repeat)
        rows.append((f"{label}: {op_name}", times))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", help="where to write the files (a temporary directory)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--keys", type=int, default=100_000)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        rows = []
        for label, data in (
            (f"{args.gib:g} GiB, 32 arrays", large_data(args.gib)),
            (f"{args.keys:,} keys", many_keys_data(args.keys)),
        ):
            path = os.path.join(directory, "bench.kas")
            # The C engine: the Python engine cannot write 65,536 keys or more.
            kastore.dump(data, path, engine="c")
            assert bk.dumps(data) == open(path, "rb").read() if args.gib <= 0.25 else True
            check(path, data)
            del data
            gc.collect()
            rows += bench_file(label, path, args.repeat)
            os.unlink(path)

    names = list(CONFIGS)
    print(f"binfmt.kastore vs kastore {kastore.__version__}, numpy {np.__version__}, "
          f"Python {sys.version.split()[0]}; best of {args.repeat} (seconds)\n")
    header = ["operation"] + names + [f"{base} / binfmt" for base in BASELINES]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for operation, times in rows:
        ours = times["binfmt.kastore"]
        cells = [f"{times[name]:.6f}" for name in names]
        ratios = [f"{times[base] / ours:,.0f}x" if times[base] / ours >= 10
                  else f"{times[base] / ours:.1f}x" for base in BASELINES]
        print("| " + " | ".join([operation] + cells + ratios) + " |")


if __name__ == "__main__":
    main()
