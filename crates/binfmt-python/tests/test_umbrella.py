"""binfmt.open, binfmt.convert and binfmt.sniff: every format as named entries."""

from __future__ import annotations

import tarfile

import numpy as np
import pytest

import binfmt
import binfmt.arcx
import binfmt.kastore as kas


@pytest.fixture
def kast(tmp_path):
    path = tmp_path / "tables.kas"
    kas.dump(
        {
            "edges/left": np.array([0.0, 10.0]),
            "edges/parent": np.array([4, 5], dtype=np.int32),
            "nodes/flags": np.arange(3, dtype=np.uint8),
        },
        path,
    )
    return path


def test_sniff_every_format(tmp_path, kast):
    assert binfmt.sniff(kast) == "kast"
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.txt").write_bytes(b"a")
    archive = tmp_path / "a.arcx"
    binfmt.arcx.pack(tree, archive)
    assert binfmt.sniff(archive) == "arcx"
    tar = tmp_path / "a.tar"
    with tarfile.open(tar, "w") as out:
        out.add(tree / "a.txt", arcname="a.txt")
    assert binfmt.sniff(tar) == "tar"
    other = tmp_path / "other"
    other.write_bytes(b"hello")
    assert binfmt.sniff(other) == "unknown"
    with pytest.raises(FileNotFoundError):
        binfmt.sniff(tmp_path / "missing")
    for target in ("par4", "taridx"):
        converted = tmp_path / f"c.{target}"
        binfmt.convert(kast, converted, to=target)
        assert binfmt.sniff(converted) == target


def test_kast_entries(kast, tmp_path):
    entries = binfmt.open(kast)
    assert entries.format == "kast" and entries.file == str(kast)
    assert entries.list() == [
        binfmt.Entry("edges/left", 16, "float64"),
        binfmt.Entry("edges/parent", 8, "int32"),
        binfmt.Entry("nodes/flags", 3, "uint8"),
    ]
    assert entries.read("edges/parent") == np.array([4, 5], dtype="<i4").tobytes()
    with entries.open("edges/left") as f:
        assert np.frombuffer(f.read(), dtype="<f8").tolist() == [0.0, 10.0]
    assert "nodes/flags" in entries and "nope" not in entries and len(entries) == 3
    with pytest.raises(KeyError):
        entries.read("nope")
    entries.verify()
    assert entries.extract(tmp_path / "out") == 3
    assert (tmp_path / "out" / "nodes" / "flags").read_bytes() == bytes([0, 1, 2])


@pytest.mark.parametrize("via", ["arcx", "par4", "taridx"])
def test_convert_round_trips_keep_bytes_and_types(kast, tmp_path, via):
    middle = tmp_path / f"middle.{via}"
    summary = binfmt.convert(kast, middle, to=via)
    assert summary["entries"] >= 3 and str(middle) in summary["outputs"]
    names = binfmt.open(middle).names()
    assert {"edges/left", "edges/parent", "nodes/flags"} <= set(names)
    back = tmp_path / "back.kas"
    binfmt.convert(middle, back, to="kast")
    assert back.read_bytes() == kast.read_bytes()


def test_arcx_entries_stream_and_checks(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    data = bytes(range(256)) * 10_000
    (tree / "big.bin").write_bytes(data)
    archive = tmp_path / "a.arcx"
    binfmt.arcx.pack(tree, archive, dialect="arcx-cli")
    entries = binfmt.open(archive)
    assert entries.format == "arcx"
    with entries.open("big.bin") as f:
        pieces = []
        while piece := f.read(65_536):
            pieces.append(piece)
    assert b"".join(pieces) == data


def test_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        binfmt.open(tmp_path / "missing.kas")
    unknown = tmp_path / "unknown.bin"
    unknown.write_bytes(b"\0" * 100)
    with pytest.raises(binfmt.BinfmtError, match="not a format"):
        binfmt.open(unknown)
    with pytest.raises(ValueError):
        binfmt.convert(unknown, tmp_path / "x", to="zip")
    bad = tmp_path / "bad.kas"
    bad.write_bytes(kas.dumps({"a": np.arange(3)})[:-1])
    with pytest.raises(binfmt.BinfmtError):
        binfmt.open(bad)


def test_convert_takes_the_target_from_the_extension(tmp_path):
    """Issue 28 (newcomer trial): the CLI took the target from the output's
    extension, binfmt.convert required ``to``."""
    import binfmt.kastore as kas
    import numpy as np

    kas.dump({"a": np.arange(5)}, tmp_path / "src.trees")
    summary = binfmt.convert(tmp_path / "src.trees", tmp_path / "out.arcx")
    assert binfmt.sniff(tmp_path / "out.arcx") == "arcx"
    # The array, and the entry recording the kastore's types.
    assert summary["entries"] == 2 and "a" in binfmt.open(tmp_path / "out.arcx").names()
    with pytest.raises(ValueError, match="give to="):
        binfmt.convert(tmp_path / "src.trees", tmp_path / "out.zip")
