"""HF's formatting of Python rows for ``"numpy"`` and ``"torch"``: ``recursive_tensorize``.

HF ``datasets`` formats the rows of an iterable dataset in one of two ways. Rows that still
come from Arrow tables (the source, read through ``take``, ``skip``, ``shuffle``...) are
formatted from the table, with the column's type. Rows that a Python function produced
(after ``map``, ``filter``, ``remove_columns``, ``rename_column``, ``batch``, which HF
implements as maps) are *tensorized* value by value instead: a Python int becomes a 0-d
``int64`` array (numpy) or tensor (torch), a float a 0-d ``float64`` array or a ``float32``
tensor, a list of equal values one stacked array, strings stay strings. :func:`tensorize`
does what HF's ``NumpyFormatter``/``TorchFormatter.recursive_tensorize`` do, so those rows
get HF's values and types.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["TENSOR_FORMATS", "tensorize"]

TENSOR_FORMATS = ("numpy", "torch")


def tensorize(data: Mapping[str, Any], fmt: str) -> dict[str, Any]:
    """A row or a batch (a dict of columns) tensorized as HF's ``fmt`` formatter does."""
    rec = _np_recursive if fmt == "numpy" else _pt_recursive
    return {k: tensorize(v, fmt) if isinstance(v, dict) else rec(v) for k, v in data.items()}


# ---------------------------------------------------------------------------- numpy
def _np_tensorize(value: Any) -> Any:
    if isinstance(value, (str, bytes, type(None), np.number)):
        return value
    if isinstance(value, (np.character, np.ndarray)) and np.issubdtype(value.dtype, np.character):
        return value
    kwargs: dict[str, Any] = {}
    if isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.integer):
        kwargs = {"dtype": np.int64}
    elif isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.floating):
        kwargs = {"dtype": np.float32}
    return np.asarray(value, **kwargs)


def _np_consolidate(column: list[Any]) -> Any:
    first = column[0] if column else None
    if first is not None and all(
        isinstance(x, (np.ndarray, np.number, np.bool_))
        and x.shape == first.shape
        and x.dtype == first.dtype
        for x in column
    ):
        return np.stack(column)
    out = np.empty(len(column), dtype=object)
    out[:] = column
    return out


def _np_recursive(data: Any) -> Any:
    if _is_tensor(data):
        return _np_tensorize(data.detach().cpu().numpy()[()])
    if hasattr(data, "__array__") and not isinstance(data, (np.ndarray, np.character, np.number)):
        data = data.__array__()
    if isinstance(data, np.ndarray) and data.dtype == object:
        return _np_consolidate([_np_nested(x) for x in data])
    if isinstance(data, (list, tuple)):
        return _np_consolidate([_np_nested(x) for x in data])
    return _np_tensorize(data)


def _np_nested(data: Any) -> Any:
    return tensorize(data, "numpy") if isinstance(data, dict) else _np_recursive(data)


# ---------------------------------------------------------------------------- torch
def _is_tensor(value: Any) -> bool:
    torch = _torch_if_imported()
    return torch is not None and isinstance(value, torch.Tensor)


def _torch_if_imported() -> Any:
    import sys

    return sys.modules.get("torch")


def _pt_tensorize(value: Any) -> Any:
    import torch

    if isinstance(value, (str, bytes, type(None))):
        return value
    if isinstance(value, (np.character, np.ndarray)) and np.issubdtype(value.dtype, np.character):
        return value.tolist()
    if isinstance(value, torch.Tensor):  # HF copies it (torch.tensor(t), which warns)
        return value.detach().clone()
    kwargs: dict[str, Any] = {}
    if isinstance(value, (np.number, np.ndarray)) and np.issubdtype(value.dtype, np.integer):
        kwargs = {"dtype": torch.int64}
        if value.dtype in (np.uint16, np.uint32):
            value = value.astype(np.int64)
    elif isinstance(value, (np.number, np.ndarray)) and np.issubdtype(value.dtype, np.floating):
        kwargs = {"dtype": torch.float32}
    return torch.tensor(value, **kwargs)


def _pt_consolidate(column: list[Any]) -> Any:
    import torch

    first = column[0] if column else None
    if first is not None and all(
        isinstance(x, torch.Tensor) and x.shape == first.shape and x.dtype == first.dtype
        for x in column
    ):
        return torch.stack(column)
    return column


def _pt_recursive(data: Any) -> Any:
    if hasattr(data, "__array__") and not _is_tensor(data):
        data = data.__array__()
    if isinstance(data, np.ndarray):
        if data.dtype == object:  # torch cannot make a tensor of objects
            return _pt_consolidate([_pt_nested(x) for x in data])
    elif isinstance(data, (list, tuple)):
        return _pt_consolidate([_pt_nested(x) for x in data])
    return _pt_tensorize(data)


def _pt_nested(data: Any) -> Any:
    return tensorize(data, "torch") if isinstance(data, dict) else _pt_recursive(data)
