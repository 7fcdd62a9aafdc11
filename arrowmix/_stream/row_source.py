"""The random-access row source protocol streams read from, and an in-memory one.

The Dataset layer hands streams an object satisfying :class:`RowSource`; the stream
layer never imports the Dataset layer. :class:`TableRowSource` wraps a
``pyarrow.Table`` for tests and in-memory use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pyarrow as pa

from arrowmix._fingerprint.hasher import hash_value
from arrowmix._stream.tokens.column import TokenColumn

__all__ = [
    "OPTIONAL_MEMBERS",
    "ListSpec",
    "RowSource",
    "RowSourceHooks",
    "TableRowSource",
    "optional_member",
]


@runtime_checkable
class RowSource(Protocol):
    """Random access to the rows of an Arrow table.

    Attributes:
        num_rows: number of rows.
        schema: the rows' Arrow schema.
        fingerprint: 16 hex characters identifying the content.
    """

    @property
    def num_rows(self) -> int: ...

    @property
    def schema(self) -> pa.Schema: ...

    @property
    def fingerprint(self) -> str: ...

    def chunk_offsets(self) -> np.ndarray:
        """int64 boundaries ``[0, ..., num_rows]`` of the storage chunks."""
        ...

    def take(self, positions: np.ndarray) -> pa.Table:
        """The rows at ``positions`` (int64), in that order."""
        ...


#: What ``take_lists`` gets for a column: the dtype of its rows' arrays, and the conversion
#: of its rows where the storage holds nulls (an Arrow column -> each row's value).
ListSpec = tuple[Any, Callable[["pa.ChunkedArray[Any]"], list[Any]]]


class RowSourceHooks(Protocol):
    """The optional members of a :class:`RowSource`: the stream layer uses each one it finds.

    A row source implements the five members of :class:`RowSource`, plus any of these:

    - ``token_column(name) -> TokenColumn``: zero-copy token ids of a ``list<int*>`` column
      (``collate``, ``pack``, token bucketing); without it the column is taken whole once.
    - ``take_column(positions, name) -> pyarrow.ChunkedArray``: one column at ``positions``
      (bucketing keys); without it, ``take(positions)[name]``.
    - ``take_lists(positions, lists) -> (pyarrow.Table | None, dict)``: the rows at
      ``positions``, the ``list<int*>`` columns of ``lists`` (name -> ``(dtype, convert)``)
      as ``{name: [value of each row]}``, the other columns as a table (None when there are
      none), read in one pass over the storage. A row's value is its ids copied into a new
      ``dtype`` array; where the storage holds nulls in the column, the rows are taken as
      Arrow and ``convert(column)`` gives their values. Numpy rows use it; without it they
      take whole rows.
    - ``read_ahead(upcoming)``: told before every block where the stream stands (an
      :class:`~arrowmix._stream.sources.Upcoming`), to fetch what comes next (remote chunks).
    - ``prefetch(starts, stops)``: the rows ``[starts[i], stops[i])`` (int64 arrays) are read
      soon (``shuffle="blocks"`` announces each window's blocks before reading them); a
      source over memory-mapped files may start reading exactly those ranges. A hint: doing
      nothing is correct.
    - ``stats() -> dict``: counters merged into the source's ``stats()``.
    - ``close()``: stop background work (called by the source's ``close()``).
    """

    def token_column(self, name: str) -> TokenColumn: ...

    def take_column(self, positions: np.ndarray, name: str) -> pa.ChunkedArray[Any]: ...

    def take_lists(
        self, positions: np.ndarray, lists: Mapping[str, ListSpec]
    ) -> tuple[pa.Table | None, dict[str, list[Any]]]: ...

    def read_ahead(self, upcoming: Any) -> None: ...

    def prefetch(self, starts: np.ndarray, stops: np.ndarray) -> None: ...

    def stats(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


#: The names of :class:`RowSourceHooks`.
OPTIONAL_MEMBERS = frozenset(
    {"token_column", "take_column", "take_lists", "read_ahead", "prefetch", "stats", "close"}
)


def optional_member(rows: RowSource, name: str) -> Callable[..., Any] | None:
    """``rows``'s optional member ``name`` (one of :data:`OPTIONAL_MEMBERS`), or None.

    The one place the stream layer looks an optional member up.
    """
    if name not in OPTIONAL_MEMBERS:
        raise AttributeError(f"{name!r} is not an optional member of a RowSource.")
    member: Callable[..., Any] | None = getattr(rows, name, None)
    return member


class TableRowSource:
    """A :class:`RowSource` over an in-memory ``pyarrow.Table``.

    Args:
        table: the rows; its chunks are combined once so that ``take`` stays fast.
        fingerprint: 16 hex characters; hashed from the content when omitted.
        chunk_rows: logical chunk size for ``chunk_offsets`` (default: the table's
            record batches).

    Example:
        >>> import pyarrow as pa
        >>> src = TableRowSource(pa.table({"x": [10, 11, 12]}), chunk_rows=2)
        >>> src.chunk_offsets().tolist(), src.take(np.array([2, 0])).to_pylist()
        ([0, 2, 3], [{'x': 12}, {'x': 10}])
    """

    def __init__(
        self,
        table: pa.Table,
        fingerprint: str | None = None,
        chunk_rows: int | None = None,
    ) -> None:
        if chunk_rows is not None and chunk_rows <= 0:
            raise ValueError(f"`chunk_rows` must be a positive int, got {chunk_rows!r}.")
        if chunk_rows is None:
            lengths = [b.num_rows for b in table.to_batches()]
            offsets = np.cumsum([0, *lengths], dtype=np.int64)
        else:
            offsets = np.arange(0, table.num_rows, chunk_rows, dtype=np.int64)
            offsets = np.append(offsets, np.int64(table.num_rows))
        if table.num_rows == 0:
            offsets = np.zeros(1, dtype=np.int64)
        self._offsets = offsets
        self._table = table.combine_chunks()
        self._fingerprint = fingerprint if fingerprint is not None else hash_value(table)

    @property
    def num_rows(self) -> int:
        return int(self._table.num_rows)

    @property
    def schema(self) -> pa.Schema:
        return self._table.schema

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    def chunk_offsets(self) -> np.ndarray:
        out: np.ndarray = self._offsets.copy()
        return out

    def take(self, positions: np.ndarray) -> pa.Table:
        return self._table.take(pa.array(positions, type=pa.int64()))

    def token_column(self, name: str) -> TokenColumn:
        """Zero-copy views of the ``list<int*>`` column ``name`` (optional in the protocol)."""
        if name not in self._table.column_names:
            raise KeyError(f"no column {name!r}; the rows have columns {self._table.column_names}.")
        return TokenColumn(self._table.column(name), name)

    def take_column(self, positions: np.ndarray, name: str) -> pa.ChunkedArray[Any]:
        """One column at ``positions`` (optional in the protocol; bucketing uses it)."""
        return self._table.column(name).take(pa.array(positions, type=pa.int64()))
