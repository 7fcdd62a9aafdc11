"""Length bucketing with read-ahead (Infinibatch) and pool batching (torchtext).

The stage reads ``read_ahead`` items, stable-sorts them by ``key`` in descending order,
cuts batches in that order, and yields the batches of the window in a seeded random
order (or in sorted order with ``shuffle=False``). ``batch_size`` is an int or a
callable that receives the longest item of the batch being formed (its first item, as
the window is sorted) and returns the batch size, e.g. a token budget
``lambda longest: 16384 // longest["n_tokens"]``. With ``boundary_key``, a batch also
ends where the boundary value changes between consecutive sorted items.

Checkpointing: anchor and replay: the state is the source's state at the read-ahead
start, the window number, the batches emitted and the seed; restoring re-reads and
re-sorts one read-ahead window (at most ``read_ahead`` items).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from arrowmix._stream.anchored import AnchoredStage
from arrowmix._stream.base import State, Stream, _fn_name
from arrowmix._stream.rng import SeedHolder, derive_rng

__all__ = ["LengthBucketIterator", "cut_batches"]

T = TypeVar("T")


def _getter(key: str | Callable[[Any], Any]) -> Callable[[Any], Any]:
    if isinstance(key, str):
        name = key
        return lambda row: row[name]
    if callable(key):
        return key
    raise TypeError(f"`key` must be a column name or a callable, got {key!r}.")


def cut_batches(
    items: list[T],
    keys: np.ndarray,
    batch_size: int | Callable[[T], int],
    boundaries: list[Any] | None = None,
) -> list[list[T]]:
    """Sort ``items`` by ``keys`` (descending, stable) and cut them into batches.

    Example:
        >>> cut_batches(["a", "bbb", "cc"], np.array([1, 3, 2]), 2)
        [['bbb', 'cc'], ['a']]
    """
    order = np.argsort(-keys, kind="stable").tolist()
    batches: list[list[T]] = []
    i, n = 0, len(order)
    while i < n:
        first = items[order[i]]
        size = batch_size(first) if callable(batch_size) else batch_size
        if (
            isinstance(size, bool)
            or not isinstance(size, (int, np.integer))
            or size < 1
        ):
            raise ValueError(
                f"`batch_size` returned {size!r} for item {first!r}; "
                "it must be an int >= 1."
            )
        stop = min(n, i + int(size))
        if boundaries is not None:
            b0 = boundaries[order[i]]
            j = i + 1
            while j < stop and boundaries[order[j]] == b0:
                j += 1
            stop = j
        batches.append([items[k] for k in order[i:stop]])
        i = stop
    return batches


class LengthBucketIterator(AnchoredStage[list[Any]]):
    """Batches of similar-length items from sorted read-ahead windows.

    State:
        ``source`` (at the read-ahead start), ``window``, ``emitted`` (batches of the
        window yielded), ``seed``. Replay cost: at most ``read_ahead`` items.
    """

    SEED_KEY = "seed"
    STATE_KEYS = (*AnchoredStage.BASE_KEYS, SEED_KEY)

    def __init__(
        self,
        source: Stream[T],
        key: str | Callable[[T], float],
        batch_size: int | Callable[[T], int],
        read_ahead: int,
        *,
        boundary_key: str | Callable[[T], Any] | None = None,
        shuffle: bool = True,
        seed: int | None = None,
    ) -> None:
        super().__init__(source)
        self._key = _getter(key)
        self._boundary = None if boundary_key is None else _getter(boundary_key)
        if not callable(batch_size) and (
            isinstance(batch_size, bool)
            or not isinstance(batch_size, int)
            or batch_size < 1
        ):
            raise ValueError(
                "`batch_size` must be a positive int or a callable, "
                f"got {batch_size!r}."
            )
        if (
            isinstance(read_ahead, bool)
            or not isinstance(read_ahead, int)
            or read_ahead < 1
        ):
            raise ValueError(
                f"`read_ahead` must be a positive int, got {read_ahead!r}."
            )
        self.key, self.boundary_key = key, boundary_key
        self.batch_size: int | Callable[[Any], int] = batch_size
        self.read_ahead = read_ahead
        self.shuffle_batches = bool(shuffle)
        self._seed = SeedHolder(seed)

    def describe(self) -> dict[str, Any]:
        def name(k: object) -> object:
            return k if k is None or isinstance(k, (str, int)) else _fn_name(k)

        return {
            "key": name(self.key),
            "batch_size": name(self.batch_size),
            "read_ahead": self.read_ahead,
            "boundary_key": name(self.boundary_key),
            "shuffle": self.shuffle_batches,
            "seed": self._seed.describe(),
        }

    def extra_state(self) -> State:
        return {self.SEED_KEY: self._seed.value}

    def load_extra(self, state: State) -> None:
        self._seed.load(self, state[self.SEED_KEY])

    def compute(self, window: int) -> list[list[Any]] | None:
        items = self.source._pull(self.read_ahead)
        if not items:
            return None
        keys = np.fromiter(
            (self._key(x) for x in items), dtype=np.float64, count=len(items)
        )
        bounds = None if self._boundary is None else [self._boundary(x) for x in items]
        batches = cut_batches(items, keys, self.batch_size, bounds)
        if self.shuffle_batches:
            perm = derive_rng(self._seed.value, window).permutation(len(batches))
            batches = [batches[i] for i in perm]
        return batches
