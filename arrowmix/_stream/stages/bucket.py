"""Length bucketing with read-ahead (Infinibatch) and pool batching (torchtext).

The stage reads ``read_ahead`` items, stable-sorts them by ``key`` in descending order,
cuts batches in that order, and yields the batches of the window in a seeded random
order (or in sorted order with ``shuffle=False``). ``batch_size`` is an int or a
callable that receives the longest item of the batch being formed (its first item, as
the window is sorted) and returns the batch size, e.g. a token budget
``lambda longest: 16384 // longest["n_tokens"]``; a size of 0 (an item longer than the
budget) makes a batch of that one item. With ``boundary_key``, a batch also
ends where the boundary value changes between consecutive sorted items.

With ``columnar=True`` (index streams only: a column ``key`` over a Dataset or row source),
each batch is a ``pyarrow.Table`` sliced from the sorted window instead of a list of row
dicts: no Python object is built per row, which is what a collate function that pads token
ids into arrays wants. ``batch_size`` callables still get the longest row as a dict.

Checkpointing: anchor and replay: the state is the source's state at the read-ahead
start, the window number, the batches emitted and the seed; restoring re-reads and
re-sorts one read-ahead window (at most ``read_ahead`` items).
"""

from __future__ import annotations

import numbers
import operator
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from arrowmix._stream.base import State, Stream, fn_id
from arrowmix._stream.counters import Tally, wait_clock
from arrowmix._stream.positions import PositionBatches, Positions
from arrowmix._stream.replay import AnchoredStage
from arrowmix._stream.rng import SeedHolder
from arrowmix._stream.tokens.column import is_token_type, key_values
from arrowmix._validate import check_int

__all__ = ["LengthBucketIterator", "cut_sorted", "descending"]

T = TypeVar("T")


def _getter(key: str | Callable[[Any], Any]) -> Callable[[Any], Any]:
    if isinstance(key, str):
        return operator.itemgetter(key)
    if callable(key):
        return key
    raise TypeError(f"`key` must be a column name or a callable, got {key!r}.")


def cut_sorted(
    items: list[T],
    batch_size: int | Callable[[T], int],
    boundaries: list[Any] | None = None,
) -> list[list[T]]:
    """Cut already sorted ``items`` into batches (sizes from their first item).

    Example:
        >>> cut_sorted(["c", "b", "b", "a"], 2, boundaries=[3, 2, 2, 1])
        [['c'], ['b', 'b'], ['a']]
    """
    batches: list[list[T]] = []
    i, n = 0, len(items)
    while i < n:
        first = items[i]
        size = batch_size(first) if callable(batch_size) else batch_size
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
            raise ValueError(
                f"`batch_size` returned {size!r} for item {first!r}; it must be an int >= 0."
            )
        # 0 (e.g. a budget // length for an item longer than the budget) means a batch
        # of one, as in Infinibatch.
        stop = min(n, i + max(1, int(size)))
        if boundaries is not None:
            b0 = boundaries[i]
            j = i + 1
            while j < stop and boundaries[j] == b0:
                j += 1
            stop = j
        batches.append(items[i:stop])
        i = stop
    return batches


class _Row(Mapping[str, Any]):
    """One row of a table as a read-only mapping; a value is converted when it is read."""

    __slots__ = ("_i", "_table")

    def __init__(self, table: pa.Table, i: int) -> None:
        self._table, self._i = table, i

    def __getitem__(self, name: str) -> Any:
        if name not in self._table.column_names:
            raise KeyError(name)
        return self._table.column(name)[self._i].as_py()

    def __iter__(self) -> Iterator[str]:
        return iter(self._table.column_names)

    def __len__(self) -> int:
        return self._table.num_columns

    def __repr__(self) -> str:
        return repr(dict(self))


class _SortedTable:
    """A sorted window seen as a sequence: ``[i]`` is row ``i`` as a mapping, ``[a:b]`` a slice.

    Lets :func:`cut_sorted` cut Arrow batches without building a dict per row: only the
    first (longest) row of each batch is looked at, and only the fields ``batch_size`` reads.
    """

    def __init__(self, table: pa.Table) -> None:
        self._table = table

    def __len__(self) -> int:
        return self._table.num_rows

    def __getitem__(self, key: int | slice) -> Any:
        if isinstance(key, slice):
            start, stop, _ = key.indices(len(self))
            return self._table.slice(start, stop - start)
        return _Row(self._table, key)


class _KeyRow(Mapping[str, Any]):
    """The longest row of a batch being cut: the key from the window, other fields on read."""

    __slots__ = ("_key", "_pos", "_rows", "_value")

    def __init__(self, rows: Any, pos: int, key: str, value: Any) -> None:
        self._rows, self._pos, self._key, self._value = rows, pos, key, value

    def __getitem__(self, name: str) -> Any:
        if name == self._key and not is_token_type(self._rows.schema.field(name).type):
            return self._value.item() if isinstance(self._value, np.generic) else self._value
        if name not in self._rows.schema.names:
            raise KeyError(name)
        return self._rows.take(np.array([self._pos], dtype=np.int64)).column(name)[0].as_py()

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows.schema.names)

    def __len__(self) -> int:
        return len(self._rows.schema.names)


class _SortedPositions:
    """A sorted window of row positions: ``[i]`` reads row ``i`` lazily, ``[a:b]`` slices."""

    def __init__(self, rows: Any, positions: np.ndarray, keys: np.ndarray, key: str) -> None:
        self._rows, self._pos, self._keys, self._key = rows, positions, keys, key

    def __len__(self) -> int:
        return len(self._pos)

    def __getitem__(self, key: int | slice) -> Any:
        if isinstance(key, slice):
            return self._pos[key]
        return _KeyRow(self._rows, int(self._pos[key]), self._key, self._keys[key])


def descending(keys: np.ndarray) -> np.ndarray:
    """Stable order of ``keys`` from the largest to the smallest."""
    # Stable sort of the negated keys keeps equal keys in arrival order.
    order: np.ndarray = np.argsort(-keys, kind="stable")
    return order


class LengthBucketIterator(AnchoredStage[list[Any]]):
    """Batches of similar-length items from sorted read-ahead windows.

    State:
        ``source`` (at the read-ahead start), ``window``, ``emitted`` (batches of the
        window yielded), ``seed``. Replay cost: at most ``read_ahead`` items.
    """

    SEED_KEY = "seed"
    STATE_KEYS = (*AnchoredStage.BASE_KEYS, SEED_KEY)
    TRANSIENT = ("_columns",)

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
        columnar: bool = False,
    ) -> None:
        super().__init__(source)
        self._key = _getter(key)
        self._boundary = None if boundary_key is None else _getter(boundary_key)
        size: Any = batch_size
        if not callable(size):
            if isinstance(size, bool) or not isinstance(size, numbers.Integral):
                raise TypeError(f"`batch_size` must be a positive int or a callable, got {size!r}.")
            check_int("batch_size", size, minimum=1)
        check_int("read_ahead", read_ahead, minimum=1)
        self.key, self.boundary_key = key, boundary_key
        self.batch_size: int | Callable[[Any], int] = batch_size
        self.read_ahead = read_ahead
        self.shuffle_batches = bool(shuffle)
        self._seed = SeedHolder(seed)
        self._rows = None
        self._input: Positions | None = None
        columns = isinstance(key, str) and (boundary_key is None or isinstance(boundary_key, str))
        if columns and source.row_source() is not None:
            self._input = source.as_positions()
            self._rows = None if self._input is None else self._input.rows
        self.columnar = bool(columnar)
        self._emit_positions = False
        self._tally = Tally(tokens=True)
        self._planned: list[tuple[int, int, int]] = []  # per output: rows, tokens, slots
        self._window_keys = np.empty(0)
        if self.columnar and self._rows is None:
            raise ValueError(
                "`columnar=True` needs an index stream: a column-name `key` (and "
                "`boundary_key`) on a stream read straight from a Dataset or row source "
                "(through shuffle or filter, not map); this stream carries Python objects."
            )

    def describe(self) -> dict[str, Any]:
        def name(k: object) -> object:
            return k if k is None or isinstance(k, (str, int)) else fn_id(self, k)

        return {
            "key": name(self.key),
            "batch_size": name(self.batch_size),
            "read_ahead": self.read_ahead,
            "boundary_key": name(self.boundary_key),
            "shuffle": self.shuffle_batches,
            "seed": self._seed.describe(),
            "columnar": self.columnar,
        }

    def extra_state(self) -> State:
        return {self.SEED_KEY: self._seed.value}

    def load_extra(self, state: State) -> None:
        self._seed.load(self, state[self.SEED_KEY])

    def _read_rows(self) -> tuple[list[Any], list[Any] | None] | None:
        """The next read-ahead window sorted by key, and its boundary values."""
        if self._rows is not None:  # index stream: sort positions by the key column
            assert self._input is not None
            t0 = wait_clock()
            pos = self._input.pull(self.read_ahead)
            self._tally.wait += wait_clock() - t0
            if not len(pos):
                return None
            assert isinstance(self.key, str)
            names = [self.key] + ([self.boundary_key] if isinstance(self.boundary_key, str) else [])
            schema = self._rows.schema
            window = None
            if not all(n in schema.names and is_token_type(schema.field(n).type) for n in names):
                window = self._rows.take(pos)  # a value column: read the window once
            cache = self.__dict__.setdefault("_columns", {})

            def column(name: str) -> Any:
                if window is None:
                    return key_values(self._rows, pos, name, cache)
                if is_token_type(window.schema.field(name).type):
                    return pc.list_value_length(window.column(name)).to_numpy()
                return window.column(name).to_numpy(zero_copy_only=False)

            raw = column(self.key)
            keys = _numeric_keys(raw, self.key)
            order = descending(keys)
            self._window_keys = keys[order]
            bounds = None
            if isinstance(self.boundary_key, str):
                values = column(self.boundary_key).tolist()
                bounds = [values[i] for i in order.tolist()]
            pos = pos[order]
            if self._emit_positions:
                # the key's own values (ints stay ints for a budget function)
                raw_sorted = np.asarray(raw)[order]
                return _SortedPositions(self._rows, pos, raw_sorted, self.key), bounds  # type: ignore[return-value]
            # the only gather of the window's rows (token keys come from the offsets)
            table = self._rows.take(pos) if window is None else window.take(order)
            if self.columnar:
                return _SortedTable(table), bounds  # type: ignore[return-value]
            assert self._input is not None
            return self._input.items(table), bounds
        t0 = wait_clock()
        items = self.source.pull(self.read_ahead)
        self._tally.wait += wait_clock() - t0
        if not items:
            return None
        keys = _numeric_keys([self._key(x) for x in items], self.key)
        sorting = descending(keys)
        self._window_keys = keys[sorting]
        order = sorting.tolist()
        items = [items[i] for i in order]
        if self._boundary is None:
            return items, None
        return items, [self._boundary(x) for x in items]

    def stats(self) -> dict[str, Any]:
        """Batches, rows, tokens and slots (``len * longest``, by ``key``) yielded, wait time.

        Process-local, not checkpointed (see ``docs/observability.md``).
        """
        return self._tally.as_dict()

    def yielded(self, first: int, stop: int) -> None:
        for counts in self._planned[first:stop]:
            self._tally.add(*counts)

    def as_position_batches(self, column: str | None = None) -> PositionBatches | None:
        """Each batch as an array of row positions (for collation); columnar only.

        Taking the view makes the windows hold positions instead of tables.
        """
        if not self.columnar or self._rows is None:
            return None
        self._emit_positions = True
        return PositionBatches(self._rows, self.next)

    def compute(self, window: int) -> list[list[Any]] | None:
        window_rows = self._read_rows()
        if window_rows is None:
            return None
        batches = cut_sorted(window_rows[0], self.batch_size, window_rows[1])
        planned = _by_key(self._window_keys, batches)
        if self.shuffle_batches:
            perm = self.window_rng(self._seed.value, window).permutation(len(batches))
            batches = [batches[i] for i in perm]
            planned = [planned[i] for i in perm]
        self._planned = planned
        return batches


def _by_key(keys: np.ndarray, batches: list[Any]) -> list[tuple[int, int, int]]:
    """``(rows, sum of keys, rows * largest key)`` of consecutive batches of sorted ``keys``."""
    if not batches:
        return []
    rows = np.fromiter(map(len, batches), dtype=np.int64, count=len(batches))
    starts = np.cumsum(rows) - rows
    tokens = np.rint(np.add.reduceat(keys, starts)).astype(np.int64)
    slots = np.rint(rows * keys[starts]).astype(np.int64)
    return list(zip(rows.tolist(), tokens.tolist(), slots.tolist(), strict=True))


def _numeric_keys(values: Any, key: Any) -> np.ndarray:
    """Sort keys as float64, or a ValueError naming ``key`` and the offending value."""
    try:
        keys = np.asarray(values, dtype=np.float64)
        if keys.ndim == 1:
            return keys
        cause: Exception | None = None
    except (TypeError, ValueError) as exc:
        cause = exc
    bad = next((v for v in values if not isinstance(v, (int, float, np.number))), None)
    raise ValueError(
        f"`key` {key!r} must give a number per item (a length, a token count), got "
        f"{bad!r}; to group by a category as well, use `boundary_key`."
    ) from cause
