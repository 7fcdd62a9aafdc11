"""One segment of a ``map`` or ``filter``: run the function over its rows, shape the output.

A map segment yields the record batches to store, coalesced into large batches (few, large
batches keep later ``take`` fast). The output columns are the input columns minus
``remove_columns``, updated in place by the returned columns, plus the new ones at the end (HF
``datasets`` order; ``arrowmix._dataset.mapping.output`` has the rules), or the returned table.
Input columns that are kept unchanged are *not* stored when the input is a plain or
contiguous view (``zero_copy_ok``): the result references them in the parent table, so a map
that adds a small column next to gigabytes of text writes only that column.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from arrowmix._dataset.mapping.call import (
    ASYNC_BATCHES,
    Call,
    Invoker,
    blocks,
    call_input,
    row_args,
)
from arrowmix._dataset.mapping.conform import Conformer
from arrowmix._dataset.mapping.output import Output, RowNames, call_batched, call_rows
from arrowmix._dataset.state import column_names, state_of
from arrowmix._hf.features import cast_to_features, check_labels, label_features
from arrowmix.exceptions import InvalidTypeError, SchemaMismatchError

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = ["ROWS_COLUMN", "MapSegment", "filter_positions"]

#: The column stored when a map's result has no column (its segments still hold the rows).
ROWS_COLUMN = "__arrowmix_rows__"

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
        # Batches with no rows at all combine into no batch: keep one, it carries the schema.
        return pa.Table.from_batches(group).combine_chunks().to_batches() or group[:1]


class MapSegment:
    """The map over view rows ``[start, stop)``; ``columns``/``zero_copy`` known after a block.

    Attributes:
        columns: the result's column order.
        zero_copy: kept input columns referenced from the parent instead of stored.
        stored: the columns written to the segment file.
        rows_known: whether the output has exactly one row per input row.
        unchanged: the function returned nothing (None) and removed no column; fixed by the
            first block, since later blocks must return the same columns.
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
        self._out_keys: list[str] = []
        self._labels: dict[str, Any] = {}
        self._shape: tuple[bool, tuple[str, ...]] = (False, ())
        self.rows_known = not call.batched
        self.unchanged = not call.remove_columns

    def _layout(self, out: Output) -> None:
        removed = set(self._call.remove_columns) | set(out.dropped)
        names = column_names(state_of(self._ds))
        out_keys = list(out.columns)
        # As HF: a removed column the function returns keeps its place among the inputs.
        base = [] if out.whole else [c for c in names if c not in removed or c in out.columns]
        self.columns = base + [k for k in out_keys if k not in base]
        self._kept = [c for c in base if c not in out_keys]
        self.zero_copy = list(self._kept) if self._zero_copy_ok else []
        self.stored = [c for c in self.columns if c not in self.zero_copy]
        if self._call.features is not None:  # every column, in the order of `features`
            target = self._call.features.names
            if sorted(self.columns) == sorted(target):
                self.columns = self.stored = list(target)
        if not self.stored and self.zero_copy:  # keep the row count in the file
            self.stored = [self.zero_copy.pop()]
        elif not self.stored:  # no column at all (every one removed): count the rows
            self.stored = [ROWS_COLUMN]
        self._out_keys = out_keys
        if self._call.features is None:  # returned columns that keep the input's class labels
            self._labels = label_features(state_of(self._ds).table.schema, out_keys)
        self._shape = (out.whole, out.dropped)
        # with features, every column is cast: never the unchanged parent
        self.unchanged = not (out_keys or out.whole or removed) and self._call.features is None
        self.rows_known = self.rows_known or bool(self._kept)

    def _check_shape(self, out: Output, table: pa.Table, where: str) -> None:
        """A later block must return the columns of the first.

        A column it does not return is filled: with the input's values for an input column
        (returned unchanged), with nulls for a row function's new column.
        """
        call = self._call
        extra = [k for k in out.columns if k not in self._out_keys]
        missing = [k for k in self._out_keys if k not in out.columns]
        n_out = out.num_rows if out.num_rows is not None else table.num_rows
        unfillable = [
            k
            for k in missing
            if call.batched and (k not in table.column_names or n_out != table.num_rows)
        ]
        if (out.whole, out.dropped) != self._shape or extra or unfillable:
            raise SchemaMismatchError(
                f"Function {call.name} returned columns {sorted(out.columns)} for {where} but "
                f"{sorted(self._out_keys)} for earlier rows; every batch must return the "
                "same columns."
                + (
                    ""
                    if (out.whole, out.dropped) == self._shape
                    else " (or the same kind of output)"
                )
                + (
                    f" A row function's new column {extra} must appear in the first block "
                    f"({self._call.block_size(0)} rows) of each segment: return it, None where "
                    "there is no value, from every row."
                    if extra and not call.batched
                    else ""
                )
            )
        for k in missing:  # rows that returned no value: the input's, or null
            n = table.num_rows
            out.columns[k] = (
                table.column(k).combine_chunks() if k in table.column_names else pa.nulls(n)
            )

    def _outputs(self, size: int) -> Iterator[tuple[int, pa.Table, Output, dict[str, Any]]]:
        call, invoker = self._call, Invoker(self._call)
        hints: dict[str, Any] = {}
        it = blocks(self._ds, self._start, self._stop, size, call.input_columns)
        group = ASYNC_BATCHES if call.batched and call.is_async else 1
        try:
            while True:
                chunk = list(itertools.islice(it, group))
                if not chunk:
                    return
                if call.batched:
                    outs = call_batched(invoker, chunk, hints)
                else:
                    outs = [call_rows(invoker, chunk[0][0], chunk[0][1], hints)]
                for (lo, table), out in zip(chunk, outs, strict=True):
                    yield lo, table, out, hints
        finally:
            invoker.close()

    def batches(self) -> Iterator[pa.RecordBatch]:
        """The record batches to store, in order."""
        call = self._call
        conform, coalesce = Conformer(call.name), _Coalescer()
        size = call.block_size(self._stop - self._start)
        for lo, table, out, hints in self._outputs(size):
            n_in = table.num_rows
            where = f"rows {lo}..{lo + n_in - 1}"
            if self.columns is None:
                self._layout(out)
            else:
                self._check_shape(out, table, where)
            n_out = out.num_rows if out.num_rows is not None else n_in
            if n_out != n_in and self._kept:
                raise ValueError(
                    f"Batched function {call.name} returned {n_out} rows for the {n_in} input "
                    f"{where}, but input columns {self._kept} would be kept and need one value "
                    f"per output row; drop them with remove_columns={self._kept!r}."
                )
            cols = out.columns
            arrays = [
                cols[c]
                if c in cols
                else pa.nulls(n_out, pa.int8())
                if c == ROWS_COLUMN
                else table.column(c).combine_chunks()
                for c in self.stored
            ]
            batch = pa.RecordBatch.from_arrays(arrays, names=self.stored)
            if call.features is not None:
                batch = cast_to_features(batch, call.features, f"{call.name} on {where}")
            elif self._labels:
                check_labels(
                    batch, state_of(self._ds).table.schema, self._labels, f"{call.name} on {where}"
                )
            for b in conform.push(batch, where, lo if n_out == n_in else None):
                yield from coalesce.add(b)
            if conform.schema is not None and not hints:
                hints.update((f.name, f.type) for f in conform.schema)
            self._on_rows(n_in)
        for b in conform.flush():
            yield from coalesce.add(b)
        yield from coalesce.finish()


def _mask(call: Call, lo: int, n: int, result: Any) -> np.ndarray:
    where = f"the batch of rows {lo}..{lo + n - 1}"
    if isinstance(result, (pa.Array, pa.ChunkedArray)):
        if not pa.types.is_boolean(result.type):
            raise InvalidTypeError(
                f"Batched filter function {call.name} returned {result.type} values for "
                f"{where}; it must return booleans, one per row."
            )
        arrow: Any = result
        mask = np.asarray(arrow.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
    elif isinstance(result, (list, tuple, np.ndarray)) or hasattr(result, "__array__"):
        values = result if isinstance(result, (list, tuple)) else np.asarray(result)
        if isinstance(values, np.ndarray) and values.dtype == bool:
            mask = values.reshape(-1) if values.ndim else values
        else:
            bad = next((x for x in values if not isinstance(x, (bool, np.bool_))), None)
            if bad is not None or (isinstance(values, np.ndarray) and values.ndim != 1):
                raise InvalidTypeError(
                    f"Batched filter function {call.name} returned {type(bad).__name__} "
                    f"values ({bad!r:.40}) for {where}; it must return booleans, one per row "
                    "(write `x > 0`, not `x`, for a test on numbers)."
                )
            mask = np.array(values, dtype=bool)
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
    """View positions in ``[start, stop)`` whose rows the function keeps (sorted int64).

    An ``async def`` function is awaited (concurrently, as in map): its result, not the
    coroutine, decides.
    """
    parts = [np.empty(0, dtype=np.int64)]
    invoker = Invoker(call)
    it = blocks(ds, start, stop, call.block_size(stop - start), call.input_columns)
    group = ASYNC_BATCHES if call.batched and call.is_async else 1
    try:
        while chunk := list(itertools.islice(it, group)):
            if call.batched:
                args = [call_input(call, lo, t) for lo, t in chunk]
                wheres = [f"the batch of rows {lo}..{lo + t.num_rows - 1}" for lo, t in chunk]
                results = invoker.many(args, wheres)
                for (lo, t), result in zip(chunk, results, strict=True):
                    mask = _mask(call, lo, t.num_rows, result)
                    parts.append(np.flatnonzero(mask).astype(np.int64) + lo)
                    on_rows(t.num_rows)
                continue
            lo, table = chunk[0]
            n = table.num_rows
            results = invoker.many(row_args(call, lo, table), RowNames(lo, n))
            mask = np.zeros(n, dtype=bool)
            for i, result in enumerate(results):
                try:
                    mask[i] = bool(result)
                except (TypeError, ValueError) as exc:
                    raise TypeError(
                        f"Filter function {call.name} returned a {type(result).__name__} for "
                        f"row {lo + i}, which is not a boolean: {exc}"
                    ) from exc
            parts.append(np.flatnonzero(mask).astype(np.int64) + lo)
            on_rows(n)
    finally:
        invoker.close()
    return np.concatenate(parts)
