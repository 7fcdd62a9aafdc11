"""Python values that pyarrow's type inference would silently change, found by their row.

Inferring one Arrow type for a list of Python values mixes kinds that do not mix: ``str`` and
``bytes`` give ``binary`` (the str becomes bytes), ``date`` and ``datetime`` give ``date32``
(the time is dropped), naive and time-zone-aware datetimes give one timestamp type (one side's
zone is dropped or assumed). :func:`first_mixed` finds the first such value after inference, so
callers refuse it by column and row. Only columns of those types are scanned.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

__all__ = ["first_mixed", "kind_error", "kinds_may_mix"]


def kinds_may_mix(t: pa.DataType) -> bool:
    """Whether values inferred as ``t`` may hold kinds that pyarrow merged (see above)."""
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return True
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        return True
    if pa.types.is_struct(t):
        return any(kinds_may_mix(f.type) for f in t)
    value_type = getattr(t, "value_type", None)
    return value_type is not None and kinds_may_mix(value_type)


def _kinds(v: Any, t: pa.DataType, out: set[str]) -> None:
    """Add to ``out`` the kinds of ``v``'s leaves that ``t`` would merge."""
    if v is None:
        return
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        out.add("str" if isinstance(v, str) else "bytes")
    elif pa.types.is_date(t) or pa.types.is_timestamp(t):
        if isinstance(v, dt.datetime):
            out.add("naive datetime" if v.tzinfo is None else "aware datetime")
        else:
            out.add(type(v).__name__)
    elif pa.types.is_struct(t):
        if isinstance(v, Mapping):
            for f in t:
                _kinds(v.get(f.name), f.type, out)
    else:
        value_type = getattr(t, "value_type", None)
        if value_type is not None and isinstance(v, (list, tuple)):
            for x in v:
                _kinds(x, value_type, out)


def first_mixed(values: Sequence[Any], t: pa.DataType) -> int | None:
    """The first of ``values`` whose kind differs from the first value's (see above), or None."""
    if not kinds_may_mix(t):
        return None
    first: set[str] = set()
    for i, v in enumerate(values):
        kinds: set[str] = set()
        _kinds(v, t, kinds)
        if not first:
            first = kinds
            if len(first) > 1:
                return i
        elif kinds - first:
            return i
    return None


def kind_error(values: Sequence[Any], t: pa.DataType, i: int) -> str:
    """Why value ``i`` cannot share a column of type ``t`` with the values before it."""
    bad = values[i]
    first = next((v for v in values if v is not None), None)
    return (
        f"{bad!r:.60} ({_arrow_type(bad)}), but rows before it hold {first!r:.60} "
        f"({_arrow_type(first)}): one type for both ({t}) would change values"
    )


def _arrow_type(v: Any) -> str:
    try:
        return str(pa.array([v]).type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return type(v).__name__
