"""A Dataset view as a random-access row source: :class:`DatasetRows`.

The stream layer never imports the Dataset layer; it reads rows through the ``RowSource``
protocol (``num_rows``, ``schema``, ``fingerprint``, ``chunk_offsets()``, ``take``). Positions
are positions in the *view* (the indices mapping is applied here), and ``chunk_offsets`` follow
the storage so that ``shuffle="chunks"`` reads whole files: file boundaries for a plain or
range view, fixed blocks for a view through an index array (its rows are scattered anyway).
The rows read the view's state through :mod:`arrowmix._dataset.state`, never through the
``Dataset`` object, and its table through the :class:`~arrowmix._dataset.tables.Table`
protocol (a stream's reading of it: :class:`~arrowmix._dataset.tables.TableReading`);
:mod:`arrowmix._dataset.to_stream` hands them to the stream layer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from arrowmix._dataset.state import gather, layout_tag, num_rows, state_of
from arrowmix._dataset.tables import TableReading
from arrowmix._fingerprint.hasher import hash_value
from arrowmix._stream.row_source import ListSpec
from arrowmix._stream.sources import Upcoming
from arrowmix._stream.tokens import TokenColumn

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = ["DatasetRows"]

_SCATTERED_BLOCK = 65536


class DatasetRows:
    """A :class:`~arrowmix._stream.row_source.RowSource` over a Dataset view.

    The optional members ``read_ahead``, ``stats`` and ``close`` are set when the table's
    reading has them (:attr:`TableReading.hooks`): over remote chunks read through a bounded
    cache the stream tells it where it stands before every block, and it downloads the
    chunks that come next; over memory-mapped files it asks for the pages ahead.
    """

    def __init__(self, ds: Dataset, read_ahead: int | str | None = None) -> None:
        self._ds = ds
        self._columns = state_of(ds).format.read_columns()
        schema = state_of(ds).table.schema.remove_metadata()  # Dataset.schema
        if self._columns is not None:
            schema = pa.schema([schema.field(c) for c in self._columns])
        self._schema = schema
        self._read_ahead_arg = read_ahead
        reading = self._reading()  # checks ``read_ahead`` now
        for hook in reading.hooks:
            setattr(self, hook, getattr(self, f"_{hook}"))

    def _reading(self) -> TableReading:
        """The table's reading for this source (built once per process: not pickled)."""
        reading = self.__dict__.get("_held")
        if reading is None:
            s = state_of(self._ds)
            mapper = s.indices.lookup if s.indices is not None else None
            reading = self._held = s.reader.reading(self._read_ahead_arg, mapper)
        return reading

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_held"}  # rebuilt on use

    def _read_ahead(self, upcoming: Upcoming) -> None:
        self._reading().read_ahead(upcoming)

    def _stats(self) -> dict[str, Any]:
        return self._reading().stats()

    def _close(self) -> None:
        self._reading().close()

    @property
    def num_rows(self) -> int:
        return num_rows(state_of(self._ds))

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    @property
    def fingerprint(self) -> str:
        """The dataset's fingerprint, with its chunk layout where that does not fix it."""
        s = state_of(self._ds)
        tag = layout_tag(s)
        if tag is None:
            return s.fingerprint
        return hash_value([s.fingerprint, tag, self.chunk_offsets().tolist()])

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

    def _base(self, positions: np.ndarray) -> np.ndarray:
        """Table positions of view ``positions``."""
        ix = state_of(self._ds).indices
        pos = np.asarray(positions, dtype=np.int64)
        return ix.lookup(pos) if ix is not None else pos

    def take(self, positions: np.ndarray) -> pa.Table:
        with self._reading().counting():  # reads of this call count as this stream's
            return gather(state_of(self._ds), np.asarray(positions, dtype=np.int64), self._columns)

    def take_column(self, positions: np.ndarray, name: str) -> pa.ChunkedArray[Any]:
        """The column ``name`` at view ``positions``, gathered alone (not whole rows)."""
        if name not in self._schema.names:
            raise KeyError(f"no column {name!r}; the rows have columns {self._schema.names}.")
        return self._reading().take_column(self._base(positions), name)

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
        others = [n for n in self._schema.names if n not in lists]
        return self._reading().take_lists(self._base(positions), others, lists)

    def prefetch(self, starts: np.ndarray, stops: np.ndarray) -> None:
        """Ask for the storage of view rows ``[starts[i], stops[i])`` now.

        A hint from streams that know their next row ranges (``shuffle="blocks"``), for a
        view that is the table or a range of it; a no-op for a scattered view (and for the
        kinds whose reading does not prefetch).
        """
        s = state_of(self._ds)
        if s.indices is not None and not s.indices.is_range:
            return
        shift = 0 if s.indices is None else s.indices.start
        lo, hi = np.asarray(starts, dtype=np.int64), np.asarray(stops, dtype=np.int64)
        self._reading().prefetch_ranges(lo + shift, hi + shift, self._schema.names)

    def token_column(self, name: str) -> TokenColumn:
        """The ``list<int*>`` column ``name`` as a token column over view positions.

        Over memory-mapped chunks, zero-copy views of their buffers; over a bounded cache
        of remote chunks, a ``PinnedTokenColumn``: the chunks a read touches are pinned in
        the cache (downloaded first if needed) one at a time, and their buffers are read as
        zero-copy views while pinned. The view's indices mapping is applied on lookup.
        """
        if name not in self._schema.names:
            raise KeyError(f"no column {name!r}; the rows have columns {self._schema.names}.")
        s = state_of(self._ds)
        mapper = s.indices.lookup if s.indices is not None else None
        return self._reading().token_column(name, mapper, self.num_rows)
