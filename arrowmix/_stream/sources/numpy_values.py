"""Arrow columns as HF ``datasets``' numpy format gives them: one rule for rows and batches.

The dtypes are HF's: every integer array is ``int64`` and every float array ``float32`` (bools
stay ``bool``), unless ``kwargs`` (HF's ``format_kwargs``, such as ``dtype=``) say otherwise.
A row's scalar keeps its column's type (``np.int32``, ``np.float64``); a batch's scalar column
is an array in HF's dtype. A list column's values are converted from the Arrow buffers into one
new array, the only copy, and each row is a slice of it; equal-shaped rows of a batch are one
stacked array, others an object array (``None`` for a null row). Values with nulls are floats
with NaN, decided per row for rows and per batch for batches, as in HF.

:func:`row_values` gives the values of a column's rows, :func:`batch_values` the column of a
batch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from arrowmix._stream.tokens.column import arrow_to_numpy

__all__ = ["batch_values", "consolidate", "row_values"]


def row_values(
    col: pa.ChunkedArray[Any] | pa.Array[Any], kwargs: Mapping[str, Any], name: str = ""
) -> list[Any]:
    """Each row's value of ``col`` in the numpy format (as ``ds[i][name]``).

    A ``dtype=`` that would change a value raises an error naming the column
    (:func:`exact_cast`).
    """
    with _naming(name):
        return _row_values(col, kwargs)


def _row_values(col: pa.ChunkedArray[Any] | pa.Array[Any], kwargs: Mapping[str, Any]) -> list[Any]:
    arr = _one_array(col)
    t = arr.type
    if _is_list(t):
        return _list_items(arr, kwargs, per_row=True)
    if pa.types.is_struct(t):
        return _struct_items(arr, kwargs, per_row=True)
    if _is_string(t):  # a row's string is a numpy string, as HF gives it
        return [None if v is None else np.str_(v) for v in arr.to_pylist()]
    if not _is_number(t):
        return list(arr.to_numpy(zero_copy_only=False))
    if arr.null_count:  # HF converts a row alone: a valid row keeps its type
        values = arr.fill_null(False if pa.types.is_boolean(t) else 0).to_numpy()
        valid = arr.is_valid().to_numpy(zero_copy_only=False).tolist()
        nan = None if pa.types.is_boolean(t) else np.float64("nan")
        items = [v if ok else nan for v, ok in zip(values, valid, strict=True)]
    else:
        items = list(arrow_to_numpy(arr))
    if pa.types.is_boolean(t):  # np.bool_ is not a number to HF: a 0-d array
        return [v if v is None else exact_cast(v, kwargs) for v in items]
    return items


def batch_values(
    col: pa.ChunkedArray[Any] | pa.Array[Any], kwargs: Mapping[str, Any], name: str = ""
) -> np.ndarray:
    """Column ``col`` of a batch in the numpy format (as ``ds[a:b][name]`` and ``ds[name]``)."""
    with _naming(name):
        return _batch_values(col, kwargs)


@contextlib.contextmanager
def _naming(name: str) -> Iterator[None]:
    try:
        yield
    except (OverflowError, ValueError) as exc:
        raise type(exc)(f"column {name!r}: {exc}") from None


def _batch_values(
    col: pa.ChunkedArray[Any] | pa.Array[Any], kwargs: Mapping[str, Any]
) -> np.ndarray:
    arr = _one_array(col)
    t = arr.type
    if _is_list(t):
        return consolidate(_list_items(arr, kwargs, per_row=False))
    if pa.types.is_struct(t):
        return consolidate(_struct_items(arr, kwargs, per_row=False))
    values: np.ndarray = arr.to_numpy(zero_copy_only=False)
    if _is_string(t):
        return values.astype(str) if not arr.null_count and len(values) else values
    if values.dtype.kind in "biuf":
        return _hf_array(values, kwargs)
    return values


def consolidate(items: list[Any]) -> np.ndarray:
    """HF's rule: arrays of one shape and dtype are stacked, anything else an object array."""
    first = items[0] if items else None
    if isinstance(first, np.ndarray) and all(
        isinstance(x, np.ndarray) and x.shape == first.shape and x.dtype == first.dtype
        for x in items
    ):
        return np.stack(items)
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


def _hf_array(values: np.ndarray, kwargs: Mapping[str, Any]) -> np.ndarray:
    """One new array of ``values`` in HF's dtype (``kwargs`` override it, checked)."""
    kind = values.dtype.kind
    dtype: Any = np.int64 if kind in "iu" else np.float32 if kind == "f" else values.dtype
    if kind == "u" and values.size and int(values.max()) > _INT64_MAX:
        dtype = values.dtype  # HF wraps 2**63 and above to negatives: keep them uint64
    if "dtype" in kwargs:
        return exact_cast(values, kwargs)
    out: np.ndarray = np.array(values, copy=True, **{"dtype": dtype, **kwargs})
    return out


def exact_cast(values: Any, kwargs: Mapping[str, Any]) -> np.ndarray:
    """``np.array(values, **kwargs)`` (a new array) that refuses to change a number.

    The one check of a user's ``dtype=``: a value the dtype cannot hold (300 as int8, 1e6 as
    float16) raises ``OverflowError``; a fraction, NaN (a null) or infinity made an integer
    raises ``ValueError``. Anything else is numpy's conversion.
    """
    src = np.asarray(values)
    with np.errstate(over="ignore", invalid="ignore"):  # checked below, named
        out: np.ndarray = np.array(src, copy=True, **kwargs)
    if not src.size or src.dtype.kind not in "biuf" or out.dtype.kind not in "iuf":
        return out
    if out.dtype.kind in "iu":
        if src.dtype.kind == "f":
            if not np.isfinite(src).all():
                raise ValueError(
                    f"a NaN (null) or infinite value cannot be the numpy format's integer "
                    f"dtype {out.dtype}. Pass a float dtype= to with_format."
                )
            if (np.trunc(src) != src).any():
                bad = src[np.trunc(src) != src].flat[0]
                raise ValueError(
                    f"the value {bad} is not an integer: the numpy format's dtype {out.dtype} "
                    "would silently truncate it. Pass a float dtype= to with_format."
                )
        info = np.iinfo(out.dtype)
        low, high = src.min(), src.max()
        if low < info.min or high > info.max:
            _overflow(high if high > info.max else low, out.dtype, "wrapped to another value")
    elif (np.isinf(out) & ~np.isinf(src.astype(np.float64))).any():
        bad = src[np.isinf(out) & ~np.isinf(src.astype(np.float64))].flat[0]
        _overflow(bad, out.dtype, "made infinite")
    return out


def _overflow(bad: Any, dtype: np.dtype[Any], what: str) -> None:
    raise OverflowError(
        f"the value {bad} does not fit the numpy format's dtype {dtype}: it would be "
        f"silently {what}. Pass a wider dtype= to with_format."
    )


_INT64_MAX = int(np.iinfo(np.int64).max)


def _list_items(arr: Any, kwargs: Mapping[str, Any], *, per_row: bool) -> list[Any]:
    """Each row of a list array: a slice of one converted copy of its values (None if null)."""
    t = arr.type
    n = len(arr)
    if pa.types.is_fixed_size_list(t):
        size = t.list_size
        child = arr.values.slice(arr.offset * size, n * size)
        offs = np.arange(n + 1, dtype=np.int64) * size
    else:
        # The array's own rows (slice-aware), from the buffer: pyarrow's ``to_numpy`` and
        # ``np.asarray`` import pandas on first use (0.2 s before a fresh stream's first row).
        offs = arrow_to_numpy(arr.offsets).astype(np.int64)
        child = arr.values.slice(int(offs[0]), int(offs[-1] - offs[0]))
        offs = offs - offs[0]
    vt = child.type
    starts, stops = offs[:-1].tolist(), offs[1:].tolist()
    if _is_number(vt):
        rows = _number_rows(child, starts, stops, kwargs, per_row=per_row)
    else:
        if _is_list(vt):
            inner = _list_items(child, kwargs, per_row=per_row)
        elif pa.types.is_struct(vt):
            inner = _struct_items(child, kwargs, per_row=per_row)
        else:
            inner = child.to_pylist()
        rows = [consolidate(inner[a:b]) for a, b in zip(starts, stops, strict=True)]
    if arr.null_count:
        valid = arr.is_valid().to_numpy(zero_copy_only=False).tolist()
        rows = [r if ok else None for r, ok in zip(rows, valid, strict=True)]
    return rows


def _number_rows(
    child: Any, starts: list[int], stops: list[int], kwargs: Mapping[str, Any], *, per_row: bool
) -> list[Any]:
    if not child.null_count or not per_row:
        values = _hf_array(arrow_to_numpy(child), kwargs)
        return [values[a:b] for a, b in zip(starts, stops, strict=True)]
    # A row alone: only the rows holding a null value are floats with NaN (as in HF).
    # Null values per row from a running count: rows may be empty, also at the end.
    seen = np.cumsum(child.is_null().to_numpy(zero_copy_only=False), dtype=np.int64)
    seen = np.concatenate([np.zeros(1, np.int64), seen])
    missing = seen[stops] - seen[starts]
    filled = _hf_array(child.fill_null(0).to_numpy(zero_copy_only=False), kwargs)
    rows: list[Any] = []
    for a, b, m in zip(starts, stops, missing.tolist(), strict=True):
        if m and b > a:
            rows.append(_hf_array(child.slice(a, b - a).to_numpy(zero_copy_only=False), kwargs))
        else:
            rows.append(filled[a:b])
    return rows


def _struct_items(arr: Any, kwargs: Mapping[str, Any], *, per_row: bool) -> list[Any]:
    """Each row of a struct array: a dict of its fields as HF converts them (None if null)."""
    t = arr.type
    names = [t.field(i).name for i in range(t.num_fields)]
    fields = {
        name: _field_items(arr.field(i), kwargs, per_row=per_row) for i, name in enumerate(names)
    }
    valid = arr.is_valid().to_numpy(zero_copy_only=False).tolist() if arr.null_count else None
    return [
        None if valid is not None and not valid[j] else {n: fields[n][j] for n in names}
        for j in range(len(arr))
    ]


def _field_items(arr: Any, kwargs: Mapping[str, Any], *, per_row: bool) -> list[Any]:
    """A struct field's values: HF reads them as Python objects, then as numpy arrays."""
    t = arr.type
    if _is_list(t):
        return _list_items(arr, kwargs, per_row=per_row)
    if pa.types.is_struct(t):
        return _struct_items(arr, kwargs, per_row=per_row)
    return [
        v if v is None or isinstance(v, (str, bytes)) else exact_cast(v, kwargs)
        for v in arr.to_pylist()
    ]


def _one_array(col: pa.ChunkedArray[Any] | pa.Array[Any]) -> Any:
    if isinstance(col, pa.ChunkedArray):
        return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return col


def _is_number(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)


def _is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def _is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
