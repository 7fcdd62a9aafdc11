"""Arrow columns built from Python values (``from_dict``, ``from_pylist``, ``typed_table``).

Inference names the column and row of a value that cannot be stored; a declared schema is
applied without changing a value (a lossy cast raises ``SchemaMismatchError``); columns given
as Python values take HF's optimized tokenizer types (``input_ids`` int32, masks int8).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from arrowmix._dataset.mapping.arrays import np_values
from arrowmix._dataset.mapping.optimized import optimized
from arrowmix._dataset.row_batches import column_array
from arrowmix._hf.features import (
    cast_to_features,
    label_features,
    media_values,
)
from arrowmix._storage.cast import ARROW_CAST_ERRORS, cast_failure
from arrowmix._storage.mixed_json import encode_as, has_json, mixed_array
from arrowmix.exceptions import InvalidTypeError, SchemaMismatchError

__all__ = [
    "check_columns",
    "inferred",
    "json_where_mixed",
    "optimized_batch",
    "optimized_column",
    "typed_table",
]


def optimized_column(name: str, given: Any, arr: Any) -> Any:
    """HF's int32/int8 for a tokenizer-shaped column given as Python values (Arrow kept)."""
    if isinstance(given, (pa.Array, pa.ChunkedArray)):
        return arr
    return optimized(name, arr)


def optimized_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` (inferred from Python rows) with HF's optimized tokenizer column types."""
    cols = [optimized(n, c) for n, c in zip(batch.schema.names, batch.columns, strict=True)]
    return pa.RecordBatch.from_arrays(cols, names=batch.schema.names)


def check_columns(mapping: Any) -> None:
    """Refuse a ``mapping`` that is not ``{"column name": values}``, naming what is wrong."""
    if not isinstance(mapping, Mapping):
        raise InvalidTypeError(
            "`mapping` must be a dict of columns ({'name': [values...]}), got "
            f"{type(mapping).__name__} {mapping!r:.80}. For a list of row dicts use from_pylist."
        )
    for k, v in mapping.items():
        if not isinstance(k, str):
            raise InvalidTypeError(
                f"`mapping` has the key {k!r} ({type(k).__name__}); a column name must be a str."
            )
        if isinstance(v, (str, bytes, Mapping)) or not hasattr(v, "__len__"):
            raise InvalidTypeError(
                f"`mapping`'s column {k!r} is {type(v).__name__} {v!r:.80}; a column is a list "
                "(or array) of values, one per row."
            )


def inferred(name: str, values: Any) -> Any:
    """A column's values as Arrow, a value that cannot be one type naming its row."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    if isinstance(values, np.ndarray):
        try:
            return _numpy_array(values)
        except (*ARROW_CAST_ERRORS, OverflowError) as exc:
            raise SchemaMismatchError(f"Column {name!r} cannot be stored in Arrow: {exc}") from exc
    values = list(values)
    stacked = np_values(values)  # rows of numpy arrays or tensors, n-D ones included (as HF)
    if isinstance(stacked, np.ndarray) and stacked.ndim > 1 and stacked.dtype != object:
        return _numpy_array(stacked)
    if isinstance(stacked, pa.Array):
        return stacked
    if isinstance(stacked, list):
        values = stacked
    return column_array(name, values, 0)


def _numpy_array(values: np.ndarray[Any, Any]) -> pa.Array[Any]:
    """A numpy array as Arrow; an n-D array as lists of its rows (HF's list columns)."""
    arr: pa.Array[Any] = pa.array(values.reshape(-1))
    for i in range(values.ndim - 1, 0, -1):  # innermost dimension first
        rows = int(np.prod(values.shape[:i]))
        offsets = pa.array(np.arange(rows + 1, dtype=np.int32) * values.shape[i])
        arr = pa.ListArray.from_arrays(offsets, arr)
    return arr


def json_where_mixed(name: str, values: Any) -> Any:
    del name  # (the signature of inferred)
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    values = list(values)
    mixed = mixed_array(values)
    return mixed if mixed is not None else pa.array(values)


def typed_table(mapping: Mapping[str, Any], schema: pa.Schema) -> pa.Table:
    """``mapping``'s columns as ``schema`` says, casting values where no information is lost.

    Values of another but compatible type are cast (ints to a float or string column, whole
    floats to an int column, as HF ``datasets`` does with ``features``); a lossy or impossible
    cast (``2.5`` to an int, ``"x"`` to a float) raises ``SchemaMismatchError`` naming the
    column, never truncates.
    """
    missing = [n for n in schema.names if n not in mapping]
    extra = [n for n in mapping if n not in schema.names]
    if missing or extra:
        raise SchemaMismatchError(
            f"The columns {list(mapping)} do not match the schema {schema.names}"
            + (f"; missing: {missing}" if missing else "")
            + (f"; not in the schema: {extra}" if extra else "")
            + "."
        )
    encoded = set(label_features(schema, schema.names))  # HF class labels, media
    arrays = [
        _encoded_column(f, mapping[f.name], schema) if f.name in encoded else _typed_column(f, v)
        for f, v in ((f, mapping[f.name]) for f in schema)
    ]
    return pa.Table.from_arrays(arrays, schema=schema)


def _encoded_column(field: pa.Field[Any], values: Any, schema: pa.Schema) -> Any:
    """A column under an HF feature that encodes values (a label name, a media path)."""
    given = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else None
    if given is None:  # NumPy arrays or PIL images under a media feature: HF's bytes
        values = media_values(list(values), schema, field.name)
    if given is None:
        try:
            given = pa.array(values)
        except ARROW_CAST_ERRORS:  # values that only read as the declared type
            return _typed_column(field, values)
    one = pa.schema([field]).with_metadata(schema.metadata or {})
    batch = pa.RecordBatch.from_arrays([_chunk(given)], names=[field.name])
    return cast_to_features(batch, one, f"column {field.name!r}").column(0)


def _chunk(arr: Any) -> pa.Array[Any]:
    return arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr


def _typed_column(field: pa.Field[Any], values: Any) -> pa.Array[Any] | pa.ChunkedArray[Any]:
    # Infer, then cast safely: ``pa.array(floats, type=int32)`` would truncate 2.5 to 2.
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        inferred = values
    elif has_json(field.type):  # HF's Json(): any values, stored as JSON texts
        return encode_as(list(values), field.type)
    else:
        try:
            inferred = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as infer_exc:
            try:  # values that only read as the declared type (e.g. mixed ints and None-s)
                exact: pa.Array[Any] = pa.array(values, type=field.type)
            except ARROW_CAST_ERRORS as exc:
                raise SchemaMismatchError(
                    f"Column {field.name!r}: its values cannot be read as {field.type}: {exc}"
                ) from infer_exc
            return exact
    if inferred.type.equals(field.type):
        return inferred
    try:
        return inferred.cast(field.type)  # safe: raises instead of truncating or overflowing
    except ARROW_CAST_ERRORS as exc:
        raise cast_failure(
            f"Column {field.name!r}: values of type {inferred.type} cannot be cast to "
            f"{field.type} without loss: {exc}",
            exc,
        ) from exc
