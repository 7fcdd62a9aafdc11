"""Rows with numpy values: what ``Dataset.with_format("numpy").to_stream()`` yields.

:class:`NumpyRows` turns a block of rows (the table a source gathers for ``block_rows``
rows) into row dicts the way HF ``datasets``' numpy format gives rows: a ``list<int*>``
column's row is an ``int64`` array, a ``list<float*>`` column's row a ``float32`` array
(``format_kwargs`` such as ``dtype=`` override both), a scalar column's value a numpy scalar
of the column's type, a string a ``str``.

Each list column is converted once per block: its values become one new contiguous array
(the only copy, never a Python list of ids), and every row is a slice of it. The rows stay
valid when the chunks they were read from are evicted from a bounded remote cache, since
they do not view the chunks.
"""

from __future__ import annotations

import gc
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from arrowmix._stream.sources.numpy_values import row_values
from arrowmix._stream.sources.rows import Row, row_builder

__all__ = ["NumpyRows"]


class NumpyRows:
    """The row format of a numpy-formatted stream: ``NumpyRows()(table)`` -> row dicts.

    Args:
        columns: the columns to format (``None``: all); the others come as Python objects
            (HF's ``output_all_columns``).
        kwargs: HF's ``format_kwargs``, passed to ``np.asarray`` for numeric lists.

    Example:
        >>> import pyarrow as pa
        >>> t = pa.table({"ids": pa.array([[1, 2], [3]], pa.list_(pa.int32())), "n": [7, 8]})
        >>> rows = NumpyRows()(t)
        >>> rows[0]["ids"], rows[1]["ids"].dtype, rows[1]["n"]
        (array([1, 2]), dtype('int64'), np.int64(8))
    """

    def __init__(
        self, columns: Sequence[str] | None = None, kwargs: Mapping[str, Any] | None = None
    ) -> None:
        self.columns = None if columns is None else tuple(columns)
        self.kwargs = dict(kwargs or {})

    def describe(self) -> dict[str, Any]:
        """What enters the pipeline's fingerprint."""
        out: dict[str, Any] = {"type": "numpy"}
        if self.columns is not None:
            out["columns"] = list(self.columns)
        if self.kwargs:
            out["format_kwargs"] = {k: str(v) for k, v in sorted(self.kwargs.items())}
        return out

    def __call__(self, table: pa.Table) -> list[Row]:
        names = table.column_names
        if not names:
            return [{} for _ in range(table.num_rows)]
        enabled = gc.isenabled()
        gc.disable()  # see table_to_rows: row dicts cannot form cycles
        try:
            cols = [
                self._values(table.column(i), n)
                if self._formats(n)
                else table.column(i).to_pylist()
                for i, n in enumerate(names)
            ]
            return row_builder(len(names))(*names, *cols)
        finally:
            if enabled:
                gc.enable()

    def _formats(self, name: str) -> bool:
        return self.columns is None or name in self.columns

    def _values(self, col: pa.ChunkedArray[Any], name: str) -> list[Any]:
        return row_values(col, self.kwargs, name)
