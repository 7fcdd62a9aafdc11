"""Sliding windows: tuples of ``width`` consecutive items.

Checkpointing: the state is the source's state before the first item the next window
needs; restoring re-reads ``width - 1`` items.
"""

from __future__ import annotations

import copy
from collections import deque
from typing import Any, TypeVar

from arrowmix._stream.base import State, Stream
from arrowmix._stream.topology import ElasticRole
from arrowmix._validate import check_int

__all__ = ["WindowIterator"]

T = TypeVar("T")


class WindowIterator(Stream[tuple[T, ...]]):
    """``(x[i], ..., x[i + width - 1])`` for ``i = 0, 1, ...``.

    State:
        ``source``: the source's state before the oldest item still needed.
        Replay cost: ``width - 1`` items.
    """

    SOURCE_KEY = "source"
    STATE_KEYS = (SOURCE_KEY,)
    TRANSIENT = ("_items", "_states")
    ELASTIC_ROLE = ElasticRole.REFUSING
    ELASTIC_REFUSAL = "it repeats each item in several windows"
    #: A restore reads the last ``width - 1`` items again from the source.
    REPLAYS_ON_RESTORE = True

    def __init__(self, source: Stream[T], width: int) -> None:
        super().__init__()
        self.source = source
        self.width: int = check_int("width", width, minimum=1)

    def children(self) -> list[Stream[Any]]:
        return [self.source]

    def describe(self) -> dict[str, Any]:
        return {"width": self.width}

    def reset(self, state: State | None = None) -> None:
        super().reset(state)
        self.source.reset(None if state is None else state[self.SOURCE_KEY])
        self._items: deque[T] = deque()
        self._states: deque[State] = deque()

    def get_state(self) -> State:
        if self._states:
            return {self.SOURCE_KEY: copy.deepcopy(self._states[0])}
        return {self.SOURCE_KEY: self.source.get_state()}

    def next(self) -> tuple[T, ...]:
        while len(self._items) < self.width:
            pre = self.source.get_state()
            self._items.append(self.source.next())
            self._states.append(pre)
        out = tuple(self._items)
        self._items.popleft()
        self._states.popleft()
        return out
