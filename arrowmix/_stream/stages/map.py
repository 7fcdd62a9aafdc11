"""Per-item stages: map, filter and the order-preserving parallel map.

Checkpointing: ``MapIterator`` and ``FilterIterator`` hold no state of their own; they
return their source's state unchanged (restore cost: the source's). The parallel map
computes chunks of ``num_workers * chunk_factor`` items in a thread pool and is an
anchored stage: its state is the source's state at the chunk start plus the outputs
already emitted, and a restore recomputes at most one chunk.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from arrowmix._stream.base import PassThrough, Stream, checked_fn, fn_id
from arrowmix._stream.replay import AnchoredStage
from arrowmix._validate import check_int

__all__ = ["FilterIterator", "MapIterator", "ParallelMapIterator"]

T = TypeVar("T")
U = TypeVar("U")


class MapIterator(PassThrough[U]):
    """``fn(item)`` for every item of ``source``.

    State:
        The source's state, unchanged (no keys of its own). Replay cost: none.
    """

    def __init__(self, source: Stream[T], fn: Callable[[T], U]) -> None:
        super().__init__(source)
        self.fn = checked_fn(fn)

    def describe(self) -> dict[str, Any]:
        return {"fn": fn_id(self, self.fn)}

    def next(self) -> U:
        return self.fn(self.source.next())

    def pull(self, n: int) -> list[U]:
        fn = self.fn
        return [fn(x) for x in self.source.pull(n)]


class FilterIterator(PassThrough[T]):
    """Items of ``source`` for which ``fn(item)`` is true.

    State:
        The source's state, unchanged. Replay cost: none.
    """

    def __init__(self, source: Stream[T], fn: Callable[[T], bool]) -> None:
        super().__init__(source)
        self.fn = checked_fn(fn)

    def describe(self) -> dict[str, Any]:
        return {"fn": fn_id(self, self.fn)}

    @property
    def schema(self) -> Any:
        return self.source.schema

    def next(self) -> T:
        fn, nxt = self.fn, self.source.next
        while True:
            item: T = nxt()
            if fn(item):
                return item

    def pull(self, n: int) -> list[T]:
        out: list[T] = []
        fn = self.fn
        while len(out) < n:
            # Never pull more than could still be kept: the source state stays exact.
            part = self.source.pull(n - len(out))
            if not part:
                break
            out.extend(x for x in part if fn(x))
        return out


class ParallelMapIterator(AnchoredStage[U]):
    """``fn(item)`` computed by ``num_workers`` threads, in the source's order.

    State:
        ``source`` (at the chunk start), ``window`` (chunk number), ``emitted``.
        Replay cost: one chunk of ``num_workers * chunk_factor`` items.
    """

    TRANSIENT = ("_pool",)

    def __init__(
        self,
        source: Stream[T],
        fn: Callable[[T], U],
        *,
        num_workers: int,
        chunk_factor: int = 16,
    ) -> None:
        super().__init__(source)
        self.fn = checked_fn(fn)
        num_workers = check_int("num_workers", num_workers, minimum=1)
        self.num_workers = num_workers
        self.chunk = num_workers * chunk_factor
        self._pool: ThreadPoolExecutor | None = None

    def describe(self) -> dict[str, Any]:
        # The worker count does not change the items: it stays out of the fingerprint.
        return {"fn": fn_id(self, self.fn)}

    def compute(self, window: int) -> list[U] | None:
        # A restored window re-reads at least what was emitted of it (another worker
        # count had another chunk size).
        items = self.source.pull(max(self.chunk, self.pending_skip))
        if not items:
            return None
        if self.__dict__.get("_pool") is None:
            self._pool = ThreadPoolExecutor(self.num_workers, "arrowmix-map")
        assert self._pool is not None
        return list(self._pool.map(self.fn, items))

    def close(self) -> None:
        pool = self.__dict__.get("_pool")
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        super().close()
