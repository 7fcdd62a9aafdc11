"""Page advice for memory-mapped files: random by default, read ahead where a reader knows.

A file larger than the page cache is read from disk page by page. On a page fault in a
mapping with the kernel's default advice, Linux reads ``read_ahead_kb`` around the page (8 MB
on some machines), so a random row costs megabytes. Every chunk and cache file is therefore
mapped with ``MADV_RANDOM`` (:func:`map_file`): a fault reads its own page only, and opening a
file reads its footer and record batch headers, not a read-around each. Readers that know
which bytes they will touch ask for them first (:func:`will_need`, ``MADV_WILLNEED``): the
kernel starts those reads at once, many in flight, and the faults that follow wait for them
instead of reading one page at a time. Sequential readers ask for the rows of the slice they
read and of the next one (:func:`prefetch_rows`), so a pass still streams at disk speed.

The advice changes speed only, never values. Where ``madvise`` is missing (not Linux), files
are mapped without advice and :func:`will_need` does nothing.
"""

from __future__ import annotations

import bisect
import ctypes
import mmap
import os
import sys
import weakref
from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["is_mapped", "map_file", "prefetch_rows", "slice_ranges", "will_need"]

_PAGE = mmap.PAGESIZE
#: Largest ``MADV_WILLNEED`` call: the kernel caps one call at the device's read-ahead
#: (128 KiB by default), so longer ranges are asked for in pieces of this size.
_PIECE = 128 * 1024
#: Bytes asked for ahead of a sequential reader at most (the slice and the next one).
_AHEAD_CAP = 256 * 2**20

_ADVISE = sys.platform.startswith("linux") and hasattr(mmap, "MADV_RANDOM")
_madvise: Any = None
if _ADVISE:
    try:
        _madvise = ctypes.CDLL(None, use_errno=True).madvise
        _madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        _madvise.restype = ctypes.c_int
    except (OSError, AttributeError):  # pragma: no cover - a libc without madvise
        _ADVISE = False

#: ``[start, end)`` addresses of the live mappings made by :func:`map_file` (sorted starts).
_STARTS: list[int] = []
_ENDS: dict[int, int] = {}


def map_file(path: str) -> pa.Buffer:
    """The whole file at ``path`` as one read-only, memory-mapped buffer advised random.

    An empty file gives an empty buffer (its reader reports the file as not Arrow).
    """
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return pa.py_buffer(b"")
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    buf = pa.py_buffer(mm)  # zero-copy; the buffer keeps the mapping alive
    if _ADVISE:
        mm.madvise(mmap.MADV_RANDOM)
        start = buf.address
        bisect.insort(_STARTS, start)
        _ENDS[start] = start + buf.size
        weakref.finalize(mm, _forget, start)
    return buf


def _forget(start: int) -> None:
    i = bisect.bisect_left(_STARTS, start)
    if i < len(_STARTS) and _STARTS[i] == start:
        del _STARTS[i]
        _ENDS.pop(start, None)


def is_mapped(address: int) -> bool:
    """Whether ``address`` lies in a mapping made by :func:`map_file` (advised random)."""
    i = bisect.bisect_right(_STARTS, address) - 1
    return i >= 0 and address < _ENDS[_STARTS[i]]


def will_need(lo: np.ndarray, hi: np.ndarray) -> int:
    """Ask the kernel to read the pages of the address ranges ``[lo, hi)`` now.

    The ranges are widened to whole pages, sorted and merged, then asked for in pieces of
    at most 128 KiB. Returns the number of bytes asked for.
    """
    if not _ADVISE or len(lo) == 0:
        return 0
    lo = np.asarray(lo, dtype=np.int64) // _PAGE * _PAGE
    hi = -(-np.asarray(hi, dtype=np.int64) // _PAGE) * _PAGE
    keep = hi > lo
    lo, hi = lo[keep], hi[keep]
    if len(lo) == 0:
        return 0
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order], np.maximum.accumulate(hi[order])
    # a range that starts past every earlier end begins a new run
    new = np.r_[True, lo[1:] > hi[:-1]]
    starts, ends = lo[new], np.r_[hi[np.flatnonzero(new)[1:] - 1], hi[-1]]
    total = 0
    for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
        total += b - a
        while a < b:
            step = min(b - a, _PIECE)
            _madvise(a, step, mmap.MADV_WILLNEED)  # advice only: a failure changes no value
            a += step
    return total


def _width(t: pa.DataType) -> int | None:
    """Bits per value of a fixed-width type, None for others."""
    try:
        return int(t.bit_width)
    except ValueError:
        return None


def slice_ranges(arr: pa.Array[Any], start: int, stop: int) -> list[tuple[int, int]]:
    """Address ranges of the buffers holding rows ``[start, stop)`` of ``arr``.

    Covers validity bitmaps, fixed-width values, (large) lists, strings and binaries, and
    structs, recursively; variable-length values are located through their offsets (two
    offsets are read). Other types contribute only the buffers located so far.
    """
    out: list[tuple[int, int]] = []
    todo: list[tuple[Any, int, int]] = [(arr, start, stop)]  # pyarrow's array subclasses
    while todo:
        a, s, e = todo.pop()
        if e <= s:
            continue
        t, off, bufs = a.type, a.offset, a.buffers()
        if bufs and bufs[0] is not None:  # validity bitmap
            out.append((bufs[0].address + (off + s) // 8, bufs[0].address + (off + e + 7) // 8))
        if pa.types.is_struct(t):
            todo.extend((a.field(i), s, e) for i in range(t.num_fields))
            continue
        var = pa.types.is_list(t) or pa.types.is_string(t) or pa.types.is_binary(t)
        large = pa.types.is_large_list(t) or pa.types.is_large_string(t)
        large = large or pa.types.is_large_binary(t)
        if var or large:
            item = 8 if large else 4
            ob: Any = bufs[1]
            out.append((ob.address + (off + s) * item, ob.address + (off + e + 1) * item))
            offsets = np.frombuffer(ob, dtype=np.int64 if large else np.int32)
            lo, hi = int(offsets[off + s]), int(offsets[off + e])
            if pa.types.is_list(t) or pa.types.is_large_list(t):
                todo.append((a.values, lo, hi))
            elif bufs[2] is not None:
                out.append((bufs[2].address + lo, bufs[2].address + hi))
            continue
        bits = _width(t)
        if bits is not None and len(bufs) > 1 and bufs[1] is not None:
            base = bufs[1].address
            out.append((base + (off + s) * bits // 8, base + -(-(off + e) * bits // 8)))
    return out


def prefetch_rows(chunks: Iterable[tuple[pa.Array[Any], int, int]]) -> int:
    """Ask for the pages of rows ``[start, stop)`` of each ``(array, start, stop)``.

    Only arrays in mappings made by :func:`map_file` are looked at, and at most 256 MiB is
    asked for. Returns the bytes asked for.
    """
    if not _ADVISE or not _STARTS:
        return 0
    ranges: list[tuple[int, int]] = []
    budget = _AHEAD_CAP
    for arr, start, stop in chunks:
        bufs = [b for b in arr.buffers() if b is not None and b.size]
        if not bufs or not is_mapped(bufs[0].address):
            continue
        for lo, hi in slice_ranges(arr, start, stop):
            hi = min(hi, lo + budget)
            ranges.append((lo, hi))
            budget -= hi - lo
            if budget <= 0:
                break
        if budget <= 0:
            break
    if not ranges:
        return 0
    lo, hi = np.array(ranges, dtype=np.int64).T
    return will_need(lo, hi)
