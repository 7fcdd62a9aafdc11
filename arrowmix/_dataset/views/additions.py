"""``add_column``, ``add_item``, ``repeat`` and ``from_pandas``: HF ``datasets``' semantics.

``add_column`` and ``add_item`` build a new in-memory table from the view (HF flattens the view
first too); the fingerprint rolls forward with the added values, or is ``new_fingerprint``.
``repeat(n)`` is a view: the rows' positions ``n`` times, no column data copied.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from arrowmix._dataset.state import DatasetState, derive, num_rows, state_of, view_range
from arrowmix._fingerprint.transform import roll
from arrowmix._validate import check_int

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = ["add_column", "add_item", "from_pandas", "repeat"]


def _view_table(ds: Dataset) -> pa.Table:
    s = state_of(ds)
    return view_range(s, 0, num_rows(s))


def _result(ds: Dataset, table: pa.Table, fp: str) -> Dataset:
    from arrowmix._dataset.dataset import Dataset

    s = state_of(ds)
    return Dataset(
        DatasetState(
            table=table,
            fingerprint=fp,
            fmt=s.fmt,
            fmt_columns=None if s.fmt_columns is None else (*s.fmt_columns, *_new(s, table)),
            fmt_all=s.fmt_all,
            fmt_kwargs=s.fmt_kwargs,
            cache_dir=ds.cache_dir,
        )
    )


def _new(s: DatasetState, table: pa.Table) -> list[str]:
    return [c for c in table.column_names if c not in s.table.column_names]


def _fingerprint(ds: Dataset, transform: str, args: dict[str, Any], new: str | None) -> str:
    if new is not None:
        from arrowmix._dataset.map_options import user_fingerprint

        return user_fingerprint(new)[0]
    return roll(ds.fingerprint, transform, args)


def _column_array(name: str, column: Any, schema: pa.Schema | None) -> pa.Array[Any]:
    from arrowmix._dataset.inputs.py_columns import typed_table

    if schema is not None:
        return typed_table({name: column}, schema).column(0).combine_chunks()
    if isinstance(column, pa.ChunkedArray):
        return column.combine_chunks()
    if isinstance(column, pa.Array):
        return column
    from arrowmix._dataset.row_batches import column_array

    values = (
        column.tolist() if isinstance(column, np.ndarray) and column.dtype == object else column
    )
    if isinstance(values, np.ndarray):
        return pa.array(values)
    return column_array(name, list(values), 0)


def add_column(
    ds: Dataset,
    name: str,
    column: Any,
    new_fingerprint: str | None = None,
    schema: pa.Schema | None = None,
) -> Dataset:
    """``ds`` with one more column, ``column`` (one value per row), appended last."""
    if name in ds.column_names:
        raise ValueError(
            f"The table can't have duplicated columns but columns {[name]} are duplicated."
        )
    arr = _column_array(name, column, schema)
    if len(arr) != len(ds):
        raise ValueError(
            f"`column` has {len(arr)} values; the dataset has {len(ds)} rows (one value a row)."
        )
    from arrowmix._hf.features import output_metadata

    s = state_of(ds)
    table = view_range(s, 0, num_rows(s), ahead=False)  # referenced, not read
    field = schema.field(0) if schema is not None else pa.field(name, arr.type)
    out = table.append_column(field, arr)
    table = out.replace_schema_metadata(output_metadata(table.schema, out.schema) or None)
    fp = _fingerprint(ds, "add_column", {"name": name, "column": arr}, new_fingerprint)
    return _result(ds, table, fp)


def add_item(ds: Dataset, item: Mapping[str, Any], new_fingerprint: str | None = None) -> Dataset:
    """``ds`` with the row ``item`` (a dict of its columns) added at the end.

    As in HF: a column the item lacks is null in it; a column only the item has is added,
    null in the earlier rows.
    """
    from arrowmix._dataset.inputs.py_columns import typed_table
    from arrowmix._storage.cast import fill_null_types, has_null_type

    if not isinstance(item, Mapping):
        raise TypeError(f"`item` must be a dict of the columns; got {type(item).__name__}.")
    table = _view_table(ds)
    schema = table.schema
    row = pa.Table.from_pylist([dict(item)])
    # A column that is all-null so far takes the item's type (HF aligns the features so).
    fields = [
        f.with_type(fill_null_types(f.type, row.schema.field(f.name).type))
        if has_null_type(f.type) and f.name in row.column_names
        else f
        for f in schema
    ]
    # HF's alignment: a new column is null in the earlier rows, a missing one in the item.
    new = [row.schema.field(k) for k in row.column_names if k not in schema.names]
    for f in new:
        table = table.append_column(f, pa.nulls(table.num_rows, f.type))
    schema = pa.schema(fields + new).with_metadata(schema.metadata or {})
    added = typed_table({n: [item.get(n)] for n in schema.names}, schema)
    table = pa.concat_tables([table.cast(schema), added]).combine_chunks()
    fp = _fingerprint(ds, "add_item", {"item": added}, new_fingerprint)
    return _result(ds, table, fp)


def repeat(ds: Dataset, num_times: int | None) -> Dataset:
    """``ds``'s rows ``num_times`` times over, as a view (no column data copied)."""
    if num_times is None:
        raise ValueError("Map style datasets do not support indefinite repetition.")
    times = check_int("num_times", num_times)
    n = len(ds)
    if times <= 0:
        return ds.select([])
    if times == 1:
        return ds
    out = ds.select(np.tile(np.arange(n, dtype=np.int64), times))
    return type(ds)(derive(state_of(out), fingerprint=roll(ds.fingerprint, "repeat", {"n": times})))


def from_pandas(
    df: Any, schema: pa.Schema | None = None, preserve_index: bool | None = None
) -> Dataset:
    """A dataset over a ``pandas.DataFrame``'s columns (the index kept as HF does)."""
    from arrowmix._dataset.inputs.builders import from_arrow

    table = pa.Table.from_pandas(df, preserve_index=preserve_index)
    table = table.replace_schema_metadata(None)
    if schema is not None:
        from arrowmix._dataset.inputs.py_columns import typed_table

        table = typed_table({n: table.column(n) for n in table.column_names}, schema)
    return from_arrow(table)
