"""The counters a mix reports in ``stats()`` (and ``pipeline_stats()``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arrowmix._stream.mixing.mix import WeightedMixIterator

__all__ = ["mix_stats"]


def mix_stats(m: WeightedMixIterator[Any]) -> dict[str, Any]:
    """Counters of the mix (cheap: no per-item bookkeeping beyond the counts).

    ``counts`` and ``ratios``: items taken from each input since the start (a restored
    checkpoint's counts included); ``window_counts`` and ``window_ratios``: the same
    since the previous ``stats()`` call (the window a logger sees); ``weights``;
    ``exhausted``; ``wait_seconds``: time spent waiting on the inputs since this
    process started the mix (item-by-item reads are sampled, one in 32); ``removed``:
    named sources of a loaded checkpoint that this mixture no longer has.

    ``tokens``, ``token_ratios``, ``window_tokens`` and ``window_token_ratios``: the
    tokens taken from each input and their shares. A mix by tokens (``tokens=``) counts
    them itself, since the start, a restored checkpoint's included; a mix by items
    reports them only when a ``collate`` or ``pack`` reads its row positions (the tokens
    it yielded, in this process). ``epochs`` (with ``max_epochs`` or ``"longest_cycle"``):
    the pass each input is in. A named mix keys the per-input values by source name.
    """
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
    if m.tokens is not None:
        tokens = list(m._tokens) if m._started else [0] * k
        seen = m.__dict__.get("_window_tokens", tokens)
        window_tokens = [t - w for t, w in zip(tokens, seen, strict=True)]
        m._window_tokens = list(tokens)
    elif tally is not None:
        tokens, window_tokens = tally.read()
    if m.tokens is not None or tally is not None:
        out["tokens"], out["token_ratios"] = tokens, _ratios(tokens)
        out["window_tokens"], out["window_token_ratios"] = window_tokens, _ratios(window_tokens)
    if m.counts_passes():
        out["epochs"] = list(m._epochs) if m._started else [1] * k
    if m.names is not None:
        out = {key: dict(zip(m.names, v, strict=True)) for key, v in out.items()}
    out["wait_seconds"] = m.__dict__.get("_wait", 0.0)
    out["removed"] = list(m.__dict__.get("removed", []))
    return out


def _ratios(counts: list[int]) -> list[float]:
    total = sum(counts)
    return [c / total if total else 0.0 for c in counts]
