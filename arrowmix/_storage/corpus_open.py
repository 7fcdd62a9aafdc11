"""Open local chunk files as one version, while another process may be rewriting them.

``write_chunks(..., overwrite=True)`` replaces a corpus file by file (manifest first, then
chunks, the new manifest last). An open that overlaps it could map one version's files and
take its digests from the other's manifest, or map a mix. :func:`open_local_chunks` makes
the digests describe the bytes actually mapped:

1. each directory's manifest is read *before* its files are listed and mapped;
2. every file is ``stat``-ed before and after it is mapped: another identity (inode, size,
   mtime, ctime) means it was replaced during the open;
3. its digest is the manifest's only when the mapped file is exactly the version recorded
   there (same inode, size, mtime and ctime); otherwise the digest of that very version
   (:func:`~arrowmix._storage.digests.version_digest`, which refuses to answer for a file
   replaced while being hashed), which must then be the digest the manifest records: a
   listed file whose bytes differ (bit rot, an edit in place) raises
   :class:`~arrowmix.exceptions.ChunkFileError` naming it (:mod:`arrowmix._storage.damage`);
4. if a directory's manifest (its inode, size, mtime, ctime) differs at the end of the open
   from the start, a rewrite started or ended meanwhile: the files mapped may be a mix of
   versions, and the open is torn. When the manifest stayed and every file mapped is the
   version it lists, the open is one version (no listing needed); otherwise (no manifest, or
   a file no manifest lists) the chunk files present at the end must be those mapped. A file
   no manifest lists opens under the digest of the bytes mapped.

A torn open, or an error raised while the directory is visibly changing (its manifest is
another than at the start of the attempt, a live writer's temporary chunk or manifest is in
it, or its chunk files come and go over a short pause),
is retried after a short pause, a bounded number of times (about 1.2 s in all). If the
directory never settles, the error says that a rewrite is in progress. An error in a
directory that does not change is raised at once, as before.

``verify=True`` also hashes every file listed in a manifest in full (no digest cache) and
raises :class:`~arrowmix.exceptions.ChunkFileError` naming each one whose bytes no longer
match the digest recorded when it was written (bit rot, or an edit by another tool).
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence

import pyarrow as pa

from arrowmix._storage.atomic import TMP_RE, writer_alive
from arrowmix._storage.chunks import list_chunk_files
from arrowmix._storage.damage import mismatch
from arrowmix._storage.digests import (
    MANIFEST_NAME,
    ChunkEntry,
    content_digest,
    read_local_manifest,
    read_manifest,
    version_digest,
)
from arrowmix._storage.fs import local_path
from arrowmix._storage.globs import has_magic
from arrowmix._storage.ipc import open_table
from arrowmix._storage.pages import ask_heads
from arrowmix.exceptions import ChunkFileError, IncompleteCorpusError

__all__ = ["open_local_chunks"]

Spec = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
#: ``(spec, files, tables, manifests)``: the manifests read for the directories in ``spec``.
CheckComplete = Callable[
    [Spec, Sequence[str], Sequence[pa.Table], Mapping[str, "dict[str, ChunkEntry] | None"]], None
]

#: Pause between two listings of a directory after an error: a rewrite moves its files.
_SETTLE = 0.02
_NOT_DATA = re.compile(r"^(cache-|indices-|tmp-)")
#: Pauses between attempts while a directory is being rewritten (about 1.2 s in all).
_PAUSES = (0.005, 0.01, 0.02, 0.04, 0.08, 0.15, 0.3, 0.6)
_REWRITE = (
    "Rewrite the corpus from its source (`write_chunks(..., overwrite=True)`), or restore "
    "this file from a copy."
)


class _Torn(Exception):
    """The files mapped are not the version the manifest lists (a rewrite overlapped)."""


def _ident(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _watched(spec: Spec) -> list[str]:
    """The directories named in ``spec``: their changes tell of a rewrite.

    Files and globs named one by one are checked file by file (identity before and after
    mapping) only: their directories may hold anything else, changing for other reasons.
    """
    specs = [spec] if isinstance(spec, (str, os.PathLike)) else list(spec)
    out: list[str] = []
    for s in (os.path.abspath(local_path(os.fspath(x))) for x in specs):
        if not has_magic(s) and os.path.isdir(s) and s not in out:
            out.append(s)
    return out


def _is_data(name: str) -> bool:
    """A chunk file name as ``list_chunk_files`` sees it (not a cache or temporary file)."""
    return name.endswith(".arrow") and not _NOT_DATA.match(name)


def _manifest_ident(d: str) -> tuple[int, int, int, int] | None:
    try:
        return _ident(os.stat(os.path.join(d, MANIFEST_NAME)))
    except OSError:
        return None


def _names(d: str) -> frozenset[str]:
    """Chunk files in ``d`` and temporaries of chunks or manifests being written.

    Cache files written beside the chunks (a ``map`` in another process) are not included.
    """
    try:
        return frozenset(n for n in os.listdir(d) if _is_data(n) or _corpus_tmp(n))
    except OSError:
        return frozenset()


def _corpus_tmp(name: str) -> re.Match[str] | None:
    """The temporary file of a chunk or manifest being written (not of a cache file)."""
    m = TMP_RE.match(name)
    return m if m and (_is_data(m.group(2)) or m.group(2) == MANIFEST_NAME) else None


def _writing(d: str, names: frozenset[str]) -> bool:
    """Whether a live writer's temporary chunk or manifest file is in ``d``."""
    for name in names:
        m = _corpus_tmp(name)
        if m:
            with contextlib.suppress(OSError):
                if writer_alive(int(m.group(1)), os.stat(os.path.join(d, name)).st_mtime):
                    return True
    return False


def _changing(before: dict[str, tuple[int, int, int, int] | None]) -> bool:
    """Whether a watched directory is visibly being rewritten (after an error: not hot).

    Its manifest is another than at the start of the attempt, a live writer's temporary
    chunk or manifest is in it, or its chunk files come and go over a short pause.
    """
    for d, was in before.items():
        names = _names(d)
        if _manifest_ident(d) != was or _writing(d, names):
            return True
        time.sleep(_SETTLE)
        if _names(d) != names or _manifest_ident(d) != was:
            return True
    return False


def open_local_chunks(
    spec: Spec,
    *,
    verify: bool = False,
    check_complete: CheckComplete | None = None,
) -> tuple[list[str], list[pa.Table], list[str]]:
    """``(files, tables, digests)`` of local chunk files, every digest that of the mapped bytes.

    Args:
        spec: A directory, glob, file or list of them (local).
        verify: Hash every file a manifest lists and compare with the recorded digest.
        check_complete: Called with ``(spec, files, tables)`` to refuse an incomplete corpus.

    Raises:
        ChunkFileError: a file cannot be opened, ``verify`` found a file that does not hold
            what was recorded, or the corpus kept changing (a rewrite is in progress).
        IncompleteCorpusError: from ``check_complete``.
    """
    watched = _watched(spec)
    for pause in (*_PAUSES, None):
        before: dict[str, tuple[int, int, int, int] | None] = {}  # filled by the attempt
        try:
            return _attempt(spec, watched, before, verify, check_complete)
        except (_Torn, ChunkFileError) as exc:
            if not isinstance(exc, _Torn) and not _changing(before):
                raise
            if pause is None:
                raise _in_progress(exc, watched) from exc
            time.sleep(pause)
    raise AssertionError("unreachable")  # pragma: no cover


def _in_progress(exc: Exception, watched: Sequence[str]) -> ChunkFileError:
    where = ", ".join(repr(d) for d in watched)
    what = str(exc) if isinstance(exc, ChunkFileError) else "its files changed while mapped"
    cls = type(exc) if isinstance(exc, ChunkFileError) else IncompleteCorpusError
    return cls(
        f"{where}: a rewrite is in progress (another process is rewriting these chunk files, "
        f"e.g. `write_chunks(..., overwrite=True)`) and it did not settle within "
        f"{sum(_PAUSES):.1f} s; open it again when the rewrite has finished. Last problem: "
        f"{what}"
    )


def _attempt(
    spec: Spec,
    watched: Sequence[str],
    before: dict[str, tuple[int, int, int, int] | None],
    verify: bool,
    check_complete: CheckComplete | None,
) -> tuple[list[str], list[pa.Table], list[str]]:
    manifests: dict[str, dict[str, ChunkEntry] | None] = {}
    for d in watched:
        # Before listing: the version we expect to map, and which manifest file that was.
        manifests[d], before[d] = read_local_manifest(d)
    files = list_chunk_files(spec)
    ask_heads((f, _header_positions(f, manifests)) for f in files)
    tables: list[pa.Table] = []
    digests: list[str] = []
    mapped: dict[str, set[str]] = {}
    unrecorded: set[str] = set()  # directories with a file not the version its manifest lists
    for f in files:
        d = os.path.dirname(os.path.abspath(f))
        if d not in manifests:
            manifests[d] = read_manifest(d)
        entry = (manifests[d] or {}).get(os.path.basename(f))
        table, digest, recorded = _open_one(f, entry, verify)
        tables.append(table)
        digests.append(digest)
        mapped.setdefault(d, set()).add(os.path.basename(f))
        if not recorded:
            unrecorded.add(d)
    if check_complete is not None:
        check_complete(spec, files, tables, manifests)
    for d, was in before.items():
        if _manifest_ident(d) != was:
            raise _Torn  # a rewrite started or ended meanwhile: the files may be a mix
        if was is not None and d not in unrecorded:
            continue  # the manifest stayed, and every file mapped is the version it lists
        if {n for n in _names(d) if _is_data(n)} != mapped.get(d, set()):
            raise _Torn  # a chunk came or went meanwhile
    return files, tables, digests


def _header_positions(path: str, manifests: dict[str, dict[str, ChunkEntry] | None]) -> list[int]:
    """Where the record batch headers of ``path`` start, as far as its manifest says.

    A header follows each recorded batch's bytes; empty when the manifest lists none.
    """
    entry = (manifests.get(os.path.dirname(os.path.abspath(path))) or {}).get(
        os.path.basename(path)
    )
    batches = entry.batches if entry is not None else None
    try:
        return [int(b[1]) for b in batches or ()]
    except (TypeError, ValueError, IndexError):
        return []


def _open_one(path: str, entry: ChunkEntry | None, verify: bool) -> tuple[pa.Table, str, bool]:
    """The mapped table, the digest of its bytes, and whether it is the version ``entry`` lists."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise ChunkFileError(f"Arrow file not found: {path!r}.") from exc
    table = open_table(path, check="chunk")
    try:
        after = os.stat(path)
    except OSError as exc:
        raise _Torn from exc
    if _ident(after) != _ident(st):
        raise _Torn  # replaced while being mapped
    if verify and entry is not None:
        digest, hashed = content_digest(path)
        if _ident(hashed) != _ident(st):
            raise _Torn
        if digest != entry.digest:
            raise _damaged(path, digest, entry)
        return table, digest, entry.matches(st)
    if entry is not None and entry.matches(st):
        return table, entry.digest, True
    found = version_digest(path, st)
    if found is None:
        raise _Torn
    if entry is not None and found != entry.digest:
        if _listed(path) != entry:
            raise _Torn  # the manifest changed meanwhile: a rewrite, not damage
        raise _damaged(path, found, entry)
    return table, found, False


def _damaged(path: str, digest: str, entry: ChunkEntry) -> ChunkFileError:
    return mismatch(
        path, digest, entry.digest, f"its manifest {MANIFEST_NAME}", _REWRITE, entry.batches
    )


def _listed(path: str) -> ChunkEntry | None:
    """The entry of ``path`` in its directory's manifest, read now."""
    return (read_manifest(os.path.dirname(os.path.abspath(path))) or {}).get(os.path.basename(path))
