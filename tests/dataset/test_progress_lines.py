"""Progress of a long map in a log file: plain lines now and then, nothing for a short one."""

from __future__ import annotations

import time

import pytest

import arrowmix as am
from arrowmix._dataset import progress


@pytest.fixture
def corpus(tmp_path):
    am.write_chunks(({"x": i} for i in range(400)), tmp_path / "c", rows_per_chunk=100)
    return am.Dataset.from_chunks(str(tmp_path / "c"))


def test_a_long_map_in_a_log_writes_progress_lines(corpus, monkeypatch, capsys):
    monkeypatch.delenv("ARROWMIX_PROGRESS", raising=False)
    monkeypatch.setattr(progress, "LOG_EVERY", 0.2)

    def slow(batch):
        time.sleep(0.05)
        return {"y": [v + 1 for v in batch["x"]]}

    out = corpus.map(slow, batched=True, batch_size=10, desc="slow map")
    assert out["y"][:3] == [1, 2, 3]
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("slow map")]
    assert len(lines) >= 2
    assert "\r" not in "".join(lines)
    assert "400/400" in lines[-1] and "segments" in lines[-1]


def test_a_short_map_in_a_log_writes_nothing(corpus, monkeypatch, capsys):
    monkeypatch.delenv("ARROWMIX_PROGRESS", raising=False)
    corpus.map(lambda r: {"y": r["x"]})
    assert capsys.readouterr().err == ""


def test_progress_0_silences_the_lines(corpus, monkeypatch, capsys):
    monkeypatch.setenv("ARROWMIX_PROGRESS", "0")
    monkeypatch.setattr(progress, "LOG_EVERY", 0.0)
    corpus.map(lambda r: {"y": r["x"] * 2})
    assert capsys.readouterr().err == ""
