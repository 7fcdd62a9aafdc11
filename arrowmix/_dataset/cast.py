"""``cast`` (new column types, computed by a cached map) and ``flatten`` (struct columns split).

``cast`` follows HF ``datasets``: the new schema must name exactly the dataset's columns, and
the result is written like a ``map(features=...)`` result (cached, memory-mapped, bounded
memory), so HF features such as ``ClassLabel`` are kept and checked as there (a label name
becomes its index, an index outside the names raises); unlike HF it never changes a value: a
cast that would overflow or truncate raises
:class:`~arrowmix.exceptions.SchemaMismatchError` naming the column. ``flatten`` replaces each
struct column by its fields (``"answers.text"``...), level by level, without copying data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from arrowmix._dataset.state import state_of, view_range
from arrowmix._storage.cast import ARROW_CAST_ERRORS, cast_failure

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = ["cast", "cast_batch", "flatten"]


def cast_batch(batch: pa.Table, schema: pa.Schema) -> pa.Table:
    """``batch`` with ``schema``'s column types, cast safely (nothing truncated or wrapped).

    Columns holding HF class labels are left as they are: ``map(features=...)`` encodes and
    checks them (:func:`~arrowmix._hf.features.cast_to_features`).

    Raises:
        SchemaMismatchError: a value does not survive the cast; the message names the column.
    """
    from arrowmix._hf.features import label_features

    labelled = label_features(schema, schema.names)
    arrays = []
    for field in schema:
        col = batch.column(field.name)
        if field.name in labelled:
            arrays.append(col)
            continue
        try:
            arrays.append(col.cast(field.type))
        except ARROW_CAST_ERRORS as exc:
            raise cast_failure(
                f"Cannot cast column {field.name!r} from {col.type} to {field.type} without "
                f"changing values: {exc}",
                exc,
            ) from exc
    return pa.Table.from_arrays(arrays, names=schema.names)


def cast(ds: Dataset, schema: pa.Schema, map_kwargs: dict[str, Any]) -> Dataset:
    """``ds`` with the column types of ``schema`` (the same columns), as a cached map result.

    Raises:
        ValueError: ``schema`` does not name exactly the dataset's columns (as in HF).
        SchemaMismatchError: a type cannot be cast to, or a value does not survive the cast.
    """
    if sorted(schema.names) != sorted(ds.column_names):
        raise ValueError(
            f"The columns in features ({schema.names}) must be identical to the columns in "
            f"the dataset: {ds.column_names}."
        )
    from arrowmix._storage.metadata import kept_metadata as hf_metadata

    same_features = hf_metadata(state_of(ds).table.schema) == hf_metadata(schema)
    if ds.schema.equals(schema) and (same_features or not hf_metadata(schema)):
        return ds
    s = state_of(ds)
    cast_batch(view_range(s, 0, 0), schema)  # an impossible type change raises before any work
    out = ds.with_format("arrow").map(
        cast_batch,
        batched=True,
        fn_kwargs={"schema": schema},
        features=schema,  # HF's features kept, class labels encoded and checked
        desc="Casting",
        **map_kwargs,
    )
    return out.with_format(s.fmt, s.fmt_columns, s.fmt_all, **dict(s.fmt_kwargs))


def flatten(ds: Dataset, max_depth: int, new_fingerprint: str | None) -> Dataset:
    """Struct columns replaced by their fields (``"parent.child"``), up to ``max_depth`` levels.

    Raises:
        TypeError: the dataset reads remote chunks through a bounded cache.
    """
    from arrowmix._dataset.map_options import named
    from arrowmix._dataset.views.view_ops import _with_table
    from arrowmix._validate import check_int

    max_depth = check_int("max_depth", max_depth, minimum=1)
    table = state_of(ds).table
    if not isinstance(table, pa.Table):
        raise TypeError(
            "`flatten` needs the dataset's Arrow table; this dataset reads remote chunks "
            "through a bounded cache: `map` the struct fields into columns instead."
        )
    features = _hf_features(ds)
    for _ in range(1, max_depth):
        if not any(pa.types.is_struct(f.type) for f in table.schema):
            break
        table = table.flatten() if features is None else _flatten_level(table, features)
        if features is not None:
            features = features.flatten(max_depth=2)  # one level, as the table
    meta = None
    if features is not None:  # the kept features (class names, media...), as HF's
        meta = type(features)({c: features[c] for c in table.column_names}).arrow_schema.metadata
    out = _with_table(ds, table.replace_schema_metadata(meta), "flatten", {"max_depth": max_depth})
    return named(out, new_fingerprint)


def _hf_features(ds: Dataset) -> Any:
    """``ds.features`` (HF ``Features``), or None without HF ``datasets`` installed."""
    try:
        return ds.features
    except ImportError:
        return None


def _flatten_level(table: pa.Table, features: Any) -> pa.Table:
    """One level of struct columns split into their fields, as HF's ``table_flatten``.

    A media column HF decodes (``Image()``, ``Audio()``: a feature whose ``flatten()`` is
    itself) stays one column; ``decode=False`` media and plain structs are split.
    """
    arrays: list[Any] = []
    names: list[str] = []
    for field in table.schema:
        column = table.column(field.name)
        feature = features.get(field.name)
        kept = hasattr(feature, "flatten") and feature.flatten() == feature
        if pa.types.is_struct(field.type) and not kept:
            arrays.extend(column.flatten())
            names.extend(f"{field.name}.{sub.name}" for sub in field.type)
        else:
            arrays.append(column)
            names.append(field.name)
    return pa.Table.from_arrays(arrays, names=names)
