"""Values returned by a map function, as Arrow arrays; errors name the column and the row.

Python lists, numpy arrays, tensors (anything with ``__array__``) and pyarrow arrays are
accepted for a column. Numpy arrays and tensors keep their dtype (a ``float32`` tensor gives a
``float`` column, as in HF ``datasets``), per row as well as per batch. Integers beyond int64
become ``uint64`` when they fit; strings with lone surrogates, keys that are not strings and
values Arrow cannot hold raise :class:`~arrowmix.exceptions.SchemaMismatchError` naming the
column, the function and the first offending row. A column pyarrow has to split (over 2 GiB
of strings in one batch) is stored as ``large_string``/``large_binary``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from arrowmix._dataset.inputs.py_kinds import first_mixed, kind_error
from arrowmix._hf.features import images_array
from arrowmix._storage.cast import ARROW_CAST_ERRORS
from arrowmix.exceptions import SchemaMismatchError

__all__ = [
    "as_array",
    "check_key",
    "int64_numpy",
    "is_table_like",
    "np_values",
    "numeric_array",
    "table_of",
]


def check_key(fn: str, key: Any, where: str) -> str:
    """``key`` if it is a column name (a str); otherwise a TypeError naming it."""
    if not isinstance(key, str):
        raise TypeError(
            f"Function {fn} returned the key {key!r} ({type(key).__name__}) for {where}; "
            "column names must be strings."
        )
    return key


def is_table_like(value: Any) -> bool:
    """Whether ``value`` is a whole output table (pyarrow, pandas or polars)."""
    if isinstance(value, (pa.Table, pa.RecordBatch)):
        return True
    module = type(value).__module__ or ""
    return type(value).__name__ == "DataFrame" and module.split(".")[0] in ("pandas", "polars")


def table_of(value: Any) -> pa.Table:
    """A table-like output as a pyarrow Table (pandas' index is not kept)."""
    if isinstance(value, pa.Table):
        return value
    if isinstance(value, pa.RecordBatch):
        return pa.Table.from_batches([value])
    if hasattr(value, "to_arrow"):  # polars
        out: pa.Table = value.to_arrow()
        return out
    return pa.Table.from_pandas(value, preserve_index=False)


def _hint_keeps_values(t: pa.DataType) -> bool:
    """Whether pyarrow converts Python values to ``t`` only when none changes.

    Only double and bool leaves: given ``int``, pyarrow truncates ``10.5``; ``float`` rounds
    ``0.1``; ``string`` takes bytes and ``binary`` str; a timestamp or date takes numbers and
    drops a time or a time zone. Those are inferred and cast losslessly by the caller.
    """
    if pa.types.is_float64(t) or pa.types.is_boolean(t):
        return True
    if pa.types.is_struct(t):
        return all(_hint_keeps_values(f.type) for f in t)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _hint_keeps_values(t.value_type)
    return False


def np_values(values: list[Any]) -> Any:
    """A list of per-row numpy arrays/tensors as one array keeping the dtype, or None."""
    first = next((v for v in values if v is not None), None)
    if first is None or isinstance(first, (list, tuple, str, bytes, dict)):
        return None
    if not hasattr(first, "__array__") or isinstance(first, (pa.Array, pa.Scalar)):
        return None
    try:
        arrays = [np.asarray(v) for v in values]
    except (TypeError, ValueError, RuntimeError):
        return None
    shape, dtype = arrays[0].shape, arrays[0].dtype
    if (
        any(a.shape != shape for a in arrays)
        and shape
        and dtype.kind in _NUMERIC_KINDS
        and all(a.dtype == dtype and a.ndim == len(shape) for a in arrays)
    ):  # ragged: lists of rows, the dtype kept
        lengths = np.array([0] + [len(a) for a in arrays], dtype=np.int64)
        offsets: Any = pa.array(np.cumsum(lengths).astype(np.int32))
        inner = [_ndarray(a) for a in arrays]
        return pa.ListArray.from_arrays(offsets, pa.concat_arrays(inner))
    if dtype.kind == "O" or any(a.shape != shape or a.dtype != dtype for a in arrays):
        return [a.tolist() for a in arrays]
    if not shape:
        return np.asarray(arrays)
    return np.stack(arrays)  # 2-D and more: nested lists below


_NUMERIC_KINDS = frozenset("iufb")


def _rows_of_matrices(values: list[Any]) -> bool:
    """Whether a batched output's first value is an n-D numpy array (pyarrow takes only 1-D)."""
    first = next((v for v in values if v is not None), None)
    return isinstance(first, np.ndarray) and first.ndim > 1


def numeric_array(value: np.ndarray) -> pa.Array[Any] | None:
    """A 1-D numeric or bool numpy array as Arrow without a copy where possible, else None.

    Built from the buffers: ``pa.array`` would import pandas on its first call in a process
    (pyarrow checks every input for pandas types), 0.2 s of a first ``map`` otherwise.
    """
    if value.ndim != 1 or value.dtype.kind not in _NUMERIC_KINDS or value.dtype.byteorder == ">":
        return None
    if value.dtype.kind == "b":
        bits: Any = np.packbits(value.astype(np.uint8), bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(value), [None, pa.py_buffer(bits)])
    if value.dtype.itemsize == 2 and value.dtype.kind == "f":
        return None  # half floats: pyarrow's conversion
    data: Any = np.ascontiguousarray(value)
    arrow_type = pa.from_numpy_dtype(data.dtype)
    return pa.Array.from_buffers(arrow_type, len(data), [None, pa.py_buffer(data)])


def int64_numpy(col: pa.ChunkedArray[Any]) -> np.ndarray:
    """An int64 column without nulls as one numpy array (no pandas import, unlike to_numpy)."""
    parts = []
    for chunk in col.chunks:
        buf: Any = chunk.buffers()[1]
        data = np.frombuffer(buf, dtype=np.int64) if buf is not None else np.empty(0, np.int64)
        parts.append(data[chunk.offset : chunk.offset + len(chunk)])
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)


def _ndarray(value: np.ndarray) -> pa.Array[Any]:
    if value.ndim == 1 and value.dtype != object:
        fast = numeric_array(value)
        out: pa.Array[Any] = fast if fast is not None else pa.array(value)
        return out
    if value.ndim >= 2 and value.dtype != object:
        n = value.shape[0]
        inner = _ndarray(value.reshape(n * value.shape[1], *value.shape[2:]))
        m = value.shape[1]
        offsets: Any = pa.array(np.arange(0, n * m + 1, max(m, 1), dtype=np.int32)[: n + 1])
        nested: pa.Array[Any] = pa.ListArray.from_arrays(offsets, inner)
        return nested
    arr: pa.Array[Any] = pa.array(value.tolist())
    return arr


def _to_large(arr: pa.ChunkedArray[Any]) -> pa.Array[Any]:
    """One array from pyarrow's split of a column too large for 32-bit offsets."""
    t = arr.type
    if pa.types.is_string(t):
        arr = arr.cast(pa.large_string())
    elif pa.types.is_binary(t):
        arr = arr.cast(pa.large_binary())
    elif pa.types.is_list(t):
        arr = arr.cast(pa.large_list(t.value_type))
    return arr.combine_chunks()


def _first_bad(values: Sequence[Any], bad: Any) -> int | None:
    for i, v in enumerate(values[: 1 << 20]):
        try:
            if bad(v):
                return i
        except Exception:  # noqa: BLE001  # only locating the culprit
            return i
    return None


def _too_big(v: Any) -> bool:
    if isinstance(v, int) and not isinstance(v, bool):
        return not -(2**63) <= v < 2**64
    if isinstance(v, (list, tuple)):
        return any(_too_big(x) for x in v)
    return False


def _surrogate(v: Any) -> bool:
    if isinstance(v, str):
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(v, (list, tuple)):
        return any(_surrogate(x) for x in v)
    if isinstance(v, dict):
        return any(_surrogate(x) for x in v.values())
    return False


def _row(where: tuple[str, int], i: int | None) -> str:
    label, lo = where
    return f"{label} {lo + i}" if i is not None else f"{label}s from {lo}"


_NUMPY_OF = {int: np.dtype(np.int64), float: np.dtype(np.float64), bool: np.dtype(np.bool_)}


def _numbers(value: list[Any]) -> pa.Array[Any] | None:
    """A flat list of Python ints, floats or bools through numpy (faster, no pandas), or None."""
    first = type(value[0]) if value else None
    expected = _NUMPY_OF.get(first)  # type: ignore[arg-type]
    if expected is None:
        return None
    try:
        arr = np.array(value)
    except (OverflowError, ValueError, TypeError):
        return None
    if arr.dtype != expected:
        return None  # None, strings, nested, mixed or huge values: pyarrow's conversion
    if expected == np.float64 and len(arr) and not (np.abs(arr).max() < 2**53):
        return None  # ints among them may not be exact as doubles (pyarrow raises), or nan
    return numeric_array(arr)


def _from_list(fn: str, name: str, value: list[Any], where: tuple[str, int]) -> Any:
    fast = _numbers(value)
    if fast is not None:
        return fast
    try:
        arr = pa.array(value)
    except OverflowError as exc:
        if all(isinstance(v, int) or v is None for v in value):
            try:
                return pa.array(value, type=pa.uint64())
            except (OverflowError, *ARROW_CAST_ERRORS):
                pass
        i = _first_bad(value, _too_big)
        raise SchemaMismatchError(
            f"Column {name!r} returned by {fn} holds an integer Arrow cannot store at "
            f"{_row(where, i)}: Arrow integers are at most 64 bits (int64, or uint64 for "
            f"values up to 2**64 - 1). Return such numbers as str or float. ({exc})"
        ) from exc
    except UnicodeEncodeError as exc:
        i = _first_bad(value, _surrogate)
        raise SchemaMismatchError(
            f"Column {name!r} returned by {fn} holds a str with a lone surrogate at "
            f"{_row(where, i)} ({exc.object[exc.start : exc.end]!r} is not valid UTF-8): "
            "clean the text, or return bytes (s.encode('utf-8', 'surrogatepass'))."
        ) from exc
    i = first_mixed(value, arr.type)
    if i is not None:
        raise SchemaMismatchError(
            f"Column {name!r} returned by {fn} at {_row(where, i)} holds "
            f"{kind_error(value, arr.type, i)}. Return one type for the column in every row."
        )
    return arr


def as_array(
    fn: str,
    name: str,
    value: Any,
    hint: pa.DataType | None = None,
    *,
    where: tuple[str, int] = ("row", 0),
    per_row: bool = False,
) -> pa.Array[Any]:
    """One returned column as an Arrow array.

    ``hint`` is the column's type in the segment's schema: converting Python values to a
    known type is faster than inferring it. It is used only where pyarrow's conversion cannot
    change a value (double and bool leaves): it would truncate floats for an integer type
    (``10.5 -> 10``), round them for float32, turn bytes into str and back, or drop a time
    zone. Other types are inferred and the caller casts them losslessly. ``where`` is
    ``(label, first row)`` for messages; ``per_row`` says ``value`` holds one returned value
    per row.
    """
    if isinstance(value, list) and (per_row or _rows_of_matrices(value)):
        stacked = np_values(value)
        if stacked is not None:
            value = stacked
    if hint is not None and isinstance(value, list) and _hint_keeps_values(hint):
        try:
            typed: pa.Array[Any] = pa.array(value, type=hint)
            return typed
        except (*ARROW_CAST_ERRORS, OverflowError, UnicodeEncodeError):
            pass
    try:
        if isinstance(value, pa.ChunkedArray):
            return _to_large(value) if value.num_chunks > 1 else value.combine_chunks()
        if isinstance(value, pa.Array):
            return value
        if not isinstance(value, (list, tuple, np.ndarray)) and hasattr(value, "__array__"):
            value = np.asarray(value)  # tensors and other array-likes
        if isinstance(value, np.ndarray):
            return _ndarray(value)
        if isinstance(value, (list, tuple)):
            out = _from_list(fn, name, list(value), where)
            return _to_large(out) if isinstance(out, pa.ChunkedArray) else out
    except ARROW_CAST_ERRORS as exc:
        images = images_array(value)  # PIL images: stored as HF's Image() stores them
        if images is not None:
            return images
        raise SchemaMismatchError(
            f"Column {name!r} returned by {fn} cannot be converted to Arrow: {exc}. Return "
            "one type per column, or pass on_mixed_types='use_json' to store values of mixed "
            "types as JSON (HF datasets' default in map)."
        ) from exc
    raise TypeError(
        f"Column {name!r} returned by batched function {fn} is a {type(value).__name__}; "
        "expected a list, a numpy array or a pyarrow array with one value per output row."
    )
