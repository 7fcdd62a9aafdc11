"""Mix weights that change with the mix step: a piecewise table or a small function.

The *step* of a mix is the number of items it has yielded. A :class:`WeightSchedule`
gives the weights from step to step as *segments*: steps ``[start, end)`` over which the
weights are constant, so the mix evaluates the schedule once per segment, never per
item. A table with ``interpolate="constant"`` changes weights at its breakpoints only;
with ``"linear"`` the weights ramp between breakpoints in segments of ``every`` steps; a
function is called at every multiple of ``every``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from arrowmix._validate import check_callable, check_int

__all__ = ["FOREVER", "BoundSchedule", "WeightSchedule", "schedule_weights"]

#: The end of the last segment.
FOREVER = 2**62
_INTERPOLATE = ("constant", "linear")
Weights = Sequence[float] | Mapping[str, float]


class WeightSchedule:
    """Mix weights as a function of the mix step (items the mix has yielded).

    Pass it as ``mix(streams, weights=schedule)``. Either a table of breakpoints
    ``[(start_step, weights), ...]`` (the first at step 0, steps increasing; weights
    by position, or by source name for ``mix({name: stream})``), held until the next
    breakpoint (``interpolate="constant"``) or ramped linearly to it
    (``"linear"``, re-evaluated every ``every`` steps); or a function
    ``step -> weights`` (:meth:`from_function`), called every ``every`` steps and
    fingerprinted by value like a ``map`` function, so that editing it changes the
    pipeline fingerprint.

    Each row of weights is normalised on its own; a weight may be 0 (the source is not
    drawn from then), at least one must be positive. When every input still read has
    weight 0, the mix ends.

    Example:
        >>> from arrowmix.stream import WeightSchedule, from_iterable, mix
        >>> curriculum = WeightSchedule([(0, {"easy": 1, "hard": 0}),
        ...                              (4, {"easy": 1, "hard": 1})])
        >>> m = mix({"easy": from_iterable("eeeeee"), "hard": from_iterable("hhhh")},
        ...         weights=curriculum)
        >>> "".join(m)
        'eeeeehehhh'
        >>> m.stats()["weights"]
        {'easy': 0.5, 'hard': 0.5}
    """

    def __init__(
        self,
        points: Sequence[tuple[int, Weights]],
        *,
        interpolate: str = "constant",
        every: int = 256,
    ) -> None:
        if interpolate not in _INTERPOLATE:
            raise ValueError(
                f"`interpolate` must be one of {list(_INTERPOLATE)}, got {interpolate!r}."
            )
        self.interpolate = interpolate
        self.every = check_int("every", every, minimum=1)
        self.fn: Callable[[int], Weights] | None = None
        if isinstance(points, (str, bytes, Mapping)) or not isinstance(points, Sequence):
            raise TypeError(
                f"`points` must be a list of (start_step, weights), got {points!r:.80}."
            )
        if not points:
            raise ValueError("a WeightSchedule needs at least one (start_step, weights) point.")
        self.points: list[tuple[int, Weights]] = []
        for k, point in enumerate(points):
            if not isinstance(point, (tuple, list)) or len(point) != 2:
                raise TypeError(
                    f"`points[{k}]` must be a (start_step, weights) pair, got {point!r}."
                )
            start = check_int(f"points[{k}] start_step", point[0], minimum=0)
            if k == 0 and start != 0:
                raise ValueError(f"`points[0]` must start at step 0, got {start}.")
            if k and start <= self.points[-1][0]:
                raise ValueError(
                    f"`points[{k}]` starts at step {start}, not after the previous point "
                    f"({self.points[-1][0]}); start steps must increase."
                )
            self.points.append((start, point[1]))

    @classmethod
    def from_function(cls, fn: Callable[[int], Weights], *, every: int = 1024) -> WeightSchedule:
        """Weights given by ``fn(step)``, called at steps ``0, every, 2 * every, ...``.

        ``fn`` must be a pure function of the step (it is fingerprinted by value, and a
        resumed run calls it again). It returns one weight per input (a list, or a
        ``{name: weight}`` mapping for named sources).

        Example:
            >>> from arrowmix.stream import WeightSchedule, from_iterable, mix
            >>> def ramp(step):
            ...     return [1.0, min(1.0, step / 8)]
            >>> s = WeightSchedule.from_function(ramp, every=4)
            >>> "".join(mix([from_iterable("a" * 8), from_iterable("b" * 4)], weights=s))
            'aaaaabaababb'
        """
        self = cls([(0, [1.0])], every=every)
        self.fn = check_callable("fn", fn)
        self.points = []
        return self

    def __repr__(self) -> str:
        if self.fn is not None:
            return f"WeightSchedule.from_function({self.fn!r}, every={self.every})"
        return f"WeightSchedule({self.points!r}, interpolate={self.interpolate!r})"

    def bind(self, names: Sequence[str] | None, n: int) -> BoundSchedule:
        """The schedule for a mix of ``n`` inputs (named or not); rows are checked now."""
        return BoundSchedule(self, names, n)


def schedule_weights(
    weights: Any, names: Sequence[str] | None, n: int, where: str
) -> tuple[float, ...]:
    """Normalised weights of one schedule row (zeros allowed); errors name ``where``."""
    if isinstance(weights, Mapping):
        if names is None:
            raise TypeError(f"{where} is a mapping: pass the streams as {{name: stream}} too.")
        missing = sorted(set(names) - set(weights))
        extra = sorted(set(weights) - set(names))
        if missing or extra:
            raise ValueError(f"{where} must name every source: missing {missing}, unknown {extra}.")
        values = [weights[name] for name in names]
    elif isinstance(weights, (str, bytes)) or not isinstance(weights, (Sequence, np.ndarray)):
        raise TypeError(f"{where} must be a list of numbers or a mapping, got {weights!r:.80}.")
    else:
        values = list(weights)
    if len(values) != n:
        raise ValueError(f"{where} has {len(values)} weights for {n} streams; they must match.")
    for i, w in enumerate(values):
        if isinstance(w, bool) or not isinstance(w, (int, float, np.integer, np.floating)):
            raise TypeError(f"{where}: weight {i} must be a number, got {w!r}.")
        if not (math.isfinite(w) and w >= 0):
            raise ValueError(f"{where}: weight {i} must be >= 0 and finite, got {w!r}.")
    total = float(sum(values))
    if total <= 0:
        raise ValueError(f"{where}: at least one weight must be positive, got {values!r}.")
    return tuple(float(w) / total for w in values)


class BoundSchedule:
    """A :class:`WeightSchedule` checked against the inputs of one mix.

    Example:
        >>> s = WeightSchedule([(0, [1, 0]), (10, [1, 1])], interpolate="linear", every=4)
        >>> b = s.bind(None, 2)
        >>> b.segment(0), b.segment(5)
        ((0, 4, (1.0, 0.0)), (4, 8, (0.8, 0.2)))
        >>> b.segment(9), b.segment(10)
        ((8, 10, (0.6, 0.4)), (10, 4611686018427387904, (0.5, 0.5)))
    """

    def __init__(self, schedule: WeightSchedule, names: Sequence[str] | None, n: int) -> None:
        self.schedule = schedule
        self.names = None if names is None else list(names)
        self.n = n
        self.starts = [p[0] for p in schedule.points]
        self.rows = [
            schedule_weights(w, names, n, f"`weights` point {k} (step {start})")
            for k, (start, w) in enumerate(schedule.points)
        ]
        self._last: tuple[int, int, tuple[float, ...]] | None = None

    @property
    def fn(self) -> Callable[[int], Weights] | None:
        return self.schedule.fn

    def segment(self, step: int) -> tuple[int, int, tuple[float, ...]]:
        """``(start, end, weights)``: the weights hold over steps ``[start, end)``."""
        last = self._last
        if last is not None and last[0] <= step < last[1]:
            return last
        every = self.schedule.every
        fn = self.schedule.fn
        if fn is not None:
            start = step - step % every
            where = f"`weights` function {getattr(fn, '__qualname__', fn)!r} at step {start}"
            seg = (start, start + every, schedule_weights(fn(start), self.names, self.n, where))
        else:
            k = int(np.searchsorted(self.starts, step, side="right")) - 1
            end = self.starts[k + 1] if k + 1 < len(self.starts) else FOREVER
            if self.schedule.interpolate == "constant" or end == FOREVER:
                seg = (self.starts[k], end, self.rows[k])
            else:
                a, b = self.starts[k], end
                start = max(a, step - step % every)
                f = (start - a) / (b - a)
                w = [x + (y - x) * f for x, y in zip(self.rows[k], self.rows[k + 1], strict=True)]
                total = sum(w)
                seg = (start, min(start + every, b), tuple(round(x / total, 12) for x in w))
        self._last = seg
        return seg

    def describe(self, identify: Callable[[Any], str]) -> dict[str, Any]:
        """JSON-able configuration (``identify`` names a function by value)."""
        fn = self.schedule.fn
        if fn is not None:
            return {"function": identify(fn), "every": self.schedule.every}
        out: dict[str, Any] = {
            "points": [[s, list(w)] for s, w in zip(self.starts, self.rows, strict=True)],
            "interpolate": self.schedule.interpolate,
        }
        if self.schedule.interpolate == "linear":
            out["every"] = self.schedule.every
        return out
