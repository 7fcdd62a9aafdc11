"""scripts/demo.py: its report says what a run reused, and its plot reads correctly."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("demo", ROOT / "scripts" / "demo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("demo", module)
    spec.loader.exec_module(module)
    return module


demo = _load()


def test_reuse_line_says_what_was_computed() -> None:
    a, b, c = Path("cache-a.arrow"), Path("cache-b.arrow"), Path("cache-c.arrow")
    assert demo.reuse_line(set(), {a, b}) == (
        "computed and wrote 2 cache files (a rerun reuses them)"
    )
    assert demo.reuse_line({a, b}, {a, b}) == "nothing computed: all 2 cache files were reused"
    assert demo.reuse_line({a, b}, {a, b, c}) == "wrote 1 cache files, reused 2"


def test_cache_files_finds_results_only(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    for name in ("cache-1-00000-of-00002.arrow", "sub/cache-2.arrow", "chunk-00000.arrow"):
        (tmp_path / name).write_bytes(b"")
    found = {p.name for p in demo.cache_files(tmp_path, tmp_path / "missing")}
    assert found == {"cache-1-00000-of-00002.arrow", "cache-2.arrow"}


def test_plot_labels_cumulative_share_marks_resume_and_zooms_efficiency() -> None:
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(0)
    steps, ckpt = 60, 30
    counts = np.cumsum(rng.multinomial(10, demo.WEIGHTS, size=steps), axis=0)
    efficiency = 0.9 + 0.1 * rng.random(steps)
    result = {
        "ratios": counts / counts.sum(axis=1, keepdims=True),
        "efficiency": efficiency,
        "resumed_efficiency": efficiency[ckpt + 1 : ckpt + 11],
        "checkpoint_at": ckpt,
    }
    fig = demo.make_figure(result)
    share, eff = fig.axes
    assert "cumulative" in share.get_ylabel()
    for ax in (share, eff):  # the checkpoint/resume step is marked on both panels
        assert any(list(line.get_xdata()) == [ckpt, ckpt] for line in ax.lines)
    low, high = eff.get_ylim()
    assert 0.85 <= low <= efficiency.min() and high <= 1.01  # not squeezed into 0..1
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    for ax in (share, eff):  # legends sit beside the axes, never over a curve
        legend = ax.get_legend()
        assert legend is not None
        labels = [t.get_text() for t in legend.get_texts()]
        assert legend.get_window_extent(renderer).x0 >= ax.get_window_extent(renderer).x1
    assert labels[-1].startswith("after resume")
    assert len(share.get_legend().get_texts()) == len(demo.SOURCES)


def _tiny_data() -> dict[str, Any]:
    import arrowmix as am

    rng = np.random.default_rng(0)
    out = {}
    for name in demo.SOURCES:
        ids = [rng.integers(1, 1000, int(n)).tolist() for n in rng.integers(8, 300, 400)]
        out[name] = am.Dataset.from_dict(
            {"ids": ids, "n_tokens": [len(x) for x in ids], "source": [name] * len(ids)}
        )
    return out


@pytest.mark.parametrize("torch_installed", [False, True])
def test_training_stream_yields_padded_tensors(
    torch_installed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if torch_installed:
        torch = pytest.importorskip("torch")
    else:
        monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    assert demo.tensors() == ("pt" if torch_installed else "np")
    with demo.training_stream(_tiny_data()) as s:
        batch = next(s)
    assert set(batch) == {"input_ids", "attention_mask", "labels", "source"}
    ids = batch["input_ids"]
    assert isinstance(ids, torch.Tensor if torch_installed else np.ndarray)
    assert ids.shape[0] * ids.shape[1] <= demo.TOKEN_BUDGET
    assert set(batch["source"].tolist()) <= set(demo.SOURCES)
    assert len(batch["source"]) == ids.shape[0]
    if torch_installed:
        model = demo.TinyLM(1000)
        assert np.isfinite(model.step(batch))
