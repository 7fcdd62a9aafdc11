"""Start reading given row ranges of a memory-mapped table: ``madvise(MADV_WILLNEED)``.

A stream that knows the row ranges it reads next (``shuffle="blocks"``) hands them to
:class:`WillNeed`, which finds the bytes those rows occupy in each column's buffers (validity
bits, offsets, values, recursively for lists) and asks the kernel to read exactly those pages,
asynchronously. The gather that follows finds them in the page cache, so a page fault never
triggers the kernel's read-around (several MB around a random page). Offsets are advised
first and read after, so learning where a list's values lie never faults a cold page either.

Only types whose layout is known are advised (fixed-width values, strings and binaries, lists
of those); the others are read as before. Linux only; a no-op elsewhere or for memory that is
not a file mapping.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from arrowmix._dataset.mapping.residency import will_need

__all__ = ["WillNeed"]

Span = tuple[int, int]


def _offsets(arr: Any) -> np.ndarray | None:
    t = arr.type
    if pa.types.is_list(t) or pa.types.is_string(t) or pa.types.is_binary(t):
        return np.frombuffer(arr.buffers()[1], dtype=np.int32)
    if pa.types.is_large_list(t) or pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        return np.frombuffer(arr.buffers()[1], dtype=np.int64)
    return None


def _fixed_width(t: pa.DataType) -> int | None:
    try:
        bits = t.bit_width
    except ValueError:
        return None
    return bits // 8 if bits % 8 == 0 else None


def _head_spans(arr: Any, a: int, b: int) -> list[Span] | None:
    """Spans of rows ``[a, b)`` readable without reading the buffers: bits, offsets, values."""
    bufs, off = arr.buffers(), arr.offset
    spans: list[Span] = []
    if bufs[0] is not None:
        spans.append((bufs[0].address + (off + a) // 8, (off + b + 7) // 8 - (off + a) // 8))
    width = _fixed_width(arr.type)
    if width is not None and len(bufs) == 2:
        spans.append((bufs[1].address + (off + a) * width, (b - a) * width))
        return spans
    offsets = _offsets(arr)
    if offsets is None:
        return None
    size = offsets.itemsize
    spans.append((bufs[1].address + (off + a) * size, (b - a + 1) * size))
    return spans


def _tail_spans(arr: Any, a: int, b: int) -> list[Span]:
    """Spans of the values of rows ``[a, b)`` of a variable-width array (reads its offsets)."""
    offsets = _offsets(arr)
    if offsets is None:
        return []
    lo, hi = int(offsets[arr.offset + a]), int(offsets[arr.offset + b])
    if hi <= lo:
        return []
    if pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type):
        child = arr.values
        return (_head_spans(child, lo, hi) or []) + _tail_spans(child, lo, hi)
    return [(arr.buffers()[2].address + lo, hi - lo)]


class WillNeed:
    """Advise the kernel of the rows of ``table`` a reader needs next.

    Example:
        >>> WillNeed(pa.table({"x": [[1], [2, 3]]}))(np.array([0]), np.array([2]))
    """

    def __init__(self, table: pa.Table) -> None:
        self._columns = []
        for column in table.columns:
            lengths = [len(c) for c in column.chunks]
            bounds = np.cumsum([0, *lengths], dtype=np.int64)
            self._columns.append((column.chunks, bounds))

    def _pieces(self, starts: np.ndarray, stops: np.ndarray) -> list[tuple[Any, int, int]]:
        out: list[tuple[Any, int, int]] = []
        for chunks, bounds in self._columns:
            for a, b in zip(starts.tolist(), stops.tolist(), strict=True):
                first = int(np.searchsorted(bounds, a, side="right")) - 1
                k = first
                while k < len(chunks) and bounds[k] < b:
                    lo, hi = max(a, int(bounds[k])), min(b, int(bounds[k + 1]))
                    if hi > lo:
                        out.append((chunks[k], lo - int(bounds[k]), hi - int(bounds[k])))
                    k += 1
        return out

    def __call__(self, starts: np.ndarray, stops: np.ndarray) -> None:
        pieces = self._pieces(np.asarray(starts), np.asarray(stops))
        heads = [(p, _head_spans(*p)) for p in pieces]
        will_need(s for _, spans in heads if spans for s in spans)
        # The offsets are on their way (or in memory): the values' spans can be read now.
        will_need(s for p, spans in heads if spans for s in _tail_spans(*p))
