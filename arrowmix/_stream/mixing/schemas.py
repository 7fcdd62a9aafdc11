"""The one schema of a mix's (or zip's) inputs, when their schemas are known.

Inputs must have the same columns, in the same order. A column may hold integers of
different widths in different inputs (a ``uint16`` Megatron corpus and ``list<int32>``
chunks): it then has the smallest integer type that holds every input's range, as numpy
promotes (``np.result_type``: ``uint16`` and ``int32`` give ``int32``, ``uint32`` and
``int32`` give ``int64``), for plain integer columns and lists of integers (token columns)
alike. A list column is a ``large_list`` when any input's is. A combination no integer type
holds (``uint64`` with a signed type) is refused, naming both inputs and their types; so
is any other difference.

The values are cast where rows are gathered (:class:`~arrowmix._stream.mixing.mixed_rows.MixedRows`,
the token gathers of :class:`~arrowmix._stream.tokens.concat.ConcatTokenColumn`): an input
whose type is already the common one is read as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from arrowmix._stream.base import Stream
from arrowmix._stream.tokens.column import common_int_dtype
from arrowmix.exceptions import SchemaMismatchError

__all__ = ["check_schemas", "common_schema", "mix_schema"]


def check_schemas(streams: Sequence[Stream[Any]], names: Sequence[str] | None = None) -> None:
    """Raise SchemaMismatchError unless the known input schemas have one common schema."""
    mix_schema(streams, names)


def mix_schema(streams: Sequence[Stream[Any]], names: Sequence[str] | None = None) -> Any:
    """The common schema of the inputs whose schema is known (None when none is).

    Raises:
        SchemaMismatchError: other columns, or types with no common type (naming the inputs).
    """
    known = [(_label(i, names), s.schema) for i, s in enumerate(streams) if s.schema is not None]
    return common_schema(known) if known else None


def _label(i: int, names: Sequence[str] | None) -> str:
    return str(i) if names is None else f"{i} ({names[i]!r})"


def common_schema(schemas: Sequence[tuple[str, pa.Schema]]) -> pa.Schema:
    """The schema every ``(label, schema)`` casts to without loss (the first's when equal).

    ``label`` names the input in errors (``"0"``, ``"1 ('web')"``).

    Raises:
        SchemaMismatchError: other column names, or a column of types with no common type.
    """
    label0, ref = schemas[0]
    fields = list(ref)
    for label, sch in schemas[1:]:
        if sch.equals(ref):
            continue
        if sch.names != ref.names:
            raise _mismatch(label0, ref, label, sch)
        for j, field in enumerate(sch):
            if field.type.equals(fields[j].type):
                continue
            kind = _promote(fields[j].type, field.type)
            if kind is None:
                if _integers(fields[j].type) and _integers(field.type):
                    raise _lossy(field.name, schemas, j)
                raise _mismatch(label0, ref, label, sch)
            fields[j] = fields[j].with_type(kind)
    if all(f.equals(g) for f, g in zip(fields, ref, strict=True)):
        return ref
    return pa.schema(fields)  # the first input's metadata (its HF features) no longer holds


def _integers(t: pa.DataType) -> bool:
    """Whether ``t`` is an integer type or a (large) list of one."""
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        t = t.value_type
    return bool(pa.types.is_integer(t))


def _promote(a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
    """The integer (or list of integers) type holding ``a``'s and ``b``'s values; else None."""
    if pa.types.is_integer(a) and pa.types.is_integer(b):
        kind = common_int_dtype([np.dtype(a.to_pandas_dtype()), np.dtype(b.to_pandas_dtype())])
        return None if kind is None else pa.from_numpy_dtype(kind)
    lists = (pa.types.is_list, pa.types.is_large_list)
    if any(f(a) for f in lists) and any(f(b) for f in lists):
        value = _promote(a.value_type, b.value_type)  # type: ignore[attr-defined]
        if value is None:
            return None
        large = pa.types.is_large_list(a) or pa.types.is_large_list(b)
        return pa.large_list(value) if large else pa.list_(value)
    return None


def _lossy(name: str, schemas: Sequence[tuple[str, pa.Schema]], j: int) -> SchemaMismatchError:
    types = [(label, sch.field(j).type) for label, sch in schemas]
    listed = ", ".join(f"stream {label}: {t}" for label, t in types)
    return SchemaMismatchError(
        f"column {name!r} holds integers of types no one integer type holds without loss "
        f"({listed}): uint64 values above 2**63 - 1 do not fit a signed type. Cast the uint64 "
        "input to a signed type first (e.g. `ds.cast_column`), if its values fit."
    )


def _mismatch(label0: str, ref: pa.Schema, label: str, sch: pa.Schema) -> SchemaMismatchError:
    a = {f.name: str(f.type) for f in ref}
    b = {f.name: str(f.type) for f in sch}
    diff = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    if not diff:  # the same names and types, in another order (or other field flags)
        diff = [f.name for f, g in zip(ref, sch, strict=False) if not f.equals(g)] or ref.names
    return SchemaMismatchError(
        f"streams {label0} and {label} have different schemas; differing columns: {diff} "
        f"(stream {label0}: {[f'{k}: {a.get(k)}' for k in diff]}, stream {label}: "
        f"{[f'{k}: {b.get(k)}' for k in diff]})."
    )
