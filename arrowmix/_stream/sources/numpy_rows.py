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

import numpy as np
import pyarrow as pa

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
                self._values(table.column(i)) if self._formats(n) else table.column(i).to_pylist()
                for i, n in enumerate(names)
            ]
            return row_builder(len(names))(*names, *cols)
        finally:
            if enabled:
                gc.enable()

    def _formats(self, name: str) -> bool:
        return self.columns is None or name in self.columns

    def _values(self, col: pa.ChunkedArray[Any]) -> list[Any]:
        t = col.type
        arr: Any = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            fast = self._lists(arr)
            if fast is not None:
                return fast
        elif pa.types.is_fixed_size_list(t) and _numeric(t.value_type) and not col.null_count:
            flat = arr.flatten()
            if not flat.null_count:
                values = self._convert(flat, t.value_type)
                return list(values.reshape(len(arr), t.list_size))
        if _is_list(t):
            return [None if v is None else np.asarray(v) for v in arr.to_pylist()]
        if _numeric(t):
            return list(arr.to_numpy(zero_copy_only=False))
        out: list[Any] = arr.to_pylist()
        return out

    def _lists(self, arr: Any) -> list[Any] | None:
        """Each row a slice of the block's one copy of the values; None: not numeric."""
        vtype = arr.type.value_type
        if not _numeric(vtype):
            return None
        offs = np.asarray(arr.offsets, dtype=np.int64)  # the array's own rows (slice-aware)
        first, last = int(offs[0]), int(offs[-1])
        child = arr.values.slice(first, last - first)
        if child.null_count:
            return None
        values = self._convert(child, vtype)
        starts, stops = (offs[:-1] - first).tolist(), (offs[1:] - first).tolist()
        rows: list[Any] = [values[a:b] for a, b in zip(starts, stops, strict=True)]
        if arr.null_count:
            valid = arr.is_valid().to_numpy(zero_copy_only=False)
            rows = [r if ok else None for r, ok in zip(rows, valid.tolist(), strict=True)]
        return rows

    def _convert(self, values: Any, vtype: pa.DataType) -> np.ndarray:
        """One new contiguous numpy array of ``values`` in HF's dtype."""
        raw = values.to_numpy(zero_copy_only=False)
        dtype: Any = None
        if pa.types.is_integer(vtype):
            dtype = np.int64
        elif pa.types.is_floating(vtype):
            dtype = np.float32
        kw = {"dtype": dtype, **self.kwargs} if dtype is not None else dict(self.kwargs)
        out: np.ndarray = np.array(raw, copy=True, **kw)
        return out


def _numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)


def _is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
