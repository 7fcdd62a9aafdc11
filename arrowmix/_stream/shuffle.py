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
from arrowmix._stream.rng import SeedHolder, derive_rng

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
            raise ValueError(
                f"`buffer_size` must be a positive int, got {buffer_size!r}."
            )
        self.buffer_size = buffer_size
        self._seed = SeedHolder(seed)

    @property
    def schema(self) -> Any:
        return self.source.schema

    def describe(self) -> dict[str, Any]:
        return {"buffer_size": self.buffer_size, "seed": self._seed.describe()}

    def extra_state(self) -> State:
        return {self.SEED_KEY: self._seed.value}

    def load_extra(self, state: State) -> None:
        self._seed.load(self, state[self.SEED_KEY])

    def compute(self, window: int) -> list[T] | None:
        items = self.source._pull(self.buffer_size)
        if not items:
            return None
        perm = derive_rng(self._seed.value, window).permutation(len(items))
        return [items[i] for i in perm]
