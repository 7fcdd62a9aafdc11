"""One inter-process lock per cache fingerprint: one process computes, the others wait.

The lock is ``<dir>/cache-<fingerprint>.lock`` (a ``filelock.FileLock``). When it cannot be
taken at all (read-only directory, a filesystem without locks), the caller proceeds without
it: every segment is still committed by an atomic rename, so concurrent writers of the same
fingerprint produce identical files and the last rename wins; a reader never sees half a file.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator

import filelock

__all__ = ["fingerprint_lock", "lock_path"]

logger = logging.getLogger("arrowmix")

_POLL = 0.05


def lock_path(directory: str, fingerprint: str) -> str:
    """``<directory>/cache-<fingerprint>.lock``."""
    return os.path.join(directory, f"cache-{fingerprint}.lock")


@contextlib.contextmanager
def fingerprint_lock(directory: str, fingerprint: str) -> Iterator[bool]:
    """Hold the lock of ``fingerprint`` in ``directory``; yield whether it is really held."""
    path = lock_path(directory, fingerprint)
    lock = filelock.FileLock(path, thread_local=False)
    try:
        try:
            lock.acquire(timeout=0)
        except filelock.Timeout:
            logger.info("Waiting for another process writing cache %s ...", fingerprint)
            lock.acquire(poll_interval=_POLL)
    except OSError as exc:  # read-only directory, no lock support: rename-wins instead
        logger.info("Cannot lock %s (%s); continuing without the lock.", path, exc)
        yield False
        return
    try:
        yield True
    finally:
        lock.release()
