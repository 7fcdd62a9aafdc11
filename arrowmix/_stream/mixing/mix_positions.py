"""The row-position path of a mix: positions in :class:`MixedRows` numbering, in bulk.

A mix whose inputs all stream row positions (index streams) streams positions too:
``collate``, ``pack`` and ``batch(columnar=True)`` after it read them with
:func:`pull_positions` and gather the rows they need at once.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from arrowmix._stream.mixing.by_tokens import run_draws, run_most_behind
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
    the tokens of the items before it: see :func:`_token_bulk`.
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
            got, ended = _token_bulk(m, left, bases)
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


def _token_bulk(m: WeightedMixIterator[Any], n: int, bases: np.ndarray) -> tuple[np.ndarray, bool]:
    """Up to ``n`` positions of a mix by tokens, and whether the mix has ended.

    Each input's next ``n`` positions are read ahead with their token counts (one
    vectorised lookup per input); the rule then chooses step by step over them, exactly
    as ``next`` does, until ``n`` are chosen or an input's read-ahead runs out; every
    input is rewound and pulled again for exactly what was chosen from it. Positions
    are cheap to read twice; rows are gathered once, by the consumer. An input that
    has run dry leaves its step to ``next`` (the stopping rule), as the row mode does.
    """
    assert m.tokens is not None
    assert m.tokens.column is not None
    rows = m.row_source()
    lengths = rows.token_column(m.tokens.column).lengths  # type: ignore[union-attr]
    views = m.__dict__["_views"]
    k = len(m.streams)
    states = [s.get_state() for s in m.streams]
    t0 = _clock()
    ahead = [views[j].pull(n) if m._active[j] else np.empty(0, np.int64) for j in range(k)]
    m._wait += _clock() - t0
    sizes = [lengths(p + bases[j]).tolist() if len(p) else [] for j, p in enumerate(ahead)]
    used = [0] * k
    choices: list[int] = []
    ended = False
    while len(choices) < n:
        step, before = m._step(), list(used)
        i = m._choose()  # enters the segment of this step (a schedule)
        if i < 0:
            ended = True
            break
        if used[i] == len(sizes[i]):  # read ahead too little, or the input ran dry
            break
        span = min(n - len(choices), m._rule.end - step)
        mask = m._active if m.schedule is None else m._mask()[0]
        if m.seed is None:
            cur, rule = m._rule.swrr.cur, m._rule
            got = run_most_behind(cur, rule.ints, rule.swrr._rank, mask, sizes, used, span)
            for j in range(k):
                if used[j] > before[j]:
                    m._counts[j] += used[j] - before[j]
                    m._tokens[j] += sum(sizes[j][before[j] : used[j]])
        else:
            us = m._uniforms(step, span)
            got = run_draws(us, m.weights, mask, m._tokens, m._counts, sizes, used)
        choices.extend(got)
        if len(got) < span:
            break
    for s, st in zip(m.streams, states, strict=True):
        s.reset(st)
    out = np.empty(len(choices), dtype=np.int64)
    picks = np.asarray(choices, dtype=np.int64)
    for j in range(k):
        if used[j]:
            out[picks == j] = views[j].pull(used[j]) + bases[j]
    if not ended and len(choices) < n:  # that step goes through next(): stopping rules
        try:
            out = np.append(out, np.int64(m.next()))
        except StopIteration:
            ended = True
    return out, ended
