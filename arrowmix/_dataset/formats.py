"""Output formats: how rows, batches and columns of a view are handed to the user.

``None``/``"python"``: dicts of Python objects (lists for batches); ``"numpy"``: numpy arrays
(fixed-size and equal-length lists stacked into 2-D arrays, ragged ones as object arrays);
``"arrow"``: ``pyarrow.Table`` / ``ChunkedArray``; ``"torch"``: tensors for numeric data (torch
is imported only when this format is used).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["FORMATS", "check_format", "format_batch", "format_column", "format_rows"]

FORMATS = (None, "python", "numpy", "arrow", "torch")


def check_format(fmt: str | None) -> str | None:
    """Validate a format name; ``"python"`` is normalised to ``None``."""
    if fmt not in FORMATS:
        raise ValueError(
            f"Unknown format {fmt!r}; expected one of None, 'python', 'numpy', 'arrow', 'torch'."
        )
    if fmt == "torch":
        _torch()
    return None if fmt == "python" else fmt


def _torch() -> Any:
    try:
        import torch
    except ImportError as exc:
        raise ImportError(
            "The 'torch' format needs PyTorch: pip install 'arrowmix[torch]'."
        ) from exc
    return torch


def format_column(col: pa.ChunkedArray[Any], fmt: str | None) -> Any:
    """One column of a view."""
    if fmt is None:
        return col.to_pylist()
    if fmt == "arrow":
        return col
    arr = _column_to_numpy(col)
    return _to_torch(arr) if fmt == "torch" else arr


def format_batch(table: pa.Table, fmt: str | None) -> Any:
    """A batch: dict of lists / arrays / tensors, or the table itself for ``"arrow"``."""
    if fmt is None:
        return table.to_pydict()
    if fmt == "arrow":
        return table
    return {name: format_column(table.column(name), fmt) for name in table.column_names}


def format_rows(table: pa.Table, fmt: str | None) -> list[Any]:
    """Each row of ``table`` as a dict (a one-row table for ``"arrow"``)."""
    if fmt is None:
        if table.num_rows == 1:  # ds[i]: one scalar per column is ~4x faster than to_pylist
            names, cols = table.column_names, table.columns
            return [{name: col[0].as_py() for name, col in zip(names, cols, strict=True)}]
        return table.to_pylist()
    if fmt == "arrow":
        return [table.slice(i, 1) for i in range(table.num_rows)]
    cols = format_batch(table, fmt)
    return [{k: v[i] for k, v in cols.items()} for i in range(table.num_rows)]


def _column_to_numpy(col: pa.ChunkedArray[Any]) -> np.ndarray:
    t = col.type
    if pa.types.is_fixed_size_list(t):
        flat = pa.concat_arrays([c.flatten() for c in col.chunks]) if col.num_chunks else []  # type: ignore[attr-defined]  # fixed-size list chunks
        return np.asarray(flat).reshape(len(col), t.list_size)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        rows = [np.asarray(v) for v in col.to_pylist()]
        if rows and all(r.shape == rows[0].shape for r in rows) and rows[0].dtype != object:
            return np.stack(rows)
        out = np.empty(len(rows), dtype=object)
        out[:] = rows
        return out
    return col.to_numpy()


def _to_torch(arr: np.ndarray) -> Any:
    torch = _torch()
    if arr.dtype.kind in "biuf":
        return torch.from_numpy(_writable(arr))
    if arr.dtype == object and len(arr) and isinstance(arr[0], np.ndarray):
        return [torch.from_numpy(_writable(a)) for a in arr]
    return arr.tolist()


def _writable(arr: np.ndarray) -> np.ndarray:
    """A contiguous array a tensor may own (read-only zero-copy views are copied).

    Zero-copy views of (memory-mapped) Arrow data are read-only; a tensor over them would let a
    write fault (torch warns), so those are copied.
    """
    arr = np.ascontiguousarray(arr)
    return arr if arr.flags.writeable else arr.copy()
