"""Running a user function over rows ``[start, stop)`` of a view: inputs, calls, outputs.

Inputs are read block by block (``batch_size`` rows when batched, 1024 rows otherwise), so
memory stays bounded whatever the range. Batched functions get a lazy dict of columns that
converts a column to Python only when the function reads it, so a function that adds a column
next to a large text column never pays for the text (an unread column goes back to Arrow
untouched). Outputs (Python lists, numpy or pyarrow arrays) become Arrow arrays; the first
block that gives every column a concrete type fixes the segment's schema and later blocks are
cast to it (an all-null column takes its type from a later block).

Errors name the function and the culprit; an exception raised by the function itself keeps
its type and traceback and gains a note with the row or batch it failed on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from arrowmix._dataset import formats
from arrowmix._dataset.residency import PageReleaser
from arrowmix.exceptions import SchemaMismatchError

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = [
    "Call",
    "Conformer",
    "LazyBatch",
    "blocks",
    "call_batched",
    "call_input",
    "call_rows",
    "function_name",
    "row_args",
]

_ROW_BLOCK = 1024
_NULL_BUFFER_BYTES = 64 * 2**20


def function_name(fn: Any) -> str:
    """``module.qualname`` of a function (its repr for other callables)."""
    qual = getattr(fn, "__qualname__", None)
    if qual is None:
        return repr(fn)
    mod = getattr(fn, "__module__", None)
    return f"{mod}.{qual}" if mod else str(qual)


@dataclass(frozen=True)
class Call:
    """The user function and how to call it."""

    function: Callable[..., Any]
    batched: bool = False
    batch_size: int | None = 1000
    with_indices: bool = False
    input_columns: tuple[str, ...] | None = None
    fn_kwargs: Mapping[str, Any] = field(default_factory=dict)
    remove_columns: tuple[str, ...] = ()
    fmt: str | None = None

    @property
    def name(self) -> str:
        return function_name(self.function)

    def block_size(self, rows: int) -> int:
        if not self.batched:
            return _ROW_BLOCK
        return self.batch_size if self.batch_size else max(rows, 1)

    def invoke(self, args: list[Any], where: str) -> Any:
        """Call the function; its exceptions keep their type and gain a note naming ``where``."""
        try:
            return self.function(*args, **self.fn_kwargs)
        except Exception as exc:
            note = f"arrowmix: raised by {self.name} on {where}"
            if hasattr(exc, "add_note"):
                exc.add_note(note)
            else:  # Python 3.10: keep the note where 3.11 would put it
                notes = [*getattr(exc, "__notes__", []), note]
                exc.__notes__ = notes  # type: ignore[attr-defined]  # 3.10 has no add_note
            raise


class LazyBatch(MutableMapping[str, Any]):
    """A dict of columns over an Arrow table; a column becomes a Python list when first read."""

    def __init__(self, table: pa.Table) -> None:
        self._table = table
        self._keys = list(table.column_names)
        self._data: dict[str, Any] = {}

    def __getitem__(self, key: str) -> Any:
        if key in self._data:
            return self._data[key]
        if key not in self._keys:
            raise KeyError(f"Unknown column {key!r}; available columns: {self._keys}.")
        value = self._table.column(key).to_pylist()
        self._data[key] = value
        return value

    def __setitem__(self, key: str, value: Any) -> None:
        self._data[key] = value
        if key not in self._keys:
            self._keys.append(key)

    def __delitem__(self, key: str) -> None:
        if key not in self._keys:
            raise KeyError(key)
        self._keys.remove(key)
        self._data.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._keys  # without converting the column

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._keys))

    def __len__(self) -> int:
        return len(self._keys)

    def untouched(self, key: str) -> pa.ChunkedArray[Any] | None:
        """The Arrow column ``key`` if the function never read nor replaced it."""
        if key in self._data or key not in self._table.column_names:
            return None
        return self._table.column(key)


def blocks(ds: Dataset, start: int, stop: int, size: int) -> Iterator[tuple[int, pa.Table]]:
    """View rows ``[start, stop)`` in tables of ``size`` rows, with bounded resident memory."""
    s = ds._s
    pages = PageReleaser([*s.files, *([s.indices_file] if s.indices_file else [])])
    for lo in range(start, stop, size):
        hi = min(lo + size, stop)
        table = ds._range(lo, hi)
        yield lo, table
        pages.read(table.nbytes)
    pages.release()


def _as_array(fn: str, name: str, value: Any, hint: pa.DataType | None = None) -> pa.Array[Any]:
    """One returned column as an Arrow array (lists, numpy arrays, pyarrow arrays).

    ``hint`` is the column's type in the segment's schema: converting Python values to a known
    type is several times faster than inferring it (a mismatch falls back to inference, and
    the caller's cast reports it).
    """
    if hint is not None and isinstance(value, list) and not pa.types.is_null(hint):
        try:
            typed: pa.Array[Any] = pa.array(value, type=hint)
            return typed
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError):
            pass
    try:
        if isinstance(value, pa.ChunkedArray):
            return value.combine_chunks()
        if isinstance(value, pa.Array):
            return value
        if not isinstance(value, (list, tuple, np.ndarray)) and hasattr(value, "__array__"):
            value = np.asarray(value)  # tensors and other array-likes
        if isinstance(value, np.ndarray):
            if value.ndim == 2 and value.dtype != object:
                n, m = value.shape
                offsets: Any = pa.array(np.arange(0, n * m + 1, max(m, 1), dtype=np.int32)[: n + 1])
                flat: Any = pa.array(value.reshape(-1))
                out: pa.Array[Any] = pa.ListArray.from_arrays(offsets, flat)
                return out
            arr: pa.Array[Any] = pa.array(value.tolist() if value.ndim > 2 else value)
            return arr
        if isinstance(value, (list, tuple)):
            seq: pa.Array[Any] = pa.array(list(value))
            return seq
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        raise SchemaMismatchError(
            f"Column {name!r} returned by {fn} cannot be converted to Arrow: {exc}"
        ) from exc
    raise TypeError(
        f"Column {name!r} returned by batched function {fn} is a {type(value).__name__}; "
        "expected a list, a numpy array or a pyarrow array with one value per output row."
    )


def call_input(call: Call, lo: int, table: pa.Table) -> list[Any]:
    """The positional arguments of a batched call on ``table`` (view rows from ``lo``)."""
    batch: Any = LazyBatch(table) if call.fmt is None else formats.format_batch(table, call.fmt)
    if call.input_columns is not None:
        args: list[Any] = [batch[c] for c in call.input_columns]
    else:
        args = [batch]
    if call.with_indices:
        args.append(list(range(lo, lo + table.num_rows)))
    return args


def row_args(call: Call, lo: int, table: pa.Table) -> list[list[Any]]:
    """The positional arguments of each unbatched call on the rows of ``table``."""
    n = table.num_rows
    if call.input_columns is not None:
        sub = table.select(list(call.input_columns))
        cols = formats.format_batch(sub, call.fmt) if call.fmt != "arrow" else sub.to_pydict()
        per_row = [[cols[c][i] for c in call.input_columns] for i in range(n)]
    else:
        per_row = [[r] for r in formats.format_rows(table, call.fmt)]
    if call.with_indices:
        for i, args in enumerate(per_row):
            args.append(lo + i)
    return per_row


def call_batched(
    call: Call, lo: int, table: pa.Table, hints: Mapping[str, pa.DataType]
) -> dict[str, pa.Array[Any]]:
    n = table.num_rows
    result = call.invoke(call_input(call, lo, table), f"the batch of rows {lo}..{lo + n - 1}")
    if result is None:
        return {}
    if isinstance(result, (pa.Table, pa.RecordBatch)):
        result = dict(zip(result.column_names, result.columns, strict=True))
    if not isinstance(result, Mapping):
        raise TypeError(
            f"Batched function {call.name} returned a {type(result).__name__} for the batch of "
            f"rows {lo}..{lo + n - 1}; it must return a dict of columns (or None)."
        )
    out: dict[str, pa.Array[Any]] = {}
    for key, value in result.items():
        raw = result.untouched(key) if isinstance(result, LazyBatch) else None
        out[str(key)] = (
            raw.combine_chunks()
            if raw is not None
            else _as_array(call.name, key, value, hints.get(key))
        )
    lengths = {k: len(a) for k, a in out.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(
            f"Batched function {call.name} returned columns of unequal lengths {lengths} for "
            f"the batch of rows {lo}..{lo + n - 1}; every column needs one value per row."
        )
    return out


def call_rows(
    call: Call, lo: int, table: pa.Table, hints: Mapping[str, pa.DataType]
) -> dict[str, pa.Array[Any]]:
    keys: list[str] | None = None
    values: dict[str, list[Any]] = {}
    for i, args in enumerate(row_args(call, lo, table)):
        result = call.invoke(args, f"row {lo + i}")
        if result is None:
            result = {}
        elif not isinstance(result, Mapping):
            raise TypeError(
                f"Function {call.name} returned a {type(result).__name__} for row {lo + i}; "
                "it must return a dict of new or updated columns (or None)."
            )
        if keys is None:
            keys = [str(k) for k in result]
            values = {k: [] for k in keys}
        elif len(result) != len(keys) or any(k not in result for k in keys):
            raise SchemaMismatchError(
                f"Function {call.name} returned columns {sorted(result)} for row {lo + i} but "
                f"{sorted(keys)} for earlier rows; every row must return the same columns."
            )
        for k in keys:
            values[k].append(result[k])
    return {k: _as_array(call.name, k, v, hints.get(k)) for k, v in values.items()}


class Conformer:
    """Fix the output schema at the first block where no column is all-null; cast later ones."""

    def __init__(self, fn: str) -> None:
        self._fn = fn
        self.schema: pa.Schema | None = None
        self._pending: list[pa.RecordBatch] = []
        self._pending_bytes = 0

    def push(self, batch: pa.RecordBatch, where: str) -> list[pa.RecordBatch]:
        if self.schema is not None:
            return [self._cast(batch, where)]
        self._pending.append(batch)
        self._pending_bytes += batch.nbytes
        merged = self._merged()
        if self._pending_bytes < _NULL_BUFFER_BYTES and any(
            pa.types.is_null(f.type) for f in merged
        ):
            return []
        return self.flush()

    def flush(self) -> list[pa.RecordBatch]:
        if self.schema is None and self._pending:
            self.schema = self._merged()
        out = [self._cast(b, "") for b in self._pending]
        self._pending, self._pending_bytes = [], 0
        return out

    def _merged(self) -> pa.Schema:
        first = self._pending[0].schema
        fields = []
        for i, f in enumerate(first):
            t = next(
                (
                    b.schema.field(i).type
                    for b in self._pending
                    if not pa.types.is_null(b.schema.field(i).type)
                ),
                f.type,
            )
            fields.append(pa.field(f.name, t))
        return pa.schema(fields)

    def _cast(self, batch: pa.RecordBatch, where: str) -> pa.RecordBatch:
        assert self.schema is not None
        if batch.schema.equals(self.schema):
            return batch
        cols = []
        for f, col in zip(self.schema, batch.columns, strict=True):
            if col.type == f.type:
                cols.append(col)
                continue
            try:
                cols.append(col.cast(f.type))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                hint = (
                    " The column was all-null in the first 64 MiB of output, so its type was"
                    " fixed as null."
                    if pa.types.is_null(f.type)
                    else ""
                )
                raise SchemaMismatchError(
                    f"Column {f.name!r} returned by {self._fn} is {col.type} for "
                    f"{where or 'a later batch'} but {f.type} in the first batch, and cannot be "
                    f"cast: {exc}.{hint}"
                ) from exc
        return pa.RecordBatch.from_arrays(cols, schema=self.schema)
