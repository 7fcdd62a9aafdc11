"""The row-position path of a mix: positions in :class:`MixedRows` numbering, in bulk.

A mix whose inputs all stream row positions (index streams) streams positions too:
``collate``, ``pack`` and ``batch(columnar=True)`` after it read them with
:func:`pull_positions` and gather the rows they need at once.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from arrowmix._stream.mixing.token_ahead import token_bulk
from arrowmix._stream.positions import Positions

if TYPE_CHECKING:
    from arrowmix._stream.mixing.mix import WeightedMixIterator

__all__ = ["as_positions", "pull_positions"]

_clock = time.perf_counter


def as_positions(m: WeightedMixIterator[Any]) -> Positions | None:
    """The mix's positions view, when every input is an index stream.

    Taking the view makes the mix read its inputs through their own views. In token mode
    the tokens of a position come from a token column's offsets; with a function (or a
    column that is not a list of integers) there is no view and consumers read rows.
    """
    rows = m.row_source()
    if rows is None or (m.tokens is not None and not m.tokens.positions_ok(rows)):
        return None
    if m.__dict__.get("_views") is None:
        views = [s.as_positions() for s in m.streams]
        if any(v is None for v in views):
            return None
        m.__dict__["_views"] = views
    return Positions(rows, m.pull_positions)


def pull_positions(m: WeightedMixIterator[Any], n: int) -> np.ndarray:
    """Up to ``n`` positions in :class:`MixedRows` numbering, chosen as ``next`` would.

    Bulk path: plan the choices, pull each input's share at once. When an input runs
    dry inside the block, everything is rewound, the choices before that step are
    pulled in bulk, and that one step goes through the exact per-item rule (``next``,
    which applies the stopping rule); then bulk resumes. While inputs are looked
    ahead (``longest_cycle``) every step is exact. In token mode each choice depends on
    the tokens of the items before it: see
    :func:`~arrowmix._stream.mixing.token_ahead.token_bulk`.
    """
    rows = m.row_source()
    if rows is None or m.__dict__.get("_views") is None:
        raise TypeError("mix streams row positions only when every input does.")
    bases = rows.bases
    parts: list[np.ndarray] = []
    left = n
    while left > 0 and any(m._active):
        cycling = m.stopping == "longest_cycle" and any(m._exhausted)
        if m.tokens is not None and not (cycling or any(p is not None for p in m._pre)):
            got, ended = token_bulk(m, left, bases)
            parts.append(got)
            left -= len(got)
            if ended or not left:
                break
        elif not (cycling or any(pre is not None for pre in m._pre)):
            states = [s.get_state() for s in m.streams]
            rule = m._rule.snapshot()
            choices, pulled = _bulk(m, left)
            short = [i for i, p in enumerate(pulled) if len(p) < int((choices == i).sum())]
            if not short:
                parts.append(_assemble(m, choices, pulled, bases))
                # all asked for, or a short plan: the schedule left no input to
                # choose, and the mix has ended (as next() does)
                break
            # the first step whose input has run dry
            t = min(int(np.flatnonzero(choices == i)[len(pulled[i])]) for i in short)
            for s, st in zip(m.streams, states, strict=True):
                s.reset(st)
            m._rule.restore(rule)
            if t:
                choices, pulled = _bulk(m, t)
                parts.append(_assemble(m, choices, pulled, bases))
                left -= t
        try:
            parts.append(np.array([m.next()], dtype=np.int64))
        except StopIteration:
            break
        left -= 1
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)


def _bulk(m: WeightedMixIterator[Any], n: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """The next ``n`` choices and each input's share of positions (maybe short)."""
    choices = np.asarray(m._plan(n), dtype=np.int64)
    need = np.bincount(choices, minlength=len(m.streams)).tolist()
    views = m.__dict__["_views"]
    t0 = _clock()
    pulled = [
        v.pull(c) if c else np.empty(0, dtype=np.int64) for v, c in zip(views, need, strict=True)
    ]
    m._wait += _clock() - t0
    return choices, pulled


def _assemble(
    m: WeightedMixIterator[Any], choices: np.ndarray, pulled: list[np.ndarray], bases: np.ndarray
) -> np.ndarray:
    out = np.empty(len(choices), dtype=np.int64)
    for i, p in enumerate(pulled):
        if len(p):
            out[choices == i] = p + bases[i]
            m._counts[i] += len(p)
    return out
