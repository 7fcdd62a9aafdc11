"""The bridge from a Dataset to the stream layer: a random-access row source over a view.

The stream layer never imports the Dataset layer; it reads rows through the ``RowSource``
protocol (``num_rows``, ``schema``, ``fingerprint``, ``chunk_offsets()``, ``take``). Positions
are positions in the *view* (the indices mapping is applied here), and ``chunk_offsets`` follow
the storage so that ``shuffle="chunks"`` reads whole files: file boundaries for a plain or
range view, fixed blocks for a view through an index array (its rows are scattered anyway).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from arrowmix._stream.sources import ArrowSource, from_row_source

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = ["DatasetRows", "to_stream"]

_SCATTERED_BLOCK = 65536


class DatasetRows:
    """A :class:`~arrowmix._stream.row_source.RowSource` over a Dataset view."""

    def __init__(self, ds: Dataset) -> None:
        self._ds = ds
        self._columns = ds._format().read_columns()
        schema = ds.schema
        if self._columns is not None:
            schema = pa.schema([schema.field(c) for c in self._columns])
        self._schema = schema

    @property
    def num_rows(self) -> int:
        return self._ds.num_rows

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    @property
    def fingerprint(self) -> str:
        return self._ds.fingerprint

    def chunk_offsets(self) -> np.ndarray:
        s = self._ds._s
        n = self.num_rows
        base = np.asarray(s.file_offsets or (0, s.table.num_rows), dtype=np.int64)
        if s.indices is None:
            return base
        if s.indices.is_range:
            inner = base[(base > s.indices.start) & (base < s.indices.stop)] - s.indices.start
            return np.unique(np.concatenate([[0], inner, [n]])).astype(np.int64)
        return np.unique(np.r_[np.arange(0, n, _SCATTERED_BLOCK), n]).astype(np.int64)

    def take(self, positions: np.ndarray) -> pa.Table:
        return self._ds._gather(np.asarray(positions, dtype=np.int64), self._columns)


def to_stream(ds: Dataset, **kwargs: Any) -> ArrowSource:
    """``from_row_source(DatasetRows(ds), **kwargs)``."""
    return from_row_source(DatasetRows(ds), **kwargs)
