"""Shared fixtures of the binfmt Python tests.

Reference implementations (the ``kastore`` package, msprime and tskit, the
``arcx`` 0.3.0 tool) are installed by ``.ci/setup-interop``. Tests that need
one are skipped when it is missing, unless ``BINFMT_INTEROP=require`` (the
test command sets it), where a missing reference fails them.
"""

from __future__ import annotations

import importlib
import os
import pathlib
import shutil

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]


def reference(module: str):
    """Imports a reference module, or skips (fails when interop is required)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        if os.environ.get("BINFMT_INTEROP") == "require":
            raise
        pytest.skip(f"{module} is not installed (bash .ci/setup-interop)")


def arcx_tool() -> str:
    """The path of the arcx 0.3.0 command-line tool, or skips."""
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    tool = target / "interop" / "cargo" / "bin" / "arcx"
    if tool.exists():
        return str(tool)
    found = shutil.which("arcx")
    if found:
        return found
    if os.environ.get("BINFMT_INTEROP") == "require":
        pytest.fail(f"the arcx tool is not installed at {tool} (bash .ci/setup-interop)")
    pytest.skip("the arcx tool is not installed (bash .ci/setup-interop)")


@pytest.fixture
def kastore_ref():
    """The reference ``kastore`` package."""
    return reference("kastore")


@pytest.fixture(scope="session")
def test_servers() -> dict[str, str]:
    """The servers ``bash .ci/servers start`` runs on 127.0.0.1 (nginx,
    SeaweedFS's S3 and its filer), as ``target/servers.env`` names them; skips
    (fails when interop is required) when they are not running."""
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    path = pathlib.Path(os.environ.get("BINFMT_SERVERS_ENV", target / "servers.env"))
    try:
        lines = path.read_text().splitlines()
    except OSError:
        if os.environ.get("BINFMT_INTEROP") == "require":
            pytest.fail(f"{path} is missing: the servers are not running (bash .ci/servers start)")
        pytest.skip("the test servers are not running (bash .ci/servers start)")
    return dict(line.split("=", 1) for line in lines if "=" in line)


@pytest.fixture
def s3_env(test_servers, monkeypatch) -> str:
    """The AWS environment of the test S3 server set for this test (and
    inherited by the processes it spawns); the bucket's name."""
    for key, name in (
        ("AWS_ENDPOINT_URL", "BINFMT_S3_ENDPOINT"),
        ("AWS_ACCESS_KEY_ID", "BINFMT_S3_ACCESS_KEY_ID"),
        ("AWS_SECRET_ACCESS_KEY", "BINFMT_S3_SECRET_ACCESS_KEY"),
        ("AWS_REGION", "BINFMT_S3_REGION"),
    ):
        monkeypatch.setenv(key, test_servers[name])
    monkeypatch.setenv("AWS_ALLOW_HTTP", "true")
    return test_servers["BINFMT_S3_BUCKET"]


def _env_file(variable: str, name: str) -> pathlib.Path:
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    return pathlib.Path(os.environ.get(variable, target / name))


@pytest.fixture(scope="session")
def ray_cluster():
    """The Ray module, connected to the two-node cluster ``bash
    .ci/ray-cluster start`` runs (its address from ``target/ray.env``);
    skips (fails when interop is required) when it is not running. The S3
    variables of the test servers, when they run, are given to every task
    of the job (``runtime_env``): workers start from the nodes'
    environment, not the driver's."""
    path = _env_file("BINFMT_RAY_ENV", "ray.env")
    try:
        lines = path.read_text().splitlines()
    except OSError:
        if os.environ.get("BINFMT_INTEROP") == "require":
            pytest.fail(f"{path} is missing: the Ray cluster is not running (bash .ci/ray-cluster start)")
        pytest.skip("the Ray cluster is not running (bash .ci/ray-cluster start)")
    address = dict(line.split("=", 1) for line in lines if "=" in line)["RAY_ADDRESS"]
    ray = reference("ray")
    import ray.data

    env_vars = {}
    try:
        servers = dict(
            line.split("=", 1)
            for line in _env_file("BINFMT_SERVERS_ENV", "servers.env").read_text().splitlines()
            if "=" in line
        )
    except OSError:
        servers = {}
    if servers:
        env_vars = {
            "AWS_ENDPOINT_URL": servers["BINFMT_S3_ENDPOINT"],
            "AWS_ACCESS_KEY_ID": servers["BINFMT_S3_ACCESS_KEY_ID"],
            "AWS_SECRET_ACCESS_KEY": servers["BINFMT_S3_SECRET_ACCESS_KEY"],
            "AWS_REGION": servers["BINFMT_S3_REGION"],
            "AWS_ALLOW_HTTP": "true",
        }
    ray.init(
        address=address,
        logging_level="ERROR",
        log_to_driver=False,
        runtime_env={"env_vars": env_vars} if env_vars else None,
    )
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.print_on_execution_start = False
    yield ray
    ray.shutdown()


def cls_fold(root: pathlib.Path, name: str, sizes, label=lambda name, i: str(i)):
    """A fold ``root/NAME_0000.tar``, ... of shards of ``sizes`` samples,
    written with tarfile, indexed as ``root/NAME.taridx`` and opened: sample
    ``i`` (counted across shards) is one member ``s/IIIIII.cls`` holding
    ``label(name, i)``."""
    import io
    import tarfile

    import binfmt.taridx as taridx

    shards, i = [], 0
    for fid, size in enumerate(sizes):
        shard = root / f"{name}_{fid:04d}.tar"
        with tarfile.open(shard, "w", format=tarfile.USTAR_FORMAT) as tar:
            for _ in range(size):
                data = label(name, i).encode()
                member = tarfile.TarInfo(f"s/{i:06d}.cls")
                member.size = len(data)
                tar.addfile(member, io.BytesIO(data))
                i += 1
        shards.append(str(shard))
    taridx.index(shards, str(root / f"{name}.taridx"))
    return taridx.Dataset(str(root / f"{name}.taridx"))
