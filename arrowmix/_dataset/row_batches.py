"""Rows and record batches given to ``write_chunks``, as batches of one schema, values kept.

Each block of row dicts is read on its own, with every key any of its rows has (pyarrow's
``from_pylist`` would keep only the first row's keys). The first block where no column is
all-null fixes the corpus's schema, as for ``map`` (``arrowmix._dataset.mapping.conform``): an
all-null column, or one of empty lists, takes its type from a later block (up to 64 MiB of rows
are held back for it); later blocks are cast to it when no value changes (``2.0`` into an
``int64`` column, ``3`` into a ``double`` one), and otherwise raise
:class:`~arrowmix.exceptions.SchemaMismatchError` naming the column, both types and the row.
No chunk is rewritten once written: all chunks of a corpus share one schema.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa

from arrowmix._dataset.inputs.py_kinds import first_mixed, kind_error, kinds_may_mix
from arrowmix._dataset.mapping.conform import Conformer
from arrowmix._storage.cast import ARROW_CAST_ERRORS
from arrowmix.exceptions import InvalidTypeError, SchemaMismatchError

__all__ = ["column_array", "conformed", "rows_batch"]

_CONVERT_ERRORS = (*ARROW_CAST_ERRORS, OverflowError, UnicodeEncodeError)


def _first_failing(values: Sequence[Any]) -> int:
    """The length of the shortest prefix of ``values`` that pyarrow cannot convert, minus 1."""
    lo, hi = 0, len(values)  # prefix lo converts, prefix hi does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            pa.array(values[:mid])
        except _CONVERT_ERRORS:
            hi = mid
        else:
            lo = mid
    return hi - 1


def column_array(name: str, values: list[Any], start: int) -> pa.Array[Any]:
    """``values`` (rows ``start..``) as one Arrow array; an error names the column and row."""
    try:
        arr: pa.Array[Any] = pa.array(values)
    except _CONVERT_ERRORS as exc:
        i = _first_failing(values)
        bad = values[i]
        if isinstance(exc, OverflowError) or (isinstance(bad, int) and not -(2**63) <= bad < 2**63):
            raise SchemaMismatchError(
                f"Column {name!r}: row {start + i} holds the integer {bad!r:.40}, beyond Arrow's "
                "64-bit int64 (-2**63 .. 2**63 - 1). Store such numbers as str or float, or "
                "write a pyarrow Table with a uint64 column for values up to 2**64 - 1."
            ) from exc
        raise SchemaMismatchError(
            f"Column {name!r}: row {start + i} ({type(bad).__name__} {bad!r:.60}) does not fit "
            f"the values of the rows before it ({exc}). Give the column one type in every row."
        ) from exc
    _check_kinds(name, values, arr.type, start)
    return arr


def _check_kinds(name: str, values: Sequence[Any], t: pa.DataType, start: int) -> None:
    i = first_mixed(values, t)
    if i is not None:
        raise SchemaMismatchError(
            f"Column {name!r}: row {start + i} holds {kind_error(values, t, i)}. Give the "
            "column one type in every row."
        )


def rows_batch(rows: Sequence[Any], start: int) -> pa.RecordBatch:
    """Rows ``start..`` (dicts) as a record batch with every key any of them has.

    Raises:
        TypeError: a row is not a dict (its number is named).
        SchemaMismatchError: a column's values cannot be one Arrow type, or an integer is
            beyond 64 bits (the column and the row are named).
    """
    first = rows[0]
    same = isinstance(first, Mapping)
    for i, r in enumerate(rows):
        if not isinstance(r, Mapping):
            raise InvalidTypeError(
                f"Rows must be dicts; row {start + i} is {type(r).__name__}: {r!r:.80}."
            )
        if same and r.keys() != first.keys():
            same = False
    names = list(first) if same else list(dict.fromkeys(k for r in rows for k in r))
    for key in names:
        if not isinstance(key, str):
            raise InvalidTypeError(
                f"Column names must be strings; rows from {start} have the key {key!r} "
                f"({type(key).__name__})."
            )
    if same:  # every row has the same keys: pyarrow's conversion, checked
        try:
            batch = pa.RecordBatch.from_pylist(list(rows))
        except _CONVERT_ERRORS:
            pass  # named below
        else:
            for name, col in zip(batch.schema.names, batch.columns, strict=True):
                if kinds_may_mix(col.type):
                    _check_kinds(name, [r[name] for r in rows], col.type, start)
            return batch
    cols = {n: column_array(n, [r.get(n) for r in rows], start) for n in names}
    return pa.RecordBatch.from_pydict(cols)


def _aligned(batch: pa.RecordBatch, names: list[str], start: int) -> pa.RecordBatch:
    """``batch`` with the columns ``names`` in that order (a missing one all-null)."""
    if batch.schema.names == names:
        return batch
    extra = [n for n in batch.schema.names if n not in names]
    if extra:
        raise SchemaMismatchError(
            f"Rows {start}..{start + batch.num_rows - 1} have column(s) {extra} that the first "
            f"rows did not have; known columns: {names}. Give every column a value (None) in "
            "the first rows."
        )
    have = set(batch.schema.names)
    cols = [batch.column(n) if n in have else pa.nulls(batch.num_rows) for n in names]
    return pa.RecordBatch.from_arrays(cols, names=names)


def conformed(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``batches`` cast to one schema without changing a value (see the module docstring)."""
    conform = Conformer("write_chunks", verb="given to")
    names: list[str] | None = None
    meta = None
    start = 0
    for batch in batches:
        if names is None:
            names, meta = batch.schema.names, batch.schema.metadata
        n = batch.num_rows
        batch = _aligned(batch, names, start)
        for b in conform.push(batch, f"rows {start}..{start + n - 1}", start):
            yield b.replace_schema_metadata(meta)
        start += n
    for b in conform.flush():
        yield b.replace_schema_metadata(meta)
