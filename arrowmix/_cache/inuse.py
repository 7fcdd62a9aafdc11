"""Who is using a cache file: open datasets, writers holding a lock, live temp-file writers.

Three probes keep the cleanup from deleting anything that somebody still needs:

- **Readers.** A process that opens a cache file calls :func:`hold`, which keeps a file
  descriptor open with a shared ``flock``. :func:`in_use` tries an exclusive, non-blocking
  ``flock`` on a fresh descriptor: it fails while any process (this one included, since
  ``flock`` locks belong to open file descriptions) holds the file. The cleanup deletes a file
  while holding that exclusive lock, so a reader that calls :func:`hold` at the same moment
  waits until the name is gone and keeps the (still readable) unlinked inode.
- **Writers.** A writer computing fingerprint ``fp`` holds ``cache-<fp>.lock``
  (:mod:`arrowmix._cache.lock`). :func:`lock_held` tries to acquire it without waiting.
- **Temporary files.** ``tmp-<pid>-...partial`` names carry the writer's pid;
  :func:`pid_alive` says whether that process still exists on this host.

Platforms without ``fcntl`` (Windows) cannot take these locks: :func:`hold` is a no-op and
:func:`in_use` answers False (Windows itself refuses to delete open files), and
:func:`pid_alive` answers True (never delete a temporary file we cannot vouch for).
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import weakref
from collections.abc import Iterator
from types import TracebackType

from arrowmix._cache.lock import try_lock
from arrowmix._storage.atomic import writer_alive
from arrowmix._storage.local import same_file

__all__ = ["Hold", "exclusive", "hold", "in_use", "lock_held", "pid_alive", "writer_lock"]

_CONTENDED = frozenset({errno.EACCES, errno.EAGAIN, errno.EWOULDBLOCK})
#: Attempts of :func:`hold` when the file is replaced under it each time.
_HOLD_TRIES = 5


class Hold:
    """A reader's registration on one file; release it (or drop it) when done.

    The shared lock lives as long as the descriptor: :meth:`release`, leaving the ``with``
    block, or garbage collection of the handle closes it.
    """

    def __init__(self, path: str, fd: int | None) -> None:
        self.path = path
        self._fd = fd
        self._finalizer = weakref.finalize(self, _close, fd) if fd is not None else None

    @property
    def active(self) -> bool:
        """Whether the registration is still held."""
        return self._finalizer is not None and self._finalizer.alive

    def release(self) -> None:
        """Close the descriptor (and so drop the shared lock); idempotent."""
        if self._finalizer is not None:
            self._finalizer()

    def __enter__(self) -> Hold:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"Hold({self.path!r}, active={self.active})"


def _close(fd: int | None) -> None:
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only

    def hold(path: str) -> Hold:
        """Register this process as a reader of ``path`` (no-op without ``fcntl``)."""
        return Hold(path, None)

    def in_use(path: str) -> bool:
        """Whether a process holds ``path`` through :func:`hold` (always False here)."""
        return False

    @contextlib.contextmanager
    def exclusive(path: str) -> Iterator[bool]:
        """Hold ``path`` exclusively while the block runs; yields False if it is in use."""
        yield True

else:
    import fcntl

    def hold(path: str) -> Hold:
        """Register this process as a reader of ``path``: a shared lock on a kept descriptor.

        Args:
            path: A local file (cache, indices or chunk file).

        Returns:
            The registration; keep a reference for as long as the data is in use.

        Raises:
            FileNotFoundError: ``path`` does not exist, or was removed by a cleanup while
                this call waited for it (so the caller never holds a deleted file).

        Example:
            >>> import os, tempfile
            >>> path = os.path.join(tempfile.mkdtemp(), "cache-0123456789abcdef.arrow")
            >>> open(path, "wb").close()
            >>> h = hold(path)
            >>> in_use(path)
            True
            >>> h.release(); in_use(path)
            False
        """
        for _ in range(_HOLD_TRIES):
            fd = _open_reader(path)
            if fd is None:
                return Hold(path, None)
            try:
                # Blocks only while a cleanup is deleting this very file (it holds LOCK_EX
                # for the unlink).
                fcntl.flock(fd, fcntl.LOCK_SH)
            except OSError:  # no locks on this file system (e.g. ENOLCK): register nothing
                os.close(fd)
                return Hold(path, None)
            if same_file(fd, path):
                return Hold(path, fd)
            # The name was removed (or replaced by a writer's rename) while we waited: the
            # inode we hold is not the file under that name any more. Try the new one.
            os.close(fd)
        raise FileNotFoundError(errno.ENOENT, "removed while being registered", path)

    def _open_reader(path: str) -> int | None:
        # One descriptor per held file: a result of thousands of segments can reach the soft
        # limit. Raise it once; failing that, register nothing (the data stays readable even
        # if a cleanup removes the name, since the memory map keeps the inode alive).
        for attempt in range(2):
            try:
                return os.open(path, os.O_RDONLY)
            except OSError as exc:
                if exc.errno != errno.EMFILE or attempt:
                    if exc.errno == errno.EMFILE:
                        return None
                    raise
                if not _raise_fd_limit():
                    return None
        return None  # pragma: no cover - the loop always returns or raises

    def _raise_fd_limit() -> bool:
        """Raise the soft limit on open files towards the hard one; True if it grew."""
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        target = hard if hard != resource.RLIM_INFINITY else max(soft * 4, 65536)
        if soft == resource.RLIM_INFINITY or soft >= target:
            return False
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            return False
        return True

    def _try_exclusive(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            # Any other error means this file system has no locks, so no reader can hold
            # one either: the same answer as on platforms without fcntl.
            return exc.errno not in _CONTENDED
        return True

    def _open_for_probe(path: str) -> int | None:
        """A fresh descriptor on ``path``, read-write where allowed; None if it is gone."""
        # Read-write because NFS emulates flock with POSIX locks, and an exclusive POSIX
        # lock needs a descriptor open for writing.
        for flags in (os.O_RDWR, os.O_RDONLY):
            try:
                return os.open(path, flags)
            except FileNotFoundError:
                return None
            except OSError:  # not writable by us, read-only file system...
                if flags == os.O_RDONLY:
                    raise
        return None  # pragma: no cover - the loop always returns or raises

    def in_use(path: str) -> bool:
        """Whether any process holds ``path`` through :func:`hold`.

        A missing file is not in use.
        """
        with exclusive(path) as free:
            return not free

    @contextlib.contextmanager
    def exclusive(path: str) -> Iterator[bool]:
        """Try to hold ``path`` exclusively for the duration of the block.

        Yields:
            True when no reader holds the file (or it does not exist), False otherwise.
            While the block runs with True, new readers wait in :func:`hold`.
        """
        fd = _open_for_probe(path)
        if fd is None:
            yield True
            return
        try:
            yield _try_exclusive(fd)
        finally:
            os.close(fd)


def lock_held(lock_path: str) -> bool:
    """Whether a writer holds the lock at ``lock_path`` (a missing file is not held).

    A pure probe: nothing is created or removed.

    Example:
        >>> import os, tempfile
        >>> from arrowmix._cache.lock import fingerprint_lock, lock_path
        >>> directory = tempfile.mkdtemp()
        >>> path = lock_path(directory, "0123456789abcdef")
        >>> lock_held(path)
        False
        >>> with fingerprint_lock(directory, "0123456789abcdef"):
        ...     lock_held(path)
        True
    """
    with try_lock(lock_path) as free:
        return not free


@contextlib.contextmanager
def writer_lock(lock_path: str) -> Iterator[bool]:
    """Take a writer's lock without waiting, and keep writers out while the block runs.

    The lock file is created if missing (and removed when done), so no writer can start
    computing that fingerprint until the block ends.

    Yields:
        True when nobody held it, else False.
    """
    with try_lock(lock_path, create=True) as free:
        yield free


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this host (True when it cannot be told; a zombie does not).

    Example:
        >>> import os
        >>> pid_alive(os.getpid())
        True
    """
    return writer_alive(pid)
