"""Hostile calls into the Python entry points: integers sizing native
buffers, sizes declared by files, a fork after remote use, positions that
are not integers, pickled states that lie, files truncated underneath a
reader, and inputs a dependency would panic on.

A failure here would kill the interpreter (an abort, SIGBUS) or hang it, so
each case runs in a child interpreter: the test asserts its exit status and
the exception type it printed."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import tarfile
import textwrap

import pytest

import binfmt.taridx as taridx

HERE = pathlib.Path(__file__).resolve().parent

#: What every child script starts with: the test servers of test_remote.py
#: importable, and ``expect``, which runs a call and prints the name of the
#: exception it raised (or ``ok``).
PRELUDE = """
import os, pickle, resource, sys
sys.path.insert(0, {here!r})
import binfmt, binfmt.taridx as taridx, binfmt.par4 as par4

def limit_memory(gib):
    resource.setrlimit(resource.RLIMIT_AS, (gib << 30, gib << 30))

def expect(label, call):
    try:
        value = call()
    except BaseException as error:  # PanicException is a BaseException
        print(label, type(error).__name__, str(error)[:300].replace("\\n", " "), flush=True)
        return error
    print(label, "ok", repr(value)[:120], flush=True)
    return value
"""


def child(code: str, *args: str, timeout: float = 300) -> dict[str, str]:
    """Runs ``code`` after the prelude in a new interpreter; asserts it
    exited 0 and returns ``{label: "ExceptionName message"}`` from its
    ``expect`` lines."""
    script = PRELUDE.format(here=str(HERE)) + textwrap.dedent(code)
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, (
        f"child died with status {done.returncode}\n"
        f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
    )
    assert "PanicException" not in done.stdout + done.stderr, done.stdout + done.stderr
    results = {}
    for line in done.stdout.splitlines():
        label, _, rest = line.partition(" ")
        results[label] = rest
    return results


def write_shard(path, samples):
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
        for key, members in samples:
            for ext, data in members.items():
                info = tarfile.TarInfo(f"{key}.{ext}")
                info.size = len(data)
                tar.addfile(info, __import__("io").BytesIO(data))


@pytest.fixture
def fold(tmp_path):
    """A fold of two shards, 20 samples (keys 000000..000019, the first
    shard unsorted so that positions and keys disagree)."""
    samples = [(f"{i:06d}", {"bin": os.urandom(40 + i), "cls": str(i).encode()}) for i in range(20)]
    first = samples[:10]
    first = first[1:] + first[:1]
    shards = [str(tmp_path / "train_0000.tar"), str(tmp_path / "train_0001.tar")]
    write_shard(shards[0], first)
    write_shard(shards[1], samples[10:])
    index = str(tmp_path / "train.taridx")
    taridx.index(shards, index)
    return index, shards


# -- Python integers sizing native buffers ---------------------------------


def test_open_shards_is_checked(fold):
    index, shards = fold
    out = child(
        """
        index, shards = sys.argv[1], sys.argv[2:]
        for value in (2**32, 2**60, 2**64, -1, 0):
            expect(f"open_shards={value}", lambda: taridx.Dataset(index, shards, open_shards=value))
        expect("open_shards=1.5", lambda: taridx.Dataset(index, shards, open_shards=1.5))
        ds = taridx.Dataset(index, shards, open_shards=3)
        state = ds.__getstate__()
        state["_open_shards"] = 2**32
        clone = object.__new__(taridx.Dataset)
        expect("setstate", lambda: clone.__setstate__(state))
        expect("clone[0]", lambda: clone[0]["__key__"])
        expect("max", lambda: len(taridx.Dataset(index, shards, open_shards=65536)))
        """,
        index,
        *shards,
    )
    for value in (2**32, 2**60, 2**64, -1, 0):
        label = f"open_shards={value}"
        assert out[label].split()[0] in ("ValueError", "OverflowError"), out
        assert "open_shards" in out[label], out
    assert out["open_shards=1.5"].startswith("TypeError"), out
    assert out["setstate"].startswith("ValueError") and "open_shards" in out["setstate"], out
    assert out["max"] == "ok 20", out


def test_sampler_sizes():
    out = child(
        """
        limit_memory(8)
        expect("2**40", lambda: len(taridx.Sampler(2**40).order()))
        expect("2**62", lambda: len(taridx.Sampler(2**62).order()))
        expect("2**63", lambda: taridx.Sampler(2**63))
        expect("2**64", lambda: taridx.Sampler(2**64))
        expect("-1", lambda: taridx.Sampler(-1))
        expect("float", lambda: taridx.Sampler(2.5))
        expect("world", lambda: taridx.Sampler(10, rank=0, world_size=2**64))
        expect("seed", lambda: taridx.Sampler(10, seed=-1).order())
        share = taridx.Sampler(2**33, world_size=2**30, rank=5, shuffle=False).order()
        print("share", "ok", share.tolist(), flush=True)
        expect("share-shuffled", lambda: len(taridx.Sampler(2**33, world_size=2**30).order()))
        expect("drop", lambda: taridx.Sampler(2**63 - 1, world_size=2**62, shuffle=False, drop_last=True).order().tolist())
        """
    )
    assert out["2**40"].startswith("MemoryError"), out
    assert out["2**62"].startswith("MemoryError"), out
    for label in ("2**63", "2**64", "-1", "world"):
        assert out[label].split()[0] in ("ValueError", "OverflowError"), out
    assert out["float"].startswith("TypeError"), out
    assert out["seed"].split()[0] in ("ValueError", "OverflowError"), out
    assert out["share"] == f"ok {[5 + k * 2**30 for k in range(8)]}", out
    assert out["share-shuffled"].split()[0] in ("MemoryError", "ok"), out
    assert out["drop"] == f"ok {[0]}", out


# -- sizes declared by files -----------------------------------------------


def test_sparse_member_is_not_allocated(tmp_path):
    shard = tmp_path / "big_0000.tar"
    info = tarfile.TarInfo("k0.bin")
    info.size = 64 << 30
    with open(shard, "wb") as f:
        f.write(info.tobuf(format=tarfile.GNU_FORMAT))
        f.seek(512 + (64 << 30))
        f.write(bytes(1024))
    index = tmp_path / "big.taridx"
    taridx.index([shard], index)
    out = child(
        """
        limit_memory(1)
        ds = taridx.Dataset(sys.argv[1], [sys.argv[2]])
        expect("sample", lambda: ds[0])
        expect("get", lambda: ds.get("k0"))
        entries = binfmt.open(sys.argv[1])
        expect("read", lambda: entries.read("k0.bin"))
        """,
        str(index),
        str(shard),
    )
    for label in ("sample", "get", "read"):
        kind = out[label].split()[0]
        assert kind in ("MemoryError", "BinfmtError"), out
        assert "k0.bin" in out[label], out


def test_index_claiming_rows_over_a_truncated_file(fold, tmp_path):
    """An index whose header claims 2**26 rows: over the file as it is
    (refused when opened), and over a file extended to that size by
    truncate (sparse: 2 GiB of zero rows, read into memory only fallibly)."""
    index, shards = fold
    data = bytearray(pathlib.Path(index).read_bytes())
    off_arr = int.from_bytes(data[48:56], "little")
    data[24:32] = (1 << 26).to_bytes(8, "little")
    short, sparse = tmp_path / "short", tmp_path / "sparse"
    for directory in (short, sparse):
        directory.mkdir()
        (directory / "train.taridx").write_bytes(bytes(data))
        for shard in shards:
            os.link(shard, directory / os.path.basename(shard))
    os.truncate(sparse / "train.taridx", off_arr + (1 << 26) * 32)
    for directory in (short, sparse):
        out = child(
            """
            limit_memory(1)
            index = sys.argv[1]
            shards = sorted(os.path.join(os.path.dirname(index), name)
                            for name in os.listdir(os.path.dirname(index)) if name.endswith(".tar"))
            expect("verify", lambda: taridx.Index(index).verify())
            expect("dataset", lambda: taridx.Dataset(index, shards))
            expect("open", lambda: len(binfmt.open(index)))
            """,
            str(directory / "train.taridx"),
        )
        for label in ("verify", "dataset", "open"):
            assert out[label].split()[0] in ("BinfmtError", "MemoryError"), out


# -- positions and pickled states ------------------------------------------


def test_positions_are_integers(fold):
    import numpy as np

    index, shards = fold
    ds = taridx.Dataset(index, shards)
    keys = [ds[i]["__key__"] for i in range(len(ds))]
    assert keys[3] != "000003"
    for bad in ("000003", "3", 1.9, -1.5, b"2", None, [1], 2.0):
        with pytest.raises(TypeError):
            ds[bad]
    assert ds[np.int64(3)]["__key__"] == keys[3]
    assert ds[-1]["__key__"] == keys[-1]
    assert ds.get("000003")["__key__"] == "000003"
    for bad in (3, b"000003", None):
        with pytest.raises(TypeError):
            ds.get(bad)


def test_pickled_state_is_checked(fold):
    index, shards = fold
    ds = taridx.Dataset(index, shards)
    good = ds.__getstate__()
    forged = [
        {"_length": 999},
        {"_length": -1},
        {"_length": "20"},
        {"_index": 5},
        {"_shards": "train_0000.tar"},
        {"_shards": [5]},
        {"_extensions": ["nope"]},
        {"_extensions": "bin"},
        {"_map_shards": "yes"},
        {"_zero_copy": 2},
        {"_open_shards": 2**32},
        {"_open_shards": True},
        {"_native": object()},
        {"_surprise": 1},
    ]
    for change in forged:
        clone = object.__new__(taridx.Dataset)
        with pytest.raises((ValueError, TypeError, binfmt_error())):
            clone.__setstate__({**good, **change})
    missing = dict(good)
    del missing["_length"]
    with pytest.raises(ValueError):
        object.__new__(taridx.Dataset).__setstate__(missing)
    clone = object.__new__(taridx.Dataset)
    clone.__setstate__(dict(good))
    assert len(clone) == 20 and clone[3] == ds[3]


def test_a_lying_row_fails_on_every_read(fold):
    """A row whose key disagrees with its member's tar header is refused on
    its first read and on every read after (what is remembered per open
    shard never covers the row's own fields), by ``ds[i]`` and by
    ``get_batch``, while every other sample reads."""
    import numpy as np

    index, shards = fold
    rows = taridx.Index(index).rows.copy()
    # A member of the second shard says it belongs to another sample.
    liar = int(np.argmax(rows["fid"] == 1))
    other = int(np.argmax(rows["keyhash"] != rows["keyhash"][liar]))
    rows["keyhash"][liar] = rows["keyhash"][other]
    with open(index, "r+b") as f:
        f.seek(-rows.nbytes, os.SEEK_END)
        f.write(rows.tobytes())
    ds = taridx.Dataset(index, shards)
    for attempt in range(3):
        failed = []
        for i in range(len(ds)):
            try:
                ds[i]
            except binfmt_error():
                failed.append(i)
        assert len(failed) == 1, (attempt, failed)
        good = [i for i in range(len(ds)) if i not in failed]
        with pytest.raises(binfmt_error()):
            ds.get_batch([good[0], failed[0]])
        assert [s["__key__"] for s in ds.get_batch(good)] == [ds[i]["__key__"] for i in good]


def binfmt_error():
    import binfmt

    return binfmt.BinfmtError


# -- files changed underneath a reader -------------------------------------


def test_truncated_shard_and_index_under_a_dataset(fold):
    index, shards = fold
    out = child(
        """
        index, shards = sys.argv[1], sys.argv[2:]
        ds = taridx.Dataset(index, shards)
        first = ds[0]
        last = ds[len(ds) - 1]
        os.truncate(shards[0], 0)
        os.truncate(shards[1], 1024)
        expect("shard0", lambda: ds[0])
        expect("shard1", lambda: ds[len(ds) - 1])
        os.truncate(index, 64)
        expect("index", lambda: ds[5])
        expect("verify", lambda: ds.verify())
        expect("get", lambda: ds.get("000004"))
        """,
        index,
        *shards,
    )
    for label in ("shard0", "shard1", "index", "verify", "get"):
        assert out[label].split()[0] in ("BinfmtError", "OSError", "ok"), out
    assert out["shard0"].split()[0] != "ok", out


def test_truncated_index_under_an_index(fold):
    index, shards = fold
    out = child(
        """
        index, shards = sys.argv[1], sys.argv[2:]
        ix = taridx.Index(index)
        os.truncate(index, 100)
        expect("verify", lambda: ix.verify(shards))
        expect("crash", lambda: ix.crash_stems)
        """,
        index,
        *shards,
    )
    assert out["verify"].split()[0] in ("BinfmtError", "OSError"), out
    assert out["crash"].split()[0] in ("BinfmtError", "OSError", "ok"), out


def test_truncated_par4(tmp_path):
    import binfmt
    import binfmt.arcx

    tree = tmp_path / "tree"
    tree.mkdir()
    for i in range(30):
        (tree / f"f{i}.bin").write_bytes(os.urandom(300 * i))
    binfmt.arcx.pack(tree, tmp_path / "t.arcx")
    binfmt.convert(tmp_path / "t.arcx", tmp_path / "t.par4", to="par4")
    out = child(
        """
        path = sys.argv[1]
        f = par4.open(path)
        m = f.map()
        os.truncate(path, 200)
        expect("get", lambda: m["f29.bin"])
        expect("verify", lambda: f.verify())
        expect("tree", lambda: f.tree())
        expect("inspect", lambda: f.inspect())
        """,
        str(tmp_path / "t.par4"),
    )
    for label in ("get", "verify"):
        assert out[label].split()[0] in ("BinfmtError", "OSError"), out
    # The inspector reports what it cannot read inside its report.
    for label in ("tree", "inspect"):
        assert out[label].split()[0] in ("BinfmtError", "OSError", "ok"), out


# -- inputs a dependency would panic on -------------------------------------


def test_long_urls_raise():
    out = child(
        """
        url = "http://127.0.0.1:9/" + "a" * 70000 + ".taridx"
        expect("dataset", lambda: taridx.Dataset(url))
        expect("index", lambda: taridx.Index(url))
        expect("par4", lambda: par4.File(url))
        expect("open", lambda: binfmt.open(url))
        expect("sniff", lambda: binfmt.sniff(url))
        """
    )
    for label in ("dataset", "index", "par4", "open", "sniff"):
        kind = out[label].split()[0]
        assert kind not in ("ok", "PanicException"), out
        assert kind in ("BinfmtError", "OSError", "ValueError"), out


# -- a fork after remote use -----------------------------------------------


def test_forked_children_read_remote_datasets(tmp_path):
    from test_remote import write_shard as write_fold_shard

    samples = [(f"s{i:04d}", {"bin": os.urandom(50 + 13 * i), "cls": str(i).encode()}) for i in range(30)]
    write_fold_shard(tmp_path / "train_0000.tar", samples[:15])
    write_fold_shard(tmp_path / "train_0001.tar", samples[15:])
    taridx.index([tmp_path / "train_0000.tar", tmp_path / "train_0001.tar"], tmp_path / "train.taridx")
    import binfmt.arcx

    tree = tmp_path / "tree"
    tree.mkdir()
    for i in range(10):
        (tree / f"f{i}.bin").write_bytes(os.urandom(200 * i))
    binfmt.arcx.pack(tree, tmp_path / "tree.arcx")
    binfmt.convert(tmp_path / "tree.arcx", tmp_path / "tree.par4", to="par4")
    out = child(
        """
        import test_remote
        root = sys.argv[1]
        local = taridx.Dataset(f"{root}/train.taridx")
        expected = [{**local[i], "__shard__": None} for i in range(len(local))]
        contents = {f"f{i}.bin": open(f"{root}/tree/f{i}.bin", "rb").read() for i in range(10)}
        with test_remote.serve(root, test_remote.RangeHandler) as (url, _):
            # The parent reads a little through each reader (its connection
            # pools hold a connection), leaving the rest for its children.
            ds = taridx.Dataset(f"{url}/train.taridx")
            same = lambda i: {**ds[i], "__shard__": None} == expected[i]
            assert same(0)
            index = taridx.Index(f"{url}/train.taridx")
            f = par4.File(f"{url}/tree.par4")
            lazy = f.map()
            assert lazy["f1.bin"] == contents["f1.bin"]
            entries = binfmt.open(f"{url}/tree.arcx")
            assert entries.read("f2.bin") == contents["f2.bin"]
            children = []
            for worker in range(4):
                pid = os.fork()
                if pid == 0:
                    try:
                        good = all(same(i) for i in range(worker, len(ds)))
                        good &= index.verify() > 0
                        good &= all(lazy[name] == data for name, data in contents.items())
                        good &= all(entries.read(name) == data for name, data in contents.items())
                        os._exit(0 if good else 3)
                    except BaseException as error:
                        print("child", type(error).__name__, error, flush=True)
                        os._exit(4)
                children.append(pid)
            # The parent goes on reading while its children do.
            parent = all(same(i) for i in reversed(range(len(ds))))
            statuses = sorted(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children)
            print("statuses", "ok", statuses, parent, flush=True)
        """,
        str(tmp_path),
        timeout=240,
    )
    assert out["statuses"] == "ok [0, 0, 0, 0] True", out
