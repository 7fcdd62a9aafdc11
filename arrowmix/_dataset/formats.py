"""Output formats: how rows, batches and columns of a view are handed to the user.

``None``/``"python"``: dicts of Python objects (lists for batches); ``"numpy"``: numpy arrays
in HF ``datasets``' dtypes (``arrowmix._stream.sources.numpy_values``, shared with streams;
fixed-size and equal-length lists stacked into 2-D arrays, ragged ones as object arrays,
strings as numpy strings, structs as dicts of arrays); ``"arrow"``: ``pyarrow.Table`` /
``ChunkedArray``; ``"torch"``: tensors for numeric data, with HF ``datasets``' dtypes (every
integer type as ``int64``, every float type as ``float32``, unless ``format_kwargs`` give a
``dtype``), strings as Python strings, structs as dicts of tensors (torch is imported only when
this format is used).

``"custom"`` (``with_transform``): the batch as Python objects, passed through the user's
``transform`` (``format_kwargs["transform"]``) at access time, as HF's custom formatter: a
row is a batch of one, a column the transform's output for that column. HF's short names
(``"np"``, ``"pt"``, ``"pa"``/``"pyarrow"``, ``"pd"``, ``"pl"``) name the same formats.

A :class:`Format` may restrict the formatted columns (``columns``); the other columns are then
left out, or returned as Python objects with ``output_all_columns=True`` (as in HF).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from arrowmix._stream.sources.numpy_values import batch_values, row_values

__all__ = [
    "FORMATS",
    "Format",
    "check_format",
    "format_batch",
    "format_column",
    "format_rows",
    "transmit_columns",
]

FORMATS = (None, "python", "numpy", "arrow", "torch", "pandas", "polars", "custom")
#: HF's other names of the formats (``datasets.formatting``'s aliases).
ALIASES = {
    "np": "numpy",
    "pt": "torch",
    "pa": "arrow",
    "pyarrow": "arrow",
    "pd": "pandas",
    "pl": "polars",
}
#: Formats whose batches and rows are data frames (one-row frames for rows, series for columns).
FRAMES = ("pandas", "polars")


def check_format(fmt: str | None) -> str | None:
    """Validate a format name; ``"python"`` is normalised to ``None``, aliases to their name."""
    if isinstance(fmt, str):
        fmt = ALIASES.get(fmt, fmt)
    if fmt not in FORMATS:
        raise ValueError(
            f"Unknown format {fmt!r}; expected one of None, 'python', 'numpy', 'arrow', "
            "'torch', 'pandas', 'polars', 'custom' (with_transform), or HF's aliases "
            f"{sorted(ALIASES)}."
        )
    if fmt == "torch":
        _torch()
    if fmt == "polars":
        _polars()
    return None if fmt == "python" else fmt


@dataclass(frozen=True)
class Format:
    """A view's output format: the type, the formatted columns and the conversion options."""

    type: str | None = None
    columns: tuple[str, ...] | None = None
    output_all_columns: bool = False
    kwargs: tuple[tuple[str, Any], ...] = ()
    #: The table holds ``arrow.json`` (``on_mixed_types="use_json"``): the Python format
    #: decodes it (``arrowmix._storage.mixed_json``).
    json: bool = False

    def read_columns(self) -> list[str] | None:
        """The columns to read for a row or batch (``None``: all of them)."""
        if self.columns is None or self.output_all_columns:
            return None
        return list(self.columns)

    def batch(self, table: pa.Table) -> Any:
        """A batch of ``table`` (read with :meth:`read_columns`) in this format."""
        out = self._batch(table)
        if self.json and self.type is None:
            from arrowmix._storage.mixed_json import decode_pydict

            return decode_pydict(table, out)
        return out

    def _batch(self, table: pa.Table) -> Any:
        kw = dict(self.kwargs) if self.kwargs else None
        if self.columns is None or not self.output_all_columns:
            return format_batch(table, self.type, kw)
        if self.type == "arrow" or self.type in FRAMES:
            return format_batch(table, self.type, kw)
        inside = [c for c in table.column_names if c in self.columns]
        formatted = format_batch(table.select(inside), self.type, kw)
        if self.type == "custom":  # the transform's columns, then the others (as HF)
            others = {n: table.column(n).to_pylist() for n in table.column_names}
            return {**formatted, **{n: v for n, v in others.items() if n not in inside}}
        return {
            name: formatted[name] if name in formatted else table.column(name).to_pylist()
            for name in table.column_names
        }

    def rows(self, table: pa.Table) -> list[Any]:
        """Each row of ``table`` (read with :meth:`read_columns`) in this format."""
        if self.json and self.type is None:
            from arrowmix._storage.mixed_json import decode_pydict

            cols = decode_pydict(table, table.to_pydict())
            return [{k: v[i] for k, v in cols.items()} for i in range(table.num_rows)]
        if self.columns is None or not self.output_all_columns or self.type in ("arrow", *FRAMES):
            return format_rows(table, self.type, dict(self.kwargs) if self.kwargs else None)
        if self.type == "custom":
            batch = self._batch(table)
            return [{k: v[i] for k, v in batch.items()} for i in range(table.num_rows)]
        inside = [c for c in table.column_names if c in self.columns]
        kw = dict(self.kwargs) if self.kwargs else None
        formatted = format_rows(table.select(inside), self.type, kw)
        others = {n: table.column(n).to_pylist() for n in table.column_names if n not in inside}
        return [
            {n: row[n] if n in row else others[n][i] for n in table.column_names}
            for i, row in enumerate(formatted)
        ]

    def column(self, col: pa.ChunkedArray[Any], name: str) -> Any:
        """Column ``name``: formatted if it is a formatted column, else Python objects."""
        if self.columns is not None and name not in self.columns:
            return col.to_pylist()
        if self.type in FRAMES:  # a series named by its column, as HF gives it
            return frame(pa.table({name: col}), self.type)[name]
        out = format_column(col, self.type, dict(self.kwargs), name)
        if self.json and self.type is None:
            from arrowmix._storage.mixed_json import decode, has_json

            if has_json(col.type):
                return [decode(v, col.type) for v in out]
        return out


def transmit_columns(
    columns: tuple[str, ...] | None,
    parent_columns: Sequence[str],
    new_columns: Sequence[str],
    renamed: Mapping[str, str] | None = None,
) -> tuple[str, ...] | None:
    """The formatted columns of a transform's result, by HF ``datasets``' rule.

    Every column of the result is formatted except those the parent left unformatted, so a
    column that a ``map`` adds is visible in the format. ``renamed`` maps old names to new.
    """
    if columns is None:
        return None
    ren = dict(renamed or {})
    unformatted = {ren.get(c, c) for c in parent_columns if c not in columns}
    return tuple(c for c in new_columns if c not in unformatted)


def _torch() -> Any:
    try:
        import torch
    except ImportError as exc:
        raise ImportError(
            "The 'torch' format needs PyTorch: pip install 'arrowmix[torch]'."
        ) from exc
    return torch


def _polars() -> Any:
    try:
        import polars  # type: ignore[import-not-found]  # optional, not installed in CI
    except ImportError as exc:
        raise ImportError("The 'polars' format needs polars: pip install polars.") from exc
    return polars


def frame(table: pa.Table, fmt: str) -> Any:
    """``table`` as a pandas or polars data frame (HF's ``"pandas"``/``"polars"`` formats)."""
    if fmt == "polars":
        return _polars().from_arrow(table)
    from arrowmix._storage.mixed_json import decode, has_json

    df = table.to_pandas()
    for f in table.schema:
        if has_json(f.type):  # HF's Json(): the values, not their JSON text
            values = [decode(v, f.type) for v in table.column(f.name).to_pylist()]
            df[f.name] = _objects(values, df.index)
    return df


def _objects(values: list[Any], index: Any) -> Any:
    """A pandas series of Python objects (dicts and lists kept whole, not expanded)."""
    import pandas as pd  # type: ignore[import-untyped]  # the pandas format: installed

    out = np.empty(len(values), dtype=object)
    out[:] = values
    return pd.Series(out, index=index, dtype=object)


def format_column(
    col: pa.ChunkedArray[Any],
    fmt: str | None,
    kwargs: Mapping[str, Any] | None = None,
    name: str = "",
) -> Any:
    """One column of a view (``name``: the column's, for errors)."""
    if fmt is None:
        return col.to_pylist()
    if fmt == "custom":
        out = _transformed(pa.table({name: col}), kwargs)
        if name not in out:
            raise KeyError(
                f"the with_transform function returned no column {name!r} (it returned "
                f"{sorted(out)}) for the column {name!r} asked for."
            )
        return out[name]
    if fmt == "arrow":
        return col
    if fmt in FRAMES:
        return frame(pa.table({"column": col}), fmt)["column"]
    if fmt == "numpy":
        return batch_values(col, kwargs or {}, name)
    return _to_torch(_column_to_numpy(col), kwargs or {})


def format_batch(table: pa.Table, fmt: str | None, kwargs: Mapping[str, Any] | None = None) -> Any:
    """A batch: dict of lists / arrays / tensors, or the table itself for ``"arrow"``."""
    if fmt is None:
        return table.to_pydict()
    if fmt == "custom":
        return _transformed(table, kwargs)
    if fmt == "arrow":
        return table
    if fmt in FRAMES:
        return frame(table, fmt)
    return {
        name: format_column(table.column(name), fmt, kwargs, name) for name in table.column_names
    }


def format_rows(
    table: pa.Table, fmt: str | None, kwargs: Mapping[str, Any] | None = None
) -> list[Any]:
    """Each row of ``table`` as a dict (a one-row table for ``"arrow"``)."""
    if fmt is None:
        if table.num_rows == 1:  # ds[i]: one scalar per column is ~4x faster than to_pylist
            names, cols = table.column_names, table.columns
            return [{name: col[0].as_py() for name, col in zip(names, cols, strict=True)}]
        return table.to_pylist()
    if fmt == "arrow":
        return [table.slice(i, 1) for i in range(table.num_rows)]
    if fmt in FRAMES:
        return [frame(table.slice(i, 1), fmt) for i in range(table.num_rows)]
    if fmt == "custom":
        batch = _transformed(table, kwargs)
        return [{k: v[i] for k, v in batch.items()} for i in range(table.num_rows)]
    if fmt == "numpy":
        names = table.column_names
        values = [row_values(table.column(i), kwargs or {}, n) for i, n in enumerate(names)]
        return (
            [dict(zip(names, row, strict=True)) for row in zip(*values, strict=True)]
            if names
            else [{} for _ in range(table.num_rows)]
        )
    cols = format_batch(table, fmt, kwargs)
    return [{k: v[i] for k, v in cols.items()} for i in range(table.num_rows)]


def _transformed(table: pa.Table, kwargs: Mapping[str, Any] | None) -> Any:
    """``with_transform``'s function applied to ``table`` as a batch of Python objects."""
    transform = (kwargs or {}).get("transform")
    if transform is None:
        raise ValueError("the 'custom' format needs a transform: use with_transform(fn).")
    out = transform(table.to_pydict())
    if not isinstance(out, Mapping):
        raise TypeError(
            f"the with_transform function {getattr(transform, '__name__', transform)!r} "
            f"returned {type(out).__name__}; it must return a dict of columns (a batch)."
        )
    return out


def _column_to_numpy(col: pa.ChunkedArray[Any]) -> np.ndarray:
    t = col.type
    if pa.types.is_fixed_size_list(t) and col.null_count == 0:
        flat = pa.concat_arrays([c.flatten() for c in col.chunks]) if col.num_chunks else []  # type: ignore[attr-defined]  # fixed-size list chunks
        return np.asarray(flat).reshape(len(col), t.list_size)
    if _is_list(t):
        rows = _list_rows(col)
        arrays = [r for r in rows if r is not None]
        first = arrays[0] if arrays else None
        if (
            first is not None
            and len(arrays) == len(rows)
            and first.dtype != object
            and all(r.shape == first.shape for r in arrays)
        ):
            return np.stack(arrays)
        out = np.empty(len(rows), dtype=object)
        out[:] = rows
        return out
    if pa.types.is_struct(t):
        return _struct_to_numpy(col)
    if _is_string(t):
        values = col.to_numpy(zero_copy_only=False)
        return values.astype(str) if col.null_count == 0 and len(values) else values
    return col.to_numpy()


def _numpy_dtype(t: pa.DataType) -> Any:
    """The numpy dtype of Arrow type ``t``'s values (``object`` for strings and others)."""
    try:
        return np.dtype(t.to_pandas_dtype())
    except (NotImplementedError, TypeError):
        return np.dtype(object)


def _is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def _list_rows(col: pa.ChunkedArray[Any]) -> list[Any]:
    """Each row of a list column as an array; rows of lists of lists are formatted in turn.

    A row of nested lists of one shape is one array, of ragged ones an object array of its
    items (HF's ``[[tensor([1]), tensor([2, 3])], tensor([[4]])]``).
    """
    inner = col.type.value_type
    if not (_is_list(inner) or pa.types.is_struct(inner)):
        empty = np.empty(0, dtype=_numpy_dtype(inner))  # HF's empty row keeps the type
        return [None if v is None else np.asarray(v) if v else empty for v in col.to_pylist()]
    return [
        None if not v.is_valid else _column_to_numpy(pa.chunked_array([v.values], type=inner))
        for chunk in col.chunks
        for v in chunk
    ]


def _is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def _struct_to_numpy(col: pa.ChunkedArray[Any]) -> np.ndarray:
    """An object array of dicts (``None`` for a null row) whose values are numpy-formatted."""
    t = col.type
    names = [t.field(i).name for i in range(t.num_fields)]
    fields = {
        name: _column_to_numpy(
            pa.chunked_array([c.flatten()[i] for c in col.chunks], type=t.field(i).type)  # type: ignore[attr-defined]  # struct chunks
        )
        for i, name in enumerate(names)
    }
    valid = col.is_valid().to_numpy(zero_copy_only=False) if col.null_count else None
    out = np.empty(len(col), dtype=object)
    for j in range(len(col)):
        out[j] = None if valid is not None and not valid[j] else {n: fields[n][j] for n in names}
    return out


def _to_torch(value: Any, kwargs: Mapping[str, Any]) -> Any:
    """HF's torch rules: ints as int64, floats as float32, strings as ``str``, dicts recursed."""
    torch = _torch()
    if isinstance(value, np.ndarray):
        kind = value.dtype.kind
        if kind in "biuf":
            return _tensor(torch, value, kwargs)
        if kind == "O":
            return _consolidate(torch, [_to_torch(v, kwargs) for v in value])
        return value.tolist()
    if isinstance(value, dict):
        return {k: _to_torch(v, kwargs) for k, v in value.items()}
    if isinstance(value, np.generic):
        if value.dtype.kind in "biuf":
            return _tensor(torch, np.asarray(value), kwargs)
        return value.item()
    return value


def _tensor(torch: Any, arr: np.ndarray, kwargs: Mapping[str, Any]) -> Any:
    kind = arr.dtype.kind
    if kind in "iu" and arr.dtype != np.uint64:
        arr = arr.astype(np.int64, copy=False)
    elif kind == "f":
        arr = arr.astype(np.float32, copy=False)
    tensor = torch.from_numpy(_writable(arr))
    return tensor.to(**kwargs) if kwargs else tensor


def _consolidate(torch: Any, items: list[Any]) -> Any:
    """Stack a list of tensors of one shape and dtype into one tensor (as HF does)."""
    first = items[0] if items else None
    if isinstance(first, torch.Tensor) and all(
        isinstance(x, torch.Tensor) and x.shape == first.shape and x.dtype == first.dtype
        for x in items
    ):
        return torch.stack(items)
    return items


def _writable(arr: np.ndarray) -> np.ndarray:
    """A contiguous array a tensor may own (read-only zero-copy views are copied).

    Zero-copy views of (memory-mapped) Arrow data are read-only; a tensor over them would let a
    write fault (torch warns), so those are copied.
    """
    if arr.ndim == 0:  # np.ascontiguousarray would make it 1-d: HF's scalar is a 0-d tensor
        return np.array(arr, copy=True)
    arr = np.ascontiguousarray(arr)
    return arr if arr.flags.writeable else arr.copy()
