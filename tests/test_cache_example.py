"""Regenerating .cache-example gives the committed file names: fingerprints are stable."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from arrowmix._dataset import indices

ROOT = Path(__file__).resolve().parents[1]


def test_regenerated_example_has_the_committed_names(tmp_path, monkeypatch):
    monkeypatch.setattr(indices, "INDICES_FILE_MIN_ROWS", indices.INDICES_FILE_MIN_ROWS)
    spec = importlib.util.spec_from_file_location(
        "make_cache_example", ROOT / "scripts" / "make_cache_example.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    committed = sorted(n for n in os.listdir(ROOT / ".cache-example") if n.endswith(".arrow"))
    if not committed:
        pytest.fail(".cache-example holds no .arrow files: run scripts/make_cache_example.py")
    assert module.build(str(tmp_path)) == committed
