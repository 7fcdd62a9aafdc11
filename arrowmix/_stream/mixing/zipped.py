"""``zip``: tuples of one item of each input, until the shortest ends."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from arrowmix._stream.base import State, Stream
from arrowmix._stream.topology import ElasticRole
from arrowmix.exceptions import StateError

__all__ = ["ZipIterator", "zip_streams"]


class ZipIterator(Stream[tuple[Any, ...]]):
    """Tuples of one item of each stream; ends with the shortest.

    State:
        ``sources`` (list of input states), ``done``. Replay cost: none.
    """

    SOURCES_KEY = "sources"
    DONE_KEY = "done"
    STATE_KEYS = (SOURCES_KEY, DONE_KEY)
    ELASTIC_ROLE = ElasticRole.REFUSING
    ELASTIC_REFUSAL = "it pairs items of several inputs, which resharding would mismatch"

    def __init__(self, streams: Sequence[Stream[Any]]) -> None:
        super().__init__()
        self.streams = list(streams)
        if not self.streams:
            raise ValueError("zip needs at least one stream.")
        for i, s in enumerate(self.streams):
            if not isinstance(s, Stream):
                raise TypeError(f"`streams[{i}]` must be a Stream, got {type(s).__name__}.")

    def children(self) -> list[Stream[Any]]:
        return list(self.streams)

    def reset(self, state: State | None = None) -> None:
        super().reset(state)
        self._done = False
        if state is None:
            for s in self.streams:
                s.reset(None)
            return
        states = state[self.SOURCES_KEY]
        if not isinstance(states, list) or len(states) != len(self.streams):
            raise StateError(f"ZipIterator: the state is not for {len(self.streams)} streams.")
        for s, st in zip(self.streams, states, strict=True):
            s.reset(st)
        self._done = bool(state[self.DONE_KEY])

    def get_state(self) -> State:
        return {
            self.SOURCES_KEY: [s.get_state() for s in self.streams],
            self.DONE_KEY: self._done,
        }

    def next(self) -> tuple[Any, ...]:
        if self._done:
            raise StopIteration
        out = []
        for s in self.streams:
            try:
                out.append(s.next())
            except StopIteration:
                self._done = True
                raise
        return tuple(out)


def zip_streams(streams: Sequence[Stream[Any]]) -> ZipIterator:
    """Tuples with one item of each stream, until the shortest ends.

    Example:
        >>> from arrowmix.stream import from_iterable, zip
        >>> list(zip([from_iterable([1, 2, 3]), from_iterable("ab")]))
        [(1, 'a'), (2, 'b')]
    """
    return ZipIterator(streams)
