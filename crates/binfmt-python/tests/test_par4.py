"""binfmt.par4: a PAR4 file's chunk tree and its HashMap<String, Vec<u8>>
root as a lazy mapping, on files written by binfmt.convert (the layout
parcode 0.6.1 writes for such a map)."""

from __future__ import annotations

import io
import os

import pytest

import binfmt
import binfmt.arcx
import binfmt.par4 as par4


@pytest.fixture(scope="module")
def par4_file(tmp_path_factory):
    root = tmp_path_factory.mktemp("par4")
    tree = root / "tree"
    contents = {f"d{i % 3}/file{i}.bin": os.urandom(97 * i) for i in range(60)}
    contents["empty"] = b""
    for name, data in contents.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_bytes(data)
    binfmt.arcx.pack(tree, root / "tree.arcx")
    binfmt.convert(root / "tree.arcx", root / "tree.par4", to="par4")
    return root / "tree.par4", contents


def test_lazy_map(par4_file):
    path, contents = par4_file
    f = par4.open(path)
    assert f.file_size == os.path.getsize(path)
    m = f.map()
    assert len(m) == len(contents) and set(m) == set(contents)
    assert "empty" in m and "missing" not in m
    for name, data in contents.items():
        assert m.size(name) == len(data)
        assert m[name] == data
    with pytest.raises(KeyError):
        m["missing"]
    with pytest.raises(KeyError):
        m[3]
    assert dict(m) == contents
    # The same entries through the umbrella.
    assert {e.name: e.size for e in binfmt.open(path)} == {k: len(v) for k, v in contents.items()}


def test_chunk_tree(par4_file):
    path, contents = par4_file
    f = par4.File(path)
    tree = f.tree()
    assert tree["kind"] == "Map Container"
    assert tree["offset"] + tree["length"] <= f.file_size

    def walk(node, depth=0):
        yield node, depth
        for child in node["children"]:
            assert child["offset"] + child["length"] <= node["offset"]  # children precede
            yield from walk(child, depth + 1)

    nodes = list(walk(tree))
    assert len(nodes) > 1 and {n["kind"] for n, _ in nodes[1:]} <= {"Map Bucket", "Leaf/Blob"}
    assert f.verify()["chunks"] == len(nodes)
    text = f.inspect()
    assert text.startswith("=== PARCODE INSPECTOR REPORT ===")
    assert text.count("Map Bucket") == sum(1 for n, _ in nodes if n["kind"] == "Map Bucket")
    out = io.StringIO()
    f.print_tree(out)
    assert out.getvalue() == text


def test_bad_files(par4_file, tmp_path):
    path, _ = par4_file
    data = path.read_bytes()
    cut = tmp_path / "cut.par4"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(binfmt.BinfmtError):
        par4.File(cut).map()
    with pytest.raises(binfmt.BinfmtError):
        par4.File(tmp_path / "cut.par4").verify()
    with pytest.raises(FileNotFoundError):
        par4.File(tmp_path / "missing.par4")
    flipped = bytearray(data)
    flipped[len(flipped) // 3] ^= 0xFF
    bad = tmp_path / "flipped.par4"
    bad.write_bytes(bytes(flipped))
    try:
        f = par4.File(bad)
        m = f.map()
        values = {k: m[k] for k in m}
    except binfmt.BinfmtError:
        return  # refused, with a message
    # A flip inside a value's bytes is not detectable by PAR4 (no checksum):
    # everything else must read back as written.
    assert set(values) == set(par4.File(path).map())
