"""The remote kind of table: chunks read through a bounded local cache.

What ``from_chunks(..., cache_limit=...)`` opens. :class:`RemoteRows` is the cache's
:class:`~arrowmix._remote.table.RemoteTable` with what the Dataset layer and the streams
ask of a table: each stream downloads ahead (:class:`~arrowmix._remote.table.ReadAhead`)
and counts its downloads; token columns pin the chunks a read touches
(:class:`~arrowmix._stream.tokens.pinned.PinnedTokenColumn`); rows are copied out of each
pinned chunk.
"""

from __future__ import annotations

import functools
from collections.abc import Generator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from arrowmix._remote.cache import parse_size
from arrowmix._remote.table import ReadAhead, RemoteTable
from arrowmix._storage.take import int64_array
from arrowmix._stream.tokens import TokenColumn
from arrowmix._stream.tokens.pinned import PinnedTokenColumn

if TYPE_CHECKING:
    from arrowmix._dataset.tables.protocol import Mapper
    from arrowmix._stream.row_source import ListSpec
    from arrowmix._stream.sources import Upcoming

__all__ = ["RemoteReading", "RemoteRows"]


class RemoteRows(RemoteTable):
    """A :class:`RemoteTable` as a :class:`Table` (module docstring)."""

    arrow = None
    by_reference = False  # a result referencing it would pin the whole corpus
    map_joins = False
    layout_tag = None
    bounded = True
    opened_as = "a bounded remote cache (`from_chunks(..., cache_limit=...)`)"

    @property
    def storage_bytes(self) -> int:
        return self.nbytes

    def pickled(self) -> RemoteRows:
        """Itself: it pickles as its description (URLs, versions, cache directory, limit)."""
        return self

    def reading(self, read_ahead: int | str | None, mapper: Mapper) -> RemoteReading:
        return RemoteReading(self, _read_ahead(self, read_ahead), mapper)


class RemoteReading:
    """A stream's reading of :class:`RemoteRows`: downloads ahead, counted as the stream's."""

    hooks: tuple[str, ...] = ("read_ahead", "stats", "close")

    def __init__(self, table: RemoteRows, ahead: ReadAhead, mapper: Mapper) -> None:
        self.table = table
        self._ahead = ahead
        self._mapper = mapper

    def stats(self) -> dict[str, Any]:
        """This stream's downloads and waiting, and the cache directory's counters."""
        return self._ahead.stats()

    def close(self) -> None:
        """Stop downloading ahead and unpin what was downloaded."""
        self._ahead.close()

    def read_ahead(self, upcoming: Upcoming) -> None:
        """Map the stream's upcoming view positions to table rows for the read-ahead."""
        mapped = upcoming if self._mapper is None else _Mapped(upcoming, self._mapper)
        self._ahead.read_ahead(mapped)

    def counting(self) -> AbstractContextManager[Any]:
        ctx: AbstractContextManager[Any] = self._ahead.counting()
        return ctx

    def take_column(self, positions: np.ndarray, name: str) -> pa.ChunkedArray[Any]:
        """The column alone, out of the cached chunks."""
        with self.counting():
            column: pa.ChunkedArray[Any] = self.table.select([name]).take(positions).column(0)
            return column

    def take_lists(
        self, positions: np.ndarray, others: Sequence[str], lists: Mapping[str, ListSpec]
    ) -> tuple[pa.Table | None, dict[str, list[Any]]]:
        """Each chunk pinned once for all the columns."""
        copy = _ListCopy(lists, {n: self.table.stored_name(n) for n in lists}, len(positions))
        with self.counting():  # downloads of this read count as this stream's
            table = self.table.select(others).take(positions, visit=copy)
        return (table if others else None), copy.rows

    def token_column(self, name: str, mapper: Mapper, view_rows: int) -> TokenColumn:
        """Read through the cache chunk by chunk: each chunk is pinned while it is read."""
        read = functools.partial(self._chunk_columns, self.table.stored_name(name))
        kind = self.table.schema.field(name).type
        return PinnedTokenColumn(
            read, self.table.offsets, kind, name, mapper=mapper, view_rows=view_rows
        )

    def _chunk_columns(
        self, stored: str, chunks: Sequence[int]
    ) -> Generator[tuple[int, pa.ChunkedArray[Any]], None, None]:
        """The stored column ``stored`` of each chunk of ``chunks``, pinned in turn."""
        with self.counting():  # downloads of this read count as this stream's
            for c, chunk in self.table.read_chunks(chunks):
                yield c, chunk.column(stored)

    def prefetch_ranges(
        self, starts: np.ndarray, stops: np.ndarray, columns: Sequence[str]
    ) -> None:
        """Nothing: the read-ahead downloads what comes next."""


class _ListCopy:
    """Copies rows of list columns out of each chunk a :meth:`RemoteTable.take` visits."""

    def __init__(self, lists: Mapping[str, ListSpec], stored: Mapping[str, str], n: int) -> None:
        self.lists = lists
        self.stored = stored
        self.rows: dict[str, list[Any]] = {name: [None] * n for name in lists}

    def __call__(self, c: int, table: pa.Table, local: np.ndarray, rows: np.ndarray) -> None:
        for name, (dtype, convert) in self.lists.items():
            column = table.column(self.stored[name])
            try:  # views of the pinned chunk, read now: the copies outlive it
                values = TokenColumn(column, name).gather_each(local, dtype)
            except ValueError:  # null documents or ids: converted as Arrow rows
                values = convert(column.take(int64_array(local)))
            out = self.rows[name]
            for j, value in zip(rows.tolist(), values, strict=True):
                out[j] = value


class _Mapped:
    """Upcoming view positions seen through the view's indices mapping."""

    def __init__(self, upcoming: Upcoming, mapper: Any) -> None:
        self._up = upcoming
        self._map = mapper
        self.cursor = upcoming.cursor

    def positions(self, cursor: tuple[int, int], n: int) -> tuple[np.ndarray, tuple[int, int]]:
        pos, after = self._up.positions(cursor, n)
        return self._map(pos), after


def _read_ahead(table: RemoteTable, read_ahead: int | str | None) -> ReadAhead:
    if read_ahead is None:
        return ReadAhead(table)
    if isinstance(read_ahead, str):
        return ReadAhead(
            table, chunks=len(table.chunks), max_bytes=parse_size(read_ahead, "read_ahead")
        )
    if isinstance(read_ahead, bool) or not isinstance(read_ahead, int) or read_ahead < 0:
        raise ValueError(
            f"`read_ahead` must be a number of chunks (int >= 0) or a size such as '2GB', "
            f"got {read_ahead!r}."
        )
    return ReadAhead(table, chunks=read_ahead)
