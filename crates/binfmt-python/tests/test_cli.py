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
