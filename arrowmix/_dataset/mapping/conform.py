"""One schema per map segment: fixed by the first block, later blocks cast without loss.

The first block in which no column is all-null fixes the segment's schema (an all-null column
takes its type from a later block, up to 64 MiB of buffered output). Later blocks are cast to
it by :func:`arrowmix._storage.cast.lossless_cast`: ``10.0 -> 10`` is fine, ``10.5 -> 10``,
``5 -> true`` or ``10 -> "10"`` raise :class:`~arrowmix.exceptions.SchemaMismatchError`
naming the column, both types and the first row whose value would change.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from arrowmix._storage.cast import first_lossy_row, lossless_cast
from arrowmix.exceptions import SchemaMismatchError

__all__ = ["Conformer", "lossy_cast_error"]

_NULL_BUFFER_BYTES = 64 * 2**20


def lossy_cast_error(
    column: str,
    arr: pa.Array[Any] | pa.ChunkedArray[Any],
    target: pa.DataType,
    why: str,
    where: str,
    first_row: int | None = None,
) -> SchemaMismatchError:
    """The error for a column of ``where`` that cannot become ``target`` without loss.

    ``where`` describes the rows (``"tests.fn for rows 10..19"``); the first offending value
    is named with its row (``first_row`` + position, when output rows follow input rows).
    """
    i = first_lossy_row(arr, target)
    culprit = ""
    if i is not None:
        row = f"row {first_row + i}" if first_row is not None else f"output row {i} there"
        culprit = f" ({row} is {arr[i].as_py()!r})"
    hint = (
        " The column was all-null in the first 64 MiB of output, so its type was fixed as null."
        if pa.types.is_null(target)
        else ""
    )
    return SchemaMismatchError(
        f"Column {column!r} returned by {where}{culprit} is {arr.type} but {target} in the "
        f"first batch, and casting it would change values: {why}. Return one type for the "
        f"column in every row (e.g. float(...) for numbers that may have a fraction).{hint}"
    )


class Conformer:
    """Fix the output schema at the first block where no column is all-null; cast later ones."""

    def __init__(self, fn: str) -> None:
        self._fn = fn
        self.schema: pa.Schema | None = None
        self._pending: list[tuple[pa.RecordBatch, str, int | None]] = []
        self._pending_bytes = 0

    def push(
        self, batch: pa.RecordBatch, where: str, first_row: int | None = None
    ) -> list[pa.RecordBatch]:
        """The batches ready to store after ``batch``.

        ``where`` describes its rows for errors; ``first_row`` is the row of its first value
        when output rows follow input rows.
        """
        if self.schema is not None:
            return [self._cast(batch, where, first_row)]
        self._pending.append((batch, where, first_row))
        self._pending_bytes += batch.nbytes
        merged = self._merged()
        if self._pending_bytes < _NULL_BUFFER_BYTES and any(
            pa.types.is_null(f.type) for f in merged
        ):
            return []
        return self.flush()

    def flush(self) -> list[pa.RecordBatch]:
        """Fix the schema (if not yet) and return the buffered batches, cast to it."""
        if self.schema is None and self._pending:
            self.schema = self._merged()
        out = [self._cast(b, where, first) for b, where, first in self._pending]
        self._pending, self._pending_bytes = [], 0
        return out

    def _merged(self) -> pa.Schema:
        first = self._pending[0][0].schema
        fields = []
        for i, f in enumerate(first):
            t = next(
                (
                    b.schema.field(i).type
                    for b, _, _ in self._pending
                    if not pa.types.is_null(b.schema.field(i).type)
                ),
                f.type,
            )
            fields.append(pa.field(f.name, t))
        return pa.schema(fields)

    def _cast(self, batch: pa.RecordBatch, where: str, first_row: int | None) -> pa.RecordBatch:
        assert self.schema is not None
        if batch.schema.equals(self.schema):
            return batch
        cols = []
        for f, col in zip(self.schema, batch.columns, strict=True):
            cast, why = lossless_cast(col, f.type)
            if why is not None:
                raise lossy_cast_error(
                    f.name, col, f.type, why, f"{self._fn} for {where}", first_row
                )
            cols.append(cast)
        return pa.RecordBatch.from_arrays(cols, schema=self.schema)
