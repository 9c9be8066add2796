"""Issue 28: ``pip install`` gave ``binfmt-kastore`` but no ``binfmt``.
The wheel installs the ``binfmt`` script and ``python -m binfmt``, both
running the Rust binary's own code."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
SCRIPT = Path(sys.executable).parent / "binfmt"


def run(*argv, cwd=None):
    return subprocess.run(list(argv), capture_output=True, cwd=cwd, timeout=120)


@pytest.mark.parametrize("launch", [[str(SCRIPT)], [sys.executable, "-m", "binfmt"]])
def test_the_command_comes_with_the_package(launch, tmp_path):
    assert SCRIPT.exists(), "the wheel installs bin/binfmt"
    helped = run(*launch, "--help")
    assert helped.returncode == 0, helped.stderr
    assert b"Read, check and convert TARIDX, ARCX, PAR4 and KAST files" in helped.stdout
    listed = run(*launch, "list", str(FIXTURES / "reference" / "sample.arcx"))
    assert listed.returncode == 0, listed.stderr
    assert b"sample/0001.json" in listed.stdout
    out = tmp_path / "s.kas"
    converted = run(*launch, "convert", str(FIXTURES / "reference" / "sample.arcx"), "-o", str(out))
    assert converted.returncode == 0, converted.stderr
    assert run(*launch, "sniff", str(out)).stdout.strip().endswith(b"kast")
    # Exit statuses as the binary's: 1 for a bad file, 2 for a usage error.
    missing = run(*launch, "list", str(tmp_path / "missing.arcx"))
    assert missing.returncode == 1 and missing.stderr.startswith(b"binfmt: ")
    assert run(*launch, "no-such-verb").returncode == 2


def test_pip_install_in_a_fresh_venv(tmp_path):
    """What a user does: a new venv, ``pip install`` of the wheel (numpy
    from the wheelhouse .ci/setup-interop fills, not the network), then
    the command and the package with nothing else installed."""
    target = Path(os.environ.get("CARGO_TARGET_DIR", FIXTURES.parent / "target"))
    wheels = sorted(Path(os.environ.get("BINFMT_WHEELS", target / "wheels")).glob("binfmt-*.whl"))
    wheelhouse = target / "interop" / "wheelhouse"
    if not wheels or not wheelhouse.is_dir():
        if os.environ.get("BINFMT_INTEROP") == "require":
            pytest.fail(f"no wheel in {wheels} or no {wheelhouse} (bash .ci/test builds them)")
        pytest.skip("needs the built wheel and the wheelhouse (bash .ci/test)")
    fresh = tmp_path / "fresh"
    made = run(sys.executable, "-m", "venv", str(fresh))
    assert made.returncode == 0, made.stderr
    installed = run(
        str(fresh / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check",
        "--no-index", "--find-links", str(wheelhouse), str(wheels[-1]),
    )
    assert installed.returncode == 0, installed.stderr
    helped = run(str(fresh / "bin" / "binfmt"), "--help")
    assert helped.returncode == 0 and b"Read, check and convert" in helped.stdout, helped.stderr
    as_module = run(str(fresh / "bin" / "python"), "-m", "binfmt", "sniff", str(FIXTURES / "reference" / "sample.arcx"))
    assert as_module.returncode == 0 and as_module.stdout.strip().endswith(b"arcx"), as_module.stderr
    imported = run(str(fresh / "bin" / "python"), "-c", "import binfmt.taridx, binfmt.kastore; print('ok')", cwd=tmp_path)
    assert imported.stdout.strip() == b"ok", imported.stderr
