"""docs/packing.md's training script trains: the loss reaches the floor of its labels.

Every target of ``pack(labels="shift")`` is predictable (a document's next token follows
its rule), so the loss goes to about 0; a label across a document boundary would be
unpredictable and hold it near ``log(64) / 22`` (0.19). The segment mask and the
``cu_seqlens`` runs give the same attention, hence the same losses.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "docs" / "examples" / "train_packed.py"


def script() -> ModuleType:
    pytest.importorskip("torch")
    spec = importlib.util.spec_from_file_location("train_packed", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_shows_the_script_the_test_runs() -> None:
    page = (ROOT / "docs" / "packing.md").read_text(encoding="utf-8")
    assert "<!-- include: examples/train_packed.py -->" in page


def test_training_on_packed_rows_reaches_the_label_floor() -> None:
    train = script().main
    losses = {a: train(["--attention", a, "--steps", "30"]) for a in ("mask", "varlen", "causal")}
    assert losses["mask"] == pytest.approx(losses["varlen"], rel=1e-3, abs=1e-4)
    for attention, run in losses.items():
        assert run[0] > 3.5, attention  # about log(64): nothing learned yet
        assert max(run[-3:]) < 0.05, (attention, run[-3:])
