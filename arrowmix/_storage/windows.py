"""Whole-buffer passes over mapped files that keep one window of them resident.

Every page of a file mapping a process touches counts in its resident set (RSS, and so in
its peak, ``ru_maxrss``) until the mapping goes, although it is page cache the kernel can
drop. A pass over a whole large buffer (gathering a filter's kept positions, comparing,
writing, sealing and checking an indices file) would so show the whole file in the process.

The passes here walk such a buffer in windows of :data:`WINDOW` bytes and hand each window's
pages back (``madvise(MADV_DONTNEED)``) once they are done with it, and only when the buffer
is larger than a window: small buffers pay nothing, and a large one pays one ``madvise`` per
window. Pages are handed back only inside file mappings known to be shared or read-only
(:func:`arrowmix._storage.pages.map_file`'s, and those made by :func:`map_pass` and
:func:`scratch`): they stay in the page cache (a written page of a shared mapping is the
file's, written back by the kernel), so a later read costs a minor fault, not a disk read,
and no byte ever changes. Memory of any other kind (a numpy array, a pyarrow buffer) is left
alone. Where ``madvise`` is missing (not Linux) nothing is handed back.
"""

from __future__ import annotations

import mmap
import tempfile
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from arrowmix._storage import pages

__all__ = [
    "WINDOW",
    "WindowedSink",
    "address_of",
    "equal",
    "map_pass",
    "release",
    "release_array",
    "release_buffers",
    "scratch",
    "windows",
]

#: Bytes of a large buffer a pass keeps resident (and the size above which it hands back).
WINDOW = 32 * 2**20
_PAGE = mmap.PAGESIZE
_DONTNEED = 4  # MADV_DONTNEED (Linux)

#: The live mappings made by :func:`map_pass` and :func:`scratch`.
_OWN = pages.MappingSet()


def map_pass(path: str) -> pa.Buffer:
    """The whole file at ``path``, mapped read-only with the kernel's read-ahead, for a pass.

    Unlike :func:`~arrowmix._storage.pages.map_file` (advised random, for rows), a pass
    reads every byte in order; its pages can be handed back window by window.
    """
    with open(path, "rb") as f:
        if f.seek(0, 2) == 0:
            return pa.py_buffer(b"")
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    buf = pa.py_buffer(mm)  # zero-copy; the buffer keeps the mapping alive
    _OWN.add(mm, buf.address, buf.size)
    return buf


def scratch(directory: str, nbytes: int) -> mmap.mmap:
    """A writable shared mapping of ``nbytes`` zeros in an unlinked file in ``directory``.

    The bytes live in the page cache, which the kernel can write back and drop; the pages a
    pass is done with can be handed back (:func:`release`) without losing a byte.
    """
    with tempfile.TemporaryFile(dir=directory, prefix="tmp-scratch-") as f:
        f.truncate(nbytes)
        mm = mmap.mmap(f.fileno(), nbytes)  # stays valid once the file is closed
    if nbytes:
        _OWN.add(mm, np.frombuffer(mm, dtype=np.uint8).ctypes.data, nbytes)
    return mm


def release(address: int, size: int) -> int:
    """Hand back this process's pages of ``[address, address + size)``; bytes handed back.

    Only inside one mapping of :func:`map_pass`, :func:`scratch` or
    :func:`~arrowmix._storage.pages.map_file` (0 elsewhere, or without ``madvise``). The
    range is widened to whole pages, which stay in the same mapping.
    """
    end = address + size
    if size <= 0 or not (end <= pages.mapped_end(address) or end <= _OWN.end_of(address)):
        return 0
    lo = address // _PAGE * _PAGE
    hi = -(-(address + size) // _PAGE) * _PAGE
    return hi - lo if pages.advise(lo, hi - lo, _DONTNEED) else 0


def address_of(view: memoryview) -> int:
    """The address of the first byte of a contiguous ``view`` (read-only or not); 0 if empty."""
    return int(np.frombuffer(view, dtype=np.uint8).ctypes.data) if view.nbytes else 0


def release_array(arr: np.ndarray) -> int:
    """:func:`release` the bytes of a contiguous numpy array (0 if it is not mapped here)."""
    return release(int(arr.ctypes.data), arr.nbytes) if arr.nbytes else 0


def release_buffers(array: pa.Array[Any]) -> int:
    """:func:`release` the buffers of a pyarrow ``array`` (those mapped here)."""
    return sum(release(b.address, b.size) for b in array.buffers() if b is not None and b.size)


def windows(view: memoryview, address: int) -> Iterator[memoryview]:
    """``view`` (the bytes at ``address``) in windows of :data:`WINDOW` bytes, in order.

    Each window's pages are handed back when the next one is asked for (the last one's when
    the pass ends), if ``view`` is larger than a window; a smaller one is yielded whole.
    """
    view, size = view.cast("B"), WINDOW
    n = len(view)
    if n <= size:
        yield view
        return
    for lo in range(0, n, size):
        hi = min(lo + size, n)
        yield view[lo:hi]
        release(address + lo, hi - lo)


def equal(a: np.ndarray, b: np.ndarray) -> bool:
    """``np.array_equal(a, b)`` for 1-d arrays, compared a window at a time (see above)."""
    if a.shape != b.shape:
        return False
    step = max(1, WINDOW // max(a.itemsize, b.itemsize, 1))
    large = a.nbytes > WINDOW or b.nbytes > WINDOW
    for lo in range(0, len(a), step):
        x, y = a[lo : lo + step], b[lo : lo + step]
        if not np.array_equal(x, y):
            return False
        if large:
            release_array(x)
            release_array(y)
    return True


class WindowedSink:
    """A file-like sink (for ``pa.PythonFile``) that writes large buffers a window at a time.

    A buffer of a mapping made here (an indices file's positions in a :func:`scratch` file)
    is written through :func:`windows`, so the write keeps one window of it resident where
    one ``write`` of the whole buffer would fault all of it into the process.
    """

    def __init__(self, sink: Any) -> None:
        self._sink = sink
        self._size = 0
        self.closed = False

    def write(self, data: Any) -> int:
        """Write ``data`` (any buffer) to the sink."""
        view = memoryview(data)
        n = view.nbytes
        if n > WINDOW:
            for part in windows(view, address_of(view)):
                self._sink.write(part)
        else:
            self._sink.write(view)
        self._size += n
        return n

    def tell(self) -> int:
        """Bytes written so far."""
        return self._size

    def flush(self) -> None:
        """Flush the sink."""
        self._sink.flush()

    def close(self) -> None:
        """Mark closed; the sink is closed by its owner."""
        self.closed = True
