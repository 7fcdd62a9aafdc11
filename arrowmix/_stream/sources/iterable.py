"""A stream over a Python iterable, checkpointed by replay (small or debug sources).

Checkpointing: the state is the number of items yielded; restoring iterates the
iterable again from the start and skips them, so the replay cost grows with the
position. Use a row source or ``from_chunks`` for real corpora.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sized
from itertools import islice
from typing import Any, TypeVar

from arrowmix._stream.base import State, Stream
from arrowmix._stream.topology import ElasticRole
from arrowmix.exceptions import StateError

__all__ = ["IterableSource", "from_iterable"]

T = TypeVar("T")


class IterableSource(Stream[T]):
    """Items of a re-iterable, or of a one-shot iterator kept as it is read.

    A one-shot iterator (a generator, ``itertools.count()``) is never read ahead: its
    items are remembered as they are yielded, so that a restore in the same process
    can replay them (memory grows with the items read; infinite iterators work).

    State:
        ``index``: items yielded. Replay cost: ``index`` items.
    """

    INDEX_KEY = "index"
    STATE_KEYS = (INDEX_KEY,)
    TRANSIENT = ("_it",)
    ELASTIC_ROLE = ElasticRole.REFUSING
    ELASTIC_REFUSAL = "a Python iterable cannot be dealt to instances"

    def __init__(self, iterable: Iterable[T]) -> None:
        super().__init__()
        self.iterable = iterable
        # One-shot iterator: remember its items as they are read, to replay them.
        self._seen: list[T] | None = [] if iter(iterable) is iterable else None

    def describe(self) -> dict[str, Any]:
        length = len(self.iterable) if isinstance(self.iterable, Sized) else None
        return {"type": type(self.iterable).__qualname__, "len": length}

    def _iterate(self) -> Iterator[T]:
        seen = self._seen
        if seen is None:
            yield from self.iterable
            return
        yield from islice(seen, len(seen))  # replay (a snapshot: the list grows below)
        for item in self.iterable:
            seen.append(item)
            yield item

    def reset(self, state: State | None = None) -> None:
        super().reset(state)
        self._index = 0
        self._it: Iterator[T] = self._iterate()
        if state is not None:
            n = state[self.INDEX_KEY]
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                raise StateError(f"IterableSource: bad `index` {n!r}.")
            skipped = sum(1 for _ in islice(self._it, n))
            if skipped != n:
                raise StateError(
                    f"IterableSource: the state is at item {n} but the iterable has "
                    f"only {skipped} items."
                )
            self._index = n

    def get_state(self) -> State:
        return {self.INDEX_KEY: self._index}

    def next(self) -> T:
        item = next(self._it)
        self._index += 1
        return item


def from_iterable(iterable: Iterable[T]) -> Stream[T]:
    """A checkpointable stream over ``iterable`` (resume replays from its start).

    Example:
        >>> from arrowmix.stream import from_iterable
        >>> s = from_iterable(["a", "b", "c"])
        >>> next(s)
        'a'
        >>> st = s.state_dict()
        >>> list(s)
        ['b', 'c']
        >>> s.load_state_dict(st)
        >>> list(s)
        ['b', 'c']
    """
    return IterableSource(iterable)
