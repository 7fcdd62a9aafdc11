"""Whether stopping background work may wait for it: yes in ``close()``, no for a dropped stream.

A stream's ``close()`` stops its background work (read-ahead downloads, prefetch workers)
and waits for what is under way, so that nothing runs on once it returns. A stream dropped
without ``close()`` is stopped by a finalizer (:func:`arrowmix._stream.root.root_of`), which
may run on any thread, one of those downloads' or one holding a lock they need: there the
same ``close()`` cancels what has not started and lets what is under way finish on its own
(its pins released as it ends), never waiting. :func:`not_awaited` marks such a section on
the current thread; :func:`awaited` is what ``close()`` asks.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

__all__ = ["awaited", "not_awaited"]

_local = threading.local()


@contextlib.contextmanager
def not_awaited() -> Iterator[None]:
    """A section (on this thread) in which stopping background work does not wait for it."""
    depth = getattr(_local, "depth", 0)
    _local.depth = depth + 1
    try:
        yield
    finally:
        _local.depth = depth


def awaited() -> bool:
    """Whether a ``close()`` called now may wait for the work under way (see the module)."""
    return not getattr(_local, "depth", 0)
