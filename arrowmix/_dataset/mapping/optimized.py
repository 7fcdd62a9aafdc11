"""HF ``datasets``' optimized integer types for tokenizer-shaped columns.

HF stores a returned ``input_ids`` as ``int32`` and ``attention_mask``, ``special_tokens_mask``
and ``token_type_ids`` as ``int8`` (its ``OptimizedTypedSequence``), for integer scalars, lists
and lists of lists, when the column has no type of its own (no ``features``, and no input
column of that name whose type ``try_original_type`` keeps). Values that do not fit keep
``int64``, as in HF. The token path reads ``int32`` ids without a copy.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

__all__ = ["OPTIMIZED_INT_TYPES", "optimized"]

#: HF's ``optimized_int_type_by_col`` (``datasets.arrow_writer.OptimizedTypedSequence``).
OPTIMIZED_INT_TYPES: dict[str, pa.DataType] = {
    "attention_mask": pa.int8(),
    "special_tokens_mask": pa.int8(),
    "input_ids": pa.int32(),
    "token_type_ids": pa.int8(),
}


def _target(t: pa.DataType, small: pa.DataType) -> pa.DataType | None:
    if pa.types.is_int64(t):
        return small
    if pa.types.is_list(t) and pa.types.is_int64(t.value_type):
        return pa.list_(small)
    if (
        pa.types.is_list(t)
        and pa.types.is_list(t.value_type)
        and pa.types.is_int64(t.value_type.value_type)
    ):
        return pa.list_(pa.list_(small))
    return None


def optimized(name: str, arr: pa.Array[Any]) -> pa.Array[Any]:
    """``arr`` (column ``name``) in HF's optimized type when it has one and the values fit."""
    small = OPTIMIZED_INT_TYPES.get(name)
    target = None if small is None else _target(arr.type, small)
    if target is None:
        return arr
    try:
        return arr.cast(target)  # safe cast: an out-of-range value raises
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return arr  # HF falls back to int64 too
