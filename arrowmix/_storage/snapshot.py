"""Read one version of a ``save_to_disk`` directory, whole, while another process re-saves it.

A save never changes a directory that a reader may hold: it writes the new version as a new
directory beside the target and renames it over the target (:mod:`arrowmix._storage.swap`).
A version is therefore one directory *inode*: its files never change, and a re-save puts
another inode at the path. :func:`read_pinned` reads a version by that identity:

1. it opens the directory at the path (the descriptor keeps its inode from being reused; on
   Linux with ``O_PATH``, which needs no permission to list it);
2. it runs the read, which looks up ``state.json``, ``dataset_info.json`` (or a DatasetDict's
   ``dataset_dict.json`` and its splits) and maps the data files by path;
3. if the path still names the same directory inode at the end, every lookup in between
   resolved inside that one version (a swapped-out version never comes back under the path:
   only a killed save's undo puts one back, and then nothing else was there in between), and
   the result is returned. The data files mapped stay readable after the next save deletes
   them (POSIX keeps an unlinked file's data while a mapping holds it).

Otherwise (the directory was replaced meanwhile, is missing between the two renames of a
live save, or the read failed while it changed) the read is run again on the new version
after a short pause, a bounded number of times; an error raised while the directory did not
change is raised at once, as before. A directory that never settles raises
:class:`~arrowmix.exceptions.SavedDatasetError` naming it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TypeVar

from arrowmix._storage.swap import save_under_way
from arrowmix.exceptions import SavedDatasetError

__all__ = ["read_pinned"]

T = TypeVar("T")

#: Pauses between attempts while a directory is being re-saved (about 2.4 s in all).
PAUSES = (0.005, 0.01, 0.02, 0.04, 0.08, 0.15, 0.3, 0.6, 1.2)
#: A descriptor that only pins the inode (``O_PATH``: no read permission needed, no listing).
_PIN_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY


def _identity(st: os.stat_result) -> tuple[int, int]:
    return (st.st_dev, st.st_ino)


def _now(directory: str) -> tuple[int, int] | None:
    try:
        return _identity(os.stat(directory))
    except OSError:
        return None


def read_pinned(directory: str, read: Callable[[], T]) -> T:
    """``read()``'s result, made while ``directory`` held one version from start to end.

    Raises:
        SavedDatasetError: the directory was re-saved during every attempt.
        Exception: what ``read`` raised while the directory did not change.
    """
    last: BaseException | None = None
    for pause in (*PAUSES, None):
        try:
            fd = os.open(directory, _PIN_FLAGS)
        except FileNotFoundError:
            if not save_under_way(os.path.realpath(directory)):
                return read()  # no directory and no save under way: read's own error
            fd = None
        except (NotADirectoryError, PermissionError):
            return read()  # a file, or a path we may not reach: read's own error
        try:
            if fd is not None:
                pinned = _identity(os.fstat(fd))
                try:
                    result = read()
                except Exception as exc:  # re-raised below unless the version moved
                    if _now(directory) == pinned:
                        raise
                    last = exc
                else:
                    if _now(directory) == pinned:
                        return result
        finally:
            if fd is not None:
                os.close(fd)
        if pause is None:
            break
        time.sleep(pause)
    why = f" Last problem: {last}" if last is not None else ""
    raise SavedDatasetError(
        f"{directory!r} was replaced by another save_to_disk during each of "
        f"{len(PAUSES) + 1} attempts to read it (over {sum(PAUSES):.1f} s); load it again "
        f"when that save has finished.{why}"
    ) from last
