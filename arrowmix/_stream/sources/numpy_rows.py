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

A stream reads its blocks through :meth:`NumpyRows.reader`: a ``list<int*>`` column without
nulls whose values the format's dtype holds exactly (any integer type but ``uint64``, and a
``dtype=`` that every value of the type casts to safely) is copied straight out of the
storage buffers into new arrays of that dtype, converting while copying (the row source's
``take_lists``: over a bounded remote cache, in the same pass over the pinned chunks as the
other columns), instead of being taken as Arrow rows first and converted after. Every other
column, and the rows of a chunk holding nulls in the column, go the table way; the values are
the same either way (HF converts each row alone).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from arrowmix._storage.gcpause import gc_paused
from arrowmix._stream.row_source import ListSpec, RowSource, optional_member
from arrowmix._stream.sources.numpy_values import row_values
from arrowmix._stream.sources.rows import Row, row_builder
from arrowmix._stream.tokens.column import is_token_type

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
        return self.build(table.num_rows, names, [table.column(n) for n in names])

    def reader(self, rows: RowSource) -> Callable[[np.ndarray], list[Row]]:
        """``read(positions)``: the row dicts at ``positions`` of ``rows`` (module docstring).

        Example:
            >>> from arrowmix._stream.row_source import TableRowSource
            >>> t = pa.table({"ids": pa.array([[1, 2], [3]], pa.list_(pa.int32()))})
            >>> NumpyRows().reader(TableRowSource(t))(np.array([1, 0]))
            [{'ids': array([3])}, {'ids': array([1, 2])}]
        """
        return _Reader(self, rows)

    def build(self, n: int, names: Sequence[str], columns: Sequence[Any]) -> list[Row]:
        """The ``n`` row dicts of ``columns``: Arrow columns, or lists of row values."""
        if not names:
            return [{} for _ in range(n)]
        with gc_paused():  # see table_to_rows: row dicts cannot form cycles
            cols = [
                c if isinstance(c, list) else self.convert(c, k)
                for k, c in zip(names, columns, strict=True)
            ]
            return row_builder(len(names))(*names, *cols)

    def direct_dtype(self, field: pa.Field[Any]) -> np.dtype[Any] | None:
        """The dtype of ``field``'s row arrays if its values can be copied out of storage.

        None when the column is converted as Arrow rows instead (see the module docstring).
        """
        t = field.type
        if not (self._formats(field.name) and is_token_type(t)):
            return None
        value = np.dtype(str(t.value_type))
        if value == np.uint64:  # HF keeps values above 2**63 as uint64: decided per block
            return None
        if not self.kwargs:
            return np.dtype(np.int64)
        if set(self.kwargs) != {"dtype"} or self.kwargs["dtype"] is None:
            return None
        try:
            wanted = np.dtype(self.kwargs["dtype"])
        except TypeError:
            return None  # the table way reports it
        return wanted if np.can_cast(value, wanted, casting="safe") else None

    def _formats(self, name: str) -> bool:
        return self.columns is None or name in self.columns

    def convert(self, col: pa.ChunkedArray[Any], name: str) -> list[Any]:
        """Each row's value of the column ``name``: numpy values if it is formatted."""
        if not self._formats(name):
            return col.to_pylist()
        return row_values(col, self.kwargs, name)


class _Reader:
    """A stream's reads of numpy rows out of one row source (:meth:`NumpyRows.reader`)."""

    def __init__(self, fmt: NumpyRows, rows: RowSource) -> None:
        self._fmt = fmt
        self._rows = rows
        self._names: list[str] = list(rows.schema.names)
        self._take_lists = optional_member(rows, "take_lists")
        self._lists: dict[str, ListSpec] = {}  # the columns copied out of storage
        for field in rows.schema if self._take_lists is not None else ():
            dtype = fmt.direct_dtype(field)
            if dtype is not None:
                self._lists[field.name] = (dtype, functools.partial(fmt.convert, name=field.name))

    def __call__(self, positions: np.ndarray) -> list[Row]:
        pos = np.asarray(positions, dtype=np.int64)
        if not self._lists or self._take_lists is None:
            return self._fmt(self._rows.take(pos))
        table, lists = self._take_lists(pos, self._lists)
        columns = [lists[n] if n in lists else table.column(n) for n in self._names]
        return self._fmt.build(len(pos), self._names, columns)
