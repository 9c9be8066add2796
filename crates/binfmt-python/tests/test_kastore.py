"""binfmt.kastore: loading, zero-copy arrays, inputs, dumping, errors, the CLI."""

from __future__ import annotations

import gc
import io
import os
import pathlib
import socket
import struct
import subprocess
import sys
import threading

import numpy as np
import pytest

import binfmt
import binfmt.kastore as kas
from binfmt.kastore import store as kstore

DTYPES = [
    "int8",
    "uint8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "uint64",
    "float32",
    "float64",
]


def example(n: int = 10) -> dict[str, np.ndarray]:
    return {dtype: np.arange(n, dtype=dtype) for dtype in DTYPES}


def assert_same(data, loaded) -> None:
    assert sorted(loaded.keys()) == sorted(data.keys())
    for key, value in data.items():
        np.testing.assert_array_equal(loaded[key], value)
        assert loaded[key].dtype == np.asarray(value).dtype


def mapped_ranges(path: pathlib.Path) -> list[tuple[int, int]]:
    """The address ranges of this process's maps of ``path``."""
    ranges = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and fields[5] == str(path):
                start, end = (int(x, 16) for x in fields[0].split("-"))
                ranges.append((start, end))
    return ranges


@pytest.fixture
def kas_file(tmp_path):
    path = tmp_path / "data.kas"
    kas.dump(example(1000), path)
    return path


# --- zero copy -------------------------------------------------------------


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs /proc")
def test_lazy_arrays_are_read_only_views_of_the_map(kas_file):
    store = kas.load(kas_file)
    ranges = mapped_ranges(kas_file)
    assert ranges, "the file is mapped"
    for key in store:
        array = store[key]
        assert not array.flags.writeable
        assert not array.flags.owndata
        assert array.base is store["int8"].base  # one owner: the map
        address = array.ctypes.data
        assert any(start <= address < end for start, end in ranges), key
        with pytest.raises(ValueError):
            array[0] = 1
    # The map's bytes are the file's bytes.
    raw = kas_file.read_bytes()
    offset = store["float64"].ctypes.data - min(start for start, _ in ranges)
    assert raw[offset : offset + 8000] == store["float64"].tobytes()


def test_arrays_keep_the_map_alive_after_close_and_collection(kas_file):
    store = kas.load(kas_file)
    arrays = {key: store[key] for key in store}
    store.close()
    del store
    gc.collect()
    assert_same(example(1000), arrays)
    if os.path.exists("/proc/self/maps"):
        assert mapped_ranges(kas_file)
        del arrays
        gc.collect()
        assert not mapped_ranges(kas_file)


def test_read_all_arrays_own_their_memory(kas_file):
    store = kas.load(kas_file, read_all=True)
    for key in store:
        array = store[key]
        assert array.flags.owndata
        assert array.base is None
        assert not array.flags.writeable  # as kastore's Python engine
    assert_same(example(1000), store)
    if os.path.exists("/proc/self/maps"):
        assert not mapped_ranges(kas_file)


def test_c_engine_returns_a_dict_of_writable_owned_arrays(kas_file):
    data = kas.load(kas_file, engine=kas.C_ENGINE)
    assert type(data) is dict
    assert list(data) == sorted(DTYPES)
    for array in data.values():
        assert array.flags.owndata and array.flags.writeable
    assert_same(example(1000), data)
    data["int8"][0] = 5
    assert kas.load(kas_file)["int8"][0] == 0


def test_same_array_object_each_time(kas_file):
    store = kas.load(kas_file)
    assert store["int32"] is store["int32"]


# --- the mapping ---------------------------------------------------------------


def test_mapping_interface(kas_file):
    store = kas.load(kas_file)
    assert isinstance(store, kas.Store)
    from collections.abc import Mapping

    assert isinstance(store, Mapping)
    assert len(store) == len(DTYPES)
    assert list(store) == sorted(DTYPES)
    assert list(store.keys()) == sorted(DTYPES)
    assert "int8" in store and "nope" not in store and 0 not in store
    assert store.get("nope") is None
    with pytest.raises(KeyError):
        store["nope"]
    with pytest.raises(KeyError):
        store[0]
    with pytest.raises(KeyError):
        store.info("nope")
    info = store.info("float32")
    assert (info.dtype, info.shape, info.size) == ("float32", (1000,), 4000)
    assert str(info) == "dtype=float32 shape=(1000,), size=4000"
    assert store.key_encoding == "utf-8"
    with pytest.raises(TypeError):
        hash(store)
    assert dict(store.items()).keys() == set(DTYPES)


def test_closed_store_raises_store_closed_error(kas_file):
    with kas.load(kas_file) as store:
        assert len(store) == len(DTYPES)
    for action in (
        lambda: store["int8"],
        lambda: store.get("int8"),
        lambda: store.info("int8"),
        lambda: len(store),
        lambda: list(store),
        lambda: list(store.items()),
        lambda: "int8" in store,
    ):
        with pytest.raises(kas.StoreClosedError):
            action()
    store.close()  # twice is fine


def test_exceptions_hierarchy():
    for exc in (
        kas.FileFormatError,
        kas.VersionTooOldError,
        kas.VersionTooNewError,
        kas.StoreClosedError,
    ):
        assert issubclass(exc, kas.KastoreException)
        assert exc.__module__ == "binfmt.kastore"
    assert issubclass(kas.KastoreException, binfmt.BinfmtError)
    assert not issubclass(kas.FileFormatError, ValueError)
    assert kas.exceptions.StoreClosedError is kas.StoreClosedError


# --- bad files -------------------------------------------------------------------


def good_bytes() -> bytes:
    return kas.dumps({"a": np.arange(3, dtype=np.int32), "b": np.zeros(2)})


@pytest.mark.parametrize("read_all", [False, True])
@pytest.mark.parametrize("engine", [kas.PY_ENGINE, kas.C_ENGINE])
def test_bad_files(tmp_path, read_all, engine):
    path = tmp_path / "bad.kas"

    def load(content: bytes):
        path.write_bytes(content)
        return kas.load(path, read_all=read_all, engine=engine)

    with pytest.raises(EOFError):
        load(b"")
    raw = good_bytes()
    for cut in (1, 63, 64, 100, len(raw) - 1):
        with pytest.raises(kas.FileFormatError, match="."):
            load(raw[:cut])
    with pytest.raises(kas.FileFormatError, match="signature"):
        load(b"12345678" + raw[8:])
    with pytest.raises(kas.VersionTooOldError):
        load(raw[:8] + struct.pack("<H", 0) + raw[10:])
    with pytest.raises(kas.VersionTooNewError):
        load(raw[:8] + struct.pack("<H", 2) + raw[10:])
    bad_type = bytearray(raw)
    bad_type[64] = 10
    with pytest.raises(kas.FileFormatError, match="type"):
        load(bytes(bad_type))
    # Keys out of order (kastore's C library needs them sorted to search).
    swapped = bytearray(raw)
    key_start = 64 + 2 * 64
    swapped[key_start : key_start + 2] = b"ba"
    with pytest.raises(kas.FileFormatError, match="sorted"):
        load(bytes(swapped))
    # Bytes after the store are ignored, as kastore ignores them.
    assert_same({"a": np.arange(3, dtype=np.int32), "b": np.zeros(2)}, load(raw + b"junk"))


def test_bad_utf8_key_raises_unicode_decode_error(tmp_path):
    descriptors, size = kstore.pack_items({"ab": np.arange(2)})
    descriptors[0].key = b"\xff\xfe"
    path = tmp_path / "bad.kas"
    with open(path, "wb") as f:
        kstore.write_file(f, descriptors, size)
    with pytest.raises(UnicodeDecodeError):
        kas.load(path)
    assert list(kas.load(path, key_encoding="latin-1")) == ["\xff\xfe"]


# --- inputs ------------------------------------------------------------------------


def test_paths_of_every_kind(kas_file):
    for file in (kas_file, str(kas_file), os.fsencode(kas_file)):
        assert_same(example(1000), kas.load(file))
    with pytest.raises(FileNotFoundError):
        kas.load(kas_file.parent / "missing.kas")
    with pytest.raises(IsADirectoryError):
        kas.load(kas_file.parent)
    for bad in (None, [], {}, 1.5):
        with pytest.raises(TypeError):
            kas.load(bad)


def concatenated(n: int = 5) -> list[dict[str, np.ndarray]]:
    return [
        {"i": np.arange(i * 7, dtype=np.int8), "f": np.full(i, float(i))} for i in range(n)
    ]


@pytest.mark.parametrize("read_all", [False, True])
@pytest.mark.parametrize("engine", [kas.PY_ENGINE, kas.C_ENGINE])
def test_stores_one_after_another_in_a_file_object(tmp_path, read_all, engine):
    path = tmp_path / "multi.kas"
    stores = concatenated()
    ends = []
    with open(path, "wb") as f:
        for data in stores:
            kas.dump(data, f, engine=engine)
            ends.append(f.tell())
    with open(path, "rb") as f:
        for data, end in zip(stores, ends):
            loaded = kas.load(f, read_all=read_all, engine=engine)
            assert f.tell() == end  # right after the store, before any access
            assert_same(data, loaded)
            if engine == kas.PY_ENGINE and not read_all:
                assert not loaded["i"].flags.owndata  # mapped at its offset
        with pytest.raises(EOFError):
            kas.load(f, read_all=read_all, engine=engine)


@pytest.mark.parametrize("read_all", [False, True])
def test_stores_one_after_another_through_a_descriptor(tmp_path, read_all):
    path = tmp_path / "multi.kas"
    stores = concatenated()
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        for data in stores:
            kas.dump(data, fd)
        os.lseek(fd, 0, os.SEEK_SET)
        for data in stores:
            assert_same(data, kas.load(fd, read_all=read_all))
        assert os.lseek(fd, 0, os.SEEK_CUR) == os.path.getsize(path)
        with pytest.raises(EOFError):
            kas.load(fd)
    finally:
        os.close(fd)


def test_bytes_io_and_loads(tmp_path):
    buffer = io.BytesIO()
    stores = concatenated()
    for data in stores:
        kas.dump(data, buffer)
    buffer.seek(0)
    for data in stores:
        assert_same(data, kas.load(buffer))
    with pytest.raises(EOFError):
        kas.load(buffer)
    encoded = kas.dumps(stores[3])
    assert isinstance(encoded, bytes)
    for form in (encoded, bytearray(encoded), memoryview(encoded), encoded + b"tail"):
        loaded = kas.loads(form)
        assert_same(stores[3], loaded)
        assert all(loaded[key].flags.owndata for key in loaded)
    with pytest.raises(EOFError):
        kas.loads(b"")
    with pytest.raises(TypeError):
        kas.loads("text")
    with pytest.raises(kas.FileFormatError):
        kas.loads(b"x" * 1024)
    with pytest.raises(io.UnsupportedOperation):
        kas.load(io.BytesIO(encoded), engine=kas.C_ENGINE)
    with pytest.raises(io.UnsupportedOperation):
        kas.dump(stores[1], io.BytesIO(), engine=kas.C_ENGINE)


@pytest.mark.parametrize("via", ["fd", "file object"])
@pytest.mark.parametrize("read_all", [False, True])
def test_pipe_with_several_stores(via, read_all):
    stores = concatenated(8) + [{"big": np.arange(300_000, dtype=np.float64)}]
    read_fd, write_fd = os.pipe()

    def writer():
        with open(write_fd, "wb") as out:
            for data in stores:
                kas.dump(data, out)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        source = read_fd if via == "fd" else open(read_fd, "rb", closefd=False)
        for data in stores:
            assert_same(data, kas.load(source, read_all=read_all))
        with pytest.raises(EOFError):
            kas.load(source, read_all=read_all)
    finally:
        thread.join()
        os.close(read_fd)


@pytest.mark.parametrize("engine", [kas.PY_ENGINE, kas.C_ENGINE])
def test_socket_round_trip(engine):
    left, right = socket.socketpair()
    stores = concatenated(4)
    received = []

    def echo():
        while True:
            try:
                data = kas.load(right.fileno(), read_all=True, engine=engine)
            except EOFError:
                break
            kas.dump(dict(data), right.fileno(), engine=engine)
        right.close()

    thread = threading.Thread(target=echo)
    thread.start()
    for data in stores:
        kas.dump(data, left.fileno(), engine=engine)
        received.append(kas.load(left.fileno(), read_all=True, engine=engine))
    left.shutdown(socket.SHUT_WR)
    thread.join()
    left.close()
    for data, back in zip(stores, received):
        assert_same(data, back)
    with pytest.raises(TypeError):
        kas.load(socket.socket())


def test_fifo_path(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    data = example(50)
    thread = threading.Thread(target=lambda: kas.dump(data, fifo))
    thread.start()
    loaded = kas.load(fifo, read_all=True)
    thread.join()
    assert_same(data, loaded)


def test_a_failing_python_file_object_raises_its_own_exception():
    class Broken(io.RawIOBase):
        def readable(self):
            return True

        def readinto(self, buffer):
            raise ConnectionResetError("the peer went away")

    with pytest.raises(ConnectionResetError, match="peer went away"):
        kas.load(Broken())
    with pytest.raises(TypeError):
        kas.load(io.StringIO("text"))


# --- dumping ----------------------------------------------------------------------


def test_dump_writes_kastore_layout(tmp_path):
    data = {"b": np.arange(3, dtype=np.int8), "a": np.array([1.5])}
    raw = kas.dumps(data)
    magic, major, minor, count, size = struct.unpack("<8sHHIQ", raw[:24])
    assert magic == b"\x89KAS\r\n\x1a\n"
    assert (major, minor, count, size) == (1, 0, 2, len(raw))
    descriptors, file_size = kstore.pack_items(data)
    assert file_size == len(raw)
    assert [d.key for d in descriptors] == [b"a", b"b"]
    assert [(d.key_start, d.array_start) for d in descriptors] == [(192, 200), (193, 208)]
    assert kstore.ItemDescriptor.unpack(raw[64:128]).array_start == 200


def test_dump_over_a_loaded_file_leaves_its_arrays_valid(kas_file):
    store = kas.load(kas_file)
    old = store["float64"]
    kas.dump({"float64": old * 2}, kas_file)
    np.testing.assert_array_equal(old, np.arange(1000, dtype=np.float64))
    np.testing.assert_array_equal(kas.load(kas_file)["float64"], old * 2)


def test_dump_through_a_symlink_keeps_the_link(tmp_path):
    target = tmp_path / "real.kas"
    link = tmp_path / "link.kas"
    kas.dump({"a": np.arange(2)}, target)
    link.symlink_to(target)
    kas.dump({"b": np.arange(3)}, link)
    assert link.is_symlink()
    assert list(kas.load(target)) == ["b"]


@pytest.mark.parametrize("engine", [kas.PY_ENGINE, kas.C_ENGINE])
def test_dump_refuses_what_kastore_refuses(tmp_path, engine):
    path = tmp_path / "out.kas"
    for bad in ([], "w34", None, 1):
        with pytest.raises(TypeError):
            kas.dump(bad, path, engine=engine)
    for key in ((1,), b"1234", None, 1234):
        with pytest.raises(TypeError):
            kas.dump({key: np.zeros(1)}, path, engine=engine)
    for value in (kas, "1234", None, [[0, 1], [0, 2]], np.zeros((2, 2)), 5):
        with pytest.raises(ValueError):
            kas.dump({"a": value}, path, engine=engine)
    with pytest.raises(ValueError):
        kas.dump({"": np.zeros(1)}, path, engine=engine)
    unsupported = KeyError if engine == kas.PY_ENGINE else ValueError
    for value in (np.zeros(2, dtype=bool), np.zeros(2, dtype=">i4"), np.zeros(1, complex)):
        with pytest.raises(unsupported):
            kas.dump({"a": value}, path, engine=engine)
    with pytest.raises(FileNotFoundError):
        kas.dump({"a": [1]}, tmp_path / "no" / "such.kas", engine=engine)
    with pytest.raises(IsADirectoryError):
        kas.dump({"a": [1]}, tmp_path, engine=engine)
    for engine_name in (None, "Python", b"c"):
        with pytest.raises(ValueError):
            kas.dump({}, path, engine=engine_name)


def test_dump_coerces_like_numpy():
    loaded = kas.loads(kas.dumps({"r": range(3), "e": [], "u": [2**63], "t": (1.5, 2)}))
    assert loaded["r"].dtype == np.int64
    assert loaded["e"].dtype == np.float64 and len(loaded["e"]) == 0
    assert loaded["u"].dtype == np.uint64
    assert loaded["t"].dtype == np.float64


def test_non_contiguous_arrays_are_written_by_value():
    base = np.arange(20, dtype=np.int32)
    loaded = kas.loads(kas.dumps({"s": base[::3]}))
    np.testing.assert_array_equal(loaded["s"], base[::3])


def test_key_encodings(tmp_path):
    data = {"a": np.arange(2), "é": np.arange(3), "ö": np.arange(1)}
    path = tmp_path / "latin.kas"
    kas.dump(data, path, key_encoding="latin-1")
    raw = path.read_bytes()
    assert b"\xe9" in raw and "é".encode() not in raw
    store = kas.load(path, key_encoding="latin-1")
    assert list(store) == ["a", "é", "ö"]
    assert_same(data, store)
    assert "é" in store and store.info("ö").shape == (1,)
    with pytest.raises(LookupError):
        kas.load(path, key_encoding="no-such-codec")
    assert len(kas.loads(kas.dumps({}), key_encoding="no-such-codec")) == 0


def test_missing_c_engine_is_reported(kas_file):
    try:
        kas._kastore_loaded = False
        with pytest.raises(RuntimeError):
            kas.load(kas_file, engine=kas.C_ENGINE)
        with pytest.raises(RuntimeError):
            kas.dump({}, kas_file, engine=kas.C_ENGINE)
    finally:
        kas._kastore_loaded = True


def test_large_store_round_trip(tmp_path):
    data = {"big": np.arange(20_000_000, dtype=np.uint64), "small": np.arange(3)}
    path = tmp_path / "large.kas"
    kas.dump(data, path)
    assert path.stat().st_size > 160_000_000
    for read_all in (False, True):
        assert_same(data, kas.load(path, read_all=read_all))


# --- the command line ----------------------------------------------------------


def run_cli(*args: str) -> str:
    return subprocess.run(
        [sys.executable, "-m", "binfmt.kastore", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def test_cli(tmp_path):
    path = tmp_path / "cli.kas"
    kas.dump({"A": np.arange(100), "big": np.zeros(200_000, dtype=np.uint8)}, path)
    assert run_cli("ls", str(path)).splitlines() == ["A", "big"]
    assert run_cli("ls", "-l", str(path)).splitlines() == [
        "int64    100    800 A",
        "uint8 200000 200000 big",
    ]
    assert run_cli("ls", "-lH", str(path)).splitlines() == [
        "int64    100   800B A",
        "uint8 200000 195.3K big",
    ]
    assert run_cli("dump", str(path), "A").splitlines() == [str(i) for i in range(100)]
    assert run_cli("-V").split()[-1] == kas.__version__
    empty = tmp_path / "empty.kas"
    empty.write_bytes(b"")
    failed = subprocess.run(
        [sys.executable, "-m", "binfmt.kastore", "ls", str(empty)],
        capture_output=True,
        text=True,
    )
    assert failed.returncode != 0 and "EOFError" in failed.stderr
