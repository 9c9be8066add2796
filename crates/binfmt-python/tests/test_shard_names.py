"""Issue 28, point 1: shards named as WebDataset users name them.

A fold written by webdataset's ``ShardWriter`` (``shard-000000.tar``, ...)
is indexed the ways a user would (``--all``, a brace pattern, a glob, the
Python ``index``), then read back with no shard list given: from the CLI,
from ``binfmt.taridx.Dataset(index)``, by wids from the shard list binfmt
wrote, and over HTTP. An index whose shards cannot be found fails at open,
saying where it looked."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import binfmt
import binfmt.taridx as taridx
from conftest import reference
from test_remote import RangeHandler, serve
from test_taridx import wids_module

SCRIPT = Path(sys.executable).parent / "binfmt"
SAMPLES = 50
PER_SHARD = 12


def cli(*argv, cwd=None):
    return subprocess.run([str(SCRIPT), *map(str, argv)], capture_output=True, cwd=cwd, timeout=120)


@pytest.fixture()
def fold(tmp_path):
    """A ShardWriter fold with its own names, and each sample's data."""
    wds = reference("webdataset")
    data = {}
    with wds.ShardWriter(str(tmp_path / "shard-%06d.tar"), maxcount=PER_SHARD, verbose=0) as sink:
        for i in range(SAMPLES):
            key = f"sample{i:06d}"
            data[key] = {"jpg": os.urandom(100 + 7 * i), "cls": str(i % 10).encode()}
            sink.write({"__key__": key, **data[key]})
    shards = sorted(p.name for p in tmp_path.glob("shard-*.tar"))
    assert shards == [f"shard-{n:06d}.tar" for n in range(5)]
    return tmp_path, data


def names(listing: bytes) -> list[str]:
    """The names ``binfmt list`` prints (``SIZE<TAB>NAME`` lines)."""
    return [line.split("\t")[-1] for line in listing.decode().splitlines()]


def check_samples(ds, data):
    assert len(ds) == SAMPLES
    for i, (key, members) in enumerate(data.items()):
        sample = ds[i]
        assert sample["__key__"] == key
        assert sample[".jpg"] == members["jpg"] and sample[".cls"] == members["cls"]


def test_index_all_finds_shardwriter_names(fold):
    root, data = fold
    done = cli("taridx", "index", root, "--all", "--keys", "webdataset")
    assert done.returncode == 0, done.stderr
    index = root / "shard.taridx"
    listed = json.loads((root / "shard.taridx.shards.json").read_text())
    assert [s["url"] for s in listed["shardlist"]] == [f"shard-{n:06d}.tar" for n in range(5)]
    assert [s["nsamples"] for s in listed["shardlist"]] == [12, 12, 12, 12, 2]
    status = cli("taridx", "status", root)
    assert status.returncode == 0 and status.stdout.startswith(b"fresh\tshard\t5 shards"), status
    listed = names(cli("list", index).stdout)
    assert "sample000049.jpg" in listed and len(listed) == 2 * SAMPLES
    got = cli("taridx", "get", index, "sample000013.jpg", "-o", "-")
    assert got.returncode == 0 and got.stdout == data["sample000013"]["jpg"]
    check_samples(taridx.Dataset(index), data)


@pytest.mark.parametrize(
    "pattern", ["shard-{000000..000004}.tar", "shard-*.tar", "shard-00000[0-4].tar"]
)
def test_patterns_index_and_every_reader_finds_the_list(fold, pattern):
    root, data = fold
    done = cli("taridx", "index", root / pattern, "-o", root / "train.taridx", "--keys", "webdataset")
    assert done.returncode == 0, done.stderr
    check_samples(taridx.Dataset(root / "train.taridx"), data)
    assert cli("verify", root / "train.taridx").returncode == 0
    # The list is wids's own format: wids reads the same samples from it.
    wids = wids_module()
    listed = wids.ShardListDataset(
        str(root / "train.taridx.shards.json"), transformations=[], cache_dir=str(root)
    )
    assert len(listed) == SAMPLES
    jpg = listed[7][".jpg"]
    assert (jpg.read() if hasattr(jpg, "read") else bytes(jpg)) == data["sample000007"]["jpg"]


def test_python_index_takes_a_pattern_and_records_the_list(fold):
    root, data = fold
    taridx.index(str(root / "shard-{000000..000004}.tar"), root / "mine.taridx", key_rule="webdataset")
    assert (root / "mine.taridx.shards.json").exists()
    check_samples(taridx.Dataset(root / "mine.taridx"), data)


def test_glzn_names_stay_byte_identical_without_a_list(fold, tmp_path_factory):
    root, _ = fold
    glzn = tmp_path_factory.mktemp("glzn")
    for n in range(5):
        shutil.copy(root / f"shard-{n:06d}.tar", glzn / f"v_{n:04d}.tar")
    by_fold = cli("taridx", "index", glzn, "--fold", "v")
    assert by_fold.returncode == 0, by_fold.stderr
    first = (glzn / "v.taridx").read_bytes()
    # The same shards given by a pattern: the same bytes, and no list.
    by_pattern = cli("taridx", "index", glzn / "v_*.tar", "-o", glzn / "v.taridx")
    assert by_pattern.returncode == 0, by_pattern.stderr
    assert (glzn / "v.taridx").read_bytes() == first
    assert not (glzn / "v.taridx.shards.json").exists()
    # Another order is not what glzn's names find: recorded, and a list
    # left from before is removed when the names are right again.
    cli("taridx", "index", glzn / "v_0001.tar", glzn / "v_0000.tar", "-o", glzn / "v.taridx")
    assert (glzn / "v.taridx.shards.json").exists()
    cli("taridx", "index", glzn, "--fold", "v")
    assert not (glzn / "v.taridx.shards.json").exists()
    assert (glzn / "v.taridx").read_bytes() == first


def test_over_http_the_list_finds_the_shards(fold):
    root, data = fold
    assert cli("taridx", "index", root / "shard-*.tar", "-o", root / "train.taridx").returncode == 0
    with serve(root, RangeHandler) as (url, requests):
        ds = taridx.Dataset(f"{url}/train.taridx")
        check_samples(ds, data)
        assert any(path == "/train.taridx.shards.json" for _, path, _ in requests)
        listing = cli("list", f"{url}/train.taridx")
        assert listing.returncode == 0, listing.stderr
        assert len(names(listing.stdout)) == 2 * SAMPLES
        got = cli("get", f"{url}/train.taridx", "sample000042.cls", "-o", "-")
        assert got.stdout == data["sample000042"]["cls"]


def test_shards_not_found_fail_at_open_saying_where(fold, tmp_path_factory):
    root, _ = fold
    assert cli("taridx", "index", root / "shard-*.tar", "-o", root / "train.taridx").returncode == 0
    away = tmp_path_factory.mktemp("away")
    shutil.copy(root / "train.taridx", away / "train.taridx")
    with pytest.raises(binfmt.BinfmtError, match="looked for .*train.taridx.shards.json"):
        taridx.Dataset(away / "train.taridx")
    listed = cli("list", away / "train.taridx")
    assert listed.returncode == 1
    assert b"train_*.tar, train-N.tar and train.N.tar" in listed.stderr
    empty = tmp_path_factory.mktemp("empty")
    for command in (["taridx", "status", empty], ["taridx", "index", empty, "--all"]):
        done = cli(*command)
        assert done.returncode == 1 and b"FOLD-N.tar" in done.stderr, done
