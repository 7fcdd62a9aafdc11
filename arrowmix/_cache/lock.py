"""One inter-process lock per cache fingerprint: one process computes, the others wait.

The lock is an exclusive ``flock`` on ``<dir>/cache-<fingerprint>.lock``. The file only exists
while somebody holds or waits for the lock: the holder unlinks it before releasing it, and
``cleanup-cache`` removes one left by a killed process (:func:`remove_idle_lock`: it takes the
lock without waiting and unlinks the file while holding it). Removing a lock file is safe
because a locker checks, once it holds the lock, that its descriptor is still the file under
that name (same device and inode); if the name was removed or replaced meanwhile, it locks the
file that is there now instead. So at any time at most one process holds the lock on the file
named ``cache-<fp>.lock``.

When the lock cannot be taken at all (read-only directory, a file system without locks), the
caller proceeds without it: every segment is still committed by an atomic rename, so
concurrent writers of the same fingerprint produce identical files and the last rename wins;
a reader never sees half a file. Platforms without ``fcntl`` (Windows) use ``filelock``.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import sys
from collections.abc import Iterator

from arrowmix._cache.paths import lock_file_name
from arrowmix._storage.local import same_file

__all__ = ["fingerprint_lock", "lock_path", "remove_idle_lock", "try_lock"]

logger = logging.getLogger("arrowmix")

_POLL = 0.05
_CONTENDED = frozenset({errno.EACCES, errno.EAGAIN, errno.EWOULDBLOCK})
_READ_ONLY = frozenset({errno.EACCES, errno.EROFS, errno.EPERM})
_TRIES = 5


def lock_path(directory: str, fingerprint: str) -> str:
    """``<directory>/cache-<fingerprint>.lock``."""
    return os.path.join(directory, lock_file_name(fingerprint))


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import filelock

    @contextlib.contextmanager
    def fingerprint_lock(directory: str, fingerprint: str) -> Iterator[bool]:
        """Hold the lock of ``fingerprint`` in ``directory``; yield whether it is really held."""
        path = lock_path(directory, fingerprint)
        lock = filelock.FileLock(path, thread_local=False)
        try:
            lock.acquire(poll_interval=_POLL)
        except OSError as exc:
            logger.info("Cannot lock %s (%s); continuing without the lock.", path, exc)
            yield False
            return
        try:
            yield True
        finally:
            lock.release()

    @contextlib.contextmanager
    def try_lock(path: str, *, create: bool = False) -> Iterator[bool]:
        """Take the lock at ``path`` without waiting; yield whether it was free."""
        if not os.path.exists(path):
            yield True
            return
        lock = filelock.FileLock(path, timeout=0)
        try:
            lock.acquire()
        except (filelock.Timeout, OSError):
            yield False
            return
        try:
            yield True
        finally:
            lock.release()

    def remove_idle_lock(path: str) -> bool:
        """Never removes anything here (Windows refuses to delete open files anyway)."""
        return False

else:
    import fcntl

    def _acquire(path: str, fingerprint: str) -> int:
        """Lock ``path`` (created if needed), waiting for any holder; return the descriptor."""
        waited = False
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError as exc:
                    if exc.errno not in _CONTENDED:
                        raise
                    if not waited:
                        logger.info("Waiting for another process writing cache %s ...", fingerprint)
                        waited = True
                    fcntl.flock(fd, fcntl.LOCK_EX)
                if same_file(fd, path):
                    return fd
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)  # the holder we waited for removed the file: lock the current one

    @contextlib.contextmanager
    def fingerprint_lock(directory: str, fingerprint: str) -> Iterator[bool]:
        """Hold the lock of ``fingerprint`` in ``directory``; yield whether it is really held.

        The lock file is removed when the block ends.
        """
        path = lock_path(directory, fingerprint)
        try:
            fd = _acquire(path, fingerprint)
        except OSError as exc:  # read-only directory, no lock support: rename-wins instead
            logger.info("Cannot lock %s (%s); continuing without the lock.", path, exc)
            yield False
            return
        try:
            yield True
        finally:
            with contextlib.suppress(OSError):
                os.unlink(path)  # while held: waiters on this inode will lock a new file
            os.close(fd)

    @contextlib.contextmanager
    def try_lock(path: str, *, create: bool = False) -> Iterator[bool]:
        """Take the lock at ``path`` without waiting; hold it while the block runs.

        Args:
            path: The lock file.
            create: Create the lock file if missing (and remove it when done), so that no
                writer can start while the block runs. Without it a missing file yields
                True and nothing is held (a pure probe: nothing is created or removed).

        Yields:
            True when nobody held it, else False, also when it cannot be told (an unreadable
            lock file counts as held).
        """
        for _ in range(_TRIES):
            flags = os.O_RDWR | (os.O_CREAT if create else 0)
            try:
                fd = os.open(path, flags, 0o666)
            except FileNotFoundError:
                yield True
                return
            except OSError as exc:
                # A read-only directory holds no lock file a writer could use: nobody writes.
                yield create and not os.path.exists(path) and exc.errno in _READ_ONLY
                return
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:  # held, or we cannot even tell: assume a writer
                    yield False
                    return
                if not same_file(fd, path):
                    continue  # removed or replaced meanwhile: try the current one
                try:
                    yield True
                finally:
                    if create:
                        with contextlib.suppress(OSError):
                            os.unlink(path)
                return
            finally:
                os.close(fd)
        yield False  # replaced under us again and again: someone is busy with it

    def remove_idle_lock(path: str) -> bool:
        """Remove the lock file at ``path`` if nobody holds it; return whether it was removed."""
        try:
            fd = os.open(path, os.O_RDWR)
        except OSError:
            return False
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return False
            if not same_file(fd, path):
                return False
            try:
                os.unlink(path)
            except OSError:
                return False
            return True
        finally:
            os.close(fd)
