"""Page advice for memory-mapped files: random by default, read ahead where a reader knows.

A file larger than the page cache is read from disk page by page. On a page fault in a
mapping with the kernel's default advice, Linux reads ``read_ahead_kb`` around the page (8 MB
on some machines), so a random row costs megabytes. Every chunk and cache file is therefore
mapped with ``MADV_RANDOM`` (:func:`map_file`): a fault reads its own page only, and opening a
file reads its footer and record batch headers, not a read-around each. Readers that know
which bytes they will touch ask for them first (:func:`will_need`, ``MADV_WILLNEED``): the
kernel starts those reads at once, many in flight, and the faults that follow wait for them
instead of reading one page at a time. Sequential readers ask for the rows of the slice they
read and of the next one (:func:`prefetch_rows`), so a pass still streams at disk speed; a
single read of more than 256 MiB is advised sequential instead, until the next scattered read
(:func:`random_again`). Scattered rows are asked for by their exact pages, the offsets first
(:func:`row_ranges` with ``values=False``), then the values the offsets locate; a ``mincore``
sample (:func:`resident`) tells when they are in memory already.

The advice changes speed only, never values. Where ``madvise`` is missing (not Linux), files
are mapped without advice and :func:`will_need` does nothing.
"""

from __future__ import annotations

import bisect
import ctypes
import mmap
import os
import sys
import threading
import weakref
from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa

__all__ = [
    "MappingSet",
    "advise",
    "ask_heads",
    "is_mapped",
    "map_file",
    "mapped_end",
    "mapped_ranges",
    "prefetch_rows",
    "random_again",
    "resident",
    "streamed",
    "row_ranges",
    "will_need",
]

_PAGE = mmap.PAGESIZE
#: Largest ``MADV_WILLNEED`` call: the kernel caps one call at the device's read-ahead
#: (128 KiB by default), so longer ranges are asked for in pieces of this size.
_PIECE = 128 * 1024
#: Bytes asked for ahead of a sequential reader at most (the slice and the next one).
_AHEAD_CAP = 256 * 2**20

_ADVISE = sys.platform.startswith("linux") and hasattr(mmap, "MADV_RANDOM")
_madvise: Any = None
_mincore: Any = None
if _ADVISE:
    try:
        _libc = ctypes.CDLL(None, use_errno=True)
        _madvise = _libc.madvise
        _madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        _madvise.restype = ctypes.c_int
        _mincore = _libc.mincore
        _mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        _mincore.restype = ctypes.c_int
    except (OSError, AttributeError):  # pragma: no cover - a libc without madvise
        _ADVISE = False


class MappingSet:
    """The ``[start, end)`` addresses of live mappings, each forgotten when its owner goes."""

    def __init__(self) -> None:
        self._starts: list[int] = []  # sorted
        self._ends: dict[int, int] = {}
        # mappings are made and forgotten by other threads (readers, page-ahead, GC);
        # reentrant: a collection may forget a mapping while the lock is held
        self._lock = threading.RLock()

    def __fingerprint__(self) -> str:
        """Process state (addresses, a lock): code reaching it fingerprints the same."""
        return "arrowmix mapping set"

    def add(self, owner: object, start: int, size: int) -> None:
        """Record ``[start, start + size)`` until ``owner`` (the mapping) is collected."""
        with self._lock:
            bisect.insort(self._starts, start)
            self._ends[start] = start + size
        weakref.finalize(owner, self._forget, start)

    def _forget(self, start: int) -> None:
        with self._lock:
            i = bisect.bisect_left(self._starts, start)
            if i < len(self._starts) and self._starts[i] == start:
                del self._starts[i]
                self._ends.pop(start, None)

    def end_of(self, address: int) -> int:
        """The end of the recorded mapping that holds ``address``; 0 if none does."""
        with self._lock:
            i = bisect.bisect_right(self._starts, address) - 1
            try:
                end = self._ends.get(self._starts[i], 0) if i >= 0 else 0
            except IndexError:  # a collection in this thread forgot a mapping meanwhile
                return 0
            return end if address < end else 0

    def ranges(self) -> list[tuple[int, int]]:
        """The recorded ``(start, end)`` address ranges, in address order."""
        with self._lock:
            # copies first: a collection in this very thread may forget a mapping meanwhile
            # (its finalizer re-enters the lock)
            starts, ends = list(self._starts), dict(self._ends)
        return [(a, ends[a]) for a in starts if a in ends]

    def __bool__(self) -> bool:
        return bool(self._starts)


#: The live mappings made by :func:`map_file`.
_MAPPED = MappingSet()
#: Ranges advised sequential by a read larger than ``_AHEAD_CAP`` (see :func:`prefetch_rows`).
_STREAMED: list[tuple[int, int]] = []


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
        _MAPPED.add(mm, buf.address, buf.size)
    return buf


#: Bytes asked for at each place an open reads: the start (magic, schema, first record batch
#: header), the end (footer), and after each recorded batch (the next batch's header).
_HEAD = 16 * 1024


def ask_heads(files: Iterable[tuple[str, Iterable[int]]]) -> None:
    """Ask the kernel for the bytes an open of each Arrow IPC file reads, all files at once.

    ``files``: ``(path, byte positions)``, the positions where record batch headers are
    expected (after each batch a manifest recorded; none when unknown). Opening a cold file
    then finds its footer and headers arriving together, instead of faulting them one read
    after the other (seven reads a file for a 256 MiB chunk of five batches). Advice only:
    a missing file or a wrong position costs nothing but a read.
    """
    if not hasattr(os, "posix_fadvise"):
        return
    files = list(files)
    if files and _cached_end(files[0][0]):
        return  # a warm corpus (a rerun): its first file's footer is in memory
    for path, positions in files:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            size = os.fstat(fd).st_size
            for at in (0, max(size - _HEAD, 0), *positions):
                if 0 <= at < size:
                    os.posix_fadvise(fd, at, min(_HEAD, size - at), os.POSIX_FADV_WILLNEED)
        except OSError:
            pass
        finally:
            os.close(fd)


def _cached_end(path: str) -> bool:
    """Whether the last byte of ``path`` is in the page cache (a read that must not wait)."""
    if not hasattr(os, "RWF_NOWAIT"):
        return False
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        size = os.fstat(fd).st_size
        return size > 0 and os.preadv(fd, [bytearray(1)], size - 1, os.RWF_NOWAIT) == 1
    except OSError:  # EAGAIN: not cached; EOPNOTSUPP: a file system without it
        return False
    finally:
        os.close(fd)


def is_mapped(address: int) -> bool:
    """Whether ``address`` lies in a mapping made by :func:`map_file` (advised random)."""
    return _MAPPED.end_of(address) > 0


def mapped_end(address: int) -> int:
    """The end of the :func:`map_file` mapping that holds ``address``; 0 if none does."""
    return _MAPPED.end_of(address)


def mapped_ranges() -> list[tuple[int, int]]:
    """The ``(start, end)`` addresses of the live :func:`map_file` mappings."""
    return _MAPPED.ranges()


def advise(address: int, size: int, advice: int) -> bool:
    """``madvise(address, size, advice)``; False where it failed or is unsupported."""
    return _ADVISE and _madvise(address, size, advice) == 0


def _merged(lo: np.ndarray, hi: np.ndarray) -> tuple[list[int], list[int]]:
    """The address ranges ``[lo, hi)`` widened to whole pages, sorted and merged."""
    lo = np.asarray(lo, dtype=np.int64) // _PAGE * _PAGE
    hi = -(-np.asarray(hi, dtype=np.int64) // _PAGE) * _PAGE
    keep = hi > lo
    lo, hi = lo[keep], hi[keep]
    if len(lo) == 0:
        return [], []
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order], np.maximum.accumulate(hi[order])
    # a range that starts past every earlier end begins a new run
    new = np.r_[True, lo[1:] > hi[:-1]]
    return lo[new].tolist(), np.r_[hi[np.flatnonzero(new)[1:] - 1], hi[-1]].tolist()


def will_need(lo: np.ndarray, hi: np.ndarray) -> int:
    """Ask the kernel to read the pages of the address ranges ``[lo, hi)`` now.

    The ranges are widened to whole pages, sorted and merged, then asked for in pieces of
    at most 128 KiB. Returns the number of bytes asked for.
    """
    if not _ADVISE or len(lo) == 0:
        return 0
    total = 0
    for a, b in zip(*_merged(lo, hi), strict=True):
        total += b - a
        while a < b:
            step = min(b - a, _PIECE)
            _madvise(a, step, mmap.MADV_WILLNEED)  # advice only: a failure changes no value
            a += step
    return total


def _sequential(lo: np.ndarray, hi: np.ndarray) -> int:
    """Read ``[lo, hi)`` through the kernel's read-ahead until :func:`random_again`."""
    total = 0
    for a, b in zip(*_merged(lo, hi), strict=True):
        if _madvise(a, b - a, mmap.MADV_SEQUENTIAL) == 0:
            _STREAMED.append((a, b))
            total += b - a
    return total


def streamed() -> bool:
    """Whether a large read left ranges advised sequential (:func:`random_again` undoes it)."""
    return bool(_STREAMED)


def random_again() -> None:
    """Advise random again the ranges a large read streamed (before scattered reads)."""
    while _STREAMED:
        try:
            a, b = _STREAMED.pop()
        except IndexError:  # another thread took the last one
            return
        if is_mapped(a):  # the mapping may be gone, its addresses reused
            _madvise(a, b - a, mmap.MADV_RANDOM)


def resident(addresses: np.ndarray) -> float:
    """Share of the pages holding ``addresses`` that are in memory (``mincore``); 0 if unknown."""
    if not _ADVISE or len(addresses) == 0:
        return 0.0
    vec = ctypes.c_ubyte()
    hits = 0
    for a in (np.asarray(addresses, dtype=np.int64) // _PAGE * _PAGE).tolist():
        if _mincore(a, _PAGE, ctypes.byref(vec)) != 0:
            return 0.0
        hits += vec.value & 1
    return hits / len(addresses)


def _width(t: pa.DataType) -> int | None:
    """Bits per value of a fixed-width type, None for others."""
    try:
        return int(t.bit_width)
    except ValueError:
        return None


def _variable(t: pa.DataType) -> int:
    """Bytes per offset of a (large) list, string or binary type, 0 for others."""
    if pa.types.is_list(t) or pa.types.is_string(t) or pa.types.is_binary(t):
        return 4
    large = pa.types.is_large_list(t) or pa.types.is_large_string(t)
    return 8 if large or pa.types.is_large_binary(t) else 0


def row_ranges(
    arr: pa.Array[Any], starts: np.ndarray, stops: np.ndarray, *, values: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)``: address ranges of the buffers holding rows ``[starts[i], stops[i])``.

    Covers validity bitmaps, fixed-width values, (large) lists, strings and binaries, and
    structs, recursively; variable-length values are located through their offsets (the
    offsets are read, and counted by :func:`~arrowmix._storage.resident.touched`: the
    offsets of scattered rows of a large table may span every page of it). With
    ``values=False``, the walk stops at the first offsets: the ranges can be asked for
    before those offsets are read. Other types contribute only
    the buffers located so far.
    """
    los: list[np.ndarray] = []
    his: list[np.ndarray] = []
    s0 = np.asarray(starts, dtype=np.int64)
    e0 = np.asarray(stops, dtype=np.int64)
    todo: list[tuple[Any, np.ndarray, np.ndarray]] = [(arr, s0, e0)]  # array subclasses
    while todo:
        a, s, e = todo.pop()
        keep = e > s
        s, e = s[keep], e[keep]
        if len(s) == 0:
            continue
        t, off, bufs = a.type, a.offset, a.buffers()
        if bufs and bufs[0] is not None:  # validity bitmap
            los.append(bufs[0].address + (off + s) // 8)
            his.append(bufs[0].address + (off + e + 7) // 8)
        if pa.types.is_struct(t):
            todo.extend((a.field(i), s, e) for i in range(t.num_fields))
            continue
        item = _variable(t)
        if item:
            ob: Any = bufs[1]
            los.append(ob.address + (off + s) * item)
            his.append(ob.address + (off + e + 1) * item)
            if not values:
                continue
            offsets = np.frombuffer(ob, dtype=np.int64 if item == 8 else np.int32)
            lo, hi = offsets[off + s].astype(np.int64), offsets[off + e].astype(np.int64)
            if is_mapped(ob.address):  # the offsets just read count toward the resident gauge
                _gauge.touched(len(s) * _gauge.AROUND)
            if pa.types.is_list(t) or pa.types.is_large_list(t):
                todo.append((a.values, lo, hi))
            elif bufs[2] is not None:
                los.append(bufs[2].address + lo)
                his.append(bufs[2].address + hi)
            continue
        bits = _width(t)
        if bits is not None and len(bufs) > 1 and bufs[1] is not None:
            base = bufs[1].address
            los.append(base + (off + s) * bits // 8)
            his.append(base + -(-(off + e) * bits // 8))
    if not los:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return np.concatenate(los), np.concatenate(his)


def prefetch_rows(
    chunks: Iterable[tuple[pa.Array[Any], Any, Any]], *, values: bool = True, large: bool = False
) -> int:
    """Ask for the pages of rows ``[start, stop)`` of each ``(array, start, stop)``.

    ``start`` and ``stop`` are ints or int64 arrays (many ranges of one array). Only arrays
    in mappings made by :func:`map_file` are looked at, and at most 256 MiB is asked for.
    ``values=False`` asks for the offsets of variable-width rows, not their values (see
    :func:`row_ranges`). With ``large=True``, rows of more than 256 MiB (a whole column
    read at once: ``ds["col"]``, ``sort``, ``ds.data``) are advised sequential instead, so
    the kernel reads ahead of the reader's faults all the way, until :func:`random_again`
    (called before scattered reads) makes them random again. Returns the bytes advised.
    """
    if not _ADVISE or not _MAPPED:
        return 0
    los, his = [], []
    for arr, start, stop in chunks:
        bufs = [b for b in arr.buffers() if b is not None and b.size]
        if not bufs or not is_mapped(bufs[0].address):
            continue
        lo, hi = row_ranges(arr, np.atleast_1d(start), np.atleast_1d(stop), values=values)
        los.append(lo)
        his.append(hi)
    if not los:
        return 0
    lo, hi = np.concatenate(los), np.concatenate(his)
    if len(lo) == 0:  # types whose buffers are not located (see row_ranges)
        return 0
    if large and int((hi - lo).sum()) > _AHEAD_CAP:
        return _sequential(lo, hi)
    # the first ranges, in walk order, up to the cap (the last one cut short)
    room = _AHEAD_CAP - np.concatenate([[0], np.cumsum(hi - lo)[:-1]])
    keep = room > 0
    return will_need(lo[keep], np.minimum(hi[keep], lo[keep] + room[keep]))


# last: the resident gauge hands back the pages of this module's mappings (it imports it)
from arrowmix._storage import resident as _gauge  # noqa: E402
