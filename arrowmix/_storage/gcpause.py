"""Pausing Python's cyclic garbage collector around bursts of allocations that stay alive.

The collector runs a pass every 700 net container allocations, and every so often a full
pass over every tracked object of the process. Building many row dicts, or a botocore
client from its JSON service descriptions (some 10^5 objects), triggers such passes; in a
process that imported torch (~2x10^5 objects), one full pass costs ~0.1 s. What these
bursts allocate stays alive or is freed by reference counting, so the passes find nothing:
the collector is paused for them instead. Reference counting still frees everything else.

Sections may nest and overlap across threads: the collector is re-enabled when the last
open section closes, and only if it was enabled when the first one opened (a program that
turned it off keeps it off).
"""

from __future__ import annotations

import contextlib
import gc
import os
import threading
from collections.abc import Iterator

__all__ = ["gc_paused"]

_lock = threading.Lock()
_open: dict[int, int] = {}  # paused sections open, by thread
_restore = [False]  # whether the collector was on when the first open section started


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the ``with`` block.

    >>> import gc
    >>> with gc_paused():
    ...     rows = [{"a": i} for i in range(3)]
    ...     gc.isenabled()
    False
    """
    me = threading.get_ident()
    with _lock:
        if not _open:
            _restore[0] = gc.isenabled()
            gc.disable()
        _open[me] = _open.get(me, 0) + 1
    try:
        yield
    finally:
        with _lock:
            _open[me] -= 1
            if not _open[me]:
                del _open[me]
            if not _open and _restore[0]:
                gc.enable()


def _after_fork_in_child() -> None:
    """Only the forking thread lives on in a child: its sections alone remain open.

    The collector is turned back on only if sections that paused it are gone; with none open
    at the fork, the child keeps the parent's setting (a program may have turned it off).
    """
    global _lock
    _lock = threading.Lock()
    me = threading.get_ident()
    others = [t for t in _open if t != me]
    for ident in others:
        del _open[ident]
    if others and not _open and _restore[0]:
        gc.enable()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
