"""The counters a mix reports in ``stats()`` (and ``pipeline_stats()``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arrowmix._stream.mixing.mix import WeightedMixIterator

__all__ = ["mix_stats"]


def mix_stats(m: WeightedMixIterator[Any]) -> dict[str, Any]:
    """``m.stats()``: see :meth:`WeightedMixIterator.stats`."""
    k = len(m.streams)
    counts = list(m._counts) if m._started else [0] * k
    window = [c - w for c, w in zip(counts, m.__dict__.get("_window", counts), strict=True)]
    m._window = list(counts)
    out: dict[str, Any] = {
        "counts": counts,
        "ratios": _ratios(counts),
        "window_counts": window,
        "window_ratios": _ratios(window),
        "weights": list(m.weights),
        "exhausted": list(m._exhausted) if m._started else [False] * k,
    }
    tally = m.__dict__.get("_token_tally")
    if tally is not None:
        out["tokens"], out["window_tokens"] = tally.read()
    if m.names is not None:
        out = {key: dict(zip(m.names, v, strict=True)) for key, v in out.items()}
    out["wait_seconds"] = m.__dict__.get("_wait", 0.0)
    out["removed"] = list(m.__dict__.get("removed", []))
    return out


def _ratios(counts: list[int]) -> list[float]:
    total = sum(counts)
    return [c / total if total else 0.0 for c in counts]
