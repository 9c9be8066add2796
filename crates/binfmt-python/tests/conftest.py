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
