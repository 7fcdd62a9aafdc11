"""The base of stages without state of their own (public stage kit)."""

from __future__ import annotations

from typing import Any, TypeVar

from arrowmix._stream.base import Stream
from arrowmix._stream.stage import State
from arrowmix._stream.topology import ElasticRole

__all__ = ["PassThrough"]

T = TypeVar("T")


class PassThrough(Stream[T]):
    """Base of the stages without state of their own (public stage kit).

    Subclasses set ``self.source`` through ``super().__init__(source)`` and implement
    ``next()`` by reading ``self.source.next()`` (or ``self.source.pull(n)``); they
    must never keep an item they read for a later call, since their state is the
    source's state. Such a stage is transparent to elastic resume.

    State:
        The source's state, unchanged (no keys of its own). Replay cost: none.

    Example:
        >>> from arrowmix.stream import PassThrough, from_iterable
        >>> class Upper(PassThrough):
        ...     def next(self):
        ...         return self.source.next().upper()
        >>> list(Upper(from_iterable("ab")))
        ['A', 'B']
    """

    STATE_KEYS = None
    ELASTIC_ROLE = ElasticRole.TRANSPARENT

    def __init__(self, source: Stream[Any]) -> None:
        super().__init__()
        if not isinstance(source, Stream):
            raise TypeError(f"`source` must be a Stream, got {type(source).__name__}.")
        self.source = source

    def children(self) -> list[Stream[Any]]:
        return [self.source]

    def reset(self, state: State | None = None) -> None:
        super().reset(state)
        self.source.reset(state)

    def get_state(self) -> State:
        return self.source.get_state()
