"""Add up the ``pipeline_stats()`` of several instances of one pipeline (DataLoader workers).

Counts, tokens and seconds are summed; a flag (``exhausted``) holds when it holds in every
instance; ``weights`` are the pipeline's own; an ``epoch`` (a mix's ``epochs``) is the
furthest one; ratios (of counts and of tokens) and
``padding_efficiency`` are recomputed from the sums. Values a mix keys by source name, or
lists by input index, are merged element by element.
"""

from __future__ import annotations

from typing import Any

__all__ = ["merge_stats"]

_FIRST = frozenset({"weights"})
_MAX = frozenset({"epoch", "epochs"})
_UNION = frozenset({"removed"})
_RATIOS = (
    ("counts", "ratios"),
    ("window_counts", "window_ratios"),
    ("tokens", "token_ratios"),
    ("window_tokens", "window_token_ratios"),
)


def merge_stats(instances: list[dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """``{path: stats}`` of the pipeline as a whole, from one dict per instance.

    Example:
        >>> a = {"collate": {"tokens": 30, "padded_tokens": 40, "padding_efficiency": 0.75}}
        >>> b = {"collate": {"tokens": 10, "padded_tokens": 40, "padding_efficiency": 0.25}}
        >>> merge_stats([a, b])["collate"]
        {'tokens': 40, 'padded_tokens': 80, 'padding_efficiency': 0.5}
    """
    paths: dict[str, list[dict[str, Any]]] = {}
    for stats in instances:
        for path, values in stats.items():
            paths.setdefault(path, []).append(values)
    return {path: _merge_stage(parts) for path, parts in paths.items()}


def _merge_stage(parts: list[dict[str, Any]]) -> dict[str, Any]:
    keys = list(dict.fromkeys(k for part in parts for k in part))
    out = {k: _merge(k, [p[k] for p in parts if k in p]) for k in keys}
    if "padding_efficiency" in out:
        padded = out.get("padded_tokens")
        out["padding_efficiency"] = out["tokens"] / padded if padded else None
    for counts, ratios in _RATIOS:
        if counts in out and ratios in out:
            out[ratios] = _shares(out[counts])
    return out


def _merge(key: str, values: list[Any]) -> Any:
    first = values[0]
    if key in _FIRST or len(values) == 1:
        return first
    if key in _UNION:
        return list(dict.fromkeys(v for value in values for v in value))
    if isinstance(first, dict):
        return {k: _merge(key, [v[k] for v in values if k in v]) for k in first}
    if isinstance(first, (list, tuple)):
        return [_merge(key, list(column)) for column in zip(*values, strict=False)]
    if isinstance(first, bool):
        return all(values)
    if isinstance(first, (int, float)):
        return max(values) if key in _MAX else sum(values)
    return first


def _shares(counts: Any) -> Any:
    if isinstance(counts, dict):
        total = sum(counts.values())
        return {k: v / total if total else 0.0 for k, v in counts.items()}
    total = sum(counts)
    return [c / total if total else 0.0 for c in counts]
