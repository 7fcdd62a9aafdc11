"""Helpers of the page-advice tests: drop a file's cached pages, read a mapping's advice."""

from __future__ import annotations

import os


def drop(path: str) -> None:
    """Write ``path``'s dirty pages and drop its cached ones (the next read is cold)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def vm_flags(path: str) -> list[list[str]]:
    """The VmFlags of every mapping of ``path`` in this process (``rr``: advised random)."""
    flags: list[list[str]] = []
    current = None
    with open("/proc/self/smaps", encoding="utf-8") as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and not head[0].endswith(":"):  # a mapping's first line
                current = head[5] if len(head) >= 6 else None
            elif head[0] == "VmFlags:" and current == os.path.realpath(path):
                flags.append(head[1:])
    return flags
