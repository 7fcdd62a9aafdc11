"""Flat map: every item becomes the items of ``fn(item)``.

Checkpointing: an anchored stage whose window is one input item: the state is the
source's state before that item and the outputs of it already emitted; restoring calls
``fn`` on one item again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from arrowmix._stream.base import Stream, checked_fn, fn_id
from arrowmix._stream.provenance import carries_sources, keep_source
from arrowmix._stream.replay import AnchoredStage

__all__ = ["FlatMapIterator"]

T = TypeVar("T")
U = TypeVar("U")


class FlatMapIterator(AnchoredStage[U]):
    """The items of ``fn(item)`` for every item of ``source``.

    State:
        ``source`` (before the current input item), ``window`` (input items
        expanded), ``emitted`` (outputs of the current item yielded). Replay cost: one
        call of ``fn``.
    """

    def __init__(self, source: Stream[T], fn: Callable[[T], Iterable[U]]) -> None:
        super().__init__(source)
        self.fn: Callable[[Any], Iterable[U]] = checked_fn(fn)
        self._carry = carries_sources(source)

    def describe(self) -> dict[str, Any]:
        return {"fn": fn_id(self, self.fn)}

    def compute(self, window: int) -> list[U] | None:
        try:
            item = self.source.next()
        except StopIteration:
            return None
        out = list(self.fn(item))
        if self.__dict__.get("_carry"):  # provenance: each output keeps its row's source
            return [keep_source(item, x) for x in out]
        return out
