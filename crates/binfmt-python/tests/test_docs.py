"""Every Python snippet the documentation shows runs: the ```python blocks
of README.md, docs/python.md and docs/scaling.md, each in a fresh
temporary directory (so each block makes the files it reads). See
ARCHITECTURE.md, "Testing the docs".

A snippet that uses ``binfmt.ray`` runs connected to the test Ray cluster
(``bash .ci/ray-cluster start``: skipped without it, failed under
``BINFMT_INTEROP=require``); one that names ``s3://datasets/`` runs with
the test servers' S3 variables set and that prefix replaced by a fresh one
in their bucket, as the shell blocks of ``<!-- doc-test: servers -->``."""

from __future__ import annotations

import os
import pathlib
import re
import uuid

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
# Ray warns about its own deprecated settings when a DataContext is copied.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.data.context")

PAGES = [REPO / "README.md", REPO / "docs" / "python.md", REPO / "docs" / "scaling.md"]
FENCE = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def snippets():
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            yield pytest.param(match.group(1), id=f"{page.name}:{line}")


def test_the_pages_have_snippets():
    assert len(list(snippets())) >= 4


@pytest.mark.parametrize("code", list(snippets()))
def test_snippet_runs(code, tmp_path, monkeypatch, request):
    if "s3://datasets/" in code:
        bucket = request.getfixturevalue("s3_env")
        prefix = f"s3://{bucket}/docs-{uuid.uuid4().hex[:8]}/"
        code = code.replace("s3://datasets/", prefix)
    options = None
    if "binfmt.ray" in code:
        # Snippets set DataContext options: each gets them back as they were.
        ray = request.getfixturevalue("ray_cluster")
        options = ray.data.DataContext.get_current().execution_options
        preserve_order = options.preserve_order
    monkeypatch.chdir(tmp_path)
    try:
        exec(compile(code, "<snippet>", "exec"), {"__name__": "__doc_snippet__"})
    finally:
        if options is not None:
            options.preserve_order = preserve_order
    assert os.getcwd() == str(tmp_path)
