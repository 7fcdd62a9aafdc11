"""Stop after a number of items.

Checkpointing: the state is the source's state plus the count yielded; no replay.
Elastic resume keeps the count of the whole run: the items the N old instances had
left to yield are shared among the M new ones, so N -> M instances yield what the
uninterrupted run of N would have (when the rows suffice).
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
        Elastic resume: the items left (``n - count``) of every old instance are
        summed and shared among the new ones (``merge_elastic_states``).
    """

    SOURCE_KEY = "source"
    COUNT_KEY = "count"
    STATE_KEYS = (SOURCE_KEY, COUNT_KEY)
    TRANSIENT = ("_left",)
    ELASTIC_ROLE = ElasticRole.TRANSPARENT

    def __init__(self, source: Stream[T], n: int) -> None:
        super().__init__()
        self.source = source
        self.n: int = check_int("n", n, minimum=0)
        self._left: int | None = None  # items left during an elastic run

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

    def elastic_state(self) -> dict[str, int]:
        left = self.__dict__.get("_left")
        return {"left": self.n - self._count if left is None else left}

    @classmethod
    def merge_elastic_states(cls, states: list[Any], num_instances: int) -> list[Any]:
        total = 0
        for st in states:
            left = st.get("left") if isinstance(st, dict) else None
            if isinstance(left, bool) or not isinstance(left, int) or left < 0:
                raise StateError(f"LimitIterator: bad elastic state {st!r:.80}.")
            total += left
        share, extra = divmod(total, num_instances)
        return [{"left": share + (j < extra)} for j in range(num_instances)]

    def load_elastic_state(self, state: Any) -> None:
        self._left = None if state is None else int(state["left"])

    def next(self) -> T:
        left = self.__dict__.get("_left")
        if left is not None:  # an elastic run: the run's share, across its tasks
            if left <= 0:
                raise StopIteration
            item = self.source.next()
            self._left = left - 1
            return item
        if self._count >= self.n:
            raise StopIteration
        item = self.source.next()
        self._count += 1
        return item

    def pull(self, n: int) -> list[T]:
        left = self.__dict__.get("_left")
        if left is not None:
            out = self.source.pull(min(n, left))
            self._left = left - len(out)
            return out
        out = self.source.pull(min(n, self.n - self._count))
        self._count += len(out)
        return out
