"""binfmt.ray against Ray Data's own WebDataset reader and writer, on one
Ray cluster, the same data.

    python crates/binfmt-python/bench/ray_bench.py [--dir DIR] [--samples N]
        [--blocks N] [--rounds N] [--address HOST:PORT]

Connects to the cluster at ``--address`` (default: ``RAY_ADDRESS``, else
``target/ray.env`` as ``bash .ci/ray-cluster start`` writes it). Makes
``--samples`` small samples (``__key__``, a ``.cls`` of 1-3 bytes, a
``.bin`` of 16-48 bytes) from ``ray.data.range`` in ``--blocks`` blocks and
materializes them in the object store once; then, sides interleaved round
by round (the side that goes first alternating), times:

- write: ``binfmt.ray.write_taridx(ds, DIR/.../train.taridx)`` against
  ``ds.write_webdataset(DIR/..., encoder=None)`` (bytes written as they
  are), each into a fresh directory;
- read: ``binfmt.ray.read_taridx(index)`` against
  ``ray.data.read_webdataset(dir, decoder=None)`` of what each wrote, each
  consumed by a ``map_batches`` counting rows and payload bytes in the
  tasks (so every sample is read, and only counts reach the driver).

Both folds are checked to hold the same samples (keys and bytes) before
timing the reads. Prints a Markdown table: medians with their spread (±
half the range), rows per second, and binfmt's rows per second over Ray
Data's.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import pathlib
import shutil
import statistics
import sys
import time

import numpy as np


def samples(batch: dict) -> dict:
    ids = batch["id"].tolist()
    return {
        "__key__": [f"s{i:09d}" for i in ids],
        "cls": [str(i % 1000).encode() for i in ids],
        "bin": [hashlib.sha256(i.to_bytes(8, "little")).digest()[: 16 + i % 33] for i in ids],
    }


def count(batch: dict) -> dict:
    """Rows and payload bytes of a batch (whatever its columns)."""
    payload = 0
    for name, column in batch.items():
        if name.startswith("__"):
            continue
        payload += sum(len(value) for value in column if value is not None)
    return {"rows": [len(next(iter(batch.values())))], "payload": [payload]}


def consume(ds) -> tuple[int, int]:
    counted = ds.map_batches(count, batch_format="numpy", batch_size=None).take_all()
    return sum(row["rows"] for row in counted), sum(row["payload"] for row in counted)


def address_from_env_file() -> str:
    root = pathlib.Path(__file__).resolve().parents[3]
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", root / "target"))
    for line in (target / "ray.env").read_text().splitlines():
        if line.startswith("RAY_ADDRESS="):
            return line.split("=", 1)[1]
    raise SystemExit(f"no RAY_ADDRESS in {target / 'ray.env'}")


def fmt_seconds(values: list[float]) -> str:
    median = statistics.median(values)
    spread = (max(values) - min(values)) / 2 / median * 100 if median else 0.0
    return f"{median:.2f} s ±{spread:.0f}%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", default="target/bench/ray")
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument("--blocks", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--address", default=None)
    args = parser.parse_args()

    import ray
    import ray.data

    import binfmt.ray

    address = args.address or os.environ.get("RAY_ADDRESS") or address_from_env_file()
    ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.print_on_execution_start = False
    context.execution_options.preserve_order = True
    nodes = [node for node in ray.nodes() if node["Alive"]]
    cpus = int(sum(node["Resources"].get("CPU", 0) for node in nodes))

    root = pathlib.Path(args.dir).resolve()
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    print(f"making {args.samples} samples in {args.blocks} blocks", file=sys.stderr)
    data = (
        ray.data.range(args.samples, override_num_blocks=args.blocks)
        .map_batches(samples, batch_format="numpy")
        .materialize()
    )

    def write_binfmt(out: pathlib.Path) -> None:
        binfmt.ray.write_taridx(data, str(out / "train.taridx"))

    def write_ray(out: pathlib.Path) -> None:
        data.write_webdataset(str(out), encoder=None)

    writers = {"binfmt.ray": write_binfmt, "ray.data": write_ray}
    times: dict[str, dict[str, list[float]]] = {"write": {}, "read": {}}
    outputs: dict[str, pathlib.Path] = {}
    for round_ in range(args.rounds):
        order = list(writers) if round_ % 2 == 0 else list(reversed(writers))
        for side in order:
            out = root / f"{side}-{round_}"
            start = time.perf_counter()
            writers[side](out)
            times["write"].setdefault(side, []).append(time.perf_counter() - start)
            print(f"write {side} round {round_}: {times['write'][side][-1]:.2f} s", file=sys.stderr)
            if side in outputs:
                shutil.rmtree(out)
            else:
                outputs[side] = out

    index = str(outputs["binfmt.ray"] / "train.taridx")
    wds_dir = str(outputs["ray.data"])
    readers = {
        "binfmt.ray": lambda: binfmt.ray.read_taridx(index),
        "ray.data": lambda: ray.data.read_webdataset(wds_dir, decoder=None),
    }
    # The same samples in both: keys and bytes, whatever the order.
    ours = readers["binfmt.ray"]().take_all()
    theirs = readers["ray.data"]().take_all()
    assert len(ours) == len(theirs) == args.samples, (len(ours), len(theirs))
    mine = sorted((row["__key__"], row[".cls"], row[".bin"]) for row in ours)
    other = sorted((row["__key__"], row["cls"], row["bin"]) for row in theirs)
    assert mine == other, "the two folds hold different samples"
    payload = sum(len(c) + len(b) for _, c, b in mine)
    del ours, theirs, mine, other

    for round_ in range(args.rounds):
        order = list(readers) if round_ % 2 == 0 else list(reversed(readers))
        for side in order:
            start = time.perf_counter()
            rows, read_payload = consume(readers[side]())
            times["read"].setdefault(side, []).append(time.perf_counter() - start)
            assert (rows, read_payload) == (args.samples, payload), (side, rows, read_payload)
            print(f"read {side} round {round_}: {times['read'][side][-1]:.2f} s", file=sys.stderr)

    tar_bytes = {
        side: sum(f.stat().st_size for f in out.iterdir() if f.suffix == ".tar")
        for side, out in outputs.items()
    }
    shards = {side: len([f for f in out.iterdir() if f.suffix == ".tar"]) for side, out in outputs.items()}
    print("| operation | binfmt.ray | ray.data (webdataset) | binfmt.ray rows/s | ray.data rows/s | binfmt / ray.data |")
    print("|---|---:|---:|---:|---:|---:|")
    for operation, label in (
        ("write", f"write {args.samples:,} samples ({args.blocks} blocks in the object store) to tar shards"),
        ("read", f"read {args.samples:,} samples from those shards, every byte in the tasks"),
    ):
        ours_t = statistics.median(times[operation]["binfmt.ray"])
        theirs_t = statistics.median(times[operation]["ray.data"])
        print(
            f"| {label} | {fmt_seconds(times[operation]['binfmt.ray'])} "
            f"| {fmt_seconds(times[operation]['ray.data'])} "
            f"| {args.samples / ours_t:,.0f} | {args.samples / theirs_t:,.0f} "
            f"| {theirs_t / ours_t:.2f}x |"
        )
    print()
    print(
        f"Ray {ray.__version__}, {len(nodes)} nodes, {cpus} CPUs in all; {args.rounds} rounds, sides "
        f"interleaved. Samples: a key, a .cls of 1-3 bytes, a .bin of 16-48 bytes ({payload:,} payload "
        f"bytes). binfmt.ray wrote {shards['binfmt.ray']} shards and an index "
        f"({tar_bytes['binfmt.ray']:,} bytes of tar), Ray Data {shards['ray.data']} shards "
        f"({tar_bytes['ray.data']:,} bytes); both hold the same samples (checked). "
        f"binfmt.ray's time includes renaming the shards and writing the index; "
        f"its reads are planned from the index."
    )
    ray.shutdown()


if __name__ == "__main__":
    main()
