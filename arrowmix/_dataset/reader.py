"""Vectorised row gathering over a table made of many record batches.

``pyarrow.Table.take`` on a column of many chunks costs time in proportion to the column's total
bytes, whatever the number of indices. :meth:`TableReader.take` instead groups the indices by
record batch (after a stable argsort when they are not sorted), takes from each batch, and
restores the requested order with one ``take`` over the small result. Sorted, contiguous
requests become zero-copy slices.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["TableReader"]


class TableReader:
    """Random access by row position to a (possibly multi-file, memory-mapped) table."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table
        self._batches = [b for b in table.to_batches() if b.num_rows]
        sizes = [b.num_rows for b in self._batches]
        self._offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
        np.cumsum(sizes, out=self._offsets[1:])

    @property
    def num_rows(self) -> int:
        return self.table.num_rows

    def slice(self, start: int, stop: int) -> pa.Table:
        """Rows ``[start, stop)``, zero-copy."""
        return self.table.slice(start, max(0, stop - start))

    def take(self, positions: np.ndarray) -> pa.Table:
        """Rows at ``positions`` (int64, any order, repeats allowed), in that order."""
        idx = np.asarray(positions, dtype=np.int64)
        n = len(idx)
        if n == 0:
            return self.table.schema.empty_table()
        if n > 1 and np.any(idx[1:] < idx[:-1]):
            order = np.argsort(idx, kind="stable")
            gathered = self._take_sorted(idx[order])
            inverse = np.empty(n, dtype=np.int64)
            inverse[order] = np.arange(n, dtype=np.int64)
            return gathered.take(inverse)
        return self._take_sorted(idx)

    def _take_sorted(self, idx: np.ndarray) -> pa.Table:
        first, last = int(idx[0]), int(idx[-1])
        # Sorted with repeats can span exactly len(idx) rows too ([0, 0, 2]): check every step.
        if last - first + 1 == len(idx) and (len(idx) == 1 or bool(np.all(np.diff(idx) == 1))):
            return self.slice(first, last + 1)
        if len(self._batches) == 1:
            return pa.Table.from_batches([self._batches[0].take(idx)])
        owner = np.searchsorted(self._offsets, idx, side="right") - 1
        cuts = np.flatnonzero(owner[1:] != owner[:-1]) + 1
        parts = []
        for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(idx)], strict=True):
            b = int(owner[lo])
            local = idx[lo:hi] - self._offsets[b]
            parts.append(self._batches[b].take(local))
        return pa.Table.from_batches(parts, schema=self.table.schema)
