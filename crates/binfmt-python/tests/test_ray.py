"""``binfmt.ray`` on a real Ray cluster of two nodes (one CPU each) on this
machine, started and stopped by ``bash .ci/ray-cluster`` (``.ci/test``
runs it): TARIDX folds written from ``ray.data.range`` to a local
directory and to SeaweedFS's S3, read back by ``binfmt verify``, ``wids``,
``webdataset`` and :class:`binfmt.taridx.Dataset`; the fold ``binfmt
taridx pack`` writes, byte for byte; a write task killed midway; ARCX
archives read and written; kastores read. Kept small (20,000 samples of a
few bytes, few blocks): CI runs on two cores."""

from __future__ import annotations

import filecmp
import hashlib
import os
import pathlib
import subprocess
import sys
import uuid

import numpy as np
import pytest

import binfmt
import binfmt.arcx
import binfmt.kastore
import binfmt.taridx as taridx

from conftest import reference
from test_taridx import wids_module

# Ray warns about its own deprecated settings when a DataContext is copied.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.data.context")

SAMPLES = 20_000
BLOCKS = 4
SHARD_SAMPLES = 2_500
BINFMT = pathlib.Path(sys.executable).parent / "binfmt"


def sample(i: int) -> dict:
    """The members of sample ``i`` (what the tests write and expect)."""
    return {
        "cls": str(i % 10).encode(),
        "bin": hashlib.sha256(i.to_bytes(8, "little")).digest()[: 1 + i % 32],
    }


def key(i: int) -> str:
    return f"s/{i:06d}"


def to_samples(batch: dict) -> dict:
    """``ray.data.range`` rows (``id``) to samples: ``__key__`` and one
    bytes column per extension."""
    ids = batch["id"].tolist()
    return {
        "__key__": [key(i) for i in ids],
        "cls": [sample(i)["cls"] for i in ids],
        "bin": [sample(i)["bin"] for i in ids],
    }


@pytest.fixture(scope="module")
def rayd(ray_cluster):
    """The ``ray`` module connected to the cluster, with this test module
    pickled by value (the workers cannot import it), rows kept in order
    (``preserve_order``) for the tests of this module, and ``binfmt.ray``."""
    ray = ray_cluster
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    context = ray.data.DataContext.get_current()
    before = context.execution_options.preserve_order
    context.execution_options.preserve_order = True
    import binfmt.ray

    yield ray
    context.execution_options.preserve_order = before


def samples_dataset(ray, n: int = SAMPLES, blocks: int = BLOCKS):
    return ray.data.range(n, override_num_blocks=blocks).map_batches(
        to_samples, batch_format="numpy"
    )


def check_fold(index: str, n: int = SAMPLES, step: int = 1) -> None:
    """Every sample (every ``step``-th) of the fold at ``index`` (a path or
    URL) is the one written, in order, read by :class:`binfmt.taridx.Dataset`."""
    ds = taridx.Dataset(index)
    assert len(ds) == n
    for i in range(0, n, step):
        got = ds[i]
        assert got["__key__"] == key(i), (i, got)
        assert {k: v for k, v in got.items() if not k.startswith("__")} == {
            "." + ext: value for ext, value in sample(i).items()
        }, i


def verify(location: str, env=None) -> None:
    done = subprocess.run(
        [str(BINFMT), "verify", location], capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def local_fold(rayd, tmp_path_factory):
    """20,000 samples from ``ray.data.range`` in 4 blocks, written with
    2,500 samples a shard: 8 shards."""
    import binfmt.ray

    root = tmp_path_factory.mktemp("ray-fold")
    index = str(root / "train.taridx")
    result = binfmt.ray.write_taridx(
        samples_dataset(rayd), index, shard_samples=SHARD_SAMPLES
    )
    return index, result


def test_write_taridx_local(local_fold):
    index, result = local_fold
    root = os.path.dirname(index)
    names = [f"train_{n:04d}.tar" for n in range(SAMPLES // SHARD_SAMPLES)]
    assert result == {
        "samples": SAMPLES,
        "shards": [os.path.join(root, name) for name in names],
        "index": index,
    }
    # The fold and nothing else: no temporary directory, no shard list
    # (glzn's names find the shards).
    assert sorted(os.listdir(root)) == sorted(names + ["train.taridx"])
    verify(index)
    check_fold(index)


def test_written_fold_reads_the_same_in_wids_and_webdataset(local_fold):
    index, result = local_fold
    wds = reference("webdataset")
    theirs = list(wds.WebDataset(result["shards"], shardshuffle=False))
    assert len(theirs) == SAMPLES
    for i, got in enumerate(theirs):
        assert got["__key__"] == key(i)
        assert {k: v for k, v in got.items() if not k.startswith("__")} == sample(i)
    wids = wids_module()
    counts = np.bincount(taridx.Dataset(index).sample_shards(), minlength=len(result["shards"]))
    spec = [{"url": s, "nsamples": int(n)} for s, n in zip(result["shards"], counts)]
    listed = wids.ShardListDataset(spec, transformations=[], cache_dir=os.path.dirname(index))
    assert len(listed) == SAMPLES
    for i in range(0, SAMPLES, 97):
        got = listed[i]
        assert got["__key__"] == key(i)
        assert {
            k: (v.read() if hasattr(v, "read") else bytes(v))
            for k, v in got.items()
            if k.startswith(".")
        } == {"." + ext: value for ext, value in sample(i).items()}


def test_read_taridx_equals_the_dataset(local_fold, rayd):
    import binfmt.ray

    index, _ = local_fold
    ours = taridx.Dataset(index)
    rows = binfmt.ray.read_taridx(index).take_all()
    assert len(rows) == len(ours) == SAMPLES
    for i, row in enumerate(rows):
        assert row == ours[i], i
    assert binfmt.ray.read_taridx(index).count() == SAMPLES
    # Both folds at once, one filtered: rows in the order given.
    two = binfmt.ray.read_taridx([index, index], extensions=[".cls"])
    assert two.count() == 2 * SAMPLES
    assert two.columns() == ["__key__", "__shard__", "__index__", ".cls"]


def test_read_taridx_plans_from_the_index_alone(local_fold, tmp_path):
    """Planning opens no shard: the shards moved away between opening the
    datasource and making its read tasks, the tasks are the same."""
    import binfmt.ray

    index, result = local_fold
    source = binfmt.ray.TaridxDatasource(index)
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    for shard in result["shards"]:
        os.rename(shard, hidden / os.path.basename(shard))
    try:
        for parallelism in (1, 3, 8, 50):
            tasks = source.get_read_tasks(parallelism)
            assert sum(task.metadata.num_rows for task in tasks) == SAMPLES
            # Whole shards per task while there are enough shards.
            if parallelism <= 8:
                assert len(tasks) == parallelism
                assert all(task.metadata.num_rows % SHARD_SAMPLES == 0 for task in tasks)
            else:
                # Shards cut, none below binfmt.ray.MIN_TASK_SAMPLES.
                assert len(tasks) > 8
                assert min(task.metadata.num_rows for task in tasks) >= binfmt.ray.MIN_TASK_SAMPLES
    finally:
        for shard in result["shards"]:
            os.rename(hidden / os.path.basename(shard), shard)


def test_same_bytes_as_taridx_pack(rayd, tmp_path):
    """For the same samples in the same order, cut at the same samples,
    the fold is ``binfmt taridx pack``'s byte for byte: one block, and
    four blocks whose sizes the shard size divides."""
    import binfmt.ray

    n = 6_000
    tree = tmp_path / "tree"
    for i in range(n):
        for ext, data in sample(i).items():
            path = tree / f"{key(i)}.{ext}"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    packed = tmp_path / "packed"
    done = subprocess.run(
        [str(BINFMT), "taridx", "pack", str(tree), "-o", str(packed / "train.taridx"),
         "--max-samples", "1500", "--keys", "webdataset"],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    for blocks in (1, 4):
        out = tmp_path / f"ray-{blocks}"
        binfmt.ray.write_taridx(
            samples_dataset(rayd, n, blocks), str(out / "train.taridx"), shard_samples=1500
        )
        assert sorted(os.listdir(out)) == sorted(os.listdir(packed))
        match, mismatch, errors = filecmp.cmpfiles(packed, out, os.listdir(packed), shallow=False)
        assert (mismatch, errors) == ([], []), blocks


def killing_sink(marker: str, location: str):
    """A ``TaridxDatasink`` whose task 1 exits its worker process midway,
    after 2,500 of its rows, on its first attempt only (the marker file
    says whether that attempt happened): Ray runs the task again."""
    import binfmt.ray
    from ray.data.block import BlockAccessor

    class KilledOnce(binfmt.ray.TaridxDatasink):
        def write(self, blocks, ctx):
            def rows_then_exit():
                done = 0
                for block in blocks:
                    accessor = BlockAccessor.for_block(block)
                    for start in range(0, accessor.num_rows(), 500):
                        if ctx.task_idx == 1 and done == 2500 and not os.path.exists(marker):
                            pathlib.Path(marker).write_text("killed")
                            os._exit(1)
                        piece = accessor.slice(start, min(start + 500, accessor.num_rows()))
                        done += BlockAccessor.for_block(piece).num_rows()
                        yield piece

            return super().write(rows_then_exit(), ctx)

    return KilledOnce(location, shard_samples=1000)


def test_a_task_killed_midway_leaves_a_correct_fold(rayd, tmp_path):
    """Task 1 dies after writing two of its shards (its worker process
    exits in the middle of the third); Ray runs it again, the retry
    rewrites the same temporary names, and the fold is complete and
    verifies, with no leftovers."""
    marker = str(tmp_path / "killed")
    index = str(tmp_path / "fold" / "train.taridx")
    sink = killing_sink(marker, index)
    samples_dataset(rayd).write_datasink(sink, ray_remote_args={"max_retries": 3})
    assert os.path.exists(marker), "the task was not killed"
    assert sink.result["samples"] == SAMPLES
    assert sorted(os.listdir(os.path.dirname(index))) == sorted(
        [f"train_{n:04d}.tar" for n in range(SAMPLES // 1000)] + ["train.taridx"]
    )
    verify(index)
    check_fold(index)


def test_an_existing_fold_is_refused(local_fold, rayd):
    import binfmt.ray

    index, result = local_fold
    with pytest.raises(FileExistsError, match="already exists"):
        binfmt.ray.write_taridx(samples_dataset(rayd, 10, 1), index)
    # Untouched.
    assert sorted(os.listdir(os.path.dirname(index))) == sorted(
        [os.path.basename(shard) for shard in result["shards"]] + ["train.taridx"]
    )
    verify(index)


def test_write_taridx_s3(rayd, test_servers, monkeypatch, tmp_path):
    """The same 20,000 samples into SeaweedFS's S3; read back by ``binfmt
    verify``, :class:`binfmt.taridx.Dataset` and ``read_taridx`` over
    ``s3://``, and by webdataset and wids over the filer's HTTP URLs of the
    same objects."""
    import binfmt.ray

    for name, value in (
        ("AWS_ENDPOINT_URL", "BINFMT_S3_ENDPOINT"),
        ("AWS_ACCESS_KEY_ID", "BINFMT_S3_ACCESS_KEY_ID"),
        ("AWS_SECRET_ACCESS_KEY", "BINFMT_S3_SECRET_ACCESS_KEY"),
        ("AWS_REGION", "BINFMT_S3_REGION"),
    ):
        monkeypatch.setenv(name, test_servers[value])
    monkeypatch.setenv("AWS_ALLOW_HTTP", "true")
    run = f"ray-{uuid.uuid4().hex[:8]}"
    bucket = test_servers["BINFMT_S3_BUCKET"]
    index = f"s3://{bucket}/{run}/train.taridx"
    result = binfmt.ray.write_taridx(samples_dataset(rayd), index, shard_samples=SHARD_SAMPLES)
    names = [f"train_{n:04d}.tar" for n in range(SAMPLES // SHARD_SAMPLES)]
    assert result["shards"] == [f"s3://{bucket}/{run}/{name}" for name in names]
    assert sorted(binfmt.list_prefix(f"s3://{bucket}/{run}")) == sorted(names + ["train.taridx"])
    verify(index, env=dict(os.environ))
    # One request a sample: every 37th here, all of them by read_taridx.
    check_fold(index, step=37)
    rows = binfmt.ray.read_taridx(index).take_all()
    assert [row["__key__"] for row in rows] == [key(i) for i in range(SAMPLES)]
    assert all(
        (row[".bin"], row[".cls"]) == (sample(i)["bin"], sample(i)["cls"])
        for i, row in enumerate(rows)
    )
    http = [f"{test_servers['BINFMT_S3_FILER_URL']}/buckets/{bucket}/{run}/{name}" for name in names]
    wds = reference("webdataset")
    theirs = list(wds.WebDataset(http, shardshuffle=False))
    assert [got["__key__"] for got in theirs] == [key(i) for i in range(SAMPLES)]
    assert all(
        {k: v for k, v in got.items() if not k.startswith("__")} == sample(i)
        for i, got in enumerate(theirs)
    )
    wids = wids_module()
    per_shard = SAMPLES // len(names)
    listed = wids.ShardListDataset(
        [{"url": url, "nsamples": per_shard} for url in http],
        transformations=[],
        cache_dir=str(tmp_path),
    )
    assert len(listed) == SAMPLES
    for i in range(0, SAMPLES, 97):
        got = listed[i]
        assert got["__key__"] == key(i)
        assert {
            k: (v.read() if hasattr(v, "read") else bytes(v))
            for k, v in got.items()
            if k.startswith(".")
        } == {"." + ext: value for ext, value in sample(i).items()}


# --- ARCX -----------------------------------------------------------------------


def make_arcx_corpus(root: pathlib.Path) -> None:
    """The ARCX bench corpus (``make_corpus`` of xtask/src/bench_arcx.rs):
    10,000 source-like files in 100 directories, two CSVs of 45 MB and
    41 MB, 30 MB of incompressible bytes (here numpy's PCG64, not the
    bench's xorshift)."""
    for i in range(10_000):
        directory = root / "src" / f"module_{i // 100:03d}"
        directory.mkdir(parents=True, exist_ok=True)
        text = "".join(
            f"pub fn item_{i}_{line}(x: u64) -> u64 {{ x.wrapping_mul({i * 31 + line}) ^ {line * 7 + i % 13} }}\n"
            for line in range(60 + i % 200)
        )
        (directory / f"file_{i:05d}.rs").write_text(text)
    (root / "data").mkdir()
    for name, rows in (("events.csv", 1_000_000), ("metrics.csv", 900_000)):
        with open(root / "data" / name, "w") as f:
            f.writelines(
                f"{row},user_{row % 977},{row % 1000}.{row % 97},event_{row % 13}\n"
                for row in range(rows)
            )
    (root / "data" / "noise.bin").write_bytes(
        np.random.default_rng(11).integers(0, 256, 30 << 20, dtype=np.uint8).tobytes()
    )


@pytest.fixture(scope="module")
def arcx_corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("arcx")
    make_arcx_corpus(root / "corpus")
    archive = root / "corpus.arcx"
    binfmt.arcx.pack(root / "corpus", archive)
    return archive


def test_read_arcx_equals_extract(arcx_corpus, rayd, tmp_path):
    import binfmt.ray

    out = tmp_path / "extracted"
    binfmt.arcx.Archive(arcx_corpus).extract(out)
    files = [entry for entry in binfmt.arcx.Archive(arcx_corpus).entries() if entry.kind == "file"]
    # Planned from the manifest: runs of about 200 MB / 8, a file never
    # split, cut only between files starting in different blocks.
    source = binfmt.ray.ArcxDatasource(str(arcx_corpus))
    tasks = source.get_read_tasks(8)
    assert len(tasks) >= 5 and sum(task.metadata.num_rows for task in tasks) == len(files)
    blocks = binfmt.arcx.Archive(arcx_corpus).entry_blocks()
    kinds = [entry.kind for entry in binfmt.arcx.Archive(arcx_corpus).entries()]
    file_blocks = [block for block, kind in zip(blocks, kinds) if kind == "file"]
    first = 0
    for task in tasks[:-1]:
        first += task.metadata.num_rows
        assert file_blocks[first] != file_blocks[first - 1]
    seen = 0
    ds = binfmt.ray.read_arcx(str(arcx_corpus))
    for batch in ds.iter_batches(batch_size=512, batch_format="pyarrow"):
        for row in batch.to_pylist():
            entry = files[seen]
            path = out / row["path"]
            stat = path.stat()
            assert row["path"] == entry.name
            assert row["bytes"] == path.read_bytes(), row["path"]
            assert (row["mode"], row["mtime"]) == (entry.mode, entry.mtime_ns)
            assert row["mode"] & 0o7777 == stat.st_mode & 0o7777
            assert row["mtime"] == stat.st_mtime_ns
            seen += 1
    assert seen == len(files) == 10_003


def test_write_arcx(arcx_corpus, rayd, tmp_path):
    """read_arcx then write_arcx: the same files, in the same order, with
    their modes and times; a path twice is refused."""
    import binfmt.ray

    copy = tmp_path / "copy.arcx"
    binfmt.ray.write_arcx(binfmt.ray.read_arcx(str(arcx_corpus)), str(copy))
    original = binfmt.arcx.Archive(arcx_corpus)
    written = binfmt.arcx.Archive(copy)
    assert written.verify()["files"] == 10_003
    files = [(e.name, e.size, e.mode, e.mtime_ns) for e in original.entries() if e.kind == "file"]
    assert [(e.name, e.size, e.mode, e.mtime_ns) for e in written.entries() if e.kind == "file"] == files
    for name in ("src/module_000/file_00000.rs", "data/noise.bin", "data/events.csv"):
        assert written.read(name) == original.read(name)
    assert os.listdir(tmp_path) == ["copy.arcx"]
    rows = rayd.data.from_items([{"path": "a", "bytes": b"1"}, {"path": "a", "bytes": b"2"}])
    with pytest.raises(Exception, match="'a'"):
        binfmt.ray.write_arcx(rows, str(tmp_path / "twice.arcx"))
    assert not (tmp_path / "twice.arcx").exists()


# --- KAST -----------------------------------------------------------------------


def test_read_kast(rayd, tmp_path):
    import binfmt.ray

    stores = []
    for n in range(2):
        arrays = {
            f"table_{k:03d}/column": np.arange(1000 * (k + 1) + n, dtype=dtype)
            for k, dtype in enumerate(["int8", "uint32", "float64", "int64", "float32", "uint8"] * 10)
        }
        path = tmp_path / f"store_{n}.kas"
        binfmt.kastore.dump(arrays, path)
        stores.append((str(path), arrays))
    source = binfmt.ray.KastDatasource([path for path, _ in stores], task_bytes=64 << 10)
    assert len(source.get_read_tasks(1)) > 2  # split by file and by groups of keys
    rows = binfmt.ray.read_kast([path for path, _ in stores], task_bytes=64 << 10).take_all()
    expected = [(path, k, a) for path, arrays in stores for k, a in sorted(arrays.items())]
    assert [(row["file"], row["key"]) for row in rows] == [(path, k) for path, k, _ in expected]
    for row, (_, _, array) in zip(rows, expected):
        assert row["dtype"] == str(array.dtype) and row["length"] == len(array)
        got = binfmt.ray.kast_array(row)
        assert got.dtype == array.dtype and np.array_equal(got, array)


# --- planning, without the cluster -------------------------------------------------


def test_runs_are_consecutive_balanced_and_never_empty():
    reference("ray")
    import binfmt.ray

    for weights, groups in (
        ([5] * 8, 3), ([1] * 3, 8), ([100, 1, 1, 1, 1], 2), ([1, 1, 1, 100], 3), ([7], 4), ([], 3),
    ):
        runs = binfmt.ray._group(weights, groups)
        assert [i for a, b in runs for i in range(a, b)] == list(range(len(weights)))
        assert all(a < b for a, b in runs) and len(runs) <= max(1, groups)
        assert len(runs) == min(groups, len(weights))
    runs = binfmt.ray._group([10] * 100, 4)
    assert [b - a for a, b in runs] == [25, 25, 25, 25]


def test_a_fold_s_own_names(tmp_path):
    reference("ray")
    import binfmt.ray

    sink = binfmt.ray.TaridxDatasink(str(tmp_path / "train.taridx"))
    names = [
        "train.taridx", "train.taridx.shards.json", "train_0000.tar", "train-000001.tar",
        "train.2.tar", "train_val_0000.tar", "trainer_0000.tar", "val_0000.tar", "train_0000.tar.tmp",
    ]
    assert sink._fold_names(names) == names[:5]
    with pytest.raises(ValueError, match="FOLD.taridx"):
        binfmt.ray.TaridxDatasink(str(tmp_path / "train.tar"))
    with pytest.raises(ValueError, match="s3://"):
        binfmt.ray.TaridxDatasink("https://example.org/train.taridx")
