"""Casting Arrow arrays without losing values: the rule for map outputs and cache segments.

A map's later batch (or a later segment) is cast to the type the first one fixed, and a
returned column may take its input column's type back (``try_original_type``). Arrow's own
casts can change values (``5 -> true``, ``10 -> "10"``), so :func:`lossless_cast` allows only
casts that keep every value:

- ``null`` to any type; ``bool`` to bool, integer or floating point;
- integer to integer or floating point, floating point to integer or floating point, with
  Arrow's safe checks (an overflow, a fraction or an integer a double cannot hold raises).
  Narrowing ``double`` to ``float`` is allowed only for values float holds exactly (``0.5``,
  never ``0.1``), unless ``round_floats=True`` (a returned column taking its input column's
  float32 type back, or a declared ``features`` type, as in HF ``datasets``);
- ``string``/``large_string`` to either, ``binary``/``large_binary`` to either;
- lists (of any kind) to lists, structs to structs with the same fields, element-wise;
- any other type only to itself (timestamps to timestamps, decimals to decimals, safely);
  timestamps keep their time zone: naive and aware, or two zones, never mix.

Numbers never become strings or booleans, strings never become numbers, bytes never become
str (nor str bytes). :func:`fill_null_types` and :func:`has_null_type` let a type fixed by
all-null values (``null``, ``list<null>`` for empty lists) take a later block's type.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from arrowmix.exceptions import SchemaMismatchError

__all__ = [
    "ARROW_CAST_ERRORS",
    "cast_failure",
    "fill_null_types",
    "first_lossy_row",
    "has_null_type",
    "lossless_cast",
    "why_lossy",
]

_NUMERIC = (pa.types.is_integer, pa.types.is_floating)

#: What pyarrow raises for a value or type it cannot convert or cast.
ARROW_CAST_ERRORS = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError)


class _ValueCastError(SchemaMismatchError, pa.ArrowInvalid):
    """A value does not fit the type it is cast to (HF lets pyarrow's ``ArrowInvalid`` out)."""


class _TypeCastError(SchemaMismatchError, TypeError):
    """No value of one type can be cast to the other (HF raises ``TypeError``)."""


def cast_failure(message: str, exc: Exception) -> SchemaMismatchError:
    """The ``SchemaMismatchError`` of a failed pyarrow cast ``exc``, also what HF raises.

    A value that does not fit (``ArrowInvalid``: ``"x"`` as int64, 1000 as int8) is also a
    ``pyarrow.ArrowInvalid``; types with no cast between them (a list to an integer: pyarrow's
    ``ArrowNotImplementedError``) also a ``TypeError``, as in HF ``datasets``.
    """
    if isinstance(exc, pa.ArrowInvalid):
        return _ValueCastError(message)
    if isinstance(exc, (pa.ArrowNotImplementedError, pa.ArrowTypeError)):
        return _TypeCastError(message)
    return SchemaMismatchError(message)


def _is_list(t: pa.DataType) -> bool:
    return bool(
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
        or pa.types.is_list_view(t)
        or pa.types.is_large_list_view(t)
    )


def _is_number(t: pa.DataType) -> bool:
    return any(test(t) for test in _NUMERIC)


def why_lossy(src: pa.DataType, dst: pa.DataType) -> str | None:
    """Why a cast from ``src`` to ``dst`` cannot keep every value, or None if it may."""
    if src == dst or pa.types.is_null(src):
        return None
    if pa.types.is_boolean(src):
        ok = pa.types.is_boolean(dst) or _is_number(dst)
    elif _is_number(src):
        ok = _is_number(dst)
    elif pa.types.is_string(src) or pa.types.is_large_string(src):
        ok = pa.types.is_string(dst) or pa.types.is_large_string(dst)
    elif pa.types.is_binary(src) or pa.types.is_large_binary(src):
        ok = pa.types.is_binary(dst) or pa.types.is_large_binary(dst)
    elif _is_list(src):
        if not _is_list(dst):
            return f"a list cannot become {dst}"
        src_value: pa.DataType = src.value_type  # type: ignore[attr-defined]  # a list type
        dst_value: pa.DataType = dst.value_type  # type: ignore[attr-defined]  # a list type
        return why_lossy(src_value, dst_value)
    elif pa.types.is_struct(src):
        if not pa.types.is_struct(dst):
            return f"a struct cannot become {dst}"
        names = [f.name for f in src]
        if sorted(names) != sorted(f.name for f in dst):
            return f"struct fields {names} differ from {[f.name for f in dst]}"
        for f in src:
            reason = why_lossy(f.type, dst.field(f.name).type)
            if reason:
                return f"field {f.name!r}: {reason}"
        return None
    elif pa.types.is_timestamp(src) and pa.types.is_timestamp(dst):
        src_tz, dst_tz = src.tz, dst.tz
        if src_tz != dst_tz:
            return f"{_zone(src_tz)} datetimes would become {_zone(dst_tz)} ones"
        ok = True  # units: Arrow's safe cast raises when a value would be truncated
    else:
        ok = src.id == dst.id  # same family (decimal precisions, date units): safe cast
    return None if ok else f"{src} values would become {dst}"


def _zone(tz: str | None) -> str:
    return "naive (no time zone)" if tz is None else f"time zone {tz!r}"


def has_null_type(t: pa.DataType) -> bool:
    """Whether ``t`` is ``null`` or holds it (``list<null>``: only empty lists were seen)."""
    if pa.types.is_null(t):
        return True
    if _is_list(t):
        return has_null_type(t.value_type)  # type: ignore[attr-defined]  # a list type
    if pa.types.is_struct(t):
        return any(has_null_type(f.type) for f in t)
    return False


def fill_null_types(t: pa.DataType, other: pa.DataType) -> pa.DataType:
    """``t`` with its ``null`` parts taken from ``other`` where ``other`` has the same shape."""
    if pa.types.is_null(t):
        return other
    if pa.types.is_list(t) and pa.types.is_list(other):
        return pa.list_(fill_null_types(t.value_type, other.value_type))
    if pa.types.is_large_list(t) and pa.types.is_large_list(other):
        return pa.large_list(fill_null_types(t.value_type, other.value_type))
    if pa.types.is_struct(t) and pa.types.is_struct(other):
        names = [f.name for f in other]
        return pa.struct(
            [
                f.with_type(fill_null_types(f.type, other.field(f.name).type))
                if f.name in names
                else f
                for f in t
            ]
        )
    return t


def lossless_cast(
    arr: Any, dst: pa.DataType, *, round_floats: bool = False
) -> tuple[Any, str | None]:
    """``(arr cast to dst, None)`` if no value changes, else ``(None, why)``.

    ``arr`` is an Array or ChunkedArray; ``why`` names the kinds of types that differ (see the
    module docstring) or the value that does not survive the cast (overflow, fraction, a
    double that float cannot hold unless ``round_floats``).
    """
    if arr.type == dst:
        return arr, None
    reason = why_lossy(arr.type, dst)
    if reason:
        return None, reason
    try:
        cast = arr.cast(dst, safe=True)
    except ARROW_CAST_ERRORS as exc:
        return None, str(exc)
    if not round_floats and _narrows_floats(arr.type, dst) and _floats_changed(arr, cast):
        return None, f"{arr.type} values would be rounded to {dst}"
    return cast, None


def _float_bits(t: pa.DataType) -> int:
    return int(t.bit_width) if pa.types.is_floating(t) else 0


def _narrows_floats(src: pa.DataType, dst: pa.DataType) -> bool:
    """Whether a cast from ``src`` to ``dst`` turns some value into a narrower float."""
    if pa.types.is_floating(dst):
        return _float_bits(src) > _float_bits(dst)
    if _is_list(src) and _is_list(dst):
        return _narrows_floats(src.value_type, dst.value_type)  # type: ignore[attr-defined]
    if pa.types.is_struct(src) and pa.types.is_struct(dst):
        return any(_narrows_floats(f.type, dst.field(f.name).type) for f in src)
    return False


def _float_leaves(arr: Any) -> list[Any]:
    """The floating-point leaf arrays of ``arr`` (lists and structs flattened), in order."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    t = arr.type
    if pa.types.is_floating(t):
        return [arr]
    if _is_list(t):
        return _float_leaves(arr.flatten())
    if pa.types.is_struct(t):
        return [leaf for i in range(t.num_fields) for leaf in _float_leaves(arr.field(i))]
    return []


def _floats_changed(arr: Any, cast: Any) -> bool:
    """Whether casting ``arr`` to ``cast``'s narrower float type rounded any value."""
    back = cast.cast(arr.type)
    for a, b in zip(_float_leaves(arr), _float_leaves(back), strict=True):
        x = a.to_numpy(zero_copy_only=False)
        y = b.to_numpy(zero_copy_only=False)
        if not np.array_equal(x, y, equal_nan=True):
            return True
    return False


def first_lossy_row(arr: Any, dst: pa.DataType, limit: int = 1 << 17) -> int | None:
    """The first position of ``arr`` whose value cannot be cast to ``dst`` (None: unknown).

    Only on the error path: it tries the rows one by one (at most ``limit``).
    """
    if pa.types.is_struct(arr.type) and pa.types.is_struct(dst):
        extra = [f.name for f in arr.type if dst.get_field_index(f.name) < 0]
        if extra:  # the first row holding a value in a field that ``dst`` lacks
            flat: Any = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
            for i in range(min(len(flat), limit)):
                if flat[i].is_valid and any(flat.field(n)[i].is_valid for n in extra):
                    return i
    if why_lossy(arr.type, dst):
        return next((i for i in range(min(len(arr), limit)) if arr[i].is_valid), None)
    for i in range(min(len(arr), limit)):
        if lossless_cast(arr.take([i]), dst)[1] is not None:
            return i
    return None
