"""Buffer shuffle: permute consecutive windows of ``buffer_size`` items.

Each window is read whole and permuted with ``default_rng([seed, window])``. An item
moves at most ``buffer_size - 1`` places; combine with a shuffled source (``"global"``
or ``"chunks"``) for a shuffle across the whole corpus.

Checkpointing: anchor and replay (see :mod:`arrowmix._stream.anchored`): the state is
the source's state at the window start, the window number, the outputs emitted and the
seed; restoring re-reads one window (at most ``buffer_size`` items). The buffer and the
generator are never stored, so the state size does not depend on ``buffer_size``.
"""

from __future__ import annotations

from typing import Any, TypeVar

from arrowmix._stream.anchored import AnchoredStage
from arrowmix._stream.base import State, Stream
from arrowmix._stream.rng import SeedHolder
from arrowmix._stream.row_source import RowSource
from arrowmix._stream.sources import table_to_rows

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
        if isinstance(buffer_size, bool) or not isinstance(buffer_size, int):
            raise TypeError(f"`buffer_size` must be an int, got {buffer_size!r}.")
        if buffer_size < 1:
            raise ValueError(f"`buffer_size` must be a positive int, got {buffer_size!r}.")
        self.buffer_size = buffer_size
        self._seed = SeedHolder(seed)
        self._positions = False  # True once a consumer reads positions
        if source.row_source() is not None:
            source._use_positions()  # compute() reads positions from an index stream

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
        return self.source.row_source()

    def _use_positions(self) -> None:
        if self.row_source() is not None:
            self._positions = True
            self.source._use_positions()

    def compute(self, window: int) -> Any:
        rows = self.source.row_source()
        if rows is None:
            items = self.source._pull(self.buffer_size)
            if not items:
                return None
            perm = self.window_rng(self._seed.value, window).permutation(len(items))
            return [items[i] for i in perm]
        # Index stream: permute positions; rows are read once, with one take.
        pos = self.source._pull_positions(self.buffer_size)
        if not len(pos):
            return None
        pos = pos[self.window_rng(self._seed.value, window).permutation(len(pos))]
        return pos if self._positions else table_to_rows(rows.take(pos))

    def _rows_at(self, n: int) -> list[T]:
        rows = self.row_source()
        assert rows is not None
        pos = self._pull_positions(n)
        return table_to_rows(rows.take(pos)) if len(pos) else []  # type: ignore[return-value]

    def next(self) -> T:
        if not self._positions:
            return super().next()
        out = self._rows_at(1)
        if not out:
            raise StopIteration
        return out[0]

    def _pull(self, n: int) -> list[T]:
        return self._rows_at(n) if self._positions else super()._pull(n)
