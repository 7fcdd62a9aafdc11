"""``interleave_datasets`` over iterable datasets: HF's order, as a checkpointable stage.

HF ``datasets`` (``CyclingMultiSourcesExamplesIterable`` and its random subclass) picks a
source for each step, round robin or drawn by ``probabilities`` (numpy's ``default_rng``,
``choice`` in blocks of 1,000), and reads one row *ahead* of each source to know when a source
is exhausted: a source counts as exhausted right after it gives its last row. Then
``"first_exhausted"`` stops, ``"all_exhausted"`` restarts the source until every source has
been exhausted once, and ``"all_exhausted_without_replacement"`` skips the steps that draw an
exhausted source. :class:`HFInterleave` makes the same choices in the same order.

Checkpointing: the draws are a pure function of ``(seed, step)``: the generator of block ``b``
is the seeded one advanced by ``1000 * b`` draws (``choice`` with probabilities takes one
64-bit draw per choice), so no generator state is stored. The row a source was read ahead by
is not stored either: the state keeps each source's state *before* that row, and a restore
reads it again.

State:
    ``step``: sources chosen so far. ``sources``: each source's state before its row read
    ahead. ``exhausted``: which sources have been exhausted. Replay cost: one row per source.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np

from arrowmix._stream.base import State, Stream
from arrowmix._stream.topology import ElasticRole
from arrowmix.exceptions import StateError

__all__ = ["HFInterleave", "hf_generator"]

#: Sources drawn per ``choice`` call (HF's ``random_batch_size``).
BLOCK = 1000
_END = object()


def hf_generator(seeds: Sequence[int]) -> np.random.Generator:
    """HF's generator: ``default_rng(seeds[0])``, re-seeded by each shift in ``seeds[1:]``."""
    rng = np.random.default_rng(seeds[0])
    for value in seeds[1:]:  # HF's ``shift_rngs(value)``
        rng = np.random.default_rng(int(copy.deepcopy(rng).integers(0, 1 << 63)) - value)
    return rng


class HFInterleave(Stream[Any]):
    """Rows of ``streams`` in HF ``datasets``' interleaving order (see the module docs)."""

    STEP_KEY = "step"
    SOURCES_KEY = "sources"
    EXHAUSTED_KEY = "exhausted"
    STATE_KEYS = (STEP_KEY, SOURCES_KEY, EXHAUSTED_KEY)
    ELASTIC_ROLE = ElasticRole.REFUSING  # the order reads every source one row ahead
    TRANSIENT = ("_block",)

    def __init__(
        self,
        streams: Sequence[Stream[Any]],
        *,
        probabilities: Sequence[float] | None,
        seeds: Sequence[int],
        stopping_strategy: str,
    ) -> None:
        super().__init__()
        self.streams = list(streams)
        self.probabilities = None if probabilities is None else [float(p) for p in probabilities]
        self.seeds = [int(s) for s in seeds]
        self.stopping_strategy = stopping_strategy

    def children(self) -> list[Stream[Any]]:
        return list(self.streams)

    def describe(self) -> dict[str, Any]:
        return {
            "probabilities": self.probabilities,
            "seeds": self.seeds if self.probabilities is not None else None,
            "stopping_strategy": self.stopping_strategy,
        }

    def reset(self, state: State | None = None) -> None:
        super().reset(state)
        n = len(self.streams)
        self._held: list[Any] = [None] * n
        self._anchor: list[Any] = [None] * n
        self._block: tuple[int, np.ndarray] | None = None
        if state is None:
            self._step = 0
            self._exhausted = [False] * n
            for s in self.streams:
                s.reset(None)
            return
        step, sources, exhausted = (state[k] for k in self.STATE_KEYS)
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise StateError(f"HFInterleave: bad `step` {step!r} in state.")
        if len(sources) != n or len(exhausted) != n:
            raise StateError(
                f"HFInterleave: the state holds {len(sources)} sources, this interleave has {n}."
            )
        self._step, self._exhausted = step, [bool(e) for e in exhausted]
        for s, sub in zip(self.streams, sources, strict=True):
            s.reset(sub)

    def get_state(self) -> State:
        sources = [
            self._anchor[i] if self._held[i] is not None else s.get_state()
            for i, s in enumerate(self.streams)
        ]
        return {
            self.STEP_KEY: self._step,
            self.SOURCES_KEY: sources,
            self.EXHAUSTED_KEY: list(self._exhausted),
        }

    def _index(self, step: int) -> int:
        n = len(self.streams)
        if self.probabilities is None:
            return step % n
        b = step // BLOCK
        if self._block is None or self._block[0] != b:
            rng = hf_generator(self.seeds)
            rng.bit_generator.advance(BLOCK * b)  # type: ignore[attr-defined]  # PCG64's
            self._block = (b, rng.choice(n, size=BLOCK, p=self.probabilities))
        return int(self._block[1][step % BLOCK])

    def _fetch(self, i: int) -> Any:
        s = self.streams[i]
        self._anchor[i] = copy.deepcopy(s.get_state())
        try:
            return s.next()
        except StopIteration:
            return _END

    def _done(self) -> bool:
        if self.stopping_strategy == "first_exhausted":
            return any(self._exhausted)
        return all(self._exhausted)

    def next(self) -> Any:
        if not self.streams:
            raise StopIteration
        replace = self.stopping_strategy != "all_exhausted_without_replacement"
        while True:
            if self._done():
                raise StopIteration
            i = self._index(self._step)
            self._step += 1
            if self._exhausted[i] and not replace:
                continue
            if self._held[i] is None:
                self._held[i] = self._fetch(i)
            result = self._held[i]
            self._held[i] = self._fetch(i)  # one row ahead: is the source exhausted?
            if self._held[i] is _END:
                self._exhausted[i] = True
                if replace:  # start the source over
                    self.streams[i].reset(None)
                    self._held[i] = None
            if result is not _END:
                return result
