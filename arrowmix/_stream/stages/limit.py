"""Stop after a number of items.

Checkpointing: the state is the source's state plus the count yielded; no replay.
"""

from __future__ import annotations

from typing import Any, TypeVar

from arrowmix._stream.base import State, Stream
from arrowmix._stream.topology import ElasticRole
from arrowmix._validate import check_int
from arrowmix.exceptions import StateError

__all__ = ["LimitIterator"]

T = TypeVar("T")


class LimitIterator(Stream[T]):
    """The first ``n`` items of ``source``.

    State:
        ``source``: the source's state. ``count``: items yielded. Replay cost: none.
    """

    SOURCE_KEY = "source"
    COUNT_KEY = "count"
    STATE_KEYS = (SOURCE_KEY, COUNT_KEY)
    ELASTIC_ROLE = ElasticRole.TRANSPARENT

    def __init__(self, source: Stream[T], n: int) -> None:
        super().__init__()
        self.source = source
        self.n: int = check_int("n", n, minimum=0)

    def children(self) -> list[Stream[Any]]:
        return [self.source]

    def describe(self) -> dict[str, Any]:
        return {"n": self.n}

    @property
    def schema(self) -> Any:
        return self.source.schema

    def reset(self, state: State | None = None) -> None:
        super().reset(state)
        self._count = 0
        if state is None:
            self.source.reset(None)
            return
        count = state[self.COUNT_KEY]
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= self.n:
            raise StateError(f"LimitIterator: bad `count` {count!r} (n={self.n}).")
        self.source.reset(state[self.SOURCE_KEY])
        self._count = count

    def get_state(self) -> State:
        return {self.SOURCE_KEY: self.source.get_state(), self.COUNT_KEY: self._count}

    def next(self) -> T:
        if self._count >= self.n:
            raise StopIteration
        item = self.source.next()
        self._count += 1
        return item

    def pull(self, n: int) -> list[T]:
        out = self.source.pull(min(n, self.n - self._count))
        self._count += len(out)
        return out
