"""Cache cleanup: a pure plan of what to remove and why, then a careful removal.

:func:`plan_cleanup` decides from a :func:`~arrowmix._cache.listing.scan` snapshot alone (no
I/O), so ``--dry-run`` and the tests see exactly what a real run removes:

1. Temporary files of dead writers, and stale records of verified files, are always
   removed; a live writer's temporary never.
2. Entries that are busy (a writer holds ``cache-<fp>.lock``, an open dataset holds a file)
   or listed in ``keep`` are never removed.
3. Without filters every other entry is removed. ``older_than`` removes entries not used for
   longer than that; ``max_size`` then removes least recently used entries until the
   remaining total (busy and kept entries included) fits. Both together: the union.
4. An entry goes whole: every segment of a fingerprint, or none.

:func:`remove_planned` deletes the plan file by file and re-checks each file just before it
goes, because the snapshot may be stale: it takes the writer's lock and an exclusive lock on
the file (see :mod:`arrowmix._cache.inuse`), and refuses any name that is not a cache,
indices or temporary file of ours, a generated corpus (:mod:`arrowmix._cache.generated`) or a
record of verified files (:mod:`arrowmix._cache.records`), whatever the plan says. Chunk files
(the data) are never touched, except as part of a generated corpus.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Collection, Iterator, Sequence, Set
from dataclasses import dataclass, field

from arrowmix._cache import generated, records
from arrowmix._cache.inuse import exclusive, lock_held, writer_lock
from arrowmix._cache.listing import (
    TMP_FILE_RE,
    TMP_KIND,
    CacheEntry,
    format_bytes,
    format_span,
    lock_path,
)
from arrowmix._cache.lock import remove_idle_lock
from arrowmix._cache.paths import CACHE_FILE_RE, INDICES_FILE_RE
from arrowmix._storage.atomic import writer_alive

__all__ = [
    "LOCK_FILE_RE",
    "CleanupResult",
    "plan_cleanup",
    "remove_file",
    "remove_idle_locks",
    "remove_planned",
    "remove_unused",
]

#: ``cache-<fp>.lock``: a writer's lock file.
LOCK_FILE_RE = re.compile(r"^cache-([0-9a-f]{16})\.lock$")
#: ``<key>.pin`` / ``<key>.dl`` of a bounded chunk cache (``from_chunks(cache_limit=)``).
CHUNK_LOCK_RE = re.compile(r"^[0-9a-f]{16}-.+\.(pin|dl)$")


def plan_cleanup(
    entries: Sequence[CacheEntry],
    now: float,
    older_than: float | None = None,
    max_size: int | None = None,
    keep: Collection[str] = (),
) -> list[tuple[str, str]]:
    """Which files to remove, and why (pure: decides from ``entries`` only).

    Args:
        entries: A snapshot from :func:`~arrowmix._cache.listing.scan`.
        now: The current unix time (ages are measured from it).
        older_than: Remove entries last used more than this many seconds ago.
        max_size: Remove least recently used entries until the cache holds at most this many
            bytes.
        keep: Fingerprints never to remove.

    Returns:
        ``(path, reason)`` pairs: stale temporary files first, then whole entries, the least
        recently used first.
    """
    keep_set = {k.lower() for k in keep}
    plan: list[tuple[str, str]] = []
    for e in entries:
        if e.kind == TMP_KIND and e.busy is None:
            plan += [(p, f"stale temporary file: writer pid {e.pid} is gone") for p in e.paths]
        elif e.stale is not None and e.busy is None:
            plan += [(p, e.stale) for p in e.paths]
    data = [e for e in entries if e.kind != TMP_KIND and e.stale is None]
    free = sorted(
        (e for e in data if e.busy is None and e.fingerprint not in keep_set),
        key=lambda e: (e.last_used, e.key),
    )
    if older_than is None and max_size is None:
        return plan + [
            (p, "no filter: every unused cache file goes") for e in free for p in e.paths
        ]
    chosen: set[int] = set()  # id() of chosen entries: keys repeat across directories
    if older_than is not None:
        for e in free:
            age = now - e.last_used
            if age > older_than:
                chosen.add(id(e))
                why = f"last used {format_span(age)} ago, older than {format_span(older_than)}"
                plan += [(p, why) for p in e.paths]
    if max_size is not None:
        remaining = sum(e.size for e in data if id(e) not in chosen)
        for e in free:
            if remaining <= max_size:
                break
            if id(e) in chosen:
                continue
            why = (
                f"least recently used; cache holds {format_bytes(remaining)},"
                f" max {format_bytes(max_size)}"
                + (f" = {max_size} bytes" if max_size >= 1024 else "")  # 30MB: 28.6 MiB
            )
            plan += [(p, why) for p in e.paths]
            remaining -= e.size
    return plan


@dataclass
class CleanupResult:
    """What :func:`remove_planned` did (or would do, in a dry run)."""

    removed: list[tuple[str, int]] = field(default_factory=list)
    """``(path, bytes)`` of each removed file."""
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """``(path, why)`` of each planned file left in place."""

    @property
    def freed(self) -> int:
        """Bytes freed."""
        return sum(size for _, size in self.removed)


def remove_planned(
    plan: Sequence[tuple[str, str]],
    *,
    dry_run: bool = False,
    on_file: Callable[[str, int, str | None], None] | None = None,
) -> CleanupResult:
    """Remove the files of a plan, re-checking each one (nothing is deleted when ``dry_run``).

    Args:
        plan: ``(path, reason)`` pairs from :func:`plan_cleanup`.
        dry_run: Only measure what would be freed.
        on_file: Called as each file is handled with ``(path, bytes, None)`` when removed (or
            removable) and ``(path, 0, why)`` when left in place, so progress shows at once.
    """
    result = CleanupResult()
    for path, _ in plan:
        size, why = _measure(path) if dry_run else remove_file(path)
        if why is None:
            result.removed.append((path, size))
        else:
            result.skipped.append((path, why))
        if on_file is not None:
            on_file(path, size, why)
    return result


def _measure(path: str) -> tuple[int, str | None]:
    try:
        if generated.is_corpus_dir(path):
            return generated.size_of(path)[0], None
        return os.stat(path, follow_symlinks=False).st_size, None
    except FileNotFoundError:
        return 0, "already gone"


def remove_file(path: str) -> tuple[int, str | None]:
    """Delete one cache, indices or stale temporary file, generated corpus or record if unused.

    Returns:
        ``(bytes freed, None)`` on success, ``(0, why)`` when the file was left in place.
    """
    if generated.is_corpus_dir(path):
        return generated.remove(path)
    if records.is_record(path):
        return records.remove(path)
    directory, name = os.path.split(path)
    tmp = TMP_FILE_RE.match(name)
    named = CACHE_FILE_RE.match(name) or INDICES_FILE_RE.match(name)
    if tmp is not None:
        pid = int(tmp.group(1))
        try:
            written = os.stat(path, follow_symlinks=False).st_mtime
        except FileNotFoundError:
            return 0, "already gone"
        if writer_alive(pid, written):
            return 0, f"being written by live process {pid}"
        final = CACHE_FILE_RE.match(tmp.group(3)) or INDICES_FILE_RE.match(tmp.group(3))
        fp = final.group(1) if final else None
    elif named is not None:
        fp = named.group(1)
    else:
        return 0, "not a cache file name; never removed"
    try:
        with _writer_free(directory, fp) as writer_free, exclusive(path) as file_free:
            if not writer_free:
                return 0, "locked by a writer"
            if not file_free:
                return 0, "in use by an open dataset"
            size = os.stat(path, follow_symlinks=False).st_size
            os.unlink(path)
    except FileNotFoundError:
        return 0, "already gone"
    except OSError as exc:
        return 0, f"cannot remove: {exc.strerror or exc}"
    return size, None


@contextlib.contextmanager
def _writer_free(directory: str, fp: str | None) -> Iterator[bool]:
    if fp is None:
        yield True
        return
    with writer_lock(lock_path(directory, fp)) as free:
        yield free


def remove_unused(cache_dir: str, keep: Set[str]) -> int:
    """Delete cache and indices files of ``cache_dir`` whose absolute path is not in ``keep``.

    Files in use by an open dataset or locked by a writer stay; lock files nobody holds go
    too. An empty ``keep`` (a dataset without files, whose directory is the shared cache
    root) removes nothing, as in HF ``datasets``. Returns the number of cache and indices
    files removed.
    """
    if not keep or not os.path.isdir(cache_dir):
        return 0
    removed = 0
    for name in sorted(os.listdir(cache_dir)):
        path = os.path.abspath(os.path.join(cache_dir, name))
        if not (CACHE_FILE_RE.match(name) or INDICES_FILE_RE.match(name)) or path in keep:
            continue
        if not os.path.isfile(path) or os.path.islink(path):
            continue
        _, why = remove_file(path)
        removed += why is None
    remove_idle_locks([cache_dir])  # left by killed writers; not counted (they hold no data)
    return removed


def remove_idle_locks(directories: Collection[str], *, dry_run: bool = False) -> list[str]:
    """Remove the lock files of ``directories`` that nobody holds.

    ``cache-<fp>.lock`` of map writers, and the ``<key>.pin`` / ``<key>.dl`` files of a
    bounded chunk cache. Their holders remove them when done; a process killed mid-way
    leaves them. Removing an idle one is safe at any time: whoever opens it next checks that
    the file it locked is still the one at the path (see :mod:`arrowmix._cache.lock`).
    Returns the removed (or, in a dry run, removable) paths.
    """
    out = []
    for directory in directories:
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            continue
        for name in names:
            if not (LOCK_FILE_RE.match(name) or CHUNK_LOCK_RE.match(name)):
                continue
            path = os.path.join(directory, name)
            if (not lock_held(path)) if dry_run else remove_idle_lock(path):
                out.append(path)
    return out
