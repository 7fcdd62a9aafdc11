"""One segment of a ``map`` or ``filter``: run the function over its rows, shape the output.

A map segment yields the record batches to store, coalesced into large batches (few, large
batches keep later ``take`` fast). The output columns are the input columns minus
``remove_columns``, updated in place by the returned columns, plus the new ones at the end (HF
``datasets`` order). Input columns that are kept unchanged are *not* stored when the input is
a plain or contiguous view (``zero_copy_ok``): the result references them in the parent
table, so a map that adds a small column next to gigabytes of text writes only that column.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from arrowmix._dataset.apply import (
    Call,
    Conformer,
    blocks,
    call_batched,
    call_input,
    call_rows,
    row_args,
)
from arrowmix.exceptions import SchemaMismatchError

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = ["MapSegment", "filter_positions"]

_OUT_ROWS = 65536
_OUT_BYTES = 64 * 2**20


class _Coalescer:
    """Group small record batches into batches of about ``_OUT_ROWS`` rows."""

    def __init__(self) -> None:
        self._group: list[pa.RecordBatch] = []
        self._rows = self._bytes = 0

    def add(self, batch: pa.RecordBatch) -> list[pa.RecordBatch]:
        self._group.append(batch)
        self._rows += batch.num_rows
        self._bytes += batch.nbytes
        if self._rows >= _OUT_ROWS or self._bytes >= _OUT_BYTES:
            return self.finish()
        return []

    def finish(self) -> list[pa.RecordBatch]:
        group, self._group, self._rows, self._bytes = self._group, [], 0, 0
        if len(group) <= 1:
            return group
        return pa.Table.from_batches(group).combine_chunks().to_batches()


class MapSegment:
    """The map over view rows ``[start, stop)``; ``columns``/``zero_copy`` known after a block.

    Attributes:
        columns: the result's column order.
        zero_copy: kept input columns referenced from the parent instead of stored.
        stored: the columns written to the segment file.
        rows_known: whether the output has exactly one row per input row.
    """

    def __init__(
        self,
        ds: Dataset,
        call: Call,
        start: int,
        stop: int,
        *,
        zero_copy_ok: bool,
        on_rows: Callable[[int], None] = lambda n: None,
    ) -> None:
        self._ds, self._call = ds, call
        self._start, self._stop = start, stop
        self._zero_copy_ok = zero_copy_ok
        self._on_rows = on_rows
        self.columns: list[str] | None = None
        self.zero_copy: list[str] = []
        self.stored: list[str] = []
        self._kept: list[str] = []
        self._out_keys: set[str] = set()
        self.rows_known = not call.batched

    def _layout(self, out_keys: Sequence[str]) -> None:
        base = [c for c in self._ds.column_names if c not in self._call.remove_columns]
        self.columns = base + [k for k in out_keys if k not in base]
        self._kept = [c for c in base if c not in out_keys]
        self.zero_copy = list(self._kept) if self._zero_copy_ok else []
        self.stored = [c for c in self.columns if c not in self.zero_copy]
        if not self.stored and self.zero_copy:  # keep the row count in the file
            self.stored = [self.zero_copy.pop()]
        self._out_keys = set(out_keys)
        self.rows_known = self.rows_known or bool(self._kept)

    def batches(self) -> Iterator[pa.RecordBatch]:
        """The record batches to store, in order."""
        call = self._call
        conform, coalesce = Conformer(call.name), _Coalescer()
        size = call.block_size(self._stop - self._start)
        for lo, table in blocks(self._ds, self._start, self._stop, size):
            n_in = table.num_rows
            where = f"rows {lo}..{lo + n_in - 1}"
            hints = {f.name: f.type for f in conform.schema} if conform.schema else {}
            run = call_batched if call.batched else call_rows
            out = run(call, lo, table, hints)
            if self.columns is None:
                self._layout(list(out))
            elif set(out) != self._out_keys:
                raise SchemaMismatchError(
                    f"Function {call.name} returned columns {sorted(out)} for {where} but "
                    f"{sorted(self._out_keys)} for earlier rows; every batch must return the "
                    "same columns."
                )
            n_out = len(next(iter(out.values()))) if out else n_in
            if n_out != n_in and self._kept:
                raise ValueError(
                    f"Batched function {call.name} returned {n_out} rows for the {n_in} input "
                    f"{where}, but input columns {self._kept} would be kept and need one value "
                    f"per output row; drop them with remove_columns={self._kept!r}."
                )
            arrays = [out[c] if c in out else table.column(c).combine_chunks() for c in self.stored]
            batch = pa.RecordBatch.from_arrays(arrays, names=self.stored)
            for b in conform.push(batch, where):
                yield from coalesce.add(b)
            self._on_rows(n_in)
        for b in conform.flush():
            yield from coalesce.add(b)
        yield from coalesce.finish()


def _mask(call: Call, lo: int, n: int, result: Any) -> np.ndarray:
    where = f"the batch of rows {lo}..{lo + n - 1}"
    if isinstance(result, (pa.Array, pa.ChunkedArray)):
        arrow: Any = result
        mask = np.asarray(arrow.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
    elif isinstance(result, (list, tuple, np.ndarray)) or hasattr(result, "__array__"):
        try:
            mask = np.array([bool(x) for x in result], dtype=bool)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"Batched filter function {call.name} returned non-boolean values for {where}:"
                f" {exc}"
            ) from exc
    else:
        raise TypeError(
            f"Batched filter function {call.name} returned a {type(result).__name__} for "
            f"{where}; it must return a list or array of booleans, one per row."
        )
    if len(mask) != n:
        raise ValueError(
            f"Batched filter function {call.name} returned {len(mask)} values for the {n} "
            f"input rows {lo}..{lo + n - 1}; it must return one boolean per row."
        )
    return mask


def filter_positions(
    ds: Dataset,
    call: Call,
    start: int,
    stop: int,
    on_rows: Callable[[int], None] = lambda n: None,
) -> np.ndarray:
    """View positions in ``[start, stop)`` whose rows the function keeps (sorted int64)."""
    parts = [np.empty(0, dtype=np.int64)]
    for lo, table in blocks(ds, start, stop, call.block_size(stop - start)):
        n = table.num_rows
        if call.batched:
            args = call_input(call, lo, table)
            result = call.invoke(args, f"the batch of rows {lo}..{lo + n - 1}")
            mask = _mask(call, lo, n, result)
        else:
            mask = np.zeros(n, dtype=bool)
            for i, args in enumerate(row_args(call, lo, table)):
                result = call.invoke(args, f"row {lo + i}")
                try:
                    mask[i] = bool(result)
                except (TypeError, ValueError) as exc:
                    raise TypeError(
                        f"Filter function {call.name} returned a {type(result).__name__} for "
                        f"row {lo + i}, which is not a boolean: {exc}"
                    ) from exc
        parts.append(np.flatnonzero(mask).astype(np.int64) + lo)
        on_rows(n)
    return np.concatenate(parts)
