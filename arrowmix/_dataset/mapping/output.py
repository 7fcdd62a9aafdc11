"""What a map function's calls on one block return, as the block's update (HF semantics).

The output of a map is the input columns minus ``remove_columns``, updated by what the
function returns, plus the new columns at the end, as in HF ``datasets``:

- a returned dict updates or adds its columns; a returned column listed in
  ``remove_columns`` is kept (the function produced it);
- a function that returns its own input (``batch["ids"] = ...; return batch``) updates the
  columns it read or assigned; ``remove_columns`` still removes theirs (the run_clm idiom);
- on an unformatted dataset, input columns the function assigned (``row["a"] = 1``) are
  updated even when it returns another dict, and input columns it deleted are removed;
- a returned ``pyarrow.Table``/``RecordBatch`` (or pandas/polars ``DataFrame``) is the whole
  output: no input column is kept, ``remove_columns`` has nothing to do. A row function may
  return a one-row table;
- on an ``"arrow"``, ``"pandas"`` or ``"polars"`` formatted dataset (the function gets
  tables or data frames, not dicts), what it returns is the whole output, as in HF (which
  merges the input columns only into a dict input): no input column is kept;
- ``None`` updates nothing;
- a row function that returns a column for some rows only gets the input value (an input
  column) or null (a new column) for the others.

With ``try_original_type`` (the default, as in HF), a returned column that has an input
column's name takes the input's type back when no value changes (floats ``1.0`` for an
``int64`` column stay ``int64``); later blocks are cast to the segment's schema without loss
(``arrowmix._dataset.mapping.conform``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from arrowmix._dataset.formats import FRAMES
from arrowmix._dataset.mapping.arrays import as_array, check_key, is_table_like, table_of
from arrowmix._dataset.mapping.call import Call, Invoker, LazyBatch, call_input, row_args
from arrowmix._dataset.mapping.optimized import optimized
from arrowmix._storage.cast import ARROW_CAST_ERRORS, lossless_cast
from arrowmix._storage.mixed_json import encode_as, has_json, mixed_array
from arrowmix.exceptions import SchemaMismatchError

__all__ = ["Output", "RowNames", "call_batched", "call_rows"]

#: Formats whose batches are tables, not dicts: HF keeps no input column beside what the
#: function returns (it merges the inputs only when they are a mapping).
_WHOLE_OUTPUT = ("arrow", *FRAMES)


@dataclass
class Output:
    """One block's update: the columns to write, and what it does to the input columns.

    Attributes:
        columns: returned (or changed) columns, in order.
        whole: the function returned a table, which is the whole output.
        dropped: input columns the function deleted from its input.
    """

    columns: dict[str, pa.Array[Any]] = field(default_factory=dict)
    whole: bool = False
    dropped: tuple[str, ...] = ()

    @property
    def num_rows(self) -> int | None:
        return len(next(iter(self.columns.values()))) if self.columns else None


def _convert(
    call: Call,
    name: str,
    value: Any,
    hints: Mapping[str, pa.DataType],
    original: pa.Schema,
    where: tuple[str, int],
    per_row: bool = False,
) -> pa.Array[Any]:
    hint = hints.get(name)
    known = hint
    if known is None and call.try_original_type and name in original.names:
        known = original.field(name).type
    if isinstance(value, list):
        if known is not None and has_json(known):  # JSON text where the column holds JSON
            try:
                return encode_as(value, known)
            except (*ARROW_CAST_ERRORS, TypeError, ValueError):
                pass  # not of that shape: inferred, then checked by the segment's schema
        elif call.on_mixed_types == "use_json":
            mixed = mixed_array(value)
            if mixed is not None:
                return mixed
    arr = as_array(call.name, name, value, hint, where=where, per_row=per_row)
    if (
        hint is None
        and call.try_original_type
        and name in original.names
        and not isinstance(value, (pa.Array, pa.ChunkedArray))
    ):
        cast, why = lossless_cast(arr, original.field(name).type, round_floats=True)
        if why is None:
            kept: pa.Array[Any] = cast
            return kept
    if (
        hint is None
        and not (call.try_original_type and name in original.names)
        and call.features is None
        and not isinstance(value, (pa.Array, pa.ChunkedArray))
    ):
        return optimized(name, arr)  # HF's int32/int8 for tokenizer outputs
    return arr


def call_batched(
    invoker: Invoker,
    tables: Sequence[tuple[int, pa.Table]],
    hints: Mapping[str, pa.DataType],
) -> list[Output]:
    """Call a batched function on each ``(lo, table)`` block; one :class:`Output` each."""
    call = invoker.call
    args = [call_input(call, lo, t) for lo, t in tables]
    wheres = [f"the batch of rows {lo}..{lo + t.num_rows - 1}" for lo, t in tables]
    results = invoker.many(args, wheres)
    return [
        _batch_output(call, lo, t, a[0] if call.input_columns is None else None, r, hints)
        for (lo, t), a, r in zip(tables, args, results, strict=True)
    ]


def _batch_output(
    call: Call, lo: int, table: pa.Table, given: Any, result: Any, hints: Mapping[str, pa.DataType]
) -> Output:
    n = table.num_rows
    where = f"the batch of rows {lo}..{lo + n - 1}"
    if result is None:
        return Output()
    if is_table_like(result):
        return _whole(call, table_of(result), where)
    if not isinstance(result, Mapping):
        raise TypeError(
            f"Batched function {call.name} returned a {type(result).__name__} for {where}; it "
            "must return a dict of columns, a pyarrow Table (the whole output) or None."
        )
    lazy = given if isinstance(given, LazyBatch) else None
    if lazy is not None and result is lazy:
        # the columns it read or assigned; remove_columns still applies (run_clm's tokenize)
        keys = [k for k in lazy if lazy.untouched(k) is None and k not in call.remove_columns]
    else:
        keys = [check_key(call.name, k, where) for k in result]
        if lazy is not None:  # assigned on the input and not returned: HF updates those too
            keys += [k for k in lazy.assigned if k not in result and k not in call.remove_columns]
    source: Any = lazy if lazy is not None and result is lazy else result
    out: dict[str, pa.Array[Any]] = {}
    for key in keys:
        value = source[key] if key in source else lazy[key]  # type: ignore[index]
        arr = _convert(call, key, value, hints, table.schema, ("row", lo))
        if source is lazy and key in lazy.read and key in table.column_names:
            original = table.column(key)
            if arr.type == original.type and arr.equals(original.combine_chunks()):
                continue  # read, returned unchanged: stays the input column (zero-copy)
        out[key] = arr
    lengths = {k: len(a) for k, a in out.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(
            f"Batched function {call.name} returned columns of unequal lengths {lengths} for "
            f"{where}; every column needs one value per row."
        )
    dropped = tuple(lazy.deleted) if lazy is not None else ()
    return Output(out, whole=call.fmt in _WHOLE_OUTPUT, dropped=dropped)


def _chunk(col: pa.ChunkedArray[Any]) -> pa.Array[Any]:
    one: Any = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return one  # type: ignore[no-any-return]  # an Array either way


_MISSING = object()


def call_rows(
    invoker: Invoker, lo: int, table: pa.Table, hints: Mapping[str, pa.DataType]
) -> Output:
    """Call a row function on every row of ``table`` (view rows from ``lo``)."""
    call = invoker.call
    args = row_args(call, lo, table)
    tracked = call.fmt is None and call.input_columns is None
    rows = [a[0] for a in args] if tracked else []
    before = [r.copy() for r in rows]
    results = invoker.many(args, RowNames(lo, len(args)))
    tables = [type(r) is not dict and r is not None and is_table_like(r) for r in results]
    if any(tables):
        if all(tables):
            return _row_tables(call, lo, results)
        raise SchemaMismatchError(
            f"Function {call.name} returned a table for some of rows {lo}..{lo + len(args) - 1} "
            "and a dict or None for others; return one kind for every row."
        )
    updates, dropped = _row_updates(call, lo, table, rows, before, results)
    keys: dict[str, None] = {}
    for u in updates:
        if u:
            keys.update(dict.fromkeys(u))
    for k in keys:
        if type(k) is not str:
            i = next(j for j, u in enumerate(updates) if k in u)
            check_key(call.name, k, f"row {lo + i}")
    out: dict[str, pa.Array[Any]] = {}
    for k in keys:
        values = [u.get(k, _MISSING) for u in updates]
        if any(v is _MISSING for v in values):
            values = _filled(call, k, values, table, rows)
        out[k] = _convert(call, k, values, hints, table.schema, ("row", lo), per_row=True)
    return Output(out, whole=call.fmt in _WHOLE_OUTPUT, dropped=dropped)


class RowNames(Sequence[str]):
    """``"row <i>"`` for each call, made only when an error note needs one."""

    def __init__(self, lo: int, n: int) -> None:
        self._lo, self._n = lo, n

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [f"row {self._lo + j}" for j in range(self._n)[i]]
        return f"row {self._lo + i}"


def _filled(
    call: Call, key: str, values: list[Any], table: pa.Table, rows: list[dict[str, Any]]
) -> list[Any]:
    """``values`` with the rows that gave no value for ``key`` filled, as HF merges them.

    A kept input column gets the row's (possibly mutated) input value; a new or removed
    column gets null.
    """
    if key not in table.column_names or key in call.remove_columns:
        return [None if v is _MISSING else v for v in values]
    if rows:
        return [rows[i].get(key) if v is _MISSING else v for i, v in enumerate(values)]
    fill = table.column(key).to_pylist()
    return [fill[i] if v is _MISSING else v for i, v in enumerate(values)]


def _row_tables(call: Call, lo: int, results: list[Any]) -> Output:
    tables = []
    for i, r in enumerate(results):
        t = table_of(r)
        if t.num_rows != 1:
            raise ValueError(
                f"Function {call.name} returned a table of {t.num_rows} rows for row {lo + i}; "
                "a row function may return a one-row table (use batched=True for more)."
            )
        tables.append(t)
    where = f"rows {lo}..{lo + len(results) - 1}"
    return _whole(call, pa.concat_tables(tables, promote_options="default"), where)


def _whole(call: Call, table: pa.Table, where: str) -> Output:
    t = table.combine_chunks()
    names = [check_key(call.name, k, where) for k in t.column_names]
    return Output({k: _chunk(c) for k, c in zip(names, t.columns, strict=True)}, whole=True)


def _changed(
    key: str,
    value: Any,
    old: dict[str, Any],
    nested: list[str],
    fresh: list[dict[str, Any]] | None,
    i: int,
) -> bool:
    """Whether a returned row's ``key`` is new or differs from the input's value."""
    if key not in old or value is not old[key]:
        return True
    return key in nested and fresh is not None and value != fresh[i][key]  # changed in place


def _differs(a: Any, b: Any) -> bool:
    """``a != b``, True where the comparison itself fails (numpy arrays, say)."""
    try:
        return bool(a != b)
    except (TypeError, ValueError):
        return True


def _row_updates(
    call: Call,
    lo: int,
    table: pa.Table,
    rows: list[Any],
    before: list[dict[str, Any]],
    results: list[Any],
) -> tuple[list[dict[str, Any]], tuple[str, ...]]:
    """Each row's update (returned keys, plus input values the function changed).

    The loop is the per-row cost of every row map: the common case (a new dict returned,
    the input row untouched) costs two type checks and one C-level dict comparison.
    """
    updates: list[dict[str, Any]] = []
    nested = [f.name for f in table.schema if pa.types.is_nested(f.type)]
    fresh = table.select(nested).to_pylist() if nested and rows else None  # in-place changes
    dropped: set[str] = set()
    first_gone: int | None = None
    for i, result in enumerate(results):
        if result is None:
            upd: dict[str, Any] = {}
        elif type(result) is dict:
            upd = result
        elif isinstance(result, Mapping):
            upd = dict(result)
        else:
            raise TypeError(
                f"Function {call.name} returned a {type(result).__name__} for row {lo + i}; it "
                "must return a dict of new or updated columns, a one-row pyarrow Table or None."
            )
        if not rows:  # formatted or input_columns: only what is returned
            updates.append(upd)
            continue
        row: dict[str, Any] = rows[i]
        old = before[i]
        changed = _differs(row, old) or (
            fresh is not None and any(_differs(row.get(k), fresh[i][k]) for k in nested)
        )
        if changed:
            upd = _with_changes(call, row, old, upd, result is row, nested, fresh, i)
            gone = old.keys() - row.keys()
            if first_gone is None:
                first_gone, dropped = i, gone
            elif gone != dropped:
                raise _deleted_error(call, lo + i, gone, dropped)
        elif result is row:
            upd = {}  # its own input, unchanged
        elif first_gone is not None and dropped:
            raise _deleted_error(call, lo + i, set(), dropped)
        updates.append(upd)
    if first_gone not in (None, 0) and dropped:
        raise _deleted_error(call, lo, set(), dropped)
    return updates, tuple(sorted(dropped))


def _with_changes(
    call: Call,
    row: dict[str, Any],
    old: dict[str, Any],
    upd: dict[str, Any],
    returned_row: bool,
    nested: list[str],
    fresh: list[dict[str, Any]] | None,
    i: int,
) -> dict[str, Any]:
    """The update of a row the function changed (assigned, deleted or changed in place)."""
    removed = call.remove_columns
    if returned_row:
        return {
            k: v
            for k, v in row.items()
            if k not in removed and _changed(k, v, old, nested, fresh, i)
        }
    upd = dict(upd)
    for k, v in row.items():  # HF: assignments to the input row update it too
        if k in old and k not in upd and k not in removed and _changed(k, v, old, nested, fresh, i):
            upd[k] = v
    return upd


def _deleted_error(call: Call, row: int, gone: set[str], dropped: set[str]) -> SchemaMismatchError:
    return SchemaMismatchError(
        f"Function {call.name} deleted columns {sorted(gone)} from row {row} but "
        f"{sorted(dropped)} from other rows; delete the same columns from every row."
    )
