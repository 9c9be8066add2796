"""Writing to S3 from Python (SeaweedFS on loopback): every writer's object
equals its local file; ShardWriter and write_index build a fold there; the
reports write_index takes are checked, never trusted; rename, remove and
list_prefix work on local paths and objects alike."""

from __future__ import annotations

import os
import time
import uuid

import numpy as np
import pytest

import binfmt
import binfmt.arcx
import binfmt.kastore
import binfmt.taridx as taridx


@pytest.fixture
def s3(s3_env):
    """``s3://BUCKET/PREFIX`` of a prefix no other test uses, with the AWS
    environment set for it."""
    return f"s3://{s3_env}/py-s3-writes-{uuid.uuid4().hex}-{int(time.time())}"


def _read_object(url: str) -> bytes:
    """An object's bytes, read back by s3fs (not by binfmt)."""
    import s3fs

    fs = s3fs.S3FileSystem(
        key=os.environ["AWS_ACCESS_KEY_ID"],
        secret=os.environ["AWS_SECRET_ACCESS_KEY"],
        client_kwargs={
            "endpoint_url": os.environ["AWS_ENDPOINT_URL"],
            "region_name": os.environ["AWS_REGION"],
        },
        skip_instance_cache=True,
    )
    with fs.open(url.removeprefix("s3://"), "rb") as handle:
        return handle.read()


def tree(root):
    (root / "sub").mkdir(parents=True)
    (root / "large.bin").write_bytes(np.random.default_rng(1).bytes(18 << 20))
    for i in range(30):
        (root / "sub" / f"s{i:02}.txt").write_bytes(f"file {i}\n".encode() * 50)
    return root


def test_every_python_writer_writes_to_s3_what_it_writes_locally(s3, tmp_path):
    src = tree(tmp_path / "tree")
    local = tmp_path / "local.arcx"
    binfmt.arcx.pack(src, local)
    binfmt.arcx.pack(src, f"{s3}/tree.arcx")
    assert _read_object(f"{s3}/tree.arcx") == local.read_bytes()
    for ext in ("kas", "par4", "arcx"):
        binfmt.convert(local, tmp_path / f"c.{ext}")
        summary = binfmt.convert(f"{s3}/tree.arcx", f"{s3}/c.{ext}")
        assert summary["outputs"] == [f"{s3}/c.{ext}"]
        assert _read_object(f"{s3}/c.{ext}") == (tmp_path / f"c.{ext}").read_bytes()
    arrays = {"a": np.arange(1000, dtype=np.int32), "b/c": np.zeros(3, dtype=np.float64)}
    binfmt.kastore.dump(arrays, tmp_path / "k.kas")
    binfmt.kastore.dump(arrays, f"{s3}/k.kas")
    assert _read_object(f"{s3}/k.kas") == (tmp_path / "k.kas").read_bytes()
    assert binfmt.list_prefix(s3) == sorted(["tree.arcx", "c.kas", "c.par4", "c.arcx", "k.kas"])


def test_shard_writer_and_write_index_build_a_fold_in_s3(s3, tmp_path):
    samples = [(f"k{i:05}", {"cls": str(i % 7).encode(), "txt": f"text {i}".encode()}) for i in range(1200)]
    with taridx.ShardWriter(f"{s3}/tmp", "task-0-", shard_samples=500) as writer:
        for key, members in samples:
            writer.write(key, members)
    assert [name for name, _, _ in writer.reports] == [f"task-0-{n:06}.tar" for n in range(3)]
    assert binfmt.list_prefix(f"{s3}/tmp") == [name for name, _, _ in writer.reports]
    final = []
    for fid, (name, members, size) in enumerate(writer.reports):
        binfmt.rename(f"{s3}/tmp/{name}", f"{s3}/train_{fid:04}.tar")
        final.append((f"train_{fid:04}.tar", members, size))
    assert binfmt.list_prefix(f"{s3}/tmp") == []
    assert taridx.write_index(f"{s3}/train.taridx", final) == 2400
    # The same samples written and indexed locally: the same bytes.
    with taridx.ShardWriter(tmp_path, "train_", shard_samples=500) as local:
        for key, members in samples:
            local.write(key, members)
    renamed = []
    for fid, (name, members, size) in enumerate(local.reports):
        binfmt.rename(str(tmp_path / name), str(tmp_path / f"train_{fid:04}.tar"))
        renamed.append((f"train_{fid:04}.tar", members, size))
    taridx.write_index(tmp_path / "train.taridx", renamed)
    for name in ["train.taridx"] + [name for name, _, _ in final]:
        assert _read_object(f"{s3}/{name}") == (tmp_path / name).read_bytes(), name
    dataset = taridx.Dataset(f"{s3}/train.taridx")
    assert len(dataset) == 1200
    assert dataset.get("k01199")[".txt"] == b"text 1199"
    binfmt.remove(f"{s3}/train_0002.tar")
    binfmt.remove(f"{s3}/never-there")
    assert "train_0002.tar" not in binfmt.list_prefix(s3)


def test_a_shard_writer_left_by_an_exception_leaves_nothing(s3):
    with pytest.raises(RuntimeError):
        with taridx.ShardWriter(f"{s3}/gone", "p-", shard_samples=10) as writer:
            for i in range(35):
                writer.write(f"k{i:03}", {"txt": b"x" * 100})
            raise RuntimeError("stop")
    assert binfmt.list_prefix(f"{s3}/gone") == []


@pytest.mark.parametrize(
    "lie",
    [
        lambda members, size: ([(n, o + 1, s) for n, o, s in members], size),
        lambda members, size: ([(n, o, s + 10_000) for n, o, s in members], size),
        lambda members, size: (list(reversed(members)), size),
        lambda members, size: (members, 512),
    ],
    ids=["off-block", "past-the-end", "out-of-order", "shard-too-small"],
)
def test_write_index_checks_the_reports(tmp_path, lie):
    with taridx.ShardWriter(tmp_path, "train_", shard_samples=100) as writer:
        for i in range(20):
            writer.write(f"k{i:03}", {"txt": b"y" * 700})
    name, members, size = writer.reports[0]
    members, size = lie(members, size)
    with pytest.raises(binfmt.BinfmtError, match="does not fit"):
        taridx.write_index(tmp_path / "train.taridx", [(name, members, size)])
    assert not (tmp_path / "train.taridx").exists()


@pytest.mark.parametrize("name", ["../x.tar", "/abs.tar", "a//b.tar", ""])
def test_write_index_refuses_shard_names_that_leave_the_directory(tmp_path, name):
    with pytest.raises(binfmt.BinfmtError, match="relative to its index"):
        taridx.write_index(tmp_path / "train.taridx", [(name, [], 1024)])


def test_rename_stays_local_or_in_one_bucket(s3, tmp_path):
    (tmp_path / "a").write_bytes(b"x")
    with pytest.raises(binfmt.BinfmtError, match="within one S3 bucket"):
        binfmt.rename(str(tmp_path / "a"), f"{s3}/a")
    binfmt.rename(str(tmp_path / "a"), str(tmp_path / "b"))
    assert binfmt.list_prefix(tmp_path) == ["b"]


def test_index_to_s3_publishes_the_fold(s3, tmp_path):
    with taridx.ShardWriter(tmp_path, "train_", shard_samples=50) as writer:
        for i in range(120):
            writer.write(f"k{i:03}", {"txt": f"t{i}".encode()})
    shards = sorted(str(tmp_path / name) for name, _, _ in writer.reports)
    taridx.index(shards, f"{s3}/pub/all.taridx", key_rule="webdataset")
    taridx.index(shards, tmp_path / "all.taridx", key_rule="webdataset")
    assert _read_object(f"{s3}/pub/all.taridx") == (tmp_path / "all.taridx").read_bytes()
    assert len(taridx.Dataset(f"{s3}/pub/all.taridx")) == 120


def test_arcx_writer_and_merge_write_to_s3(s3, tmp_path):
    rows = [(f"d/f{i:03}.txt", f"row {i}\n".encode() * 40) for i in range(200)]
    rows.append(("big.bin", np.random.default_rng(3).bytes(20 << 20)))
    for location in (str(tmp_path / "w.arcx"), f"{s3}/w.arcx"):
        with binfmt.arcx.Writer(location) as writer:
            for name, data in rows:
                writer.add(name, data)
    assert _read_object(f"{s3}/w.arcx") == (tmp_path / "w.arcx").read_bytes()
    halves = (rows[:100], rows[100:])
    for i, half in enumerate(halves):
        with binfmt.arcx.Writer(f"{s3}/part-{i}.arcx") as writer:
            for name, data in half:
                writer.add(name, data)
    binfmt.arcx.merge([f"{s3}/part-0.arcx", f"{s3}/part-1.arcx"], f"{s3}/merged.arcx")
    merged = binfmt.arcx.Archive(f"{s3}/merged.arcx")
    assert merged.names() == [name for name, _ in rows]
    assert merged.read("big.bin") == rows[-1][1]
    with pytest.raises(binfmt.BinfmtError, match="never writes its output over"):
        binfmt.arcx.merge([f"{s3}/part-0.arcx"], f"{s3}/part-0.arcx")
    with pytest.raises(RuntimeError):
        with binfmt.arcx.Writer(f"{s3}/aborted.arcx") as writer:
            writer.add("big.bin", rows[-1][1])
            raise RuntimeError("stop")
    assert "aborted.arcx" not in binfmt.list_prefix(s3)


def test_a_wrong_secret_is_a_permission_error_naming_what_to_check(s3, monkeypatch):
    """Found from outside: a wrong S3 secret reached Python as a bare
    ``PermissionError: [Errno 13] Permission denied``; the message now says
    what the server answered and which variables to check, never the
    secret."""
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret-value-42")
    with pytest.raises(PermissionError) as caught:
        taridx.Index(f"{s3}/train.taridx")
    shown = str(caught.value)
    assert "AWS_SECRET_ACCESS_KEY" in shown and "not-the-secret-value-42" not in shown, shown
