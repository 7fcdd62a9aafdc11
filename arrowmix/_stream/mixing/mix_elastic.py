"""What elastic resume does with a mix's own state (N instances' states into M).

A mix keeps, besides its inputs' positions, counters of the whole run: the items and
tokens taken from each input, the deficits of the deterministic rule and the pass each
input is in (``max_epochs``). Across a resize (:mod:`arrowmix._stream.elastic`):

* **items and tokens** of every old instance are summed and shared among the new ones
  (``divmod``, the remainder to the lowest ranks), so the new run's counters, and the
  realised shares ``pipeline_stats()`` reports, continue those of the whole run;
* **deficits** are summed and shared the same way, keeping every instance's deficits at
  a zero sum: what the old instances owed an input, the new ones pay back, instead of
  each new instance starting level (a small input behind its share would otherwise
  fall further behind at every resize). Kept when the weights are the same (or both
  runs follow a schedule); a mixture that changed starts them afresh;
* **passes** (``max_epochs``, or inputs cycled by ``"longest_cycle"``) must agree: every
  old instance in the same pass of each input, which the new run continues, so a cap is
  never exceeded. Old instances in
  different passes of an input are refused (``ElasticResumeError``): their remainders
  belong to different passes. A pass that begins after the resize reads the input's
  full share again (the resize's remainder was the old pass's).

A new instance takes its share when it starts its main task (the rows no old instance
had read); while it drains an old instance's buffered rows, the mix runs on that old
instance's own counters and carries the share to the main task.
"""

from __future__ import annotations

from typing import Any

from arrowmix._stream.mixing.schedule import Weighting
from arrowmix.exceptions import ElasticResumeError, StateError

__all__ = ["MixElasticState", "refuse_chains", "split_sum", "split_zero_sum"]

_KEYS = ("counts", "tokens", "deficits", "epochs")


def split_sum(totals: list[int], parts: int) -> list[list[int]]:
    """``totals`` shared among ``parts`` (per entry ``divmod``; remainders to the first).

    Example:
        >>> split_sum([5, 2], 2)
        [[3, 1], [2, 1]]
    """
    out = [[0] * len(totals) for _ in range(parts)]
    for i, t in enumerate(totals):
        q, r = divmod(t, parts)
        for j in range(parts):
            out[j][i] = q + (j < r)
    return out


def split_zero_sum(totals: list[int], parts: int) -> list[list[int]]:
    """A vector summing to zero shared among ``parts`` vectors that each sum to zero.

    Example:
        >>> split_zero_sum([3, -3], 2)
        [[2, -2], [1, -1]]
    """
    q = [t // parts for t in totals]
    rest = [t - parts * x for t, x in zip(totals, q, strict=True)]  # each in [0, parts)
    units = [i for i, r in enumerate(rest) for _ in range(r)]
    each = len(units) // parts  # -sum(q): an int, as sum(totals) == 0
    out = [list(q) for _ in range(parts)]
    for j in range(parts):
        for i in units[j * each : (j + 1) * each]:
            out[j][i] += 1
    return out


def _vector(st: dict[str, Any], key: str, k: int) -> list[int] | None:
    v = st.get(key)
    if v is None:
        return None
    if not isinstance(v, list) or len(v) != k or not all(type(x) is int for x in v):
        raise StateError(f"mix: bad elastic state {key!r}: {v!r:.80} (expected {k} ints).")
    return v


class MixElasticState:
    """Elastic-resume hooks of :class:`~arrowmix._stream.mixing.mix.WeightedMixIterator`."""

    #: Elastic checkpoints written before the mix merged its state have no entry for it.
    ELASTIC_OWN_SINCE_MIX = True

    names: list[str] | None
    streams: list[Any]
    schedule: Any
    _counts: list[int]
    _tokens: list[int]
    _epochs: list[int]
    _rule: Weighting
    counts_passes: Any
    caps: list[int | None] | None
    _base: int
    _fresh: list[int] | None

    def _units(self) -> Any:
        """The units the deficits count in: a schedule's, or the integer weights."""
        return "schedule" if self.schedule is not None else list(self._rule.ints)

    def elastic_state(self) -> dict[str, Any]:
        """This instance's counters (or the share it holds, not yet started)."""
        share: dict[str, Any] | None = self.__dict__.get("_share")
        if share is not None:
            return share
        return {
            "names": None if self.names is None else list(self.names),
            "counts": list(self._counts),
            "tokens": list(self._tokens),
            "deficits": list(self._rule.swrr.cur),
            # passes matter with caps or cycling (see mix_passes)
            "epochs": list(self._epochs) if self.counts_passes() else None,
            "units": self._units(),
        }

    @classmethod
    def merge_elastic_states(cls, states: list[Any], num_instances: int) -> list[Any]:
        """Sum the old instances' counters and share them among ``num_instances``."""
        first = states[0] if states and isinstance(states[0], dict) else None
        if first is None or not isinstance(first.get("counts"), list):
            raise StateError(f"mix: bad elastic state {first!r:.80}.")
        k = len(first["counts"])
        for st in states:
            if not isinstance(st, dict) or st.get("names") != first.get("names"):
                raise StateError("mix: the old instances' mixes differ (their source names).")
        sums: dict[str, list[int] | None] = {}
        for key in _KEYS:
            vectors = [_vector(st, key, k) for st in states]
            if any(v is None for v in vectors):
                sums[key] = None
                continue
            sums[key] = [sum(col) for col in zip(*vectors, strict=True)]
        same_units = all(st.get("units") == first.get("units") for st in states)
        epochs = [_vector(st, "epochs", k) for st in states]
        for i in range(k):
            passes = sorted({e[i] for e in epochs if e is not None})
            if len(passes) > 1:
                name = first["names"][i] if first.get("names") else f"input {i}"
                raise ElasticResumeError(
                    f"mix: the old instances stand in different passes {passes} of "
                    f"{name!r} (a capped or cycled input): their unread rows belong to "
                    "different passes. "
                    "Resume on the same number of instances, or checkpoint where every "
                    "instance is in the same pass."
                )
        parts = num_instances
        counts = split_sum(sums["counts"] or [0] * k, parts)
        tokens = split_sum(sums["tokens"] or [0] * k, parts)
        deficits = (
            split_zero_sum(sums["deficits"], parts)
            if sums["deficits"] is not None and same_units and not sum(sums["deficits"])
            else [None] * parts
        )
        common = next((list(e) for e in epochs if e is not None), [1] * k)
        return [
            {
                "names": first.get("names"),
                "counts": counts[j],
                "tokens": tokens[j],
                "deficits": deficits[j],
                "epochs": common,
                "units": first.get("units") if same_units else None,
            }
            for j in range(parts)
        ]

    def load_elastic_state(self, state: Any) -> None:
        """Hold this instance's share; a fresh start takes it (see the module docstring)."""
        self._share = state
        start = self.__dict__.get("_fresh")  # the counts at a fresh start; None if restored
        if state is not None and start is not None and self._counts == start:
            self._take_share()

    def _take_share(self) -> None:
        """Start from the held share (a fresh start of a main task)."""
        share, self._share = self.__dict__.get("_share"), None
        if not isinstance(share, dict):
            return
        k = len(self.streams)
        keep = list(range(k))
        if share.get("names") != (None if self.names is None else list(self.names)):
            old = share.get("names") or []
            here = self.names or []
            keep = [old.index(n) if n in old else -1 for n in here]
        step = sum(self._counts) + self._base

        def pick(key: str, default: int) -> list[int]:
            v = share.get(key) or []
            return [int(v[i]) if 0 <= i < len(v) else default for i in keep]

        self._counts = pick("counts", 0)
        self._window = list(self._counts)
        self._tokens = pick("tokens", 0)
        self._window_tokens = list(self._tokens)
        self._epochs = pick("epochs", 1)
        if self.schedule is not None:  # the step the schedule stands at is kept
            self._base = step - sum(self._counts)
        same = keep == list(range(k)) and share.get("units") == self._units()
        if share.get("deficits") is not None and same:  # the same mixture: they carry
            self._rule.swrr.cur = [int(x) for x in share["deficits"]]
        self._fresh = list(self._counts)


def refuse_chains(mains: list[dict[str, Any]]) -> None:
    """Old instances that deal a source from different resizes: which case it is."""
    chains = [[s["generations"] for s in m["sources"]] for m in mains]
    for i in range(len(chains[0])):
        if len({bool(c[i]) for c in chains}) > 1:  # some began a full pass since
            raise ElasticResumeError(
                "merge_states: some instances have begun a new pass of a mix input since "
                "the last resize and others have not; resume on the same number of "
                "instances, or checkpoint once every instance has begun the pass."
            )
    raise StateError("merge_states: the instances come from different elastic restores.")
