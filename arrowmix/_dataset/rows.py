"""A Dataset view as a random-access row source: :class:`DatasetRows`.

The stream layer never imports the Dataset layer; it reads rows through the ``RowSource``
protocol (``num_rows``, ``schema``, ``fingerprint``, ``chunk_offsets()``, ``take``). Positions
are positions in the *view* (the indices mapping is applied here), and ``chunk_offsets`` follow
the storage so that ``shuffle="chunks"`` reads whole files: file boundaries for a plain or
range view, fixed blocks for a view through an index array (its rows are scattered anyway).
The rows read the view's state through :mod:`arrowmix._dataset.state`, never through the
``Dataset`` object; :mod:`arrowmix._dataset.to_stream` hands them to the stream layer.
"""

from __future__ import annotations

import functools
from collections.abc import Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from arrowmix._dataset.indices import IndexMap
from arrowmix._dataset.page_ahead import PageAhead
from arrowmix._dataset.reader import TableReader
from arrowmix._dataset.state import gather, num_rows, state_of
from arrowmix._remote.cache import parse_size
from arrowmix._remote.table import ReadAhead, RemoteTable
from arrowmix._storage.take import int64_array
from arrowmix._stream.row_source import ListSpec
from arrowmix._stream.sources import Upcoming
from arrowmix._stream.tokens import TokenColumn
from arrowmix._stream.tokens.pinned import PinnedTokenColumn

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = ["DatasetRows"]

_SCATTERED_BLOCK = 65536


class DatasetRows:
    """A :class:`~arrowmix._stream.row_source.RowSource` over a Dataset view.

    Over remote chunks read through a bounded cache (``from_chunks(..., cache_limit=...)``)
    it also has ``read_ahead``, ``stats`` and ``close``: the stream tells it where it stands
    before every block, and it downloads the chunks that come next (:class:`ReadAhead`).
    """

    def __init__(self, ds: Dataset, read_ahead: int | str | None = None) -> None:
        self._ds = ds
        self._columns = state_of(ds).format.read_columns()
        schema = state_of(ds).table.schema.remove_metadata()  # Dataset.schema
        if self._columns is not None:
            schema = pa.schema([schema.field(c) for c in self._columns])
        self._schema = schema
        table = state_of(ds).table
        if isinstance(table, RemoteTable):
            self._ahead = _read_ahead(table, read_ahead)
            self.read_ahead = self._read_ahead
            self.stats = self._ahead.stats
            self.close = self._ahead.close
        else:
            reader = state_of(ds).reader
            if isinstance(reader, TableReader) and reader.mapped:
                self.read_ahead = self._page_ahead

    def _page_ahead(self, upcoming: Upcoming) -> None:
        """Local chunks: read ahead the record batches the next rows crowd (see PageAhead)."""
        if upcoming.ranges_announced:  # the order asks for its exact ranges (``prefetch``)
            return
        ahead = self.__dict__.get("_pages")
        if ahead is None:
            s = state_of(self._ds)
            assert isinstance(s.reader, TableReader)
            mapper = s.indices.lookup if s.indices is not None else None
            ahead = self._pages = PageAhead(s.reader, mapper)
        ahead(upcoming)

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_pages"}  # rebuilt on use

    def _read_ahead(self, upcoming: Upcoming) -> None:
        """Map the stream's upcoming view positions to table rows for the read-ahead."""
        ix = state_of(self._ds).indices
        self._ahead.read_ahead(upcoming if ix is None else _Mapped(upcoming, ix))

    @property
    def num_rows(self) -> int:
        return num_rows(state_of(self._ds))

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    @property
    def fingerprint(self) -> str:
        return state_of(self._ds).fingerprint

    def chunk_offsets(self) -> np.ndarray:
        s = state_of(self._ds)
        n = self.num_rows
        base = np.asarray(s.file_offsets or (0, s.table.num_rows), dtype=np.int64)
        if s.indices is None:
            return base
        if s.indices.is_range:
            inner = base[(base > s.indices.start) & (base < s.indices.stop)] - s.indices.start
            return np.unique(np.concatenate([[0], inner, [n]])).astype(np.int64)
        return np.unique(np.r_[np.arange(0, n, _SCATTERED_BLOCK), n]).astype(np.int64)

    def take(self, positions: np.ndarray) -> pa.Table:
        ahead = self.__dict__.get("_ahead")
        if ahead is None:
            return gather(state_of(self._ds), np.asarray(positions, dtype=np.int64), self._columns)
        with ahead.counting():  # downloads of this read count as this stream's
            return gather(state_of(self._ds), np.asarray(positions, dtype=np.int64), self._columns)

    def take_column(self, positions: np.ndarray, name: str) -> pa.ChunkedArray[Any]:
        """The column ``name`` at view ``positions``, gathered alone (not whole rows)."""
        if name not in self._schema.names:
            raise KeyError(f"no column {name!r}; the rows have columns {self._schema.names}.")
        s = state_of(self._ds)
        if isinstance(s.table, RemoteTable):  # the column alone, out of the cached chunks
            pos = np.asarray(positions, dtype=np.int64)
            base = s.indices.lookup(pos) if s.indices is not None else pos
            with self._ahead.counting():
                return s.table.select([name]).take(base).column(0)
        pos = np.asarray(positions, dtype=np.int64)
        base = s.indices.lookup(pos) if s.indices is not None else pos
        column: pa.ChunkedArray[Any] = self._reader([name]).take(base).column(0)
        return column

    def take_lists(
        self, positions: np.ndarray, lists: Mapping[str, ListSpec]
    ) -> tuple[pa.Table | None, dict[str, list[Any]]]:
        """The rows at view ``positions``, the ``list<int*>`` columns ``lists`` copied out.

        Each row of a column of ``lists`` (name -> ``(dtype, convert)``) comes as its own
        ``dtype`` array, copied once out of the storage buffers (never a view of them); where
        the storage holds nulls in the column, ``convert`` gives the values of its rows taken
        as Arrow. The other columns come as a table (None when there are none). Over a
        bounded cache of remote chunks each chunk is pinned once for all of them.
        """
        s = state_of(self._ds)
        pos = np.asarray(positions, dtype=np.int64)
        base = s.indices.lookup(pos) if s.indices is not None else pos
        others = [n for n in self._schema.names if n not in lists]
        if isinstance(s.table, RemoteTable):
            copy = _ListCopy(lists, {n: s.table.stored_name(n) for n in lists}, len(pos))
            with self._ahead.counting():  # downloads of this read count as this stream's
                table = s.table.select(others).take(base, visit=copy)
            return (table if others else None), copy.rows
        values: dict[str, list[Any]] = {}
        for name, (dtype, convert) in lists.items():
            try:
                values[name] = TokenColumn(s.table.column(name), name).gather_each(base, dtype)
            except ValueError:  # null documents or ids: converted as Arrow rows
                values[name] = convert(self._reader([name]).take(base).column(0))
        return (self._reader(others).take(base) if others else None), values

    def prefetch(self, starts: np.ndarray, stops: np.ndarray) -> None:
        """Ask the kernel for the pages of view rows ``[starts[i], stops[i])`` now.

        A hint from streams that know their next row ranges (``shuffle="blocks"``): local,
        memory-mapped tables whose view is the table or a range of it; a no-op otherwise.
        """
        s = state_of(self._ds)
        if isinstance(s.table, RemoteTable) or (s.indices is not None and not s.indices.is_range):
            return
        shift = 0 if s.indices is None else s.indices.start
        lo, hi = np.asarray(starts, dtype=np.int64), np.asarray(stops, dtype=np.int64)
        self._reader(self._schema.names).prefetch_ranges(lo + shift, hi + shift)

    def _reader(self, columns: Sequence[str]) -> TableReader:
        """A reader of ``columns`` of the local table (kept for the next reads)."""
        readers = self.__dict__.setdefault("_column_readers", {})
        key = tuple(columns)
        reader = readers.get(key)
        if reader is None:
            table = state_of(self._ds).table
            assert not isinstance(table, RemoteTable)  # remote tables read through the cache
            reader = readers[key] = TableReader(table.select(list(key)))
        out: TableReader = reader
        return out

    def token_column(self, name: str) -> TokenColumn:
        """Zero-copy views of the ``list<int*>`` column ``name`` of the memory-mapped chunks.

        Positions are view positions: the view's indices mapping is applied on lookup. Over
        a bounded cache of remote chunks, a :class:`PinnedTokenColumn`: the chunks a read
        touches are pinned in the cache (downloaded first if needed) one at a time, and
        their buffers are read as zero-copy views while pinned.
        """
        if name not in self._schema.names:
            raise KeyError(f"no column {name!r}; the rows have columns {self._schema.names}.")
        s = state_of(self._ds)
        mapper = s.indices.lookup if s.indices is not None else None
        if isinstance(s.table, RemoteTable):
            # Read through the cache chunk by chunk: each chunk is pinned while it is read.
            read = functools.partial(self._chunk_columns, s.table.stored_name(name))
            kind = self._schema.field(name).type
            return PinnedTokenColumn(
                read, s.table.offsets, kind, name, mapper=mapper, view_rows=self.num_rows
            )
        return TokenColumn(s.table.column(name), name, mapper=mapper, view_rows=self.num_rows)

    def _chunk_columns(
        self, stored: str, chunks: Sequence[int]
    ) -> Generator[tuple[int, pa.ChunkedArray[Any]], None, None]:
        """The stored column ``stored`` of each remote chunk of ``chunks``, pinned in turn."""
        table = state_of(self._ds).table
        assert isinstance(table, RemoteTable)
        with self._ahead.counting():  # downloads of this read count as this stream's
            for c, chunk in table.read_chunks(chunks):
                yield c, chunk.column(stored)


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

    def __init__(self, upcoming: Upcoming, ix: IndexMap) -> None:
        self._up = upcoming
        self._ix = ix
        self.cursor = upcoming.cursor

    def positions(self, cursor: tuple[int, int], n: int) -> tuple[np.ndarray, tuple[int, int]]:
        pos, after = self._up.positions(cursor, n)
        return self._ix.lookup(pos), after


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
