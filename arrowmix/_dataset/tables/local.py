"""The local kind of :class:`~arrowmix._dataset.tables.protocol.Table`: an Arrow table.

(The map engine reads it too: the stream layer is imported only when a stream reads it.)

Chunk files and cache files opened memory-mapped, or a table built in memory. Reads are
zero-copy slices and batch-aware gathers (:class:`~arrowmix._dataset.reader.TableReader`,
which this class extends); a stream over mapped files reads pages ahead
(:class:`~arrowmix._dataset.page_ahead.PageAhead`); token columns are zero-copy views of the
buffers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from arrowmix._dataset.reader import TableReader

if TYPE_CHECKING:
    from arrowmix._dataset.page_ahead import PageAhead
    from arrowmix._dataset.tables.protocol import Mapper
    from arrowmix._stream.row_source import ListSpec
    from arrowmix._stream.sources import Upcoming
    from arrowmix._stream.tokens import TokenColumn

__all__ = ["LocalReading", "LocalTable"]


class LocalTable(TableReader):
    """A ``pyarrow.Table`` (memory-mapped or in memory) as a :class:`Table`."""

    @property
    def num_columns(self) -> int:
        return self.table.num_columns

    @property
    def column_names(self) -> list[str]:
        return list(self.table.column_names)

    @property
    def schema(self) -> pa.Schema:
        return self.table.schema

    @property
    def nbytes(self) -> int:
        return int(self.table.nbytes)

    def select(self, columns: Sequence[str]) -> LocalTable:
        return LocalTable(self.table.select(list(columns)))

    def drop_columns(self, columns: Sequence[str]) -> LocalTable:
        return LocalTable(self.table.drop_columns(list(columns)))

    def rename_columns(self, names: Sequence[str]) -> LocalTable:
        return LocalTable(self.table.rename_columns(list(names)))

    def replace_schema_metadata(self, metadata: Any = None) -> LocalTable:
        return LocalTable(self.table.replace_schema_metadata(metadata))

    @property
    def arrow(self) -> pa.Table:
        return self.table

    @property
    def storage_bytes(self) -> int:
        return int(self.table.get_total_buffer_size())

    by_reference = True
    map_joins = False
    layout_tag = None
    bounded = False
    opened_as = "an Arrow table"

    def pickled(self) -> Any:
        """A reference into the mapped files, or the table itself (not file-backed)."""
        from arrowmix._storage.mapped import table_ref

        ref = table_ref(self.table)
        return ref if ref is not None else self.table

    def reading(self, read_ahead: int | str | None, mapper: Mapper) -> LocalReading:
        return LocalReading(self, mapper)


class LocalReading:
    """A stream's reading of a :class:`LocalTable`: page read-ahead over mapped files."""

    def __init__(self, table: LocalTable, mapper: Mapper) -> None:
        self.table = table
        self.hooks: tuple[str, ...] = ("read_ahead",) if table.mapped else ()
        self._mapper = mapper
        self._pages: PageAhead | None = None
        self._readers: dict[tuple[str, ...], TableReader] = {}

    def read_ahead(self, upcoming: Upcoming) -> None:
        """Read ahead the record batches the next rows crowd (see PageAhead)."""
        if upcoming.ranges_announced:  # the order asks for its exact ranges (``prefetch``)
            return
        if self._pages is None:
            from arrowmix._dataset.page_ahead import PageAhead

            self._pages = PageAhead(self.table, self._mapper)
        self._pages(upcoming)

    def stats(self) -> dict[str, Any]:
        return {}

    def close(self) -> None:
        self._pages = None

    def counting(self) -> AbstractContextManager[Any]:
        return contextlib.nullcontext()

    def _reader(self, columns: Sequence[str]) -> TableReader:
        """A reader of ``columns`` (kept for the next reads)."""
        key = tuple(columns)
        reader = self._readers.get(key)
        if reader is None:
            reader = self._readers[key] = TableReader(self.table.table.select(list(key)))
        return reader

    def take_column(self, positions: np.ndarray, name: str) -> pa.ChunkedArray[Any]:
        column: pa.ChunkedArray[Any] = self._reader([name]).take(positions).column(0)
        return column

    def take_lists(
        self, positions: np.ndarray, others: Sequence[str], lists: Mapping[str, ListSpec]
    ) -> tuple[pa.Table | None, dict[str, list[Any]]]:
        from arrowmix._stream.tokens import TokenColumn

        values: dict[str, list[Any]] = {}
        for name, (dtype, convert) in lists.items():
            try:
                column = TokenColumn(self.table.table.column(name), name)
                values[name] = column.gather_each(positions, dtype)
            except ValueError:  # null documents or ids: converted as Arrow rows
                values[name] = convert(self._reader([name]).take(positions).column(0))
        return (self._reader(others).take(positions) if others else None), values

    def token_column(self, name: str, mapper: Mapper, view_rows: int) -> TokenColumn:
        """Zero-copy views of the column's buffers."""
        from arrowmix._stream.tokens import TokenColumn

        return TokenColumn(self.table.table.column(name), name, mapper=mapper, view_rows=view_rows)

    def prefetch_ranges(
        self, starts: np.ndarray, stops: np.ndarray, columns: Sequence[str]
    ) -> None:
        """Ask the kernel for the pages of ``columns`` of those rows now."""
        self._reader(columns).prefetch_ranges(starts, stops)
