"""The shared disk cache of remote shards: ``taridx.Dataset(url,
cache_dir=, cache_size=)`` against the test servers on loopback (nginx,
whose access log tells every request, and SeaweedFS's S3): spawned worker
processes sharing one directory read the local fold's bytes, a second pass
asks nothing the cache holds, a damaged file is fetched again and replaced,
a planted symlink is never followed, a directory others can write (or a
symlink) is refused naming it, and a small cache stays within the bound
spec/remote.md documents."""

from __future__ import annotations

import io
import multiprocessing
import os
import pathlib
import pickle
import random
import re
import shutil
import struct
import tarfile
import time
import urllib.error
import urllib.request
import uuid

import pytest
import xxhash

import binfmt.taridx as taridx

#: A cache file's header: magic, START, LEN, XXH3-128 of the bytes (little
#: endian), 16 zero bytes.
HEADER = 56
#: What one handle may write between two counts of the directory, as a
#: share of the limit (spec/remote.md, "Caches and memory").
RECOUNT_SHARE = 16


def make_fold(root: pathlib.Path, shards: int = 3, samples: int = 40) -> pathlib.Path:
    """A glzn fold ``root/train_0000.tar``, ... of samples with a random
    ``.bin`` (1 to 24 KiB) and a ``.cls``, indexed as ``root/train.taridx``."""
    rng = random.Random(31)
    root.mkdir(parents=True, exist_ok=True)
    paths = []
    for fid in range(shards):
        path = root / f"train_{fid:04d}.tar"
        with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
            for i in range(samples):
                key = f"{fid:02d}{i:04d}"
                for ext, data in (
                    ("bin", rng.randbytes(rng.randint(1 << 10, 24 << 10))),
                    ("cls", str(i % 7).encode()),
                ):
                    member = tarfile.TarInfo(f"{key}.{ext}")
                    member.size = len(data)
                    tar.addfile(member, io.BytesIO(data))
        paths.append(str(path))
    taridx.index(paths, str(root / "train.taridx"))
    return root / "train.taridx"


def plain(sample: dict) -> dict:
    """A sample without its shard's path (a URL or a local path)."""
    return {name: value for name, value in sample.items() if name != "__shard__"}


@pytest.fixture
def local(tmp_path):
    index = make_fold(tmp_path / "fold")
    ds = taridx.Dataset(index)
    return [plain(ds[i]) for i in range(len(ds))]


@pytest.fixture
def s3_fold(s3_env, tmp_path, local):
    """The fold published to a fresh S3 prefix; the AWS environment set
    (and inherited by spawned workers)."""
    url = f"s3://{s3_env}/py-cache-{uuid.uuid4().hex}/train.taridx"
    root = tmp_path / "fold"
    taridx.index(sorted(str(path) for path in root.glob("train_*.tar")), url)
    return url


@pytest.fixture
def nginx_fold(test_servers, tmp_path, local):
    """The fold under nginx's root, its URL, and a function giving the
    requests nginx logged for it since the last call: ``(method, name,
    status, range)``."""
    run = f"py-cache-{uuid.uuid4().hex}"
    www = pathlib.Path(test_servers["BINFMT_SERVERS_WWW"]) / run
    shutil.copytree(tmp_path / "fold", www)
    log = pathlib.Path(test_servers["BINFMT_NGINX_ACCESS_LOG"])
    at = [log.stat().st_size]
    line = re.compile(rf'^\S+ (\S+) /{run}/(\S+) (\d+) \d+ range="([^"]*)"', re.MULTILINE)

    def requests():
        # A marker request last: nginx logs a request when it is done, so
        # the log is read up to the marker's line.
        marker = f"marker-{uuid.uuid4().hex}"
        try:
            urllib.request.urlopen(f"{test_servers['BINFMT_NGINX_URL']}/{run}/{marker}")
        except urllib.error.HTTPError as error:
            assert error.code == 404
        text = ""
        for _ in range(200):
            with open(log, "rb") as f:
                f.seek(at[0])
                text = f.read().decode()
            if f"/{run}/{marker} " in text:
                break
            time.sleep(0.01)
        text = text[: text.index(f"/{run}/{marker} ")]
        text = text[: text.rfind("\n") + 1]
        at[0] += len(text.encode())
        return [(m[1], m[2], int(m[3]), m[4]) for m in line.finditer(text) if "marker-" not in m[2]]

    yield f"{test_servers['BINFMT_NGINX_URL']}/{run}/train.taridx", requests
    shutil.rmtree(www, ignore_errors=True)


def cache_files(root: pathlib.Path) -> dict[pathlib.Path, bytes]:
    """Every ``KEY/START-LEN`` and ``KEY/whole-SIZE`` file of a cache
    directory, with its bytes."""
    found = {}
    for key in root.iterdir():
        if re.fullmatch("[0-9a-f]{32}", key.name) and key.is_dir() and not key.is_symlink():
            for entry in key.iterdir():
                named = re.fullmatch(r"\d+-\d+|whole-\d+", entry.name)
                if named and entry.is_file() and not entry.is_symlink():
                    found[entry] = entry.read_bytes()
    return found


def is_whole(name: str, data: bytes) -> bool:
    """Whether ``data`` is a valid cache file named ``START-LEN`` (a range)
    or ``whole-SIZE`` (an object joined from its ranges: its bytes at their
    offsets, the XXH3-128 of each 16 KiB block, then the runs it holds, all
    but the bytes under the header's own XXH3-128)."""
    if name.startswith("whole-"):
        size = int(name.removeprefix("whole-"))
        magic, zero, head_size, block, runs = struct.unpack_from("<8sQQQQ", data)
        body = data[HEADER : HEADER + size]
        table = b"".join(
            xxhash.xxh3_128(body[at : at + block]).intdigest().to_bytes(16, "little")
            for at in range(0, size, block)
        )
        held = [
            struct.unpack_from("<QQ", data, HEADER + size + len(table) + 16 * k)
            for k in range(runs)
        ]
        apart = all(a + n < b for (a, n), (b, _) in zip(held, held[1:]))
        tail = data[HEADER + size :]
        meta = xxhash.xxh3_128(data[:40] + tail).intdigest().to_bytes(16, "little")
        return (
            (magic, zero, head_size, block) == (b"binfmtRW", 0, size, 16384)
            and data[40:HEADER] == meta
            and tail[: len(table)] == table
            and len(data) == HEADER + size + len(table) + 16 * runs
            and apart
            and all(n > 0 and a + n <= size for a, n in held)
        )
    start, length = (int(part) for part in name.split("-"))
    magic, head_start, head_len = struct.unpack_from("<8sQQ", data)
    return (
        magic == b"binfmtR2"
        and (head_start, head_len) == (start, length)
        and len(data) == HEADER + length
        and data[24:40] == xxhash.xxh3_128(data[HEADER:]).intdigest().to_bytes(16, "little")
        and data[40:HEADER] == bytes(16)
    )


def read_all(payload: bytes) -> list[dict]:
    """A spawned worker: unpickles a dataset and reads every sample, in an
    order of its own."""
    ds, seed = pickle.loads(payload)
    order = list(range(len(ds)))
    random.Random(seed).shuffle(order)
    samples = {i: plain(ds[i]) for i in order}
    return [samples[i] for i in range(len(ds))]


def test_four_spawned_workers_share_one_cache(s3_fold, local, tmp_path):
    cache = tmp_path / "cache"
    ds = taridx.Dataset(s3_fold, cache_dir=cache)
    clone = pickle.loads(pickle.dumps(ds))
    assert (clone._cache_dir, clone._cache_size) == (str(cache), None)
    jobs = [pickle.dumps((ds, seed)) for seed in range(4)]
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        results = pool.map(read_all, jobs)
    for result in results:
        assert result == local
    files = cache_files(cache)
    # Every object was read through: the workers joined their ranges into
    # whole files (whichever finished first; a worker that had not seen a
    # join may have written ranges again beside one).
    assert any(path.name.startswith("whole-") for path in files), sorted(files)
    assert all(is_whole(path.name, data) for path, data in files.items())
    # Every byte read by the workers is on disk: a new dataset reading
    # through the cache alone gives the same samples.
    again = taridx.Dataset(s3_fold, cache_dir=cache)
    assert [plain(again[i]) for i in range(len(again))] == local


def test_a_second_pass_is_served_from_the_cache(nginx_fold, local, tmp_path):
    url, requests = nginx_fold
    cache = tmp_path / "cache"
    first = taridx.Dataset(url, cache_dir=cache, cache_size=64 << 20)
    assert [plain(first[i]) for i in range(len(first))] == local
    fetched = requests()
    assert sum(1 for _, _, status, _ in fetched if status == 206) > len(local) // 2
    second = taridx.Dataset(url, cache_dir=cache, cache_size=64 << 20)
    assert [plain(second[i]) for i in range(len(second))] == local
    again = requests()
    # One request opens each object (it checks the ETag); no range the
    # cache holds is asked for.
    opened = [name for _, name, status, _ in again if status in (200, 206)]
    assert sorted(opened) == sorted(set(opened)), again
    assert set(opened) <= {"train.taridx", *(f"train_{fid:04d}.tar" for fid in range(3))}, again
    assert len(again) < len(fetched) // 4, (again, fetched)


def test_a_damaged_file_is_fetched_again_and_replaced(nginx_fold, local, tmp_path):
    url, requests = nginx_fold
    cache = tmp_path / "cache"
    ds = taridx.Dataset(url, cache_dir=cache)
    assert [plain(ds[i]) for i in range(len(ds))] == local
    files = cache_files(cache)
    path = max(files, key=lambda path: len(files[path]))
    damaged = bytearray(files[path])
    damaged[HEADER + len(damaged[HEADER:]) // 2] ^= 0x40
    path.write_bytes(bytes(damaged))
    requests()
    ds = taridx.Dataset(url, cache_dir=cache)
    assert [plain(ds[i]) for i in range(len(ds))] == local
    # The damaged object was fetched again (a pass over a whole cache
    # fetches no range: test_a_second_pass_is_served_from_the_cache); its
    # whole file went when the damage was found.
    assert path.name.startswith("whole-")
    assert any(status == 206 for _, _, status, _ in requests())
    assert not path.exists()
    # What that pass had read from the whole file before the damage is
    # fetched by the next one, and the object is joined again.
    ds = taridx.Dataset(url, cache_dir=cache)
    assert [plain(ds[i]) for i in range(len(ds))] == local
    assert is_whole(path.name, path.read_bytes())
    assert all(is_whole(p.name, data) for p, data in cache_files(cache).items())


def test_a_planted_symlink_is_never_followed(nginx_fold, local, tmp_path):
    url, _ = nginx_fold
    cache = tmp_path / "cache"
    ds = taridx.Dataset(url, cache_dir=cache)
    assert [plain(ds[i]) for i in range(len(ds))] == local
    files = cache_files(cache)
    # The victim holds the entry's own valid bytes: only its time or a
    # write could tell that it was followed.
    planted = sorted(files)[: len(files) // 2]
    victims = []
    for n, path in enumerate(planted):
        victim = tmp_path / f"victim-{n}"
        victim.write_bytes(files[path])
        os.utime(victim, (1_000_000_000, 1_000_000_000))
        path.unlink()
        path.symlink_to(victim)
        victims.append(victim)
    ds = taridx.Dataset(url, cache_dir=cache)
    assert [plain(ds[i]) for i in range(len(ds))] == local
    for path, victim in zip(planted, victims):
        assert victim.read_bytes() == files[path]
        assert victim.stat().st_mtime == 1_000_000_000, "the symlink was followed"
        # Fetched again and written in place of the link, never through it.
        assert not path.is_symlink() and path.read_bytes() == files[path]
    # Eviction (a limit far below the fold) never deletes through a link.
    for path, victim in zip(planted, victims):
        path.unlink()
        path.symlink_to(victim)
    small = taridx.Dataset(url, cache_dir=cache, cache_size=32 << 10)
    assert [plain(small[i]) for i in range(len(small))] == local
    assert all(victim.read_bytes() == files[path] for path, victim in zip(planted, victims))


def test_unsafe_directories_are_refused_naming_them(nginx_fold, tmp_path):
    url, _ = nginx_fold
    shared = tmp_path / "shared"
    for mode in (0o777, 0o1777, 0o770):
        shared.mkdir(exist_ok=True)
        shared.chmod(mode)
        with pytest.raises(OSError, match="writable by other users") as error:
            taridx.Dataset(url, cache_dir=shared)
        assert str(shared) in str(error.value)
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(OSError, match="symlink") as error:
        taridx.Dataset(url, cache_dir=link)
    assert str(link) in str(error.value)
    assert list(real.iterdir()) == []


def test_arguments(nginx_fold, tmp_path):
    url, _ = nginx_fold
    with pytest.raises(ValueError, match="cache_size needs cache_dir"):
        taridx.Dataset(url, cache_size=1 << 20)
    for bad in (0, -1):
        with pytest.raises(ValueError, match="cache_size"):
            taridx.Dataset(url, cache_dir=tmp_path / "c", cache_size=bad)
    with pytest.raises(TypeError, match="cache_size"):
        taridx.Dataset(url, cache_dir=tmp_path / "c", cache_size=True)
    with pytest.raises(ValueError, match="is local"):
        taridx.Dataset(tmp_path / "fold" / "train.taridx", cache_dir=tmp_path / "c")
    assert not (tmp_path / "c").exists()
    ds = taridx.Dataset(url, cache_dir=tmp_path / "c", cache_size=5 << 20)
    narrowed = ds.filter_extensions(["cls"])
    assert (narrowed._cache_dir, narrowed._cache_size) == (str(tmp_path / "c"), 5 << 20)
    # A forged state is refused like any other.
    state = ds.__getstate__()
    for change in ({"_cache_size": 0}, {"_cache_dir": 5}, {"_cache_dir": None}):
        with pytest.raises((TypeError, ValueError)):
            object.__new__(taridx.Dataset).__setstate__({**state, **change})
    # A state pickled before the cache settings existed still loads.
    old = {name: value for name, value in state.items() if not name.startswith("_cache")}
    clone = object.__new__(taridx.Dataset)
    clone.__setstate__(old)
    assert clone._cache_dir is None and len(clone) == len(ds)


def test_a_small_cache_stays_within_the_bound(s3_fold, local, tmp_path):
    cache = tmp_path / "cache"
    limit = 96 << 10
    ds = taridx.Dataset(s3_fold, cache_dir=cache, cache_size=limit)
    jobs = [pickle.dumps((ds, seed)) for seed in range(4)]
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        results = pool.map(read_all, jobs)
    assert all(result == local for result in results)
    total = sum(len(data) for data in cache_files(cache).values())
    # Five handles wrote to it: this process's dataset and the workers'.
    bound = limit + 5 * (limit // RECOUNT_SHARE)
    assert 0 < total <= bound, (total, bound)
    # The fold is far larger: without eviction it would not fit.
    fold = sum(len(sample[".bin"]) for sample in local)
    assert fold > 8 * bound
