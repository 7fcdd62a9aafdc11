"""Name-keyed mixes: the state by source name, and resuming a changed mixture.

A mix built from a mapping ``{name: stream}`` keeps its state per name (each source's
state, items taken, deficit, flags) plus the weights it ran with. Loading such a state
into a mix of other names or weights is refused with a :class:`StateError` naming what
changed, unless the load allows changes: then each kept source continues where it
stopped, a new source starts at its beginning, and a removed source is reported (a
:class:`~arrowmix.exceptions.DroppedDataWarning` and ``stats()["removed"]``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from arrowmix._stream.provenance import label_sources
from arrowmix._stream.stage import State
from arrowmix._warn import warn
from arrowmix.exceptions import DroppedDataWarning, StateError

__all__ = ["WEIGHTS_KEY", "Change", "from_named", "split_named", "to_named"]

#: Extra state key of a name-keyed mix: ``{name: normalised weight}``.
WEIGHTS_KEY = "weights"
# The per-input lists of the list-form state, re-keyed by name in the named form.
_PER_INPUT = ("sources", "counts", "deficits", "exhausted", "active", "peeked")


def split_named(streams: Any, weights: Any) -> tuple[list[str] | None, list[Any], Any]:
    """``(names or None, streams, weights as a list or None)`` from either form.

    The sources with provenance below each input are named after it (``label_sources``).
    """
    names, inputs, plain = _split_named(streams, weights)
    label_sources(inputs, names)
    return names, inputs, plain


def _split_named(streams: Any, weights: Any) -> tuple[list[str] | None, list[Any], Any]:
    if not isinstance(streams, Mapping):
        if isinstance(weights, Mapping):
            raise TypeError("`weights` is a mapping: pass the streams as {name: stream} too.")
        return None, list(streams), weights
    names = list(streams)
    for name in names:
        if not isinstance(name, str) or not name:
            raise TypeError(f"source names must be non-empty strings, got {name!r}.")
    if weights is None:
        return names, list(streams.values()), None
    if not isinstance(weights, Mapping):
        raise TypeError("streams given by name take `weights` by name: {name: weight}.")
    missing = sorted(set(names) - set(weights))
    extra = sorted(set(weights) - set(names))
    if missing or extra:
        raise ValueError(f"`weights` must name every source: missing {missing}, unknown {extra}.")
    return names, list(streams.values()), [weights[n] for n in names]


def to_named(
    names: Sequence[str], weights: Sequence[float], state: State, keys: Sequence[str] = _PER_INPUT
) -> State:
    """The list-form state re-keyed by source name (plus the weights).

    ``keys``: the per-input keys (token mode and ``max_epochs`` add ``tokens``, ``epochs``).
    """
    out: State = {k: dict(zip(names, state[k], strict=True)) for k in keys}
    out["seed"] = state["seed"]
    out[WEIGHTS_KEY] = dict(zip(names, weights, strict=True))
    return out


class Change:
    """What differs between a named checkpoint and this mixture."""

    def __init__(self, old: Mapping[str, float], names: Sequence[str], weights: Sequence[float]):
        self.added = [n for n in names if n not in old]
        self.removed = [n for n in old if n not in names]
        self.reweighted = [
            n
            for n, w in zip(names, weights, strict=True)
            if n in old and not math.isclose(float(old[n]), w, rel_tol=1e-9)
        ]

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.reweighted)

    def __str__(self) -> str:
        parts = [
            f"{what} {names}"
            for what, names in (
                ("added", self.added),
                ("removed", self.removed),
                ("reweighted", self.reweighted),
            )
            if names
        ]
        return "; ".join(parts)


def _check_shape(state: State) -> Mapping[str, float]:
    old = state[WEIGHTS_KEY]
    if not isinstance(old, dict) or any(
        not isinstance(state[k], dict) or state[k].keys() != old.keys() for k in _PER_INPUT
    ):
        raise StateError("WeightedMixIterator: the state is not a name-keyed mix state.")
    return old


def from_named(
    names: Sequence[str],
    weights: Sequence[float],
    state: State,
    allow_changes: bool,
    keys: Sequence[str] = _PER_INPUT,
) -> tuple[State, Change]:
    """The list-form state for this mixture from a named state, and what changed.

    New sources get ``None`` (start at the beginning), zero counts (and tokens), active
    flags, their first pass. A per-input key the checkpoint lacks is left out.
    """
    old = _check_shape(state)
    change = Change(old, names, weights)
    if change and not allow_changes:
        raise StateError(
            f"WeightedMixIterator: the checkpoint's mixture differs from this one ({change}); "
            "pass allow_changes=True to load_state_dict to resume it, each kept source "
            "where it stopped."
        )
    if change.removed:
        warn(
            f"mix: sources {change.removed} of the checkpoint are not in this mixture; "
            "their remaining items are not read.",
            DroppedDataWarning,
        )
    fresh = {"sources": None, "counts": 0, "deficits": 0, "exhausted": False}
    fresh |= {"active": True, "peeked": False, "tokens": 0, "epochs": 1}
    out: State = {
        k: [state[k].get(n, fresh[k]) if n in old else fresh[k] for n in names]
        for k in keys
        if isinstance(state.get(k), dict)
    }
    out["seed"] = state["seed"]
    return out, change
