"""Fixtures of the command-line tests."""

from __future__ import annotations

from pathlib import Path

import pytest

import arrowmix as am


@pytest.fixture
def quickstart_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, am.Dataset]:
    """As after the quickstart: the cache root at ``<tmp>/root``, the current directory
    ``<tmp>/work`` holding ``web_chunks`` and one map result beside it (returned)."""
    root, work = tmp_path / "root", tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("ARROWMIX_CACHE", str(root))
    monkeypatch.chdir(work)
    am.write_chunks(({"x": i} for i in range(50)), "web_chunks", rows_per_chunk=20)
    return root, am.Dataset.from_chunks("web_chunks").map(lambda r: {"y": r["x"] + 1})
