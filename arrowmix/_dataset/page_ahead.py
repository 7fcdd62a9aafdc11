"""Read ahead, for a stream over memory-mapped chunks, the record batches its next rows crowd.

Chunk files are advised random (:mod:`arrowmix._storage.pages`): a fault reads its own page
only. That suits the ``"global"`` order, whose next rows are scattered over the whole corpus,
but not the ``"chunks"`` order, which reads a window of a few chunks in shuffled order: there a
batch's pages are all needed soon, and one sequential read of the batch is far cheaper than a
random read per page. Before each block, the stream tells its row source where it stands
(``read_ahead(upcoming)``); :class:`PageAhead` looks at the next 65,536 rows and asks the
kernel (``MADV_WILLNEED``) for every record batch holding at least 1/64 of its rows among them.
The other rows (the ``"global"`` order's) are asked for by their exact pages, a few thousand
rows ahead, all at once: the kernel then has that many reads in flight, where faulting the
rows in turn waits for one read at a time. A stream that takes a window of positions at once
(``budget_bucket``, ``pack``: ``upcoming.wanted``) gets the offsets of that whole window. The
values, located through the offsets, are asked for by a background thread, so the stream
builds its batch meanwhile. Over a table already in memory this costs a few ``mincore`` calls
per block.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from arrowmix._dataset.reader import TableReader

__all__ = ["PageAhead"]

#: Rows looked at ahead of the stream.
_HORIZON = 65536
#: A batch is read whole when this many of its rows, or more, are among the next rows: 1/64.
_DENSE = 64
#: Rows whose exact pages are asked for ahead of a stream reading scattered rows.
DEPTH = 1024


class PageAhead:
    """The ``read_ahead`` hook of a Dataset's rows over local, memory-mapped chunks."""

    def __init__(self, reader: TableReader, mapper: Callable[[np.ndarray], np.ndarray] | None):
        self._reader = reader
        self._mapper = mapper
        self._next: tuple[int, int] | None = None  # look again once the stream gets here
        self._done: deque[int] = deque(maxlen=32)  # batches asked for lately
        self._epoch = -1
        self._last = self._heads = self._values = 0  # cursor seen last; rows asked up to

    def __call__(self, upcoming: Any) -> None:
        self._crowded(upcoming)
        self._scattered(upcoming)

    def _crowded(self, upcoming: Any) -> None:
        """Every few blocks: the batches crowded by the next rows are asked for whole."""
        now = upcoming.cursor
        if self._next is not None and (now[0], now[1] - _HORIZON // 2) < self._next <= (
            now[0],
            now[1] + _HORIZON // 2,
        ):
            return
        pos, _ = upcoming.positions(now, _HORIZON)
        self._next = (now[0], now[1] + _HORIZON // 2)
        if len(pos) == 0:
            return
        if self._mapper is not None:
            pos = np.asarray(self._mapper(pos), dtype=np.int64)
        offsets = self._reader.batch_offsets
        owner = np.searchsorted(offsets, pos, side="right") - 1
        counts = np.bincount(owner, minlength=len(offsets) - 1)
        rows = np.diff(offsets)
        for b in np.flatnonzero(counts * _DENSE >= rows).tolist():
            if b not in self._done:
                self._done.append(b)
                self._reader.prefetch_batch(b)

    def _scattered(self, upcoming: Any) -> None:
        """The exact pages of the next rows: values one depth ahead, offsets two depths ahead.

        Each row is asked for twice, once for its offsets and a depth of rows later for its
        values (read through the offsets, which have arrived by then), so both reads overlap
        the stream's consumer. The depth grows to the stream's step between two calls, and
        to the rows the stream takes at once (``upcoming.wanted``): the first window of an
        index stream (8,192 positions whose lengths are looked up together) finds all its
        offsets asked for at once, instead of faulting them in one page at a time.
        """
        epoch, index = upcoming.cursor
        if epoch != self._epoch:
            self._epoch, self._last, self._heads, self._values = epoch, index, index, index
        depth = max(DEPTH, index - self._last, getattr(upcoming, "wanted", 0))
        self._last = index
        self._heads, self._values = max(self._heads, index), max(self._values, index)
        # where nothing is asked yet (a start, a resume), the first depth's offsets only:
        # the next call asks for the depth after them, while these rows are read
        heads = index + (depth if self._heads == index else 2 * depth)
        if self._heads < heads:
            self._ask(upcoming, self._heads, heads, values=False)
            self._heads = heads
        if self._values < index + depth:
            self._ask(upcoming, self._values, index + depth, values=True)
            self._values = index + depth

    def _ask(self, upcoming: Any, start: int, stop: int, *, values: bool) -> None:
        pos, after = upcoming.positions((self._epoch, start), stop - start)
        if len(pos) == 0 or after[0] != self._epoch:
            return
        if self._mapper is not None:
            pos = np.asarray(self._mapper(pos), dtype=np.int64)
        if self._done:  # rows of batches asked for whole need nothing more
            offsets = self._reader.batch_offsets
            owner = np.searchsorted(offsets, pos, side="right") - 1
            done = np.zeros(len(offsets), dtype=bool)  # a lookup: np.isin sorts, ~1 ms
            done[np.fromiter(self._done, dtype=np.int64)] = True
            pos = pos[~done[owner]]
        if values:  # found through the offsets: waits for their reads, off the stream's path
            _background(self._reader.prefetch_rows_at, pos)
        else:
            self._reader.prefetch_rows_at(pos, values=False)


_QUEUE: queue.SimpleQueue[tuple[Callable[[np.ndarray], Any], np.ndarray]] | None = None
_PID = 0


def _background(ask: Callable[[np.ndarray], Any], pos: np.ndarray) -> None:
    """``ask(pos)`` in the asking thread of this process (started on first use).

    Asking for the values of scattered rows reads their offsets first (waiting for the
    reads asked for a moment before) and then makes one ``madvise`` call per row, each
    queueing a read: thousands of rows take a good part of a second on a cold disk, which
    the stream spends building its batch instead. Advice changes no value, so nothing waits
    for it.
    """
    global _QUEUE, _PID
    if _QUEUE is None or os.getpid() != _PID:  # a forked worker starts its own thread
        _QUEUE, _PID = queue.SimpleQueue(), os.getpid()
        threading.Thread(
            target=_asking, args=(_QUEUE,), name="arrowmix-page-ahead", daemon=True
        ).start()
    _QUEUE.put((ask, pos))


def _settle(timeout: float = 10.0) -> bool:
    """Wait until the asks queued so far are made (tests); False on timeout."""
    if _QUEUE is None or os.getpid() != _PID:
        return True
    done = threading.Event()
    _QUEUE.put((lambda _pos: done.set(), np.empty(0, np.int64)))
    return done.wait(timeout)


def _asking(todo: queue.SimpleQueue[tuple[Callable[[np.ndarray], Any], np.ndarray]]) -> None:
    while True:
        ask, pos = todo.get()
        with contextlib.suppress(Exception):  # advice only: a failure changes no value
            ask(pos)
