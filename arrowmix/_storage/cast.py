"""Casting Arrow arrays without losing values: the rule for map outputs and cache segments.

A map's later batch (or a later segment) is cast to the type the first one fixed, and a
returned column may take its input column's type back (``try_original_type``). Arrow's own
casts can change values (``5 -> true``, ``10 -> "10"``), so :func:`lossless_cast` allows only
casts that keep every value:

- ``null`` to any type; ``bool`` to bool, integer or floating point;
- integer to integer or floating point, floating point to integer or floating point, with
  Arrow's safe checks (an overflow, a fraction or an integer a double cannot hold raises).
  Narrowing ``double`` to ``float`` rounds each value to float precision (a float32 column
  stays float32, as in HF ``datasets``);
- ``string``/``large_string`` to either, ``binary``/``large_binary`` to either;
- lists (of any kind) to lists, structs to structs with the same fields, element-wise;
- any other type only to itself (timestamps to timestamps, decimals to decimals, safely).

Numbers never become strings or booleans, strings never become numbers.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

__all__ = ["ARROW_CAST_ERRORS", "first_lossy_row", "lossless_cast", "why_lossy"]

_NUMERIC = (pa.types.is_integer, pa.types.is_floating)

#: What pyarrow raises for a value or type it cannot convert or cast.
ARROW_CAST_ERRORS = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError)


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
    else:
        ok = src.id == dst.id  # same family (timestamp units, decimal precisions): safe cast
    return None if ok else f"{src} values would become {dst}"


def lossless_cast(arr: Any, dst: pa.DataType) -> tuple[Any, str | None]:
    """``(arr cast to dst, None)`` if no value changes, else ``(None, why)``.

    ``arr`` is an Array or ChunkedArray; ``why`` names the kinds of types that differ (see the
    module docstring) or the value that does not survive the cast (overflow, fraction).
    """
    if arr.type == dst:
        return arr, None
    reason = why_lossy(arr.type, dst)
    if reason:
        return None, reason
    try:
        return arr.cast(dst, safe=True), None
    except ARROW_CAST_ERRORS as exc:
        return None, str(exc)


def first_lossy_row(arr: Any, dst: pa.DataType, limit: int = 1 << 17) -> int | None:
    """The first position of ``arr`` whose value cannot be cast to ``dst`` (None: unknown).

    Only on the error path: it tries the rows one by one (at most ``limit``).
    """
    if why_lossy(arr.type, dst):
        return next((i for i in range(min(len(arr), limit)) if arr[i].is_valid), None)
    for i in range(min(len(arr), limit)):
        try:
            arr.take([i]).cast(dst, safe=True)
        except ARROW_CAST_ERRORS:
            return i
    return None
