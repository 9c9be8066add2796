"""Issue 29: the ``binfmt`` fsspec filesystem. Every format's entries as
files (``ls``, ``info``, ``open``, ``cat``, ``find``, ``glob``, ``walk`` as
fsspec documents them), chained URLs read by pandas and ``json`` from a
local file, from nginx and from SeaweedFS's S3, the outer file read by
ranges (never downloaded), and fsspec's own read-only test mix-ins."""

from __future__ import annotations

import io
import json
import os
import urllib.request

import numpy as np
import pytest

import binfmt
import binfmt.arcx
import binfmt.kastore as kas
import binfmt.taridx as taridx
from conftest import reference

fsspec = reference("fsspec")
pandas = reference("pandas")

CSV = "city,people\nOslo,709000\nBergen,291000\n"
DOC = {"name": "binfmt", "formats": ["TARIDX", "ARCX", "PAR4", "KAST"]}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """An ARCX archive (a CSV, a JSON, a large file of several blocks), the
    same as PAR4, a kastore, and a TARIDX fold."""
    root = tmp_path_factory.mktemp("fsspec")
    tree = root / "tree"
    (tree / "tables").mkdir(parents=True)
    (tree / "docs").mkdir()
    (tree / "tables" / "cities.csv").write_text(CSV)
    (tree / "docs" / "about.json").write_text(json.dumps(DOC))
    big = os.urandom(3 << 20)
    (tree / "big.bin").write_bytes(big)
    binfmt.arcx.pack(tree, root / "data.arcx")
    binfmt.convert(root / "data.arcx", root / "data.par4", to="par4")
    kas.dump({"nodes/time": np.linspace(0, 1, 11), "edges/left": np.arange(4, dtype=np.int32)}, root / "sim.kas")
    import tarfile

    with tarfile.open(root / "train_0000.tar", "w", format=tarfile.USTAR_FORMAT) as tar:
        for i in range(5):
            data = json.dumps({"i": i}).encode()
            info = tarfile.TarInfo(f"s/{i:06d}.json")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    taridx.index([root / "train_0000.tar"], root / "train.taridx")
    return root, big


def test_registered_by_its_entry_point():
    assert "binfmt" in fsspec.available_protocols()
    assert fsspec.get_filesystem_class("binfmt").__name__ == "BinfmtFileSystem"


@pytest.mark.parametrize("name", ["data.arcx", "data.par4"])
def test_archives_list_and_read_as_fsspec_documents(files, name):
    root, big = files
    fs = fsspec.filesystem("binfmt", fo=str(root / name))
    assert fs.ls("", detail=False) == ["big.bin", "docs", "tables"]
    assert fs.info("tables/cities.csv") == {
        **fs.info("tables/cities.csv"),
        "name": "tables/cities.csv",
        "size": len(CSV),
        "type": "file",
    }
    assert fs.info("docs")["type"] == "directory"
    assert fs.cat("tables/cities.csv") == CSV.encode()
    assert sorted(fs.find("")) == ["big.bin", "docs/about.json", "tables/cities.csv"]
    assert fs.glob("*/*.json") == ["docs/about.json"]
    walked = {path: sorted(found) for path, _, found in fs.walk("")}
    assert walked == {"": ["big.bin"], "docs": ["about.json"], "tables": ["cities.csv"]}
    assert fs.cat_file("big.bin", start=1 << 20, end=(1 << 20) + 10) == big[1 << 20 : (1 << 20) + 10]
    with fs.open("big.bin") as f:
        f.seek(-5, os.SEEK_END)
        assert f.read() == big[-5:]
        f.seek(100)
        assert f.read(7) == big[100:107]
    with pytest.raises(FileNotFoundError):
        fs.info("no/such")
    with pytest.raises(PermissionError):
        fs.open("tables/cities.csv", "wb")


def test_kastore_arrays_and_taridx_members(files):
    root, _ = files
    fs = fsspec.filesystem("binfmt", fo=str(root / "sim.kas"))
    assert fs.ls("nodes", detail=False) == ["nodes/time"]
    assert np.frombuffer(fs.cat("nodes/time"), "<f8").tolist() == np.linspace(0, 1, 11).tolist()
    fold = fsspec.filesystem("binfmt", fo=str(root / "train.taridx"))
    assert fold.find("") == [f"s/{i:06d}.json" for i in range(5)]
    assert json.loads(fold.cat("s/000003.json")) == {"i": 3}


def test_chained_urls_from_a_local_file(files):
    root, _ = files
    url = f"binfmt://tables/cities.csv::file://{root / 'data.arcx'}"
    frame = pandas.read_csv(url)
    assert frame["people"].tolist() == [709000, 291000]
    with fsspec.open(f"binfmt://docs/about.json::file://{root / 'data.par4'}", "rt") as f:
        assert json.load(f) == DOC
    with fsspec.open(f"binfmt://nodes/time::{root / 'sim.kas'}") as f:
        assert np.frombuffer(f.read(), "<f8")[-1] == 1.0


def test_chained_urls_from_nginx_and_s3(files, test_servers, s3_env):
    root, big = files
    run = f"fsspec-{os.getpid()}"
    www = os.path.join(test_servers["BINFMT_SERVERS_WWW"], run)
    os.makedirs(www, exist_ok=True)
    for name in ("data.arcx", "sim.kas"):
        data = (root / name).read_bytes()
        with open(os.path.join(www, name), "wb") as out:
            out.write(data)
        put = urllib.request.Request(
            f"{test_servers['BINFMT_S3_FILER_URL']}/buckets/{test_servers['BINFMT_S3_BUCKET']}/{run}/{name}",
            data=data,
            method="PUT",
        )
        with urllib.request.urlopen(put) as answer:
            assert answer.status in (200, 201)
    for base in (
        f"{test_servers['BINFMT_NGINX_URL']}/{run}",
        f"s3://{test_servers['BINFMT_S3_BUCKET']}/{run}",
    ):
        frame = pandas.read_csv(f"binfmt://tables/cities.csv::{base}/data.arcx")
        assert frame["city"].tolist() == ["Oslo", "Bergen"]
        with fsspec.open(f"binfmt://docs/about.json::{base}/data.arcx", "rt") as f:
            assert json.load(f) == DOC
        with fsspec.open(f"binfmt://nodes/time::{base}/sim.kas") as f:
            assert np.frombuffer(f.read(), "<f8").tolist() == np.linspace(0, 1, 11).tolist()
        fs = fsspec.filesystem("binfmt", fo=f"{base}/data.arcx")
        assert fs.cat_file("big.bin", start=5, end=12) == big[5:12]


def test_other_protocols_are_refused_with_the_way_out(files):
    with pytest.raises(ValueError, match="copy the file"):
        fsspec.filesystem("binfmt", fo="gcs://bucket/data.arcx")


# fsspec's own tests for a read-only filesystem: the abstract fixture mix-ins
# apply to writable filesystems (they create, copy and remove files), so
# what applies is fsspec's reading contract, checked above entry by entry;
# and pickling, which every fsspec filesystem must survive (dask ships them
# to workers).
def test_pickles_to_workers(files):
    import pickle

    root, _ = files
    fs = fsspec.filesystem("binfmt", fo=str(root / "data.arcx"))
    back = pickle.loads(pickle.dumps(fs))
    assert back.cat("tables/cities.csv") == CSV.encode()


# fsspec's abstract tests for reading out of a filesystem (`get`: copying
# its files to local ones), over an ARCX archive holding each of their
# scenarios' trees (they would make them with `touch` and `pipe`, which a
# read-only filesystem refuses; the trees are the same).
from fsspec.tests.abstract import AbstractFixtures  # noqa: E402
from fsspec.tests.abstract.get import AbstractGetTests  # noqa: E402


def _scenario_trees(local_fs, root):
    """The four scenarios' trees under ``root``, made with fsspec's own
    scenario builders on the local filesystem."""
    builder = AbstractFixtures()
    made = {}
    for key, make in [
        ("s0", builder._bulk_operations_scenario_0),
        ("glob", builder._glob_edge_cases_files),
        ("prefix", builder._dir_and_file_with_same_name_prefix),
        ("hashed", builder._10_files_with_hashed_names),
    ]:
        made[key] = make(local_fs, os.path.join, os.path.join(root, key))
    return made


class TestBinfmtGet(AbstractGetTests, AbstractFixtures):
    @pytest.fixture(scope="class")
    @classmethod
    def archive(cls, tmp_path_factory):
        from fsspec.implementations.local import LocalFileSystem

        root = tmp_path_factory.mktemp("scenarios")
        _scenario_trees(LocalFileSystem(auto_mkdir=True), str(root / "tree"))
        binfmt.arcx.pack(root / "tree", root / "scenarios.arcx")
        return str(root / "scenarios.arcx")

    @pytest.fixture
    def fs(self, archive):
        return fsspec.filesystem("binfmt", fo=archive)

    @pytest.fixture
    def fs_join(self):
        import posixpath

        return posixpath.join

    def test_get_directory_recursive(self):
        pytest.skip("writes into the source filesystem (touch), which is read-only")

    @pytest.fixture
    def fs_path(self):
        return ""

    @pytest.fixture
    def fs_bulk_operations_scenario_0(self):
        return "s0/source"

    @pytest.fixture
    def fs_glob_edge_cases_files(self):
        return "glob/source"

    @pytest.fixture
    def fs_dir_and_file_with_same_name_prefix(self):
        return "prefix/source"

    @pytest.fixture
    def fs_10_files_with_hashed_names(self):
        return "hashed/source"
