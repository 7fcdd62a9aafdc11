"""Buffer shuffle: permute consecutive windows of ``buffer_size`` items.

Each window is read whole and permuted with ``default_rng([seed, window])``. An item
moves at most ``buffer_size - 1`` places; combine with a shuffled source (``"global"``
or ``"chunks"``) for a shuffle across the whole corpus.

Checkpointing: anchor and replay (see :mod:`arrowmix._stream.replay`): the state is
the source's state at the window start, the window number, the outputs emitted and the
seed; restoring re-reads one window (at most ``buffer_size`` items). The buffer and the
generator are never stored, so the state size does not depend on ``buffer_size``.
"""

from __future__ import annotations

from typing import Any, TypeVar

from arrowmix._stream.base import State, Stream
from arrowmix._stream.positions import Positions
from arrowmix._stream.replay import AnchoredStage
from arrowmix._stream.rng import SeedHolder
from arrowmix._stream.row_source import RowSource
from arrowmix._validate import check_int

__all__ = ["BufferShuffleIterator"]

T = TypeVar("T")


class BufferShuffleIterator(AnchoredStage[T]):
    """Items of ``source``, shuffled inside windows of ``buffer_size``.

    State:
        ``source`` (at the window start), ``window``, ``emitted``, ``seed``.
        Replay cost: at most ``buffer_size`` items.
    """

    SEED_KEY = "seed"
    STATE_KEYS = (*AnchoredStage.BASE_KEYS, SEED_KEY)

    def __init__(self, source: Stream[T], buffer_size: int, *, seed: int | None = None):
        super().__init__(source)
        self.buffer_size: int = check_int("buffer_size", buffer_size, minimum=1)
        self._seed = SeedHolder(seed)
        self._positions = False  # True once a consumer took the positions view
        # compute() reads positions from an index stream: one take per window
        self._input: Positions | None = source.as_positions()

    @property
    def schema(self) -> Any:
        return self.source.schema

    def describe(self) -> dict[str, Any]:
        return {"buffer_size": self.buffer_size, "seed": self._seed.describe()}

    def extra_state(self) -> State:
        return {self.SEED_KEY: self._seed.value}

    def load_extra(self, state: State) -> None:
        self._seed.load(self, state[self.SEED_KEY])

    def row_source(self) -> RowSource | None:
        return None if self._input is None else self._input.rows

    def as_positions(self) -> Positions | None:
        """The shuffled positions; the windows then hold positions, not rows."""
        if self._input is None:
            return None
        self._positions = True
        return Positions(self._input.rows, self.pull_positions, self._input.to_rows)

    def compute(self, window: int) -> Any:
        if self._input is None:
            items = self.source.pull(self.buffer_size)
            if not items:
                return None
            perm = self.window_rng(self._seed.value, window).permutation(len(items))
            return [items[i] for i in perm]
        # Index stream: permute positions; rows are read once, with one take.
        pos = self._input.pull(self.buffer_size)
        if not len(pos):
            return None
        pos = pos[self.window_rng(self._seed.value, window).permutation(len(pos))]
        return pos if self._positions else self._input.items(self._input.rows.take(pos))

    def _rows_at(self, n: int) -> list[T]:
        assert self._input is not None
        pos = self.pull_positions(n)
        return self._input.items(self._input.rows.take(pos)) if len(pos) else []

    def next(self) -> T:
        if not self._positions:
            return super().next()
        out = self._rows_at(1)
        if not out:
            raise StopIteration
        return out[0]

    def pull(self, n: int) -> list[T]:
        return self._rows_at(n) if self._positions else super().pull(n)
