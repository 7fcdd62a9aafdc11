"""A page's examples, pasted as the docs site's copy button gives them, run clean in order.

The ``>>>`` examples run as doctests (their output is checked there); the plain blocks between
them are only compiled by ``scripts/check_docs.py``. Here the code of every block of a page, in
the page's order, runs as one script in a fresh directory, warnings as errors: what a newcomer
who pastes the quickstart into a file gets.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Pages whose every block runs on its own (none reads a user's files or another library).
PAGES = ["docs/quickstart.md"]


def copied(page: Path) -> str:
    """The code the copy button gives for each Python block of ``page``, in order."""
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "scripts" / "docs_hooks.py")
    assert spec is not None and spec.loader is not None
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    text = page.read_text(encoding="utf-8")
    blocks = re.findall(r"^```python[^\n]*\n(.*?)^```", text, re.S | re.M)
    return "\n".join(hooks.runnable(block) or block for block in blocks) + "\n"


def test_a_plain_block_is_copied_as_written() -> None:
    code = copied(ROOT / "docs" / "quickstart.md")
    assert ">>>" not in code and "\n... " not in code
    assert "loader = stream.to_torch().loader(num_workers=2" in code


@pytest.mark.slow  # DataLoader worker processes, torch's import
@pytest.mark.integration
@pytest.mark.parametrize("page", PAGES)
def test_the_copied_code_of_a_page_runs_clean(page: str, tmp_path: Path) -> None:
    if "torch" in copied(ROOT / page):
        pytest.importorskip("torch")
        pytest.importorskip("torchdata")
    script = tmp_path / "pasted.py"
    script.write_text(copied(ROOT / page), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ARROWMIX_PROGRESS": "0"}
    done = subprocess.run(
        [sys.executable, "-W", "error", str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr == "", done.stderr[-3000:]
