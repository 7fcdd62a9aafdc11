"""What a re-save takes along from the save it replaces: the derived files still in use.

A dataset loaded from a save writes its ``map``/``filter`` results (``cache-<fp>.arrow``,
``indices-<fp>.arrow``) beside the data files, so inside the save's directory. A re-save
replaces that directory whole; the files in use there are moved into the new directory
before the old one is removed, under the same names, so the process using them finds them
where it wrote them:

- the temporary files of live writers (``tmp-<pid>-...partial``), which are then renamed to
  their final names in the new directory;
- every ``cache-<fp>*`` file of a fingerprint whose writer holds ``cache-<fp>.lock`` (a map
  in progress: its finished segments), and the lock file itself;
- cache and indices files an open dataset holds (:func:`arrowmix._cache.inuse.hold`).

Everything else there (results nobody uses) goes with the old directory, as before. The files
keep their inodes, so locks and holds stay with them. A DatasetDict's splits are handled
folder by folder.
"""

from __future__ import annotations

import contextlib
import os

from arrowmix._cache.cleanup import LOCK_FILE_RE
from arrowmix._cache.inuse import in_use, lock_held
from arrowmix._cache.listing import TMP_FILE_RE
from arrowmix._cache.paths import CACHE_FILE_RE, INDICES_FILE_RE
from arrowmix._storage.atomic import writer_alive

__all__ = ["carry_over"]


def _busy(directory: str, names: list[str]) -> list[str]:
    """The names in ``directory`` that a live process uses (see the module's docstring)."""
    locked = {
        m.group(1)
        for n in names
        if (m := LOCK_FILE_RE.match(n)) and lock_held(os.path.join(directory, n))
    }
    out = []
    for name in names:
        path = os.path.join(directory, name)
        tmp = TMP_FILE_RE.match(name)
        named = CACHE_FILE_RE.match(name) or LOCK_FILE_RE.match(name)
        if tmp is not None:
            with contextlib.suppress(OSError):
                if writer_alive(int(tmp.group(1)), os.stat(path).st_mtime):
                    out.append(name)
        elif named is not None and named.group(1) in locked:
            out.append(name)  # a running map's lock and finished segments
        elif (named or INDICES_FILE_RE.match(name)) and in_use(path):
            out.append(name)
    return out


def carry_over(old: str, new: str) -> list[str]:
    """Move the files in use in ``old`` (a replaced save) to the same names in ``new``.

    Also in each subdirectory both hold (a DatasetDict's splits). Returns the new paths.
    """
    moved: list[str] = []
    try:
        names = sorted(os.listdir(old))
    except OSError:
        return moved
    for name in _busy(old, names):
        dst = os.path.join(new, name)
        if not os.path.lexists(dst):
            with contextlib.suppress(FileNotFoundError):  # finished meanwhile
                os.rename(os.path.join(old, name), dst)
                moved.append(dst)
    for name in names:
        sub_old, sub_new = os.path.join(old, name), os.path.join(new, name)
        if os.path.isdir(sub_old) and not os.path.islink(sub_old) and os.path.isdir(sub_new):
            moved += carry_over(sub_old, sub_new)
    return moved
