"""Corpora of ``from_generator`` in a cache directory: listed and removed as cache entries.

``<cache_dir>/generated/<fp>/`` holds the chunks, manifest and ``_COMPLETE.json`` marker of one
generator fingerprint (:mod:`arrowmix._dataset.inputs.generator`). Each such directory is one entry
(kind ``generated``, one :class:`~arrowmix._cache.listing.CacheFile` naming the directory, its
size the sum of the corpus's files, its last use the marker's modification time, which every
rerun touches). Results of maps over the corpus are stored beside its chunks: they are entries
of that directory (``cache ls -r``), not part of the corpus, and a removal leaves them.

An entry is busy while its generator holds ``generated/cache-<fp>.lock``, or while an open
dataset holds its marker (:func:`arrowmix._cache.inuse.hold`). :func:`remove` takes the lock
and the marker exclusively, removes the marker first (so a removal cut short never looks like
a finished corpus: the next run generates it again), then the manifest, chunks and dead
temporaries, and the directory once empty.
"""

from __future__ import annotations

import contextlib
import os
import re
from typing import TYPE_CHECKING, Any

from arrowmix._cache.inuse import exclusive, in_use, lock_held, writer_lock
from arrowmix._cache.lock import lock_path
from arrowmix._storage.atomic import writer_alive
from arrowmix._storage.chunks import CHUNK_PATTERN
from arrowmix._storage.digests import MANIFEST_NAME

if TYPE_CHECKING:
    from arrowmix._cache.listing import CacheEntry

__all__ = [
    "GENERATED_KIND",
    "clear",
    "is_corpus_dir",
    "remove",
    "scan_generated",
    "served",
    "size_of",
]

GENERATED_KIND = "generated"
_DIR = "generated"  # arrowmix._dataset.inputs.generator.GENERATED_DIR (not imported: layering)
_MARKER = "_COMPLETE.json"
_FP_RE = re.compile(r"^[0-9a-f]{16}$")
_TMP_RE = re.compile(r"^tmp-(\d+)-[0-9a-f]+-(.+)\.partial$")  # arrowmix._storage.atomic


def is_corpus_dir(path: str) -> bool:
    """Whether ``path`` names a generated corpus directory (``.../generated/<fp>``)."""
    parent, name = os.path.split(os.path.normpath(path))
    return bool(_FP_RE.match(name)) and os.path.basename(parent) == _DIR


def _ours(name: str, mtime: float) -> bool:
    """Whether the file ``name`` belongs to the corpus (a dead writer's temporary included)."""
    if name in (_MARKER, MANIFEST_NAME) or CHUNK_PATTERN.match(name):
        return True
    tmp = _TMP_RE.match(name)
    return tmp is not None and not writer_alive(int(tmp.group(1)), mtime)


def _files(path: str) -> list[tuple[str, int, float]]:
    """``(path, bytes, modification time)`` of the corpus's files in ``path``."""
    out = []
    with os.scandir(path) as it:
        for d in it:
            with contextlib.suppress(OSError):
                if d.is_file(follow_symlinks=False):
                    st = d.stat(follow_symlinks=False)
                    if _ours(d.name, st.st_mtime):
                        out.append((d.path, st.st_size, st.st_mtime))
    return out


def size_of(path: str) -> tuple[int, float]:
    """Bytes of the corpus in ``path``, and the newest modification time of its files."""
    files = _files(path)
    return sum(f[1] for f in files), max((f[2] for f in files), default=0.0)


def scan_generated(cache_dir: str, *, probe: bool = True) -> list[CacheEntry]:
    """One entry per corpus directory in ``cache_dir/generated/`` (none without it)."""
    from arrowmix._cache.listing import CacheEntry, CacheFile
    from arrowmix._storage.digests import read_manifest

    top = os.path.join(cache_dir, _DIR)
    try:
        with os.scandir(top) as it:
            dirs = sorted(
                d.path for d in it if _FP_RE.match(d.name) and d.is_dir(follow_symlinks=False)
            )
    except OSError:
        return []
    out = []
    for path in dirs:
        fp = os.path.basename(path)
        try:
            size, newest = size_of(path)
        except OSError:  # removed while listing
            continue
        marker = os.path.join(path, _MARKER)
        with contextlib.suppress(OSError):
            newest = os.stat(marker).st_mtime
        entries = read_manifest(path) if os.path.exists(marker) else None
        rows = sum(e.rows for e in entries.values()) if entries else None
        problem = None if entries else "unfinished or damaged (generated again on next use)"
        busy = None
        if probe and lock_held(lock_path(top, fp)):
            busy = "locked by a writer"
        elif probe and in_use(marker):
            busy = "in use by an open dataset"
        meta = {"kind": GENERATED_KIND}
        file = CacheFile(path, size, newest, meta, rows, problem)
        out.append(CacheEntry(f"generated-{fp}", GENERATED_KIND, fp, (file,), rows=rows, busy=busy))
    return out


def remove(path: str) -> tuple[int, str | None]:
    """Remove the generated corpus directory ``path`` unless it is in use.

    Returns:
        ``(bytes freed, None)``, or ``(0, why)`` when it was left in place.
    """
    top, fp = os.path.split(os.path.normpath(path))
    with writer_lock(lock_path(top, fp)) as writer_free:
        if not writer_free:
            return 0, "locked by a writer"
        marker = os.path.join(path, _MARKER)
        with exclusive(marker) as free:
            if not free:
                return 0, "in use by an open dataset"
            try:
                size = clear(path)
            except FileNotFoundError:
                return 0, "already gone"
            except OSError as exc:
                return 0, f"cannot remove: {exc.strerror or exc}"
        with contextlib.suppress(OSError):
            os.rmdir(path)  # unless results of maps over the corpus are still there
    return size, None


def clear(path: str) -> int:
    """Remove the corpus files of ``path``, its marker first; the bytes removed.

    The caller holds the corpus's lock. Results of maps stored beside the chunks stay.
    """
    files = _files(path)
    marker = os.path.join(path, _MARKER)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(marker)  # first: what is left never looks finished
    for p, _, _ in files:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(p)
    return sum(f[1] for f in files)


def served(out: str, what: str, again: str) -> dict[str, Any] | None:
    """The marker of the finished cached corpus in ``out``, when it may be served.

    None when there is none; also, once the corpus is cleared with a ``CacheWarning`` saying
    why (:func:`arrowmix._storage.trust.corpus_problem`), when it must not be served: the
    caller builds it again. ``what`` names the corpus, ``again`` how it is rebuilt. Called
    under the corpus's lock. Used by ``from_generator`` and by ingested chunks alike.
    """
    from arrowmix._storage import trust
    from arrowmix._warn import warn
    from arrowmix.exceptions import CacheWarning

    marker = os.path.join(out, _MARKER)
    if not os.path.exists(marker):
        return None
    info, why = trust.corpus_problem(out, marker)
    if info is not None:
        return info
    warn(f"The {what} {out!r} cannot be used: {why}. {again}", CacheWarning)
    clear(out)  # the marker first; map results beside the chunks stay
    return None
