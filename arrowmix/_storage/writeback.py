"""Files made durable in the background while the next ones are written.

A writer of several large files (the chunks of a corpus) renames each into place without a
sync (``atomic_sink(..., sync=False)``) and hands it to :class:`Writeback`, whose thread
fsyncs it while the next file is written: the disk writes one file as the CPU makes the next,
where a sync before each rename would wait for it with no CPU running. :meth:`Writeback.finish`
waits for the files, fsyncs their directories (the renames) and notes them as synced
(:func:`arrowmix._storage.trust.synced`). The caller calls it before it writes what declares
the files finished (a manifest, a marker): a kill before that leaves whole files (each is
renamed after its last write) under no manifest, so an unfinished write; a power loss before
it may leave torn ones, also under no manifest.
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor

from arrowmix._storage import trust
from arrowmix._storage.atomic import fsync_dir, fsync_file

__all__ = ["Writeback"]


class Writeback:
    """Fsync local files one after the other on a thread; :meth:`finish` waits for them all.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     path = os.path.join(d, "a")
        ...     with open(path, "wb") as f:
        ...         _ = f.write(b"x")
        ...     wb = Writeback()
        ...     wb.add(path)  # synced on the thread from now on
        ...     wb.finish()  # durable, and its rename too
    """

    def __init__(self) -> None:
        self._pool: ThreadPoolExecutor | None = None
        self._pending: list[tuple[str, Future[None]]] = []

    def add(self, path: str) -> None:
        """Start making the complete local file ``path`` durable."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="arrowmix-writeback")
        self._pending.append((path, self._pool.submit(fsync_file, path)))

    def finish(self) -> None:
        """Wait until every file added is durable, its rename included.

        Raises:
            OSError: a file could not be synced (e.g. ``EIO``); the message names it.
        """
        try:
            for path, future in self._pending:
                try:
                    future.result()
                except OSError as exc:
                    raise OSError(
                        exc.errno, f"Cannot write {path!r}: {exc.strerror or exc}"
                    ) from exc
        finally:
            self._stop()
        for directory in sorted({os.path.dirname(os.path.abspath(p)) for p, _ in self._pending}):
            fsync_dir(directory)
        for path, _ in self._pending:
            trust.synced(trust.identity(path))
        self._pending = []

    def abandon(self) -> None:
        """Stop after the sync under way; the others are dropped (the write failed)."""
        self._pending = []
        self._stop()

    def _stop(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
