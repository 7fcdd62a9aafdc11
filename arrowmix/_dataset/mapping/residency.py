"""Bound the resident memory of a long sequential pass over memory-mapped files.

Reading a memory-mapped file maps its pages into the process: they count in its resident set
(RSS) until the kernel needs the memory back, so a ``map`` over 2 GB of chunks would appear to
use 2 GB. The pass's reads are counted by the process-wide gauge of
:mod:`arrowmix._storage.resident` (which hands back the pages of every mapped file once too
many are resident); at the end of each segment, :func:`release_mapped_pages` tells the kernel
that the pass no longer needs the pages of its files (``madvise(MADV_DONTNEED)`` on their
read-only mappings).
The pages stay in the page cache, and a later access faults them back in from there, so data
are never lost: only read-only mappings of the dataset's own files are touched (arrowmix never
modifies such files in place; it writes new files and renames them). Linux only; a no-op
elsewhere.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable

from arrowmix._storage.pages import advise

__all__ = ["release_mapped_pages"]

_MADV_DONTNEED = 4


def release_mapped_pages(paths: Iterable[str]) -> int:
    """Drop this process's resident pages of read-only mappings of ``paths``; bytes advised.

    Remote paths (``scheme://``) are skipped; ``file://`` ones are local.
    """
    local = (p.removeprefix("file://") for p in paths if "://" not in p or p.startswith("file://"))
    targets = {os.path.realpath(p) for p in local}
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
