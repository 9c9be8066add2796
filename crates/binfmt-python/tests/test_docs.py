"""Every Python snippet the documentation shows runs: the ```python blocks
of README.md and docs/python.md, each in a fresh temporary directory (so
each block makes the files it reads). See ARCHITECTURE.md, "Testing the
docs"."""

from __future__ import annotations

import os
import pathlib
import re

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
PAGES = [REPO / "README.md", REPO / "docs" / "python.md"]
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
def test_snippet_runs(code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "<snippet>", "exec"), {"__name__": "__doc_snippet__"})
    assert os.getcwd() == str(tmp_path)
