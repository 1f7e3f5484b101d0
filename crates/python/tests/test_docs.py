"""Every Python snippet of docs/python.md runs, in order, in one namespace, from the
repository's root (blocks marked `python notest` are shown only)."""

from __future__ import annotations

import os
import re

from conftest import ROOT


def test_docs_python_md_snippets_run() -> None:
    text = (ROOT / "docs" / "python.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 6
    ns: dict = {"__name__": "__docs__"}
    old = os.getcwd()
    os.chdir(ROOT)
    try:
        for i, b in enumerate(blocks):
            exec(compile(b, f"docs/python.md block {i + 1}", "exec"), ns)
    finally:
        os.chdir(old)
