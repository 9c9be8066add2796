"""binfmt.kastore against the kastore package (0.3.6) and tskit's files.

Files written by each are loaded by the other, with equal arrays; the bytes
written for the same data are identical.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

import binfmt.kastore as kas

from conftest import reference

ENGINES = ["python", "c"]


def datasets():
    yield {}
    yield {"a": np.array([], dtype=np.int8)}
    yield {
        dtype: np.arange(37, dtype=dtype)
        for dtype in ["int8", "uint8", "int16", "uint16", "int32", "uint32"]
        + ["int64", "uint64", "float32", "float64"]
    }
    yield {f"key/{i:05d}": np.full(i % 7, i, dtype=np.int32) for i in range(500)}
    yield {"unicode ключ 🔑": np.linspace(0, 1, 11), "\0nul": np.arange(2)}
    yield {"big": np.random.default_rng(1).random(1_000_000)}


def assert_equal_stores(expected, actual):
    assert sorted(expected.keys()) == sorted(actual.keys())
    for key in expected.keys():
        np.testing.assert_array_equal(expected[key], actual[key])
        assert np.asarray(expected[key]).dtype == actual[key].dtype


@pytest.mark.parametrize("index", range(6))
def test_same_bytes_as_kastore(kastore_ref, index):
    data = list(datasets())[index]
    assert kas.dumps(data) == kastore_ref.dumps(data)


@pytest.mark.parametrize("index", range(6))
@pytest.mark.parametrize("writer_engine", ENGINES)
@pytest.mark.parametrize("reader_engine", ENGINES)
@pytest.mark.parametrize("read_all", [False, True])
def test_files_written_by_kastore_load_here(
    kastore_ref, tmp_path, index, writer_engine, reader_engine, read_all
):
    data = list(datasets())[index]
    path = tmp_path / "ref.kas"
    kastore_ref.dump(data, str(path), engine=writer_engine)
    expected = kastore_ref.load(str(path), engine="c")
    loaded = kas.load(path, read_all=read_all, engine=reader_engine)
    assert_equal_stores(expected, loaded)


@pytest.mark.parametrize("index", range(6))
@pytest.mark.parametrize("engine", ENGINES)
def test_files_written_here_load_in_kastore(kastore_ref, tmp_path, index, engine):
    data = list(datasets())[index]
    path = tmp_path / "ours.kas"
    kas.dump(data, path, engine=engine)
    for ref_engine in ENGINES:
        for read_all in (False, True):
            loaded = kastore_ref.load(str(path), read_all=read_all, engine=ref_engine)
            assert_equal_stores(data, dict(loaded.items()))


def test_concatenated_streams_both_ways(kastore_ref):
    stores = [dict(list(datasets())[i]) for i in (1, 2, 3, 4)]
    theirs = io.BytesIO()
    for data in stores:
        kastore_ref.dump(data, theirs)
    theirs.seek(0)
    for data in stores:
        assert_equal_stores(data, kas.load(theirs, read_all=True))
    ours = io.BytesIO()
    for data in stores:
        kas.dump(data, ours)
    assert ours.getvalue() == theirs.getvalue()
    ours.seek(0)
    for data in stores:
        assert_equal_stores(data, dict(kastore_ref.load(ours, read_all=True).items()))


def test_a_loaded_store_dumps_with_the_other(kastore_ref, tmp_path):
    data = list(datasets())[2]
    path = tmp_path / "a.kas"
    kastore_ref.dump(data, str(path))
    kas.dump(kas.load(path), tmp_path / "b.kas")
    assert (tmp_path / "b.kas").read_bytes() == path.read_bytes()
    kastore_ref.dump(kas.load(tmp_path / "b.kas"), str(tmp_path / "c.kas"))
    assert (tmp_path / "c.kas").read_bytes() == path.read_bytes()


def test_tskit_tree_sequences(tmp_path):
    msprime = reference("msprime")
    tskit = reference("tskit")
    kastore_ref = reference("kastore")
    ts = msprime.sim_ancestry(
        samples=20, sequence_length=1e5, recombination_rate=1e-8,
        population_size=1e4, random_seed=7,
    )
    ts = msprime.sim_mutations(ts, rate=1e-8, random_seed=7)
    path = tmp_path / "sim.trees"
    ts.dump(str(path))
    expected = kastore_ref.load(str(path), engine="c")
    store = kas.load(path)
    assert_equal_stores(expected, store)
    # Written back by binfmt.kastore: the same bytes, and tskit loads it.
    again = tmp_path / "again.trees"
    kas.dump(store, again)
    assert again.read_bytes() == path.read_bytes()
    assert tskit.load(str(again)).tables == ts.tables
