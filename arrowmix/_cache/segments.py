"""Segmented cache results: plan the segments, name them, check them, open them.

A cached ``map``/``filter`` result covers the input view's rows ``[0, N)`` cut into ``n`` equal
row ranges. ``n`` depends on ``N`` only (never on ``num_proc``): segments hold between
``MIN_SEGMENT_ROWS`` and ``SEGMENT_ROWS`` input rows, with up to ``TARGET_SEGMENTS`` segments
for mid-sized inputs so that ``num_proc`` has work to spread. One segment is stored as
``cache-<fp>.arrow``; several as ``cache-<fp>-<i>-of-<n>.arrow``.

Each segment is an Arrow IPC file committed atomically on its own. Its schema metadata (JSON
under the ``arrowmix`` key) records what it is: kind, fingerprint, parent, transform, rows,
segment, num_segments, input row range, created, stored columns and the fingerprint explain
``record``. A segment counts as present only when that metadata matches the name it was looked
up under (see :func:`check_segment`); anything else is reported as a reason string and the
caller recomputes it, so a damaged or foreign file is never returned as data.

The cache directory may be an fsspec URL (``s3://bucket/cache``): segments are then objects,
read through their local read-through copies (``arrowmix._storage.ipc``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from arrowmix._cache.inuse import Hold, hold
from arrowmix._cache.paths import cache_file_name, shard_path
from arrowmix._storage import fs, integrity
from arrowmix._storage.atomic import TMP_RE, remove_dead_tmp, writer_alive
from arrowmix._storage.cast import (
    fill_null_types,
    first_lossy_row,
    has_null_type,
    lossless_cast,
)
from arrowmix._storage.ipc import open_table, read_meta
from arrowmix.exceptions import (
    CacheCorruptedError,
    CacheWarning,
    ChunkFileError,
    SchemaMismatchError,
)

__all__ = [
    "MIN_SEGMENT_ROWS",
    "SEGMENT_ROWS",
    "TARGET_SEGMENTS",
    "CacheWarning",
    "Segment",
    "check_segment",
    "plan_segments",
    "remove_stale_tmp",
    "touch",
    "unify_tables",
]

#: Largest number of input rows per segment.
SEGMENT_ROWS = 100_000
#: Smallest number of input rows per segment (below it, one file).
MIN_SEGMENT_ROWS = 10_000
#: Number of segments aimed at for inputs between the two bounds above.
TARGET_SEGMENTS = 8
#: A temporary object in a *remote* cache directory is removed only when its writer's pid is
#: gone from this host and it is older than this (seconds): pids say nothing about other hosts.
REMOTE_TMP_MIN_AGE = 600.0


@dataclass(frozen=True)
class Segment:
    """Input rows ``[start, stop)`` of segment ``index`` of ``count``, stored at ``path``."""

    index: int
    count: int
    start: int
    stop: int
    path: str

    @property
    def num_input_rows(self) -> int:
        return self.stop - self.start


def plan_segments(
    num_rows: int,
    fingerprint: str,
    cache_dir: str,
    user_path: str | None = None,
    *,
    align: int = 1,
    shards: int | None = None,
) -> list[Segment]:
    """Cut ``num_rows`` input rows into segments and name their files.

    ``shards`` fixes the count: HF ``datasets``' contiguous shards (``Dataset.shard``), for a
    ``with_rank`` map whose rank is the shard's index (``align`` is then ignored).

    ``user_path`` (the ``cache_file_name`` argument) replaces the default name; several
    segments then become ``<stem>-<i>-of-<n><ext>``. With ``align > 1`` every segment but
    the last has a multiple of ``align`` rows (a batched map's ``batch_size``).

    Example:
        >>> [(s.start, s.stop) for s in plan_segments(25_000, "0" * 16, "/c")]
        [(0, 8333), (8333, 16666), (16666, 25000)]
        >>> plan_segments(10, "0" * 16, "/c")[0].path
        '/c/cache-0000000000000000.arrow'
    """
    per = min(SEGMENT_ROWS, max(MIN_SEGMENT_ROWS, math.ceil(num_rows / TARGET_SEGMENTS)))
    if align > 1:
        per = math.ceil(per / align) * align
    n = max(1, math.ceil(num_rows / per)) if shards is None else shards
    div, mod = divmod(num_rows, n)
    out = []
    for i in range(n):
        if user_path is not None:
            path = user_path if n == 1 else shard_path(user_path, i, n)
        else:
            name = cache_file_name(fingerprint) if n == 1 else cache_file_name(fingerprint, i, n)
            path = fs.join(cache_dir, name)
        if shards is not None:  # HF's contiguous shards: the first `mod` get one more row
            start = div * i + min(i, mod)
            stop = start + div + (1 if i < mod else 0)
        elif align > 1:
            start, stop = i * per, min((i + 1) * per, num_rows)
        else:
            start, stop = i * num_rows // n, (i + 1) * num_rows // n
        out.append(Segment(i, n, start, stop, path))
    return out


def check_segment(
    seg: Segment,
    expect: dict[str, Any],
    storage_options: Mapping[str, Any] | None = None,
    holds: list[Hold] | None = None,
) -> pa.Table | str:
    """Open ``seg`` and check it (checksum, metadata); return the table, or why it is unusable.

    ``expect`` holds the metadata values the file must have (``fingerprint``, ``kind``,
    ``segment``, ``num_segments``, ``input_rows``...). A ``rows`` entry in the metadata must
    equal the file's row count. ``storage_options`` reach a segment stored at a URL. With
    ``holds``, a local file is registered as in use (appended there) *before* it is opened, so
    a concurrent cleanup cannot remove it between this check and its use.
    """
    if holds is not None and fs.is_local(seg.path):
        try:
            holds.append(hold(fs.local_path(seg.path)))
        except FileNotFoundError:
            return "missing"
    elif not fs.exists(seg.path, storage_options):
        return "missing"
    try:
        table = open_table(seg.path, storage_options, check="checksum")
    except CacheCorruptedError as exc:  # "fails its integrity check: <why>"
        return str(exc).removeprefix(f"Cache file {seg.path!r} ").rstrip(".")
    except ChunkFileError as exc:
        return f"unreadable ({exc.__cause__ or exc})"
    meta = read_meta(table.schema)
    for key, want in expect.items():
        if meta.get(key) != want:
            return f"metadata {key}={meta.get(key)!r}, expected {want!r}"
    rows = meta.get("rows")
    if rows is not None and rows != table.num_rows:
        return f"metadata says {rows} rows but the file holds {table.num_rows}"
    return table


def touch(paths: Iterable[str]) -> None:
    """Mark local files as just used (mtime = now) for the cleanup CLI; ignore read-only files.

    Objects in a remote cache directory are left alone (no "touch" on object stores). A file
    checked by this process stays checked (see :mod:`arrowmix._storage.integrity`).
    """
    integrity.touch([p for p in paths if fs.is_local(p)])


def remove_stale_tmp(
    directory: str,
    final_names: Sequence[str],
    storage_options: Mapping[str, Any] | None = None,
) -> list[str]:
    """Remove ``tmp-<pid>-...-<name>.partial`` files of dead writers for ``final_names``.

    Only temporary files of the given final names are considered (the caller holds their
    lock), so a live writer of another result is never disturbed. The pid check is host-local:
    in a remote directory (a URL, shared by hosts and without a lock) a temporary object must
    also be older than :data:`REMOTE_TMP_MIN_AGE`, since a pid that is free here may be a live
    writer on another host (which exposes its temporary object only between its upload and
    its copy to the final key). Returns the removed paths.
    """
    wanted = set(final_names)
    local = fs.is_local(directory)
    removed: list[str] = []
    if local:
        return remove_dead_tmp(fs.local_path(directory), wanted.__contains__)
    for name in fs.listdir(directory, storage_options):
        m = TMP_RE.match(name)
        if not (m and m.group(2) in wanted and not writer_alive(int(m.group(1)))):
            continue
        path = fs.join(directory, name)
        if not local:
            stamp = fs.modified(path, storage_options)
            if stamp is None or time.time() - stamp < REMOTE_TMP_MIN_AGE:
                continue
        if fs.remove(path, storage_options):
            removed.append(path)
    return removed


def unify_tables(tables: Sequence[pa.Table], paths: Sequence[str]) -> list[pa.Table]:
    """Cast segment tables to one schema: the first's, with all-null columns promoted.

    A column that is all-null (type ``null``) in early segments takes its type from the first
    segment where it is not; other differences are cast safely or raise.

    Raises:
        SchemaMismatchError: column sets differ or a cast fails; names the column, both types
            and the file.
    """
    plain = [t.replace_schema_metadata(None) for t in tables]
    first = plain[0].schema
    fields = []
    for i, field in enumerate(first):
        ftype = field.type
        for t in plain[1:]:
            if not has_null_type(ftype):  # null, or empty lists only: a later segment's type
                break
            ftype = fill_null_types(ftype, t.schema.field(i).type if i < len(t.schema) else ftype)
        fields.append(pa.field(field.name, ftype))
    target = pa.schema(fields)
    out = []
    for t, path in zip(plain, paths, strict=True):
        if t.schema.names != target.names:
            raise SchemaMismatchError(
                f"Cache segment {path!r} has columns {t.schema.names}, but the first segment "
                f"has {target.names}: the function returned different columns for different "
                "rows."
            )
        out.append(t if t.schema.equals(target) else _cast(t, target, path))
    return out


def _cast(table: pa.Table, target: pa.Schema, path: str) -> pa.Table:
    cols = []
    for name, col in zip(table.column_names, table.columns, strict=True):
        want = target.field(name).type
        if col.type == want:
            cols.append(col)
            continue
        cast, why = lossless_cast(col, want)  # never 10.5 -> 10, 5 -> true, 10 -> "10"
        if why is not None:
            i = first_lossy_row(col, want)
            culprit = f" (its row {i} is {col[i].as_py()!r})" if i is not None else ""
            raise SchemaMismatchError(
                f"Column {name!r} is {col.type} in cache segment {path!r}{culprit} but {want} "
                f"in the first segment, and casting it would change values: {why}. The "
                "function returned different types for different rows; return one type."
            )
        cols.append(cast)
    return pa.Table.from_arrays(cols, schema=target)
