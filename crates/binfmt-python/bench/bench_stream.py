"""binfmt.taridx.Stream over a local fold and over the same fold served on
127.0.0.1 by nginx (HTTP) and SeaweedFS (S3), the test servers of ``bash
.ci/servers start``: is a training loop over a remote fold fed as fast as
over a local one once warm?

    python crates/binfmt-python/bench/bench_stream.py [--dir DIR]
        [--servers-env target/servers.env] [--shards N]
        [--samples-per-shard N] [--rounds N]

Writes shards with webdataset's ShardWriter (a ``.jpg`` of 4-20 KB, a
``.cls`` and a ``.json`` per sample) into nginx's site and indexes them
there, and publishes the same fold to S3 (``taridx.index`` to an ``s3://``
index). Each pass is one epoch of a shuffled ``Sampler`` (a new seed each
round) read through ``Stream(ds, sampler, batch_read=64, prefetch=4)``.

- local: the fold's files (page cache warm);
- cold: a fresh remote ``Dataset`` per pass (every range fetched);
- warm: one remote ``Dataset`` whose first pass (untimed) filled its memory
  cache (the fold is smaller than the 64 MiB default), then timed passes;
- warm, disk cache: a fresh remote ``Dataset`` per pass with
  ``cache_dir=`` shared by the passes (filled by an untimed first pass),
  when the package has it.

Sides are interleaved round by round; the table gives each side's median
samples per second and its ratio to local.
"""

from __future__ import annotations

import os

# OpenBLAS's idle threads spin for a while after numpy starts them: on a
# small machine they take CPU from every side of these loops (none of which
# uses BLAS), so they are kept to one, before numpy is imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import inspect
import shutil
import statistics
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import binfmt.taridx as taridx  # noqa: E402
from bench_taridx import fresh, interleaved, write_shards  # noqa: E402


def servers(path: str) -> dict[str, str]:
    with open(path) as f:
        return dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)


def one_pass(ds, seed: int) -> int:
    sampler = taridx.Sampler(ds, seed=seed)
    count = 0
    for _ in taridx.Stream(ds, sampler, batch_read=64, prefetch=4):
        count += 1
    assert count == len(ds)
    return count


def opened_untimed(make):
    """A side whose dataset is made anew before each timed pass, untimed."""
    return fresh(lambda: (lambda ds=make(): one_pass(ds, 1)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", help="where to write scratch files")
    parser.add_argument("--servers-env", default="target/servers.env")
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--samples-per-shard", type=int, default=250)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    env = servers(args.servers_env)
    os.environ.update(
        {
            "AWS_ENDPOINT_URL": env["BINFMT_S3_ENDPOINT"],
            "AWS_ACCESS_KEY_ID": env["BINFMT_S3_ACCESS_KEY_ID"],
            "AWS_SECRET_ACCESS_KEY": env["BINFMT_S3_SECRET_ACCESS_KEY"],
            "AWS_REGION": env["BINFMT_S3_REGION"],
            "AWS_ALLOW_HTTP": "true",
        }
    )
    name = f"bench-stream-{uuid.uuid4().hex[:12]}"
    site = os.path.join(env["BINFMT_SERVERS_WWW"], name)
    os.makedirs(site)
    scratch = tempfile.mkdtemp(dir=args.dir)
    try:
        shards = write_shards(site, args.shards, args.samples_per_shard)
        taridx.index(shards, os.path.join(site, "bench.taridx"), key_rule="webdataset")
        s3 = f"s3://{env['BINFMT_S3_BUCKET']}/{name}/bench.taridx"
        taridx.index(shards, s3, key_rule="webdataset")
        http = f"{env['BINFMT_NGINX_URL']}/{name}/bench.taridx"
        local = taridx.Dataset(os.path.join(site, "bench.taridx"))
        n = len(local)
        size = sum(os.path.getsize(s) for s in shards)
        has_cache = "cache_dir" in inspect.signature(taridx.Dataset).parameters
        sides = {"local": lambda: one_pass(local, 1)}
        for label, url in (("HTTP", http), ("S3", s3)):
            warm = taridx.Dataset(url)
            one_pass(warm, 0)
            sides[f"{label} cold"] = opened_untimed(lambda url=url: taridx.Dataset(url))
            sides[f"{label} warm"] = lambda warm=warm: one_pass(warm, 1)
            if has_cache:
                cache = os.path.join(scratch, f"cache-{label}")
                one_pass(taridx.Dataset(url, cache_dir=cache), 0)
                sides[f"{label} warm, disk cache"] = opened_untimed(
                    lambda url=url, cache=cache: taridx.Dataset(url, cache_dir=cache)
                )
        times = interleaved(sides, args.rounds)
    finally:
        shutil.rmtree(site, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)
    print(
        f"binfmt.taridx.Stream, one shuffled epoch of {n:,} samples ({size / 2**20:.1f} MiB in "
        f"{args.shards} shards), batch_read=64, prefetch=4; servers on 127.0.0.1; median of "
        f"{args.rounds} interleaved rounds\n"
    )
    print("| source | samples/s | / local |")
    print("|---|---:|---:|")
    local_rate = n / statistics.median(times["local"])
    for label, runs in times.items():
        rate = n / statistics.median(runs)
        print(f"| {label} | {rate:,.0f} | {rate / local_rate:.2f}x |")
    if not has_cache:
        print("\n(the disk cache rows are left out: this package has no `cache_dir`)")


if __name__ == "__main__":
    started = time.perf_counter()
    main()
    print(f"\n({time.perf_counter() - started:.0f} s)", file=sys.stderr)
