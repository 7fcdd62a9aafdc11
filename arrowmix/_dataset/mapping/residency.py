"""Bound the resident memory of a long sequential pass over memory-mapped files.

Reading a memory-mapped file maps its pages into the process: they count in its resident set
(RSS) until the kernel needs the memory back, so a ``map`` over 2 GB of chunks would appear to
use 2 GB. :class:`PageReleaser` counts the input bytes a pass has read and, every
``RELEASE_BYTES`` (and at the end of each segment), tells the kernel that the pass no longer
needs the pages of those files (``madvise(MADV_DONTNEED)`` on their read-only mappings). The
pages stay in the page cache, and a later access faults them back in from there, so data are
never lost: only read-only mappings of the dataset's own files are touched (arrowmix never
modifies such files in place; it writes new files and renames them). Linux only; a no-op
elsewhere.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable

from arrowmix._storage.pages import advise

__all__ = ["RELEASE_BYTES", "PageReleaser"]

#: Input bytes read between two releases.
RELEASE_BYTES = 128 * 2**20

_MADV_DONTNEED = 4


def release_mapped_pages(paths: Iterable[str]) -> int:
    """Drop this process's resident pages of read-only mappings of ``paths``; bytes advised."""
    targets = {os.path.realpath(p) for p in paths}
    if not targets or not sys.platform.startswith("linux"):
        return 0
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
    except OSError:
        return 0
    advised = 0
    for line in lines:
        parts = line.split(maxsplit=5)
        if len(parts) < 6 or "w" in parts[1] or parts[5].strip() not in targets:
            continue
        lo, hi = (int(x, 16) for x in parts[0].split("-"))
        if advise(lo, hi - lo, _MADV_DONTNEED):
            advised += hi - lo
    return advised


class PageReleaser:
    """Call :meth:`read` with the bytes of each input block; releases pages as they add up."""

    def __init__(self, paths: Iterable[str]) -> None:
        self._paths = [
            p.removeprefix("file://") for p in paths if "://" not in p or p.startswith("file://")
        ]
        self._pending = 0

    def read(self, nbytes: int) -> None:
        self._pending += nbytes
        if self._pending >= RELEASE_BYTES:
            self.release()

    def release(self) -> None:
        self._pending = 0
        if self._paths:
            release_mapped_pages(self._paths)
