"""The deficits of a scheduled mix: their unit, and checkpoints written in older units.

A scheduled mix keeps its deficits in units of ``1 / SCHEDULE_SCALE`` of an item, the
same in every segment, so they carry from one segment to the next. Checkpoints written
before that (they have no ``deficit_scale``) hold them in the units of the segment's own
integer weights (:func:`segment_ints`); loading converts them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from arrowmix.exceptions import StateError

__all__ = ["SCALE_KEY", "SCHEDULE_SCALE", "scaled_deficits", "scaled_ints", "upgrade_deficits"]

#: Deficit units per item of a scheduled mix (lcm(1..16) * 10**4: weights that are
#: multiples of 1/10 000 or of 1/k for k <= 16 are represented exactly).
SCHEDULE_SCALE = 720_720 * 10_000
#: State key of a scheduled mix: the deficit units per item.
SCALE_KEY = "deficit_scale"


def segment_ints(weights: Sequence[float]) -> list[int]:
    """The integers of a segment's weights when the deficits restarted in each segment."""
    from arrowmix._stream.mixing.schedule import integer_weights  # it imports this module

    return integer_weights(weights) if any(weights) else [1] * len(weights)


def scaled_ints(weights: Sequence[float]) -> list[int]:
    """Integers summing to ``SCHEDULE_SCALE`` in proportion to ``weights`` (normalised).

    Only a weight of 0 is 0. The largest absorbs the rounding.

    Example:
        >>> [x * 4 // SCHEDULE_SCALE for x in scaled_ints([0.75, 0.25, 0.0])]
        [3, 1, 0]
    """
    q = [0 if w == 0 else max(1, round(w * SCHEDULE_SCALE)) for w in weights]
    big = max(range(len(q)), key=lambda i: (q[i], -i))
    q[big] += SCHEDULE_SCALE - sum(q)
    return q


def scaled_deficits(deficits: Sequence[int], weights: Sequence[float]) -> list[int]:
    """Deficits of a checkpoint in :func:`segment_ints` units, in ``SCHEDULE_SCALE`` units.

    The rounding keeps their sum.
    """
    total = sum(segment_ints(weights))
    out = [(2 * int(d) * SCHEDULE_SCALE + total) // (2 * total) for d in deficits]
    if out:
        big = max(range(len(out)), key=lambda i: (abs(out[i]), -i))
        out[big] += sum(deficits) * SCHEDULE_SCALE // total - sum(out)
    return out


def upgrade_deficits(
    state: dict[str, Any], scheduled: bool, weights_at: Callable[[], Sequence[float]]
) -> dict[str, Any]:
    """``state`` with its deficits in the units of this mix (scheduled or not).

    ``weights_at()``: the weights (by input) of the segment a checkpoint without
    ``deficit_scale`` stood in. A checkpoint of a mix with or without a schedule loaded
    (with changes allowed) into the other kind restarts the deficits.
    """
    scale = state.get(SCALE_KEY)
    deficits = state["deficits"]
    named = isinstance(deficits, dict)
    values = list(deficits.values()) if named else deficits
    if scheduled and scale is not None:
        if scale != SCHEDULE_SCALE:
            raise StateError(
                f"WeightedMixIterator: checkpoint `{SCALE_KEY}` {scale!r} is not this "
                f"arrowmix's {SCHEDULE_SCALE}; it was written by another version."
            )
        return state
    if not isinstance(values, list) or not all(isinstance(v, int) for v in values):
        raise StateError(f"WeightedMixIterator: checkpoint `deficits` must be ints: {values!r}.")
    if scheduled and "step" in state:  # written when the deficits restarted per segment
        values = scaled_deficits(values, weights_at())
    else:  # the mix gained or lost its schedule
        values = [0] * len(values)
    out = {k: v for k, v in state.items() if k != SCALE_KEY}
    out["deficits"] = dict(zip(deficits, values, strict=True)) if named else values
    if scheduled:
        out[SCALE_KEY] = SCHEDULE_SCALE
    return out
