"""What a cache directory holds: entries grouped by fingerprint, explained from file footers.

A cache directory mixes data (``chunk-*.arrow``), results and mappings of transforms
(``cache-<fp>.arrow``, segments ``cache-<fp>-<i>-of-<n>.arrow``, ``indices-<fp>.arrow``),
writers' locks (``cache-<fp>.lock``) and files being written
(``tmp-<pid>-<rand>-<final name>.partial``). :func:`scan` groups the cache files of one
fingerprint (all its segments) into one :class:`CacheEntry` and explains it with the metadata
arrowmix records in each file's schema (kind, parent, rows, creation time). Only footers are
read, through a memory map: listing a directory of terabytes touches a few kilobytes per file.
Every regular file whose name matches none of our exact patterns is ignored, and so are
symbolic links and chunk files. The corpora of ``from_generator`` (``generated/<fp>/``,
:mod:`arrowmix._cache.generated`) and the records of verified files (``verified/``,
:mod:`arrowmix._cache.records`) below a directory are entries of that directory too.

"Last used" is the newest modification time of an entry's files: writes set it and ``map``
touches its cache file on every cache hit.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from arrowmix._cache.generated import scan_generated
from arrowmix._cache.inuse import in_use, lock_held
from arrowmix._cache.paths import CACHE_FILE_RE, INDICES_FILE_RE, lock_file_name
from arrowmix._cache.records import scan_records
from arrowmix._storage.atomic import writer_alive
from arrowmix._storage.chunks import CHUNK_PATTERN
from arrowmix._storage.digests import digest_shards, is_digest_record
from arrowmix._storage.ipc import read_meta

__all__ = [
    "TMP_FILE_RE",
    "TMP_KIND",
    "CacheEntry",
    "CacheFile",
    "format_bytes",
    "format_span",
    "lock_path",
    "scan",
    "scan_with_records",
    "scan_tree",
]

#: ``tmp-<pid>-<random hex>-<final name>.partial`` (see ``arrowmix._storage.atomic.tmp_name``).
TMP_FILE_RE = re.compile(r"^tmp-(\d+)-([0-9a-f]+)-(.+)\.partial$")
#: The ``kind`` of an entry that is a temporary file.
TMP_KIND = "tmp"


@dataclass(frozen=True)
class CacheFile:
    """One file of an entry: where, how big, when last touched, what it says about itself."""

    path: str
    size: int
    mtime: float
    meta: Mapping[str, Any]
    rows: int | None = None
    problem: str | None = None


@dataclass(frozen=True)
class CacheEntry:
    """All files of one cache result (its segments), one indices file, or one temporary file.

    Attributes:
        key: ``cache-<fp>``, ``indices-<fp>`` or the temporary file's name.
        kind: Recorded kind (``map``, ``filter``, ``indices``, ``flatten``, ``shard``), ``?``
            when the files record none, ``tmp`` for a temporary file.
        fingerprint: The fingerprint in the name (for a temporary file: of its final name).
        files: The entry's files, sorted by name.
        parent: Recorded parent fingerprint.
        rows: Total recorded rows (None when unknown).
        num_segments: ``n`` of ``-of-<n>`` names (None for an unsegmented file).
        busy: Why the entry must not be removed now (in use, locked, being written), or None.
        pid: Writer pid of a temporary file.
        stale: Why the entry is useless (a record vouching for nothing), or None; a cleanup
            always removes a stale entry that is not busy.
    """

    key: str
    kind: str
    fingerprint: str | None
    files: tuple[CacheFile, ...]
    parent: str | None = None
    rows: int | None = None
    num_segments: int | None = None
    busy: str | None = None
    pid: int | None = None
    stale: str | None = None

    @property
    def size(self) -> int:
        """Bytes on disk, all files together."""
        return sum(f.size for f in self.files)

    @property
    def last_used(self) -> float:
        """Newest modification time of the entry's files (unix time)."""
        return max(f.mtime for f in self.files)

    @property
    def created(self) -> float | None:
        """Earliest recorded creation time (unix time), None when unrecorded."""
        times = [float(f.meta["created"]) for f in self.files if _is_number(f.meta.get("created"))]
        return min(times) if times else None

    @property
    def directory(self) -> str:
        """The directory holding the entry."""
        return os.path.dirname(self.files[0].path)

    @property
    def paths(self) -> list[str]:
        """The entry's file paths."""
        return [f.path for f in self.files]

    @property
    def problem(self) -> str | None:
        """Unreadable files, or None when every footer was read."""
        bad = [f"{os.path.basename(f.path)}: {f.problem}" for f in self.files if f.problem]
        return "; ".join(bad) or None

    @property
    def segments(self) -> str:
        """``"3/8"`` for segmented results (present/expected), ``"1"`` otherwise."""
        if self.num_segments is None:
            return str(len(self.files))
        return f"{len(self.files)}/{self.num_segments}"


def lock_path(directory: str, fingerprint: str) -> str:
    """The writer's lock file for ``fingerprint``: ``cache-<fp>.lock``."""
    return os.path.join(directory, lock_file_name(fingerprint))


def scan(cache_dir: str, *, probe: bool = True) -> list[CacheEntry]:
    """Every cache entry and temporary file of ``cache_dir``, sorted by key.

    Args:
        cache_dir: A local directory.
        probe: Check who uses each entry (``busy``): a held writer lock, an open dataset, a
            live temporary-file writer. Without it ``busy`` is always None.

    Raises:
        FileNotFoundError: ``cache_dir`` does not exist.
        NotADirectoryError: ``cache_dir`` is not a directory.
    """
    groups: dict[str, list[CacheFile]] = {}
    segments: dict[str, int] = {}
    temps: list[tuple[CacheFile, int, str]] = []
    with os.scandir(cache_dir) as it:
        dir_entries = sorted(it, key=lambda d: d.name)
    for d in dir_entries:
        m = CACHE_FILE_RE.match(d.name) or INDICES_FILE_RE.match(d.name)
        t = TMP_FILE_RE.match(d.name) if m is None else None
        if (m is None and (t is None or not _is_ours(cache_dir, t.group(3)))) or not d.is_file(
            follow_symlinks=False
        ):
            continue
        try:
            if m is not None:
                key = f"{d.name.split('-', 1)[0]}-{m.group(1)}"
                file = _read_file(d.path)
                groups.setdefault(key, []).append(file)
                if m.re is CACHE_FILE_RE and m.group(3) is not None:
                    segments[key] = max(segments.get(key, 0), int(m.group(3)))
            elif t is not None:
                st = d.stat(follow_symlinks=False)
                file = CacheFile(d.path, st.st_size, st.st_mtime, {})
                temps.append((file, int(t.group(1)), t.group(3)))
        except FileNotFoundError:  # removed while we were listing
            continue

    locks: dict[str, bool] = {}

    def locked(fp: str | None) -> bool:
        if not probe or fp is None:
            return False
        if fp not in locks:
            locks[fp] = lock_held(lock_path(cache_dir, fp))
        return locks[fp]

    entries = [
        _entry(key, files, segments.get(key), locked, probe) for key, files in groups.items()
    ]
    for file, pid, final in temps:
        name = os.path.basename(file.path)
        fp = _fingerprint_of(final)
        busy = None
        if probe and writer_alive(pid, file.mtime):
            busy = f"being written by live process {pid}"
        elif locked(fp):
            busy = "locked by a writer"
        entries.append(CacheEntry(name, TMP_KIND, fp, (file,), busy=busy, pid=pid))
    entries += scan_generated(cache_dir, probe=probe) + scan_records(cache_dir, probe=probe)
    return sorted(entries, key=lambda e: e.key)


def scan_with_records(cache_dir: str, *, probe: bool = True) -> list[CacheEntry]:
    """:func:`scan` of ``cache_dir`` and of its digest cache's record directories.

    The record directories hold no cache entries, only temporary files of killed writers.
    """
    entries = scan(cache_dir, probe=probe)
    for shard in digest_shards(cache_dir):
        with contextlib.suppress(OSError):
            entries += scan(shard, probe=probe)
    return entries


def scan_tree(top: str, *, probe: bool = True) -> list[CacheEntry]:
    """:func:`scan` of ``top`` and every directory below it (symbolic links not followed).

    Sorted by directory, then key. Unreadable subdirectories are skipped.
    """
    entries = scan(top, probe=probe)  # raises for a missing top; os.walk would not
    for root, _, _ in os.walk(top, followlinks=False):
        if root != top:
            with contextlib.suppress(OSError):
                entries += scan(root, probe=probe)
    return sorted(entries, key=lambda e: (e.directory, e.key))


def _entry(
    key: str,
    files: list[CacheFile],
    num_segments: int | None,
    locked: Callable[[str | None], bool],
    probe: bool,
) -> CacheEntry:
    fp = key.split("-", 1)[1]
    metas = [f.meta for f in files if f.meta]
    first = metas[0] if metas else {}
    rows = [f.rows for f in files]
    busy = None
    if locked(fp):
        busy = "locked by a writer"
    elif probe and any(in_use(f.path) for f in files):
        busy = "in use by an open dataset"
    return CacheEntry(
        key=key,
        kind=str(first.get("kind") or "?"),
        fingerprint=fp,
        files=tuple(files),
        parent=first.get("parent"),
        rows=sum(r for r in rows if r is not None) if None not in rows else None,
        num_segments=num_segments,
        busy=busy,
    )


def _read_file(path: str) -> CacheFile:
    """Stat one cache file and read its footer (schema metadata and row count) only."""
    st = os.stat(path, follow_symlinks=False)
    meta: dict[str, Any] = {}
    rows: int | None = None
    problem = None
    try:
        with pa.memory_map(path, "r") as source:
            reader = pa.ipc.open_file(source)
            meta = read_meta(reader.schema)
            recorded = meta.get("rows")
            if isinstance(recorded, (int, float)) and not isinstance(recorded, bool):
                rows = int(recorded)
            else:  # reads record batch headers only (memory-mapped: no data pages)
                rows = sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches))
    except (pa.ArrowInvalid, OSError, ValueError) as exc:
        problem = f"unreadable ({exc})"
    return CacheFile(path, st.st_size, st.st_mtime, meta, rows, problem)


def _is_ours(directory: str, final_name: str) -> bool:
    return bool(
        CACHE_FILE_RE.match(final_name)
        or INDICES_FILE_RE.match(final_name)
        or CHUNK_PATTERN.match(final_name)
        or is_digest_record(directory, final_name)
    )


def _fingerprint_of(name: str) -> str | None:
    m = CACHE_FILE_RE.match(name) or INDICES_FILE_RE.match(name)
    return m.group(1) if m else None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def format_bytes(n: float) -> str:
    """Binary-unit size: ``"512 B"``, ``"1.5 KiB"``, ``"20.0 GiB"``.

    Example:
        >>> format_bytes(512), format_bytes(1536), format_bytes(20 * 2**30)
        ('512 B', '1.5 KiB', '20.0 GiB')
    """
    if n < 1024:
        return f"{int(n)} B"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        n /= 1024
        if n < 1024 or unit == "TiB":
            break
    return f"{n:.1f} {unit}"


def format_span(seconds: float) -> str:
    """A duration in its largest sensible unit: ``"45s"``, ``"30m"``, ``"12h"``, ``"9.5d"``.

    Example:
        >>> format_span(45), format_span(1800), format_span(43200), format_span(9.5 * 86400)
        ('45s', '30m', '12h', '9.5d')
    """
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}".rstrip("0").rstrip(".") + unit
    return f"{seconds:.0f}s"
