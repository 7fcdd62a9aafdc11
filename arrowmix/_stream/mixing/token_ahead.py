"""The positions path of a mix by tokens: each input's positions read ahead, kept.

Each choice of a token rule depends on the tokens of the items before it, so the mix
reads each input's next positions ahead, with their token counts (one vectorised lookup
of the token column's offsets), and chooses over them (:mod:`token_runs`). What is not
chosen yet stays read ahead for the next call: an input is pulled again only when its
read-ahead runs out, about once per ``_AHEAD`` of its items, and every position is
pulled and counted once.

While positions are read ahead, the input stands past what the mix has taken from it.
Whatever looks at the inputs other than this path (``get_state``, ``next``, ``pull``,
``stats``, ``children``, ``close``, pickling) first calls :func:`settle`: every input is
rewound to where its read-ahead began and pulls exactly what was taken, so its state,
and the mix's checkpoint, are what they would be had the mix read item by item.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from arrowmix._stream.mixing.token_runs import run_draws, run_most_behind

if TYPE_CHECKING:
    from arrowmix._stream.mixing.mix import WeightedMixIterator

__all__ = ["TokenAhead", "settle", "token_bulk"]

_AHEAD = 4096  # positions an input reads ahead at least
_clock = time.perf_counter


class TokenAhead:
    """Positions of each input read ahead and not chosen yet, with their token counts."""

    def __init__(self, k: int) -> None:
        self.before: list[Any] = [None] * k  # the input's state where its read-ahead began
        self.positions = [np.empty(0, dtype=np.int64)] * k
        self.sizes: list[list[int]] = [[] for _ in range(k)]
        self.arrays = [np.empty(0, dtype=np.int64)] * k
        self.cums: list[list[int]] = [[0] for _ in range(k)]
        self.used = [0] * k
        self.dry = [False] * k  # the input's last pull came back short: it has ended

    def refill(self, m: WeightedMixIterator[Any], j: int, want: int, lengths: Any) -> bool:
        """Read input ``j`` ahead again (its read-ahead is all used); False if it ended."""
        if self.dry[j]:
            return False
        view = m.__dict__["_views"][j]
        before = m.streams[j].get_state()
        t0 = _clock()
        pos = view.pull(want)
        m._wait += _clock() - t0
        self.dry[j] = len(pos) < want
        if not len(pos):
            return False
        arr = np.asarray(lengths(pos + m.row_source().bases[j]), dtype=np.int64)  # type: ignore[union-attr]
        self.before[j], self.positions[j], self.arrays[j] = before, pos, arr
        self.sizes[j] = arr.tolist()
        self.cums[j] = [0, *np.cumsum(arr).tolist()]
        self.used[j] = 0
        return True

    def settle(self, m: WeightedMixIterator[Any]) -> None:
        """Put every input where the mix's choices leave it (see the module)."""
        views = m.__dict__["_views"]
        for j, before in enumerate(self.before):
            if before is None:
                continue
            if self.used[j] < len(self.sizes[j]):
                m.streams[j].reset(before)
                if self.used[j]:
                    views[j].pull(self.used[j])
            self.before[j] = None


def settle(m: WeightedMixIterator[Any]) -> None:
    """Drop the mix's read-ahead, each input left where the mix's choices leave it."""
    ahead = m.__dict__.pop("_ahead", None)
    if ahead is not None:
        ahead.settle(m)


def token_bulk(m: WeightedMixIterator[Any], n: int, bases: np.ndarray) -> tuple[np.ndarray, bool]:
    """Up to ``n`` positions of a mix by tokens, and whether the mix has ended.

    The rule chooses over the read-ahead, exactly as ``next`` does, until ``n`` are
    chosen; an input whose read-ahead runs out reads ahead again. An input that has
    ended leaves its step to ``next`` (the stopping rule), as the row mode does.
    """
    assert m.tokens is not None
    assert m.tokens.column is not None
    rows = m.row_source()
    assert rows is not None
    k = len(m.streams)
    ahead: TokenAhead | None = m.__dict__.get("_ahead")
    if ahead is None:
        ahead = m.__dict__["_ahead"] = TokenAhead(k)
    lengths = rows.token_column(m.tokens.column).lengths
    used = ahead.used
    start = list(used)
    taken: list[list[np.ndarray]] = [[] for _ in range(k)]  # positions chosen, by input
    choices: list[int] = []
    ended = dry = False
    while len(choices) < n:
        step = m._step()
        i = m._choose()  # enters the segment of this step (a schedule)
        if i < 0:
            ended = True
            break
        if used[i] == len(ahead.sizes[i]):
            taken[i].append(ahead.positions[i][start[i] : used[i]])
            start[i] = used[i]
            if not ahead.refill(m, i, max(_AHEAD, n - len(choices)), lengths):
                dry = True
                break
            start[i] = 0
        span = min(n - len(choices), m._rule.end - step)
        mask = m._active if m.schedule is None else m._mask()[0]
        if m.seed is None:
            before = list(used)
            rule = m._rule
            swrr = rule.swrr
            got = run_most_behind(swrr.cur, rule.ints, swrr._rank, mask, ahead.cums, used, span)
            for j in range(k):
                if used[j] > before[j]:
                    m._counts[j] += used[j] - before[j]
                    m._tokens[j] += ahead.cums[j][used[j]] - ahead.cums[j][before[j]]
        else:
            us = m._uniforms(step, span)
            tok, cnt = m._tokens, m._counts
            got = run_draws(us, m.weights, mask, tok, cnt, ahead.sizes, used, ahead.arrays)
        choices.extend(got)
    out = np.empty(len(choices), dtype=np.int64)
    if choices:
        picks = np.asarray(choices, dtype=np.int64)
        for j in range(k):
            taken[j].append(ahead.positions[j][start[j] : used[j]])
            got_j = np.concatenate(taken[j])
            if len(got_j):
                out[picks == j] = got_j + bases[j]
    if dry:  # that step goes through next(): stopping rules
        try:
            out = np.append(out, np.int64(m.next()))
        except StopIteration:
            ended = True
    return out, ended
