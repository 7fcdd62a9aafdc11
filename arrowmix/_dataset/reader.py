"""Vectorised row gathering over a table made of many record batches.

``pyarrow.Table.take`` on a column of many chunks costs time in proportion to the column's total
bytes, whatever the number of indices. :meth:`TableReader.take` instead groups the indices by
record batch (a stable argsort of each index's batch number, so rows of one batch keep their
request order), makes one ``take`` call per batch touched, and restores the requested order
with one ``take`` over the small result. Sorted requests need no reordering; strictly
consecutive requests become zero-copy slices (sorted requests with repeats, such as
``[0, 0, 2]``, are not slices).

A gather of 1,000 random rows from a 1M-row table touches every batch, so the fixed cost of each
``take`` call matters as much as the bytes copied: the calls go straight to the compute
function with pyarrow indices and without a per-batch bounds check (the whole request is checked
once against the table's length, and each batch's local indices are in range by construction).

Memory-mapped files are advised random (:mod:`arrowmix._storage.pages`): a slice asks the kernel
for its rows' pages and for those of the rows after it before they are touched, so sequential
readers (iteration, ``map``, exports, in-order streams) read ahead at disk speed.
"""

from __future__ import annotations

import functools
import itertools
import mmap
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from arrowmix._storage import pages
from arrowmix._storage.pages import is_mapped, prefetch_rows, resident, row_ranges
from arrowmix._storage.resident import AROUND, touched
from arrowmix._storage.take import int64_array, take_unchecked

__all__ = ["TableReader", "int64_array"]

_PAGE = mmap.PAGESIZE
#: Rows a slice asks for beyond its end at least (the next slices of a sequential reader).
_AHEAD_ROWS = 65536
#: Rows whose pages are looked up (``mincore``) before scattered rows are asked for.
_SAMPLE = 8
#: Gathers of this many rows or more ask for their rows' pages before reading them.
_GATHER_ADVICE = 16


class TableReader:
    """Random access by row position to a (possibly multi-file, memory-mapped) table."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table
        self._batches = [b for b in table.to_batches() if b.num_rows]
        sizes = [b.num_rows for b in self._batches]
        self._offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
        np.cumsum(sizes, out=self._offsets[1:])
        self._mapped = any(_in_mapping(b) for b in self._batches[:1])
        # rows whose pages were last asked for, and of which columns (None: all)
        self._asked: tuple[int, int, tuple[int, ...] | None] = (0, 0, None)
        self._last_stop = -1  # where the last slice ended

    @property
    def num_rows(self) -> int:
        return self.table.num_rows

    def slice(self, start: int, stop: int, reads: Sequence[str] | None = None) -> pa.Table:
        """Rows ``[start, stop)``, zero-copy; their pages and the next rows' are asked for.

        One row that does not continue the last slice asks for nothing: asking costs more
        than the two faults (offsets, then values) that read it. ``reads`` names the only
        columns the caller will read (a map's ``input_columns``): only theirs are asked for.
        """
        if self._mapped:
            touched((stop - start) * self._row_bytes + _PAGE)
        if self._mapped and (stop - start > 1 or start == self._last_stop):
            self._read_ahead(start, stop, reads)
        else:  # one isolated row (``ds[i]``): its faults read its own pages, no advice
            self._last_stop = stop
            if pages.streamed():
                pages.random_again()
        return self.table.slice(start, max(0, stop - start))

    def _read_ahead(self, start: int, stop: int, reads: Sequence[str] | None = None) -> None:
        """Ask for the pages of rows ``[start, stop)`` and, in a sequential pass, of the next.

        The rows after the slice are asked for when it continues the last one. A sequential
        reader asks once per row: a slice inside the rows last asked for, far enough from
        their end, asks for nothing. An isolated slice (``ds[i]``) asks for its own rows only.
        """
        lo, hi, asked_for = self._asked
        cols = None if reads is None else tuple(self.table.schema.get_field_index(c) for c in reads)
        ahead = max(stop - start, _AHEAD_ROWS) if start == self._last_stop else 0
        self._last_stop = stop
        if cols != asked_for:
            lo = hi = 0  # other columns than last time: nothing of theirs was asked for
        if lo <= start and stop + ahead // 2 <= hi:
            return
        first = hi if lo <= start <= hi else start
        last = min(stop + ahead, self.num_rows)
        self._asked = (start, last, cols)
        prefetch_rows(self._pieces(first, last, cols), large=True)

    def _pieces(
        self, first: int, last: int, cols: tuple[int, ...] | None = None
    ) -> list[tuple[pa.Array[Any], int, int]]:
        """``(column of a batch, start, stop)`` of rows ``[first, last)``, batch by batch.

        Only the columns at positions ``cols`` when given.
        """
        b0 = int(np.searchsorted(self._offsets, first, side="right")) - 1
        b1 = int(np.searchsorted(self._offsets, last, side="left"))
        parts: list[tuple[pa.Array[Any], int, int]] = []
        for b in range(max(b0, 0), min(b1, len(self._batches))):
            base = int(self._offsets[b])
            a, z = max(first - base, 0), min(last - base, self._batches[b].num_rows)
            columns = self._batches[b].columns
            wanted = range(len(columns)) if cols is None else cols
            parts.extend((columns[j], a, z) for j in wanted)
        return parts

    def prefetch_ranges(self, starts: np.ndarray, stops: np.ndarray) -> None:
        """Ask for the pages of rows ``[starts[i], stops[i])`` (a stream's next blocks).

        The offsets of variable-width columns are asked for first, all at once: finding
        where each range's values lie reads them, and they then arrive together instead of
        one page at a time.
        """
        if not self._mapped:
            return
        pieces = [
            p
            for a, z in zip(starts.tolist(), stops.tolist(), strict=True)
            for p in self._pieces(a, z)
        ]
        prefetch_rows(pieces, values=False)
        prefetch_rows(pieces)

    def prefetch_rows_at(self, positions: np.ndarray, *, values: bool = True) -> bool:
        """Ask for the exact pages of the rows at ``positions`` (scattered rows), all at once.

        With ``values=False`` only their offsets (and fixed-width values) are asked for:
        locating the values of variable-width rows reads the offsets, so a reader that asks
        for the offsets first and for the values later finds the offsets arrived. Nothing
        is asked (False) when the pages of a sample of the rows are in memory already, so
        a warm table pays a few ``mincore`` calls only.
        """
        pos = np.asarray(positions, dtype=np.int64)
        if not self._mapped or len(pos) == 0:
            return False
        if pages.streamed():
            pages.random_again()
        sample = pos[:: max(1, len(pos) // _SAMPLE)][:_SAMPLE]
        lo = [row_ranges(a, s, z, values=values)[0] for a, s, z in self._row_pieces(sample)]
        if lo and resident(np.concatenate(lo)) == 1.0:
            return False
        prefetch_rows(self._row_pieces(pos), values=values)
        return True

    def _row_pieces(self, pos: np.ndarray) -> list[tuple[pa.Array[Any], np.ndarray, np.ndarray]]:
        """``(column of a batch, starts, stops)`` of the single rows ``pos``, batch by batch."""
        owner = np.searchsorted(self._offsets, pos, side="right") - 1
        order = np.argsort(owner, kind="stable")
        owner, local = owner[order], pos[order] - self._offsets[owner[order]]
        cuts = [0, *(np.flatnonzero(owner[1:] != owner[:-1]) + 1).tolist(), len(pos)]
        parts: list[tuple[pa.Array[Any], np.ndarray, np.ndarray]] = []
        for a, z in itertools.pairwise(cuts):
            rows = local[a:z]
            parts.extend((col, rows, rows + 1) for col in self._batches[int(owner[a])].columns)
        return parts

    @functools.cached_property
    def _row_bytes(self) -> int:
        """Mean bytes of a row in the table's buffers (what a slice reads, estimated)."""
        return int(self.table.get_total_buffer_size()) // max(self.num_rows, 1) + 1

    @property
    def batch_offsets(self) -> np.ndarray:
        """First row of each non-empty record batch, then the row count."""
        return self._offsets

    @property
    def mapped(self) -> bool:
        """Whether the table lives in file mappings advised random."""
        return self._mapped

    def prefetch_batch(self, b: int) -> None:
        """Ask for the pages of every row of record batch ``b``."""
        batch = self._batches[b]
        prefetch_rows([(col, 0, batch.num_rows) for col in batch.columns])

    def take(self, positions: np.ndarray) -> pa.Table:
        """Rows at ``positions`` (int64, any order, repeats allowed), in that order.

        Raises:
            IndexError: a position is negative or not below the table's length.
        """
        idx = np.asarray(positions, dtype=np.int64)
        n = len(idx)
        if n == 0:
            return self.table.schema.empty_table()
        if n == 1:  # ds[i] through a mapping: skip the vectorised bookkeeping
            i = int(idx[0])
            if not 0 <= i < self.num_rows:
                raise IndexError(f"Row {i} is out of range for a table of {self.num_rows} rows.")
            if pages.streamed():
                pages.random_again()
            if self._mapped:
                touched(self._row_pages)
            return self.table.slice(i, 1)  # a fault reads the row's own pages
        lo, hi = int(idx.min()), int(idx.max())
        if lo < 0 or hi >= self.num_rows:
            bad = lo if lo < 0 else hi
            raise IndexError(f"Row {bad} is out of range for a table of {self.num_rows} rows.")
        steps = np.diff(idx)
        is_sorted = not bool((steps < 0).any())
        if hi - lo + 1 == n and bool((steps == 1).all()):  # repeats are not contiguous
            return self.slice(lo, hi + 1)
        if self._mapped and n >= _GATHER_ADVICE:  # many reads in flight, not one at a time
            self.prefetch_rows_at(idx, values=False)
            self.prefetch_rows_at(idx)
        if len(self._batches) == 1:
            batch = self._take_batch(0, int64_array(idx))
            if self._mapped:
                touched(n * self._row_pages)
            return pa.Table.from_batches([batch], schema=self.table.schema)
        owner = np.searchsorted(self._offsets, idx, side="right") - 1
        order = None if is_sorted else np.argsort(owner, kind="stable")
        if order is not None:
            idx, owner = idx[order], owner[order]
        local = int64_array(idx - self._offsets[owner])  # zero-copy slices below
        cuts = np.flatnonzero(owner[1:] != owner[:-1]) + 1
        bounds = [0, *cuts.tolist(), n]
        parts = []
        for a, b in itertools.pairwise(bounds):
            parts.append(self._take_batch(int(owner[a]), local.slice(a, b - a)))
            if self._mapped:  # the pages of the batches gathered so far may be handed back
                touched((b - a) * self._row_pages)
        gathered = pa.Table.from_batches(parts, schema=self.table.schema)
        if order is None:
            return gathered
        inverse = np.empty(n, dtype=np.int64)
        inverse[order] = np.arange(n, dtype=np.int64)
        return gathered.take(int64_array(inverse))  # no pa.array: it imports pandas

    @functools.cached_property
    def _row_pages(self) -> int:
        """Bytes a scattered row may map: a fault's worth of each of its columns' buffers."""
        return AROUND * max(1, sum(len(c.buffers()) for c in self._batches[0].columns))

    def _take_batch(self, b: int, local: pa.Array[Any]) -> pa.RecordBatch:
        """Rows ``local`` (int64, in range by construction) of record batch ``b``."""
        return take_unchecked(self._batches[b], local)


def _in_mapping(batch: pa.RecordBatch) -> bool:
    """Whether ``batch`` lives in a file mapping advised random."""
    for col in batch.columns:
        for buf in col.buffers():
            if buf is not None and buf.size:
                return is_mapped(buf.address)
    return False
