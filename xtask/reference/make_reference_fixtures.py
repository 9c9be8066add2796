"""Writes fixtures/reference/: small files made by the reference implementations.

Usage: make_reference_fixtures.py OUT_DIR --glzn CHECKOUT --arcx ARCX_BINARY

- sample.tar      Python tarfile, USTAR, fixed metadata (deterministic).
- sample.taridx   the iTar indexer (dsb-ifi/glzn, glzn/data/itar/entry.py) over sample.tar.
- all_types.kas   Python kastore 0.3.6: one key per dtype, values 0..4.
- sample.arcx     the arcx 0.3.0 tool packing the same three files.
- taridx/         flat USTAR folds `golden` and `mixed` (tests/python/make_shards.py)
                  and the indexer's golden.taridx and mixed.taridx for them.
- converted/      folds whose shards `binfmt convert` wrote (the xtask writes them
                  before running this script); each FOLD.taridx is replaced by
                  the indexer's index of FOLD_*.tar.

The indexer's modules are loaded by path from the checkout, so the rest of
glzn (and its torch dependency) is not needed.
"""

import argparse
import importlib.util
import io
import pathlib
import subprocess
import sys
import tarfile
import tempfile
import types

import kastore
import numpy as np

MEMBERS = [
    ("sample/0001.jpg", b"\xff\xd8\xff\xe0 not really a jpeg\n"),
    ("sample/0001.json", b'{"label": 1}\n'),
    ("sample/0002.jpg", b"\xff\xd8\xff\xe0 another\n" * 40),
]


def load_indexer(checkout: pathlib.Path):
    itar = checkout / "glzn" / "data" / "itar"
    for name in ("glzn", "glzn.data", "glzn.data.itar"):
        package = types.ModuleType(name)
        package.__path__ = []
        sys.modules[name] = package
    for name in ("utils", "entry"):
        spec = importlib.util.spec_from_file_location(f"glzn.data.itar.{name}", itar / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return sys.modules["glzn.data.itar.entry"]


def write_tar(path: pathlib.Path) -> None:
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in MEMBERS:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 1_700_000_000
            info.mode = 0o644
            info.uname = info.gname = "binfmt"
            tar.addfile(info, io.BytesIO(data))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=pathlib.Path)
    parser.add_argument("--glzn", type=pathlib.Path, required=True)
    parser.add_argument("--arcx", required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    tar_path = args.out / "sample.tar"
    write_tar(tar_path)

    entry = load_indexer(args.glzn)
    entry.parse_tar(tar_path).finalize().save(args.out / "sample.taridx")

    repo = pathlib.Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(repo / "tests" / "python"))
    import make_shards

    folds = args.out / "taridx"
    folds.mkdir(exist_ok=True)
    make_shards.flat(folds)
    for fold in ("golden", "mixed"):
        state = None
        for shard in sorted(folds.glob(f"{fold}_*.tar")):
            state = entry.parse_tar(shard, state=state)
        state.finalize().save(folds / f"{fold}.taridx")

    converted = args.out / "converted"
    for index in sorted(converted.glob("*.taridx")):
        state = None
        for shard in sorted(converted.glob(f"{index.stem}_*.tar")):
            state = entry.parse_tar(shard, state=state)
        state.finalize().save(index)

    dtypes = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32", "float64"]
    kastore.dump({name: np.arange(5, dtype=name) for name in dtypes}, args.out / "all_types.kas")

    with tempfile.TemporaryDirectory() as tree:
        for name, data in MEMBERS:
            path = pathlib.Path(tree) / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        subprocess.run([args.arcx, "pack", tree, str(args.out / "sample.arcx")], check=True)


if __name__ == "__main__":
    main()
