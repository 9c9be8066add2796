"""binfmt.arcx: packing, reading, streaming, extracting and verifying."""

from __future__ import annotations

import hashlib
import os
import subprocess

import pytest

import binfmt
import binfmt.arcx as arcx

from conftest import arcx_tool


def make_tree(root):
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.txt").write_bytes(b"alpha\n")
    (root / "empty").mkdir()
    (root / "small.bin").write_bytes(bytes(range(256)) * 3)
    big = os.urandom(1 << 16) * 48  # 3 MiB: several chunks
    (root / "big.bin").write_bytes(big)
    os.chmod(root / "small.bin", 0o600)
    (root / "link").symlink_to("docs/a.txt")
    return {"docs/a.txt": b"alpha\n", "small.bin": bytes(range(256)) * 3, "big.bin": big}


@pytest.fixture(params=["spec", "arcx-cli"])
def packed(tmp_path, request):
    files = make_tree(tmp_path / "tree")
    out = tmp_path / f"tree.{request.param}.arcx"
    summary = arcx.pack(tmp_path / "tree", out, level=5, dialect=request.param, jobs=2)
    # The arcx-cli dialect holds regular files only (arcx 0.3.0 would
    # extract a symlink or an empty directory as a file): the link and the
    # empty directory are reported as skipped there.
    stored = 3 if request.param == "arcx-cli" else 5
    assert summary["files"] == stored and summary["archive_size"] == out.stat().st_size
    if request.param == "arcx-cli":
        assert len(summary["skipped"]) == 2, summary["skipped"]
    return out, files, request.param


def test_read_names_and_entries(packed):
    out, files, dialect = packed
    with arcx.Archive(out) as archive:
        assert archive.dialect == dialect
        names = archive.names()
        assert set(files) <= set(names)
        assert len(archive) == len(names) and list(archive) == names
        kinds = {entry.name: entry for entry in archive.entries()}
        if dialect == "spec":
            assert "empty" in names and "link" in names
            assert kinds["empty"].kind == "directory"
            assert kinds["link"].kind == "symlink"
        else:
            # Regular files only (arcx 0.3.0 would extract the others as files).
            assert "empty" not in names and "link" not in names
        assert kinds["small.bin"].mode & 0o777 == 0o600
        assert kinds["big.bin"].size == len(files["big.bin"])
        for name, data in files.items():
            assert archive.read(name) == data
            assert name in archive
        assert "missing" not in archive
        with pytest.raises(KeyError):
            archive.read("missing")
        with pytest.raises(KeyError):
            archive.open("missing")


def test_open_streams_in_pieces(packed):
    out, files, _ = packed
    archive = arcx.Archive(out)
    with archive.open("big.bin") as f:
        assert f.readable() and not f.writable()
        digest = hashlib.sha256()
        while piece := f.read(100_003):
            digest.update(piece)
    assert digest.digest() == hashlib.sha256(files["big.bin"]).digest()
    with archive.open("docs/a.txt") as f:
        assert f.readline() == b"alpha\n" and f.read() == b""
    f = archive.open("small.bin")
    f.close()
    with pytest.raises(ValueError):
        f.read()


def test_extract_and_verify(packed, tmp_path):
    out, files, dialect = packed
    archive = arcx.Archive(out)
    summary = archive.verify()
    assert summary["files"] >= 3 and summary["blocks"] >= 1
    target = tmp_path / "restored"
    result = archive.extract(target)
    spec = dialect == "spec"
    assert result["files"] >= 3 and result["directories"] == (1 if spec else 0)
    assert result["skipped_symlinks"] == (1 if spec else 0)
    for name, data in files.items():
        assert (target / name).read_bytes() == data
    assert (target / "empty").is_dir() == spec
    assert (os.stat(target / "small.bin").st_mode & 0o777) == 0o600
    if spec:
        with_links = tmp_path / "with-links"
        archive.extract(with_links, symlinks=True)
        assert os.readlink(with_links / "link") == "docs/a.txt"


def test_corruption_is_found(packed, tmp_path):
    out, files, _ = packed
    raw = bytearray(out.read_bytes())
    # A byte inside the first block's payload (right after the 80-byte header).
    raw[100] ^= 0xFF
    bad = tmp_path / "bad.arcx"
    bad.write_bytes(bytes(raw))
    archive = arcx.Archive(bad)
    with pytest.raises(binfmt.BinfmtError):
        archive.verify()
    failures = 0
    for name in files:
        try:
            with archive.open(name) as f:
                f.read()
        except binfmt.BinfmtError:
            failures += 1
    assert failures >= 1


def test_bad_archives(tmp_path):
    with pytest.raises(FileNotFoundError):
        arcx.Archive(tmp_path / "missing.arcx")
    junk = tmp_path / "junk.arcx"
    junk.write_bytes(b"not an archive" * 20)
    with pytest.raises(binfmt.BinfmtError):
        arcx.Archive(junk)
    with pytest.raises(ValueError):
        arcx.pack(tmp_path, tmp_path / "x.arcx", dialect="zip")


def test_archives_of_the_arcx_tool(tmp_path):
    tool = arcx_tool()
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    files = {"a.txt": b"alpha\n", "sub/b.bin": os.urandom(300_000)}
    for name, data in files.items():
        (tree / name).write_bytes(data)
    out = tmp_path / "tool.arcx"
    subprocess.run([tool, "pack", str(tree), str(out)], check=True, capture_output=True)
    archive = arcx.Archive(out)
    assert archive.dialect == "arcx-cli"
    for name, data in files.items():
        assert archive.read(name) == data
    archive.verify()
    # And the tool reads what this package writes.
    ours = tmp_path / "ours.arcx"
    arcx.pack(tree, ours, dialect="arcx-cli")
    listed = subprocess.run(
        [tool, "list", str(ours)], check=True, capture_output=True, text=True
    ).stdout
    for name in files:
        assert name in listed


# Writer and merge ---------------------------------------------------------


def rows():
    """Rows as a Ray dataset would hold them: (path, bytes, mode, mtime_ns);
    small ones sharing blocks, an empty one, one over the 1 MiB chunk size."""
    out = [
        (f"rows/{i:03}.json", f'{{"i": {i}}}\n'.encode() * (i + 1), 0o600 + i % 8, 10**18 + i)
        for i in range(60)
    ]
    out.insert(7, ("rows/empty", b"", 0o644, 0))
    out.insert(30, ("big/noise.bin", os.urandom(1 << 16) * 24, 0o755, 5))
    return out


def write(path, rows, **options):
    with arcx.Writer(path, **options) as writer:
        for name, data, mode, mtime in rows:
            assert writer.add(name, data, mode=mode, mtime_ns=mtime) == len(data)
    assert writer.closed
    return path


def read_all(path):
    archive = arcx.Archive(path)
    return [(entry, archive.read(entry.name)) for entry in archive.entries()]


def test_writer_round_trip(tmp_path):
    data = rows()
    out = tmp_path / "w.arcx"
    with arcx.Writer(out, level=5, jobs=2) as writer:
        for name, payload, mode, mtime in data:
            writer.add(name, bytearray(payload), mode=mode, mtime_ns=mtime)
        writer.add_directory("empty-dir", mode=0o700, mtime_ns=3)
        assert not out.exists(), "the archive appears only when finished"
        summary = writer.finish()
    assert summary["files"] == len(data) + 1
    assert summary["bytes"] == sum(len(payload) for _, payload, _, _ in data)
    assert summary["archive_size"] == out.stat().st_size
    assert summary["skipped"] == []
    archive = arcx.Archive(out)
    entries = {entry.name: entry for entry in archive.entries()}
    for name, payload, mode, mtime in data:
        assert archive.read(name) == payload
        assert (entries[name].kind, entries[name].mode, entries[name].mtime_ns) == ("file", mode, mtime)
    assert entries["empty-dir"][2:] == ("directory", 0o700, 3)
    assert archive.verify()["files"] == len(data) + 1
    # Defaults: 0o644 for files, 0o755 for directories, time 0.
    with arcx.Writer(tmp_path / "d.arcx") as writer:
        writer.add("f", b"x")
        writer.add_directory("d")
    assert [e[2:] for e in arcx.Archive(tmp_path / "d.arcx").entries()] == [
        ("file", 0o644, 0),
        ("directory", 0o755, 0),
    ]
    with pytest.raises(ValueError):
        writer.add("late", b"x")


def test_writer_same_bytes_as_a_second_writer(tmp_path):
    data = rows()
    a = write(tmp_path / "a.arcx", data, jobs=1)
    b = write(tmp_path / "b.arcx", data, jobs=3)
    assert a.read_bytes() == b.read_bytes()


def test_an_exception_inside_with_leaves_nothing(tmp_path):
    out = tmp_path / "broken.arcx"
    with pytest.raises(RuntimeError):
        with arcx.Writer(out) as writer:
            writer.add("a", b"alpha")
            raise RuntimeError("the task failed")
    assert writer.closed
    assert list(tmp_path.iterdir()) == []
    # An existing file at the location stays as it was.
    out.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with arcx.Writer(out) as writer:
            writer.add("a", b"alpha")
            raise RuntimeError("again")
    assert out.read_bytes() == b"old"
    assert list(tmp_path.iterdir()) == [out]


def test_writer_refuses_bad_and_repeated_paths(tmp_path):
    with arcx.Writer(tmp_path / "x.arcx") as writer:
        writer.add("a", b"1")
        with pytest.raises(ValueError, match="added twice"):
            writer.add("a", b"2")
        for bad in ["", "/abs", "a/../b", "dir/"]:
            with pytest.raises(ValueError):
                writer.add(bad, b"x")
    assert arcx.Archive(tmp_path / "x.arcx").read("a") == b"1"
    with arcx.Writer(tmp_path / "cli.arcx", dialect="arcx-cli") as writer:
        with pytest.raises(ValueError):
            writer.add_directory("d")
    with pytest.raises(ValueError):
        arcx.Writer(tmp_path / "y.arcx", dialect="zip")
    # http(s):// takes no uploads (s3:// does: test_s3_writes.py).
    with pytest.raises((ValueError, OSError, binfmt.BinfmtError)) as error:
        arcx.Writer("https://user:hunter2-writer@127.0.0.1:9/out.arcx")
    assert "hunter2-writer" not in str(error.value)


def test_writer_locations_go_through_the_output_gate(tmp_path):
    fifo = tmp_path / "fifo.arcx"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="FIFO"):
        arcx.Writer(fifo)
    with pytest.raises(OSError, match="a directory is there"):
        arcx.Writer(tmp_path)
    # A symlink at the location is replaced, never followed.
    target = tmp_path / "target.txt"
    target.write_bytes(b"keep")
    link = tmp_path / "link.arcx"
    link.symlink_to(target)
    with arcx.Writer(link) as writer:
        writer.add("a", b"alpha")
    assert target.read_bytes() == b"keep"
    assert not link.is_symlink() and arcx.Archive(link).read("a") == b"alpha"


@pytest.mark.parametrize("dialect", ["spec", "arcx-cli"])
@pytest.mark.parametrize("count", [1, 2, 5])
def test_merge_equals_one_writer(tmp_path, dialect, count):
    data = rows()
    whole = write(tmp_path / "whole.arcx", data, dialect=dialect)
    per = -(-len(data) // count)
    parts = [
        write(tmp_path / f"part-{k}.arcx", data[k * per : (k + 1) * per], dialect=dialect)
        for k in range(count)
    ]
    out = tmp_path / "merged.arcx"
    summary = arcx.merge(parts, out)
    assert summary["files"] == len(data)
    assert summary["archive_size"] == out.stat().st_size
    assert read_all(out) == read_all(whole)
    merged = arcx.Archive(out)
    assert merged.dialect == dialect
    assert merged.verify()["files"] == len(data)
    assert summary["blocks"] == sum(arcx.Archive(p).block_count for p in parts)
    # Deterministic: the same parts give the same bytes.
    again = tmp_path / "again.arcx"
    arcx.merge([str(p) for p in parts], again)
    assert again.read_bytes() == out.read_bytes()


def test_merge_of_nothing_is_an_empty_archive(tmp_path):
    out = tmp_path / "empty.arcx"
    assert arcx.merge([], out)["files"] == 0
    archive = arcx.Archive(out)
    assert len(archive) == 0 and archive.dialect == "spec"
    archive.verify()
    arcx.merge([], tmp_path / "cli.arcx", dialect="arcx-cli")
    assert arcx.Archive(tmp_path / "cli.arcx").dialect == "arcx-cli"


def test_merge_refuses_a_path_in_two_parts(tmp_path):
    a = write(tmp_path / "a.arcx", [("x/same", b"1", 0o644, 0), ("x/a", b"a", 0o644, 0)])
    b = write(tmp_path / "b.arcx", [("x/b", b"b", 0o644, 0)])
    c = write(tmp_path / "c.arcx", [("x/same", b"2", 0o644, 0)])
    out = tmp_path / "merged.arcx"
    with pytest.raises(binfmt.BinfmtError) as error:
        arcx.merge([a, b, c], out)
    message = str(error.value)
    assert "x/same" in message and "a.arcx" in message and "c.arcx" in message
    assert "part 0" in message and "part 2" in message
    assert not out.exists()
    with pytest.raises(TypeError):
        arcx.merge(str(a), out)


def test_merge_refuses_a_corrupt_part_and_an_output_that_is_a_part(tmp_path):
    a = write(tmp_path / "a.arcx", rows()[:10])
    b = write(tmp_path / "b.arcx", rows()[10:20])
    data = bytearray(b.read_bytes())
    data[80 + 4 + 8] ^= 0x10  # inside the first block's stored bytes
    b.write_bytes(bytes(data))
    out = tmp_path / "merged.arcx"
    with pytest.raises(binfmt.BinfmtError, match=r"part 1 \(.*b\.arcx\).*checksum"):
        arcx.merge([a, b], out)
    assert not out.exists()
    before = a.read_bytes()
    with pytest.raises(binfmt.BinfmtError, match="never writes its output over what it reads"):
        arcx.merge([a], a)
    assert a.read_bytes() == before


def test_entry_blocks_plan_reads_without_data(tmp_path):
    data = rows()
    out = tmp_path / "w.arcx"
    with arcx.Writer(out) as writer:
        for name, payload, mode, mtime in data:
            writer.add(name, payload, mode=mode, mtime_ns=mtime)
        writer.add_directory("dir")
    archive = arcx.Archive(out)
    blocks = archive.entry_blocks()
    assert len(blocks) == len(archive) and blocks[-1] is None
    ids = [b for b in blocks if b is not None]
    assert set(ids) <= set(range(archive.block_count))
    # Small entries share blocks, which never go back along the entries;
    # the large entry's blocks are its own.
    names = archive.names()
    big = names.index("big/noise.bin")
    small = [b for i, b in enumerate(ids) if i != big]
    assert small == sorted(small) and len(set(small)) < len(small)
    assert blocks[big] not in small
    # Merged parts: each part's blocks after the previous part's.
    parts = [write(tmp_path / f"p{k}.arcx", data[k * 20 : (k + 1) * 20]) for k in range(3)]
    arcx.merge(parts, tmp_path / "m.arcx")
    merged = arcx.Archive(tmp_path / "m.arcx").entry_blocks()
    offset, expected = 0, []
    for part in parts:
        expected += [b + offset for b in arcx.Archive(part).entry_blocks()]
        offset += arcx.Archive(part).block_count
    assert merged == expected
