"""Reading a dataset's rows in its format: ``ds[key]``, ``ds.iter(batch_size)``, ``iter(ds)``.

Functions of the state (``arrowmix._dataset.state``): contiguous rows are sliced zero-copy
(without an array mapping), other keys gathered once, and the format turns the Arrow table
into Python objects, numpy arrays, tensors or tables.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from arrowmix._dataset.indices import to_positions
from arrowmix._dataset.state import DatasetState, gather, num_rows, view_range
from arrowmix._validate import check_int
from arrowmix.exceptions import ColumnNotFoundError

__all__ = ["check_column", "item", "iter_batches", "iter_rows"]

_ITER_BLOCK = 1024


def check_column(s: DatasetState, name: str) -> None:
    """Raise ColumnNotFoundError naming the columns unless ``name`` is one."""
    if name not in s.table.column_names:
        raise ColumnNotFoundError(
            f"Unknown column {name!r}; available columns: {s.table.column_names}."
        )


def item(s: DatasetState, key: Any) -> Any:
    """``ds[key]``: a column by name, a row by int, a batch by slice or positions."""
    if isinstance(key, (bool, np.bool_)):
        raise TypeError(
            f"A dataset index must be an int, str, slice or collection of ints, not {key!r}."
        )
    fmt, n = s.format, num_rows(s)
    if isinstance(key, str):
        check_column(s, key)
        return fmt.column(view_range(s, 0, n, [key]).column(key), key)
    cols = fmt.read_columns()
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        i = int(key)
        if i < 0:
            i += n
        if i < 0 or i >= n:
            to_positions([int(key)], n)  # raises IndexError naming it
        return fmt.rows(view_range(s, i, i + 1, cols))[0]
    if isinstance(key, slice):
        start, stop, step = key.indices(n)
        if step == 1:
            return fmt.batch(view_range(s, start, stop, cols))
        key = range(start, stop, step)
    pos = to_positions(key, n)
    return fmt.batch(gather(s, pos.to_numpy(), cols))


def iter_batches(s: DatasetState, batch_size: int, drop_last_batch: bool) -> Iterator[Any]:
    """Batches of ``batch_size`` rows in the format (checked at the first ``next``)."""
    batch_size = check_int("batch_size", batch_size, minimum=1)
    n, fmt = num_rows(s), s.format
    cols = fmt.read_columns()
    for start in range(0, n, batch_size):
        stop = min(start + batch_size, n)
        if drop_last_batch and stop - start < batch_size:
            return
        yield fmt.batch(view_range(s, start, stop, cols))


def iter_rows(s: DatasetState) -> Iterator[Any]:
    """The rows in the format, read in blocks of ``_ITER_BLOCK``."""
    n, fmt = num_rows(s), s.format
    cols = fmt.read_columns()
    for start in range(0, n, _ITER_BLOCK):
        yield from fmt.rows(view_range(s, start, min(start + _ITER_BLOCK, n), cols))
