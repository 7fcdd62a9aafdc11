"""Per-item stages: map, filter and the order-preserving parallel map.

Checkpointing: ``MapIterator`` and ``FilterIterator`` hold no state of their own; they
return their source's state unchanged (restore cost: the source's). The parallel map
computes chunks of ``num_workers * chunk_factor`` items in a thread pool and is an
anchored stage: its state is the source's state at the chunk start plus the outputs
already emitted, and a restore recomputes at most one chunk.

The worker count is a performance knob: a checkpoint of ``map(fn)`` loads into
``map(fn, num_workers=N)`` and back (:func:`adopt_map_forms`), each stage reading the
other's state form.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from arrowmix._fingerprint.hasher import hash_value
from arrowmix._stream.base import State, Stream, checked_fn, fn_id
from arrowmix._stream.passthrough import PassThrough
from arrowmix._stream.positions import Positions
from arrowmix._stream.provenance import carries_sources, keep_source
from arrowmix._stream.replay import AnchoredStage
from arrowmix._stream.stage import config_tree
from arrowmix._validate import check_int
from arrowmix.exceptions import StateError

__all__ = ["FilterIterator", "MapIterator", "ParallelMapIterator", "adopt_map_forms"]

if TYPE_CHECKING:
    from arrowmix._stream.row_source import RowSource

_OTHER_FORM = "_other_form"  # set on a map whose next restore reads the other form

T = TypeVar("T")
U = TypeVar("U")


class MapIterator(PassThrough[U]):
    """``fn(item)`` for every item of ``source``.

    State:
        The source's state, unchanged (no keys of its own). Replay cost: none.
    """

    _carry = False  # provenance: a row dict the function returns keeps its source

    def __init__(self, source: Stream[T], fn: Callable[[T], U]) -> None:
        super().__init__(source)
        self.fn = checked_fn(fn)
        self._carry = carries_sources(source)

    def describe(self) -> dict[str, Any]:
        return {"fn": fn_id(self, self.fn)}

    def reset(self, state: State | None = None) -> None:
        if state is not None and self.__dict__.pop(_OTHER_FORM, False):
            # ``map(fn, num_workers=N)``'s state: the source at its chunk start and the
            # outputs emitted since; skip as many source items (one per output).
            emitted = state.get("emitted") if isinstance(state, dict) else None
            if isinstance(emitted, bool) or not isinstance(emitted, int) or emitted < 0:
                raise StateError(f"MapIterator: bad parallel map state {state!r:.80}.")
            super().reset(state["source"])
            if len(self.source.pull(emitted)) != emitted:
                raise StateError("MapIterator: the source ended inside the checkpoint's chunk.")
            return
        super().reset(state)

    def next(self) -> U:
        item = self.source.next()
        out = self.fn(item)
        return keep_source(item, out) if self._carry else out

    def pull(self, n: int) -> list[U]:
        fn = self.fn
        if self._carry:
            return [keep_source(x, fn(x)) for x in self.source.pull(n)]
        return [fn(x) for x in self.source.pull(n)]


class FilterIterator(PassThrough[T]):
    """Items of ``source`` for which ``fn(item)`` is true.

    Over an index stream it streams positions too (``batch(columnar=True)``, ``shuffle``
    and ``collate`` after it keep their fast path): ``fn`` sees the rows gathered at a
    block of positions, as it would see them one by one, and the kept positions pass on.

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

    def row_source(self) -> RowSource | None:
        return self.source.row_source()

    def as_positions(self) -> Positions | None:
        """The kept positions of the source's positions (``None`` if it has none)."""
        inner = self.source.as_positions()
        return None if inner is None else inner.filtered(self.keeps)

    def keeps(self, items: list[T]) -> list[bool]:
        """Whether ``fn`` keeps each of ``items`` (the positions view's block)."""
        fn = self.fn
        return [bool(fn(x)) for x in items]

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
        self._carry = carries_sources(source)

    def describe(self) -> dict[str, Any]:
        # The worker count does not change the items: it stays out of the fingerprint.
        return {"fn": fn_id(self, self.fn)}

    def reset(self, state: State | None = None) -> None:
        if state is not None and self.__dict__.pop(_OTHER_FORM, False):
            # ``map(fn)``'s state is its source's: a chunk that starts there.
            state = {self.SOURCE_KEY: state, self.WINDOW_KEY: 0, self.EMITTED_KEY: 0}
        super().reset(state)

    def compute(self, window: int) -> list[U] | None:
        # A restored window re-reads at least what was emitted of it (another worker
        # count had another chunk size).
        items = self.source.pull(max(self.chunk, self.pending_skip))
        if not items:
            return None
        if self.__dict__.get("_pool") is None:
            self._pool = ThreadPoolExecutor(self.num_workers, "arrowmix-map")
        assert self._pool is not None
        out = list(self._pool.map(self.fn, items))
        if self.__dict__.get("_carry"):  # provenance (see MapIterator)
            return [keep_source(x, y) for x, y in zip(items, out, strict=True)]
        return out

    def close(self) -> None:
        pool = self.__dict__.get("_pool")
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        super().close()


_FORMS = {"MapIterator": "ParallelMapIterator", "ParallelMapIterator": "MapIterator"}


def adopt_map_forms(root: Stream[Any], fingerprint: str, nodes: Any) -> bool:
    """Whether a checkpoint differs from ``root`` only in maps' worker counts.

    ``fingerprint`` and ``nodes`` are the checkpoint's (``nodes``: its per-node class
    and field digests, in walk order). When naming each map whose checkpoint was taken
    with(out) ``num_workers`` by the other class gives ``fingerprint``, those maps are
    told to read the other state form on their next restore, and True is returned.
    """
    from arrowmix._stream.topology import walk

    if not isinstance(nodes, list) or not all(isinstance(x, str) for x in nodes):
        return False
    walked = walk(root)
    if len(nodes) != len(walked):
        return False
    names: dict[int, str] = {}
    for node, saved in zip(walked, nodes, strict=True):
        other = _FORMS.get(type(node).__name__)
        mark = saved.split(".")[0]
        if other is not None and hash_value(other)[: len(mark)] == mark:
            names[id(node)] = other
    if not names or hash_value(config_tree(root, names)) != fingerprint:
        return False
    for node in walked:
        if id(node) in names:
            node.__dict__[_OTHER_FORM] = True
    return True
