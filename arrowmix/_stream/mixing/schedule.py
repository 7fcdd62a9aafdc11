"""Pure choice rules of weighted mixing, and the exact output-size estimate.

Deterministic rule (smooth weighted round robin): weights become integers ``a_i``
(normalised, then ``Fraction.limit_denominator(10_000)``); every step each active
input's deficit grows by ``a_i``, the input with the largest deficit (ties: higher
weight, then lower index) is chosen and its deficit drops by the active total. The
chosen input is the one furthest below its target share; over every ``sum(a_i)``
steps each input is chosen exactly ``a_i`` times, so the ratio is exact in every
window of ``1 / min(weight)`` rows when the weights are multiples of the smallest.
When an input is dropped the deficits of the others restart from zero.

Under a :class:`WeightSchedule` the deficits carry from segment to segment: they are
kept in units of ``1 / SCHEDULE_SCALE`` of an item, and every segment's weights become
integers summing to ``SCHEDULE_SCALE``, so the realised count of each input follows the
schedule's running sum of weights within a constant (about the number of inputs),
however short the segments.

Random rule: the choice at step ``t`` is a pure function of ``(seed, t)`` and the
active inputs: a uniform draw from ``default_rng([seed, t // 1024])``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from arrowmix._stream.mixing.by_tokens import epoch_caps
from arrowmix._stream.mixing.deficits import scaled_ints
from arrowmix._stream.mixing.weight_schedule import FOREVER, BoundSchedule, WeightSchedule
from arrowmix._stream.rng import derive_rng

__all__ = [
    "STOPPING",
    "Swrr",
    "Weighting",
    "check_weights",
    "estimate_mix_rows",
    "random_plan",
]

STOPPING = ("shortest", "longest_drop", "longest_cycle")
_BLOCK = 1024
_MAX_PERIOD = 100_000
_MAX_CACHED = 64


def check_stopping(stopping: str) -> str:
    """Validate a stopping rule name."""
    if stopping not in STOPPING:
        raise ValueError(f"`stopping` must be one of {list(STOPPING)}, got {stopping!r}.")
    return stopping


def check_weights(weights: Sequence[float] | None, n: int) -> list[float]:
    """Normalised weights; ValueError naming a bad one."""
    if n < 1:
        raise ValueError("mixing needs at least one stream.")
    if weights is None:
        return [1.0 / n] * n
    if isinstance(weights, (str, bytes)) or not isinstance(weights, Iterable):
        raise TypeError(f"`weights` must be a list of numbers, got {weights!r:.80}.")
    weights = list(weights)
    if len(weights) != n:
        raise ValueError(f"got {len(weights)} weights for {n} streams; they must match.")
    for i, w in enumerate(weights):
        if isinstance(w, bool) or not isinstance(w, (int, float, np.integer, np.floating)):
            raise TypeError(f"`weights[{i}]` must be a number, got {w!r}.")
        if not (math.isfinite(w) and w > 0):
            raise ValueError(f"`weights[{i}]` must be positive and finite, got {w!r}.")
    total = float(sum(weights))
    return [float(w) / total for w in weights]


def integer_weights(weights: Sequence[float]) -> list[int]:
    """Integers proportional to ``weights`` (denominators limited to 10 000).

    Every positive weight gets at least 1, and every share is within 1% of the one asked
    for: a weight too small for the 10 000 denominators (``[0.99996, 0.00004]``) is
    apportioned finely (``[24999, 1]``), never rounded to another mixture.
    """
    fr = [Fraction(w).limit_denominator(10_000) for w in weights]
    lcm = math.lcm(*(f.denominator for f in fr))
    ints = [0 if w == 0 else max(1, int(f * lcm)) for f, w in zip(fr, weights, strict=True)]
    return _accurate(ints, weights)


def _accurate(ints: list[int], weights: Sequence[float]) -> list[int]:
    """``ints`` if each share is within 1% of its weight's, else a finer apportionment."""
    total_i, total_w = sum(ints), float(sum(weights))
    shares = zip(ints, weights, strict=True)
    if all(abs(a / total_i - w / total_w) <= 0.01 * w / total_w for a, w in shares):
        return ints
    scale = 100 / min(w / total_w for w in weights if w > 0)  # the smallest gets >= 100
    fine = [0 if w == 0 else max(1, round(w / total_w * scale)) for w in weights]
    g = math.gcd(*fine)
    return [a // g for a in fine]


class Swrr:
    """Smooth weighted round robin over integer weights (deficits are ints).

    Example:
        >>> s = Swrr([3, 1])
        >>> [s.choose([True, True]) for _ in range(8)]
        [0, 0, 1, 0, 0, 0, 1, 0]
    """

    def __init__(self, weights: Sequence[int]) -> None:
        self.a = list(weights)
        self.cur = [0] * len(self.a)
        self._periods: dict[tuple[tuple[int, ...], tuple[bool, ...]], list[int]] = {}
        # Tie order: higher weight first, then lower index.
        self._rank = sorted(range(len(self.a)), key=lambda i: (-self.a[i], i))

    def plan(self, active: Sequence[bool], n: int) -> list[int]:
        """The next ``n`` choices; whole periods come from a cache.

        From a given deficit vector, one period (``sum`` of the active weights) of
        choices brings the deficits back to where they were, so it can be replayed.
        """
        out: list[int] = []
        on = [a for a, on in zip(self.a, active, strict=True) if on]
        period = sum(on) // (math.gcd(*on) or 1)
        while period <= _MAX_PERIOD and n - len(out) >= period:
            key = (tuple(self.cur), tuple(active))
            seq = self._periods.get(key)
            if seq is None:
                seq = [self.choose(active) for _ in range(period)]
                if tuple(self.cur) == key[0] and len(self._periods) < _MAX_CACHED:
                    self._periods[key] = seq
                out.extend(seq)
            else:  # the deficits do not change over whole periods
                out.extend(seq * ((n - len(out)) // period))
        out.extend(self.choose(active) for _ in range(n - len(out)))
        return out

    def restart(self) -> None:
        """Restart deficits (after the active set changed)."""
        self.cur = [0] * len(self.a)

    def choose(self, active: Sequence[bool]) -> int:
        """Choose the next input among the active ones."""
        a, cur = self.a, self.cur
        total = 0
        best, best_v = -1, 0
        for i in self._rank:
            if active[i]:
                cur[i] += a[i]
                total += a[i]
                if best < 0 or cur[i] > best_v:
                    best, best_v = i, cur[i]
        cur[best] -= total
        return best


class Weighting:
    """The weights in force and the deterministic rule's deficits.

    Constant weights hold for ever. With a schedule, the weights hold over a segment
    of steps; entering the next segment (:meth:`cross`, lazily, when the step that
    is about to be chosen lies past it) keeps the deficits (in ``SCHEDULE_SCALE``
    units), so that no input falls behind the schedule. A restored mix stands in the
    segment of the last item it had yielded (:meth:`start`), as the live one.

    Example:
        >>> w = Weighting([0.75, 0.25], None)
        >>> [w.swrr.choose([True, True]) for _ in range(4)]
        [0, 0, 1, 0]
    """

    def __init__(self, weights: Sequence[float], schedule: BoundSchedule | None) -> None:
        self.schedule = schedule
        self.end = FOREVER
        if schedule is None:
            self.weights = list(weights)
            self.ints = integer_weights(self.weights)
            self.swrr = Swrr(self.ints)
        else:
            self._enter(schedule.segment(0))

    def _enter(self, segment: tuple[int, int, tuple[float, ...]]) -> None:
        _, self.end, weights = segment
        self.weights = list(weights)
        self.ints = scaled_ints(weights)
        old = self.__dict__.get("swrr")
        self.swrr = Swrr(self.ints)
        if old is not None:  # the deficits carry into the next segment
            self.swrr.cur = list(old.cur)

    def start(self, step: int) -> None:
        """Stand where a mix that has yielded ``step`` items stands (deficits at zero)."""
        if self.schedule is not None:
            self._enter(self.schedule.segment(max(step - 1, 0)))
        self.swrr.restart()

    def cross(self, step: int) -> None:
        """Enter the segment of ``step`` when it begins after the current one."""
        if step >= self.end:
            assert self.schedule is not None
            self._enter(self.schedule.segment(step))

    def mask(self, active: Sequence[bool]) -> list[bool]:
        """The inputs that may be chosen: active, with a positive weight."""
        return [on and a > 0 for on, a in zip(active, self.ints, strict=True)]

    def snapshot(self) -> tuple[Any, ...]:
        return (self.weights, self.ints, self.swrr, list(self.swrr.cur), self.end)

    def restore(self, snap: tuple[Any, ...]) -> None:
        self.weights, self.ints, self.swrr, cur, self.end = snap
        self.swrr.cur = list(cur)

    def plan(self, active: Sequence[bool], step: int, n: int, seed: int | None) -> list[int]:
        """The next ``n`` choices from ``step`` on (fewer when no input may be chosen)."""
        out: list[int] = []
        while len(out) < n:
            at = step + len(out)
            self.cross(at)
            mask = self.mask(active)
            if not any(mask):
                break
            m = min(n - len(out), self.end - at)
            if seed is None:
                out.extend(self.swrr.plan(mask, m))
            else:
                out.extend(random_plan(seed, at, m, self.weights, mask).tolist())
        return out


def random_plan(
    seed: int, step: int, n: int, weights: Sequence[float], active: Sequence[bool]
) -> np.ndarray:
    """Inputs drawn at steps ``[step, step + n)`` (pure function of the arguments).

    Example:
        >>> plan = random_plan(0, 0, 1000, [0.9, 0.1], [True, True])
        >>> 850 < int((plan == 0).sum()) < 950
        True
    """
    steps = np.arange(step, step + n, dtype=np.int64)
    u = np.empty(n)
    blocks = steps // _BLOCK
    for b in np.unique(blocks).tolist():
        sel = blocks == b
        u[sel] = derive_rng(seed, b).random(_BLOCK)[steps[sel] % _BLOCK]
    w = np.where(np.asarray(active), np.asarray(weights, dtype=np.float64), 0.0)
    cum = np.cumsum(w)
    last = int(np.flatnonzero(w)[-1])
    out: np.ndarray = np.minimum(np.searchsorted(cum, u * cum[-1], side="right"), last)
    return out


def _first_exhaustion(
    a: list[int], active: list[bool], remaining: list[int], *, first: bool = False
) -> dict[int, int]:
    """Steps (from a fresh start) when each active input is chosen once too often.

    The rule is run step by step, at most one period (``sum`` of the active weights):
    an input not yet exhausted by then is found from its place in the period, which
    repeats. Integer weights with a long period (``[7.9, 5.5, 3.2]`` has one of about
    ``10**11``) are run only as far as the answer, so the cost is that of
    ``min(period, answer)`` steps. ``first``: stop at the first input exhausted.
    """
    sched = Swrr(a)
    period = sum(x for x, on in zip(a, active, strict=True) if on)
    used = [0] * len(a)
    pos: list[list[int]] = [[] for _ in a]
    out: dict[int, int] = {}
    pending = sum(active)
    for t in range(period):
        i = sched.choose(active)
        if used[i] == remaining[i]:
            out[i] = t
            pending -= 1
            if first or not pending:
                return out
        used[i] += 1
        if used[i] <= a[i]:
            pos[i].append(t)
    for i, on in enumerate(active):
        if on and i not in out:
            q, r = divmod(remaining[i], a[i])
            out[i] = q * period + pos[i][r]
    return out


def _step(item: tuple[int, int]) -> int:
    return item[1]


def _chosen_before(a: list[int], active: list[bool], steps: int) -> list[int]:
    sched = Swrr(a)
    period = sum(x for x, on in zip(a, active, strict=True) if on)
    q, r = divmod(steps, period)
    counts = [q * x if on else 0 for x, on in zip(a, active, strict=True)]
    for _ in range(r):
        counts[sched.choose(active)] += 1
    return counts


def estimate_mix_rows(
    counts: Sequence[int] | Mapping[str, int],
    weights: Sequence[float] | Mapping[str, float] | WeightSchedule | None,
    stopping: str,
    *,
    tokens: Sequence[int] | Mapping[str, int] | None = None,
    max_epochs: int | Sequence[int | None] | Mapping[str, int | None] | None = None,
) -> int:
    """Rows a deterministic ``mix`` of inputs with these row counts yields.

    Exact, without reading anything; it costs the shorter of one period of the integer
    weights and the mix itself (1-3 microseconds a row for temperature weights).

    Args:
        counts: Rows of each input stream (``{name: rows}`` for named sources).
        weights: The weights given to ``mix`` (None: equal), or its
            :class:`WeightSchedule` (exact too; with ``"longest_cycle"`` the rule is
            run item by item).
        stopping: The ``stopping`` rule given to ``mix``.
        tokens: For a mix by tokens (``mix(..., tokens=...)``): the total tokens of
            each input. Closed form (``arrowmix._stream.mixing.estimate_tokens``):
            exact for ``"longest_drop"``, within a few items per input otherwise;
            with a schedule the token rule is run over inputs of mean-length items.
        max_epochs: The ``max_epochs`` given to ``mix`` (exact).

    Example:
        >>> from arrowmix.stream import estimate_mix_rows
        >>> estimate_mix_rows([300, 100], [0.5, 0.5], "shortest")
        201
        >>> estimate_mix_rows([300, 100], [0.5, 0.5], "longest_drop")
        400
    """
    check_stopping(stopping)
    names = list(counts) if isinstance(counts, Mapping) else None
    remaining = [int(c) for c in (counts.values() if isinstance(counts, Mapping) else counts)]
    if any(c < 0 for c in remaining):
        raise ValueError(f"`counts` must be >= 0, got {counts!r}.")
    caps = epoch_caps(max_epochs, names, len(remaining))
    if tokens is not None or (caps is not None and stopping == "longest_cycle"):
        return _tokens_or_cycle(remaining, weights, stopping, tokens, caps, names)
    if caps is not None:  # a restart keeps the deficits: k passes are k times the rows
        remaining = [c * (p or 1) for c, p in zip(remaining, caps, strict=True)]
    if isinstance(weights, WeightSchedule):
        bound = weights.bind(names, len(remaining))
        if stopping == "longest_cycle":
            return _simulate_cycle(remaining, weights, names)
        return _scheduled_rows(bound, remaining, stopping == "shortest")
    if isinstance(weights, Mapping):
        if names is None:
            raise TypeError("`weights` is a mapping: pass `counts` as {name: rows} too.")
        weights = [weights[n] for n in names]
    a = integer_weights(check_weights(weights, len(remaining)))
    active = [True] * len(a)
    if stopping == "longest_cycle" and all(c > 0 for c in remaining):
        # Stop right after the item that completes the last input's first pass.
        last_items = _first_exhaustion(a, active, [c - 1 for c in remaining])
        return max(last_items.values()) + 1
    if stopping == "longest_cycle":
        return _simulate_cycle(remaining, weights)
    rows = 0
    while any(active):
        j, t = min(_first_exhaustion(a, active, remaining, first=True).items(), key=_step)
        rows += t
        if stopping == "shortest":
            return rows
        used = _chosen_before(a, active, t)
        remaining = [r - u for r, u in zip(remaining, used, strict=True)]
        active[j] = False
    return rows


def _scheduled_rows(bound: BoundSchedule, remaining: list[int], shortest: bool) -> int:
    """Rows of a deterministic scheduled mix: segment by segment, the deficits carried."""
    rows = 0
    active = [True] * len(remaining)
    cur = [0] * len(remaining)
    while True:
        _, end, weights = bound.segment(rows)
        a = scaled_ints(weights)
        mask = [on and x > 0 for on, x in zip(active, a, strict=True)]
        if not any(mask):
            return rows
        used, j, t, cur = _run(a, mask, cur, remaining, end - rows)
        rows += t
        remaining = [r - u for r, u in zip(remaining, used, strict=True)]
        if j < 0:
            continue
        if shortest:
            return rows
        active[j] = False
        cur = [0] * len(cur)  # a dropped input restarts the deficits


def _run(
    a: list[int], mask: list[bool], cur: list[int], remaining: list[int], span: int
) -> tuple[list[int], int, int, list[int]]:
    """``(chosen, exhausted input or -1, steps, deficits)`` over at most ``span`` steps.

    The rule runs one period at a time; when a period brings the deficits back to
    where it began, the whole periods that exhaust nothing are skipped. The cost is
    that of ``min(period, answer)`` steps.
    """
    sched = Swrr(a)
    sched.cur = list(cur)
    on = [x for x, m in zip(a, mask, strict=True) if m]
    period = sum(on) // math.gcd(*on)
    used = [0] * len(a)
    t = 0
    while t < span:
        start, before = list(sched.cur), list(used)
        for _ in range(min(period, span - t)):
            i = sched.choose(mask)
            if used[i] == remaining[i]:
                return used, i, t, sched.cur
            used[i] += 1
            t += 1
        if sched.cur == start and t < span:
            per = [u - b for u, b in zip(used, before, strict=True)]
            k = min((r - u) // p for r, u, p in zip(remaining, used, per, strict=True) if p)
            k = min(k, (span - t) // period)
            used = [u + k * p for u, p in zip(used, per, strict=True)]
            t += k * period
    return used, -1, span, sched.cur


def _simulate_cycle(
    counts: list[int],
    weights: Sequence[float] | WeightSchedule | None,
    names: list[str] | None = None,
    *,
    max_epochs: list[int | None] | None = None,
    tokens: list[int] | None = None,
    stopping: str = "longest_cycle",
) -> int:
    # Rare cases (an empty input, a schedule or caps under "longest_cycle", a schedule by
    # tokens): run the rule. By tokens, input i's items have its mean length.
    from arrowmix._stream.mixing.mix import WeightedMixIterator
    from arrowmix._stream.sources.iterable import IterableSource

    def lengths(c: int, t: int) -> list[int]:
        return [t * (j + 1) // c - t * j // c for j in range(c)]

    items = [
        range(c) if tokens is None else lengths(c, t)
        for c, t in zip(counts, tokens or counts, strict=True)
    ]
    streams: Any = [IterableSource(x) for x in items]
    if names is not None:
        streams = dict(zip(names, streams, strict=True))
    caps: Any = (
        max_epochs
        if names is None or max_epochs is None
        else dict(zip(names, max_epochs, strict=True))
    )
    by: Any = None if tokens is None else _length
    m = WeightedMixIterator(streams, weights, stopping=stopping, tokens=by, max_epochs=caps)
    return sum(1 for _ in m)


def _length(item: int) -> int:
    return item


def _tokens_or_cycle(
    counts: list[int],
    weights: Any,
    stopping: str,
    tokens: Sequence[int] | Mapping[str, int] | None,
    caps: list[int | None] | None,
    names: list[str] | None,
) -> int:
    """Rows of a mix by tokens, or of a capped ``"longest_cycle"`` mix (run item by item)."""
    from arrowmix._stream.mixing.estimate_tokens import token_rows

    if tokens is None:
        return _simulate_cycle(counts, weights, names, max_epochs=caps)
    if isinstance(tokens, Mapping):
        if names is None or sorted(tokens) != sorted(names):
            raise ValueError(f"`tokens` must give the tokens of every source {names}.")
        tokens = [tokens[n] for n in names]
    totals = [int(t) for t in tokens]
    if len(totals) != len(counts) or any(t < 0 for t in totals):
        raise ValueError(f"`tokens` must be {len(counts)} totals >= 0, got {tokens!r}.")
    if isinstance(weights, WeightSchedule):  # run the token rule over mean-length items
        return _simulate_cycle(
            counts, weights, names, max_epochs=caps, tokens=totals, stopping=stopping
        )
    if isinstance(weights, Mapping):
        weights = [weights[n] for n in names or []]
    w = check_weights(weights, len(counts))
    default = math.inf if stopping == "longest_cycle" else 1
    passes = [default if c is None else c for c in (caps or [None] * len(counts))]
    return token_rows(counts, totals, w, stopping, passes)
