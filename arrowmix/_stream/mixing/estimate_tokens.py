"""``estimate_mix_rows`` for a mix by tokens, and for inputs read several times.

A mix by tokens chooses by the lengths of the items it reads, so its row count depends
on them. Given each input's total tokens, the estimate treats an input's items as
having its mean length and follows the shares as a fluid: the tokens each input gives
grow in proportion to its weight among the inputs still read, and the events (an input
ending its last allowed pass, the last input ending its first pass) are found in closed
form, one per input. ``"longest_drop"`` reads every item of every allowed pass, so its
count is exact; ``"shortest"`` and ``"longest_cycle"`` are within a few items per input
of the mix (exact shares at every prefix, up to one item). The cost does not depend on
the sizes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["token_rows"]


def token_rows(
    counts: Sequence[int],
    tokens: Sequence[int],
    weights: Sequence[float],
    stopping: str,
    passes: Sequence[float],
) -> int:
    """Rows of a mix by tokens (see the module docstring).

    ``passes``: the passes allowed per input (``math.inf``: restarted for ever).

    Example:
        >>> token_rows([100, 100], [1000, 10000], [0.5, 0.5], "shortest", [1, 1])
        110
    """
    k = len(counts)
    if stopping == "longest_drop":
        return int(sum(c * p for c, p in zip(counts, passes, strict=True)))
    cap = [t * p for t, p in zip(tokens, passes, strict=True)]  # tokens an input may give
    used = [0.0] * k
    active = [c > 0 for c in counts]
    while any(active):
        total = sum(w for w, on in zip(weights, active, strict=True) if on)
        # output tokens until each event: an input ends its passes, or its first pass
        ends = {i: (cap[i] - used[i]) * total / weights[i] for i in range(k) if active[i]}
        firsts = {
            i: (tokens[i] - used[i]) * total / weights[i]
            for i in range(k)
            if active[i] and used[i] < tokens[i]
        }
        if stopping == "shortest":
            step = min(ends.values())
        elif not firsts:  # longest_cycle: every input has ended its first pass
            break
        else:
            step = min(min(ends.values()), max(firsts.values()))
        for i in range(k):
            if active[i]:
                used[i] = min(cap[i], used[i] + step * weights[i] / total)
        if stopping == "shortest":
            break
        for i in range(k):
            if active[i] and used[i] >= cap[i] - 1e-9 * max(cap[i], 1):
                active[i] = False
        if all(used[i] >= tokens[i] - 1e-9 * max(tokens[i], 1) for i in range(k)):
            break
    rows = 0.0
    for c, t, u in zip(counts, tokens, used, strict=True):
        rows += u * c / t if t else c
    return math.ceil(rows - 1e-6)
