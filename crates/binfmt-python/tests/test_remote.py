"""URLs wherever a file is read: ``binfmt.open``, ``binfmt.sniff``,
``binfmt.convert``, ``binfmt.arcx.Archive``, ``binfmt.taridx.Index`` and
``binfmt.taridx.Dataset``, against HTTP servers on 127.0.0.1 started and
stopped by the tests: one that answers range requests (with ETags, checking
``If-Match``), and Python's own ``http.server``, which ignores ranges."""

from __future__ import annotations

import contextlib
import http.server
import io
import os
import pickle
import re
import tarfile
import threading
import warnings

import numpy as np
import pytest

import binfmt
import binfmt.arcx
import binfmt.kastore as kas
import binfmt.par4 as par4
import binfmt.taridx as taridx


class RangeHandler(http.server.SimpleHTTPRequestHandler):
    """Files of a directory, with single byte ranges (``a-b``, ``a-``,
    ``-n``), a strong ETag and ``If-Match``; every request is recorded."""

    protocol_version = "HTTP/1.1"
    # Headers and body go out as separate writes: without this, Nagle's
    # algorithm and delayed ACKs hold each body back by 40 ms.
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self.answer(body=False)

    def do_GET(self):
        self.answer(body=True)

    def answer(self, body: bool) -> None:
        self.server.requests.append((self.command, self.path, self.headers.get("Range")))
        path = self.translate_path(self.path)
        if not os.path.isfile(path):
            self.send_error(404)
            return
        with open(path, "rb") as f:
            data = f.read()
        stat = os.stat(path)
        etag = f'"{stat.st_size:x}-{stat.st_mtime_ns:x}"'
        if self.headers.get("If-Match") not in (None, "*", etag):
            self.send_error(412)
            return
        start, end, status = 0, len(data), 200
        wanted = self.headers.get("Range")
        if wanted:
            match = re.fullmatch(r"bytes=(\d*)-(\d*)", wanted.strip())
            if match is None or match.groups() == ("", ""):
                self.send_error(416)
                return
            first, last = match.groups()
            if first == "":
                start = max(0, len(data) - int(last))
            else:
                start = int(first)
                end = min(len(data), int(last) + 1) if last else len(data)
            if start >= len(data) or start >= end:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            status = 206
        self.send_response(status)
        self.send_header("Content-Length", str(end - start))
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", etag)
        self.send_header("Last-Modified", self.date_time_string(int(stat.st_mtime)))
        self.end_headers()
        if body:
            self.wfile.write(data[start:end])


class PlainHandler(http.server.SimpleHTTPRequestHandler):
    """Python's own file server (ranges ignored), requests recorded."""

    def log_message(self, *args):
        pass

    def send_head(self):
        self.server.requests.append((self.command, self.path, self.headers.get("Range")))
        return super().send_head()


@contextlib.contextmanager
def serve(directory, handler):
    """Serves ``directory`` on 127.0.0.1 at a free port; yields the base URL
    and the list of requests made."""

    class Bound(handler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(directory), **kwargs)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Bound)
    server.daemon_threads = True
    server.requests = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.requests
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def write_shard(path, samples):
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
        for key, members in samples:
            for ext, data in members.items():
                info = tarfile.TarInfo(f"{key}.{ext}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A directory holding a TARIDX fold (two shards), an ARCX archive of a
    tree and a KAST store; with the tree's contents and the samples."""
    root = tmp_path_factory.mktemp("served")
    samples = [
        (f"s{i:04d}", {"bin": os.urandom(50 + 13 * i), "cls": str(i % 3).encode()})
        for i in range(40)
    ]
    shards = [str(root / "train_0000.tar"), str(root / "train_0001.tar")]
    write_shard(shards[0], samples[:25])
    write_shard(shards[1], samples[25:])
    taridx.index(shards, root / "train.taridx", key_rule="webdataset")
    tree = tmp_path_factory.mktemp("tree")
    contents = {f"dir/f{i}.txt": os.urandom(1000 * i) for i in range(5)}
    for name, data in contents.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_bytes(data)
    binfmt.arcx.pack(tree, root / "tree.arcx")
    binfmt.convert(root / "tree.arcx", root / "tree.par4", to="par4")
    kas.dump({"a": np.arange(10), "b": np.linspace(0, 1, 5)}, root / "store.kas")
    return root, contents, samples


@pytest.fixture(scope="module")
def http_url(files):
    with serve(files[0], RangeHandler) as (url, requests):
        yield url, requests


def test_sniff_and_open_urls(files, http_url):
    root, contents, _ = files
    url, _ = http_url
    assert binfmt.sniff(f"{url}/tree.arcx") == "arcx"
    assert binfmt.sniff(f"{url}/store.kas") == "kast"
    assert binfmt.sniff(f"{url}/train.taridx") == "taridx"
    assert binfmt.sniff(f"{url}/train_0000.tar") == "tar"
    entries = binfmt.open(f"{url}/tree.arcx")
    assert entries.format == "arcx" and entries.file == f"{url}/tree.arcx"
    assert sorted(e.name for e in entries if e.kind is None or e.kind == "file") == sorted(contents)
    for name, data in contents.items():
        assert entries.read(name) == data
        with entries.open(name) as f:
            assert f.read() == data
    entries.verify()
    store = binfmt.open(f"{url}/store.kas")
    assert store.format == "kast" and sorted(store.names()) == ["a", "b"]
    assert np.frombuffer(store.read("a"), dtype=np.int64).tolist() == list(range(10))
    fold = binfmt.open(f"{url}/train.taridx")
    assert fold.format == "taridx" and len(fold) == 80
    assert fold.read("s0030.bin") == files[2][30][1]["bin"]


def test_convert_from_url(files, http_url, tmp_path):
    _, contents, _ = files
    url, _ = http_url
    out = tmp_path / "tree.kas"
    summary = binfmt.convert(f"{url}/tree.arcx", out, to="kast")
    assert summary["entries"] == len(contents)
    with kas.load(out) as store:
        assert {k: bytes(store[k]) for k in store} == contents


def test_arcx_archive_url(files, http_url, tmp_path):
    _, contents, _ = files
    url, requests = http_url
    archive = binfmt.arcx.Archive(f"{url}/tree.arcx")
    assert archive.path == f"{url}/tree.arcx"
    assert sorted(n for n in archive.names() if n in contents) == sorted(contents)
    del requests[:]
    assert archive.read("dir/f3.txt") == contents["dir/f3.txt"]
    # Only ranges of the archive were fetched, never the whole object, and
    # none twice: a fetch made with the GIL held would stall this server
    # (a thread of this process) until the request timed out and was retried.
    assert requests and all(r[2] for r in requests)
    assert len(set(requests)) == len(requests)
    with archive.open("dir/f4.txt") as f:
        assert f.read(10) == contents["dir/f4.txt"][:10]
        assert f.read() == contents["dir/f4.txt"][10:]
    archive.extract(tmp_path / "out")
    assert (tmp_path / "out" / "dir" / "f2.txt").read_bytes() == contents["dir/f2.txt"]
    assert archive.verify()["files"] >= len(contents)
    with pytest.raises(KeyError):
        archive.read("no/such/entry")


def test_threads_share_a_remote_stream(files, http_url):
    _, contents, _ = files
    url, _ = http_url
    archive = binfmt.arcx.Archive(f"{url}/tree.arcx")
    pieces = []
    with archive.open("dir/f4.txt") as f:

        def work():
            while chunk := f.read(333):
                pieces.append(chunk)

        threads = [threading.Thread(target=work) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert sorted(b"".join(pieces)) == sorted(contents["dir/f4.txt"])


def test_dataset_url_same_samples_as_local(files, http_url):
    root, _, samples = files
    url, requests = http_url
    local = taridx.Dataset(root / "train.taridx")
    ds = taridx.Dataset(f"{url}/train.taridx")
    assert len(ds) == len(local) == len(samples)
    assert ds.shards == [f"{url}/train_0000.tar", f"{url}/train_0001.tar"]
    for i in (0, 24, 25, 39, 7):
        ours, theirs = ds[i], local[i]
        assert ours["__shard__"] == ds.shards[i // 25]
        assert {k: v for k, v in ours.items() if k != "__shard__"} == {
            k: v for k, v in theirs.items() if k != "__shard__"
        }
        key, members = samples[i]
        assert ours["__key__"] == key and ours[".bin"] == members["bin"]
    del requests[:]
    ds[12]
    # One sample, one range request (header and members together).
    assert len(requests) == 1 and requests[0][2]
    fresh = taridx.Dataset(f"{url}/train.taridx")
    del requests[:]
    samples_read = [fresh[i] for i in range(len(fresh))]
    assert [s["__key__"] for s in samples_read] == [key for key, _ in samples]
    assert len(set(requests)) == len(requests)  # nothing fetched twice
    assert ds.get("s0033")[".cls"] == b"0"
    assert ds.filter_extensions(["cls"])[5] == {
        "__key__": "s0005",
        "__shard__": f"{url}/train_0000.tar",
        "__index__": 5,
        ".cls": b"2",
    }
    assert ds.verify() == local.verify()
    # A batch: the same samples; a fresh dataset's batch fetches nothing
    # twice and fewer ranges than it has samples.
    picks = [0, 24, 25, 39, 7, 7]
    assert [{k: v for k, v in s.items() if k != "__shard__"} for s in ds.get_batch(picks)] == [
        {k: v for k, v in local[i].items() if k != "__shard__"} for i in picks
    ]
    batch = taridx.Dataset(f"{url}/train.taridx")
    del requests[:]
    assert [s["__key__"] for s in batch.get_batch(range(len(batch)))] == [key for key, _ in samples]
    assert len(set(requests)) == len(requests) and len(requests) < len(batch)
    again = pickle.loads(pickle.dumps(ds))
    assert again[39] == ds[39]
    with pytest.raises(ValueError):
        taridx.Dataset(f"{url}/train.taridx", shards=[f"{url}/train_0000.tar"])


def test_index_url(files, http_url):
    root, _, _ = files
    url, _ = http_url
    remote = taridx.Index(f"{url}/train.taridx")
    local = taridx.Index(root / "train.taridx")
    assert remote.num_rows == local.num_rows == 80
    assert remote.extensions == local.extensions
    assert (remote.rows == local.rows).all()
    assert remote.verify() == local.verify()


def test_par4_url(files, http_url):
    root, contents, _ = files
    url, requests = http_url
    assert binfmt.sniff(f"{url}/tree.par4") == "par4"
    remote, local = par4.File(f"{url}/tree.par4"), par4.File(root / "tree.par4")
    assert remote.file_size == local.file_size
    assert remote.tree() == local.tree() and remote.inspect() == local.inspect()
    m = remote.map()
    assert set(m) == set(local.map()) and set(contents) <= set(m)
    assert m["dir/f3.txt"] == contents["dir/f3.txt"]
    del requests[:]
    fresh = par4.File(f"{url}/tree.par4")
    assert fresh.map()["dir/f4.txt"] == contents["dir/f4.txt"]
    assert requests and all(r[2] for r in requests)  # ranges only, never the whole object
    assert remote.verify() == local.verify()


def test_missing_object(http_url):
    url, _ = http_url
    with pytest.raises(FileNotFoundError):
        binfmt.open(f"{url}/missing.arcx")
    with pytest.raises(FileNotFoundError):
        taridx.Dataset(f"{url}/missing.taridx")


def test_server_ignoring_ranges(files):
    root, contents, samples = files
    with serve(root, PlainHandler) as (url, requests):
        with pytest.warns(binfmt.RemoteWarning, match="ignore"):
            archive = binfmt.arcx.Archive(f"{url}/tree.arcx")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", binfmt.RemoteWarning)
            assert archive.read("dir/f1.txt") == contents["dir/f1.txt"]
            assert binfmt.sniff(f"{url}/store.kas") == "kast"
            ds = taridx.Dataset(f"{url}/train.taridx")
            assert ds[30][".bin"] == samples[30][1]["bin"]
        assert requests


@pytest.mark.parametrize(
    "url",
    [
        "http:bob:hunter2@127.0.0.1:9/x.taridx",
        "https:bob:hunter2@127.0.0.1/x.arcx",
        "s3:bob:hunter2@bucket/x",
        "http://127.0.0.1:9/x.taridx?X-Amz-Security-Token=hunter2&X-Amz-Signature=hunter2",
    ],
)
def test_no_secret_of_a_refused_url_reaches_an_exception(url):
    """Found from outside: URL spellings without ``//`` were taken for file
    names (``FileNotFoundError`` echoing the password), and a presigned
    URL's query was echoed whole."""
    import binfmt.arcx
    import binfmt.par4

    for entry in (binfmt.open, binfmt.sniff, taridx.Index, taridx.Dataset, binfmt.arcx.Archive, binfmt.par4.File):
        with pytest.raises(OSError) as caught:
            entry(url)
        shown = f"{caught.value} {caught.value.filename}"
        assert "hunter2" not in shown, (entry, shown)
