"""Records of verified files in ``<cache root>/verified/``: listed and removed as cache entries.

Two kinds of records live there (:mod:`arrowmix._storage.trust`,
:mod:`arrowmix._storage.integrity`): ``dir-<hash>.json``, the files of one directory checked
in their current ``stat`` identity, and ``<hash>``, one chunk file's check. Their writers
write ``<record>.<pid>.<random>.tmp`` first and rename it into place.

Each record is one entry of kind ``verified``; it is stale (always removed by a cleanup)
when it vouches for nothing any more: its directory or file is gone, or the file changed. A
temporary whose writer is gone is an entry of kind ``tmp``. Removing a record is always safe:
it only costs a file one more check on its next use.
"""

from __future__ import annotations

import json
import os
import re
from typing import TYPE_CHECKING, Any

from arrowmix._storage.atomic import writer_alive

if TYPE_CHECKING:
    from arrowmix._cache.listing import CacheEntry

__all__ = ["VERIFIED_KIND", "is_record", "remove", "scan_records"]

VERIFIED_KIND = "verified"
_DIR = "verified"
_RECORD_RE = re.compile(r"^(dir-[0-9a-f]{16}\.json|[0-9a-f]{16})$")
_TMP_RE = re.compile(r"^(?:dir-[0-9a-f]{16}\.json|[0-9a-f]{16})\.(\d+)\.[0-9a-f]+\.tmp$")


def is_record(path: str) -> bool:
    """Whether ``path`` names a record, or a record's temporary, in a ``verified`` directory."""
    parent, name = os.path.split(path)
    return os.path.basename(parent) == _DIR and bool(_RECORD_RE.match(name) or _TMP_RE.match(name))


def _stale(path: str) -> str | None:
    """Why the record at ``path`` vouches for nothing any more, or None."""
    try:
        with open(path, encoding="utf-8") as f:
            body: Any = json.load(f)
    except (OSError, ValueError):
        return "stale record: unreadable"
    if not isinstance(body, dict):
        return "stale record: unreadable"
    if "files" in body:  # one directory's record
        directory = body.get("dir")
        if not body["files"]:
            return "stale record: it vouches for no file"
        if isinstance(directory, str) and not os.path.isdir(directory):
            return f"stale record: its directory {directory} is gone"
        return None
    target = body.get("path")
    if not isinstance(target, str):
        return "stale record: unreadable"
    try:
        st = os.stat(target)
    except OSError:
        return f"stale record: {target} is gone"
    ident = [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
    return None if body.get("stat") == ident else f"stale record: {target} changed since"


def scan_records(cache_dir: str, *, probe: bool = True) -> list[CacheEntry]:
    """The records and record temporaries of ``cache_dir/verified/`` (none without it)."""
    from arrowmix._cache.listing import TMP_KIND, CacheEntry, CacheFile

    top = os.path.join(cache_dir, _DIR)
    try:
        with os.scandir(top) as it:
            found = sorted((d.name, d.path) for d in it if d.is_file(follow_symlinks=False))
    except OSError:
        return []
    out = []
    for name, path in found:
        record, tmp = _RECORD_RE.match(name), _TMP_RE.match(name)
        if record is None and tmp is None:
            continue
        try:
            st = os.stat(path, follow_symlinks=False)
        except FileNotFoundError:
            continue
        file = CacheFile(path, st.st_size, st.st_mtime, {"kind": VERIFIED_KIND})
        key = f"{_DIR}/{name}"
        if tmp is not None:
            pid = int(tmp.group(1))
            busy = None
            if probe and writer_alive(pid, st.st_mtime):
                busy = f"being written by live process {pid}"
            out.append(CacheEntry(key, TMP_KIND, None, (file,), busy=busy, pid=pid))
        else:
            out.append(CacheEntry(key, VERIFIED_KIND, None, (file,), stale=_stale(path)))
    return out


def remove(path: str) -> tuple[int, str | None]:
    """Remove a record, or a record temporary whose writer is gone.

    Returns:
        ``(bytes freed, None)``, or ``(0, why)`` when it was left in place.
    """
    tmp = _TMP_RE.match(os.path.basename(path))
    try:
        st = os.stat(path, follow_symlinks=False)
        if tmp is not None and writer_alive(int(tmp.group(1)), st.st_mtime):
            return 0, f"being written by live process {tmp.group(1)}"
        os.unlink(path)
    except FileNotFoundError:
        return 0, "already gone"
    except OSError as exc:
        return 0, f"cannot remove: {exc.strerror or exc}"
    return st.st_size, None
