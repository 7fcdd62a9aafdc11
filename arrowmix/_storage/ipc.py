"""Arrow IPC *file* format: write atomically, open memory-mapped, summarise cheaply.

Local files are memory-mapped and advised random (:mod:`arrowmix._storage.pages`), so opening
reads the footer and record batch headers only, not the data. Other URLs go through fsspec:
each file is copied once into ``$ARROWMIX_CACHE/remote/`` (keyed by URL and object version) and
that copy is memory-mapped.
Metadata that arrowmix records (kind, fingerprint, version...) lives under one JSON value in the
schema metadata key ``arrowmix``.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pyarrow as pa
import xxhash

from arrowmix._storage import integrity
from arrowmix._storage.atomic import atomic_sink
from arrowmix._storage.file_meta import META_KEY, read_meta, with_meta
from arrowmix._storage.fs import is_local, local_path, url_to_fs
from arrowmix._storage.local import root_dir
from arrowmix._storage.pages import map_file
from arrowmix._storage.resident import AROUND, touched
from arrowmix._storage.windows import WindowedSink, map_pass
from arrowmix.exceptions import CacheCorruptedError, ChunkFileError

__all__ = [
    "META_KEY",
    "is_ipc_stream",
    "local_copy",
    "open_table",
    "read_ipc",
    "read_meta",
    "with_meta",
    "write_file",
    "write_file_hashed",
]

#: Info keys that identify one version of a remote object (S3, GCS, Azure, memory, HTTP...).
_VERSION_KEYS = (
    "size", "ETag", "etag", "VersionId", "generation", "mtime", "LastModified", "created",
)  # fmt: skip


def write_file(
    path: str,
    batches: Iterable[pa.RecordBatch],
    schema: pa.Schema,
    *,
    meta: Mapping[str, Any] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    sync: bool = True,
    windowed: bool = False,
) -> int:
    """Write ``batches`` as one Arrow IPC file at ``path``, atomically. Returns the row count.

    ``sync=False``: renamed into place without an fsync (see ``atomic.make_durable``).
    ``windowed=True``: a buffer larger than ``windows.WINDOW`` is written a window at a time,
    each handed back behind the write if it is mapped here (see
    :class:`~arrowmix._storage.windows.WindowedSink`).

    With ``meta`` (cache files: segments, filter, indices and flatten files), the file also
    carries a checksum of its content in that metadata (see
    :mod:`arrowmix._storage.integrity`), sealed before the rename; such a remote file is
    written and sealed locally first, then uploaded. Chunk files (no ``meta``) are plain
    Arrow IPC files.

    Raises:
        OSError: writing failed (e.g. ``ENOSPC``); the message names ``path``.
    """
    value = None if meta is None else integrity.placeholder()
    if meta is not None:
        schema = with_meta(schema, {**meta, integrity.CHECKSUM_KEY: value})
    try:
        if is_local(path) or value is None:
            seal = None if value is None else (lambda tmp: integrity.seal(tmp, value))
            with atomic_sink(path, storage_options, finish=seal, sync=sync) as sink:
                if not windowed:
                    return _write(sink, batches, schema)
                target = pa.PythonFile(WindowedSink(sink), mode="w")  # type: ignore[arg-type]
                rows = _write(target, batches, schema)
                target.close()
                return rows
        with tempfile.TemporaryDirectory(prefix="arrowmix-") as d:
            local = os.path.join(d, os.path.basename(path))
            with pa.OSFile(local, "wb") as sink:
                rows = _write(sink, batches, schema)
            integrity.seal(local, value)
            with atomic_sink(path, storage_options) as sink, open(local, "rb") as src:
                while block := src.read(8 * 2**20):
                    sink.write(block)
            return rows
    except OSError as exc:
        if isinstance(exc, ChunkFileError) or path in str(exc):
            raise
        raise OSError(exc.errno, f"Cannot write {path!r}: {exc.strerror or exc}") from exc


def write_file_hashed(
    path: str,
    batches: Iterable[pa.RecordBatch],
    schema: pa.Schema,
    *,
    storage_options: Mapping[str, Any] | None = None,
    sync: bool = True,
) -> tuple[int, int, str, list[list[Any]]]:
    """Write a chunk file (``schema`` as given) atomically, hashing the bytes written.

    ``sync=False``: renamed into place without an fsync (see ``writeback.Writeback``).
    Returns ``(rows, size, digest, batches)``: the digest is the xxh3-64 of the whole file,
    computed on the way out (the file is not read back); ``batches`` holds, per record batch,
    ``[start, end, rows, digest]`` of the bytes written for it (the first one's include the
    file's magic and schema).

    Raises:
        OSError: writing failed (e.g. ``ENOSPC``); the message names ``path``.
    """
    from arrowmix._storage.digests import HashingWriter

    try:
        with atomic_sink(path, storage_options, sync=sync) as sink:
            hashing = HashingWriter(sink)
            target = pa.PythonFile(hashing, mode="w")  # type: ignore[arg-type]  # duck-typed
            ranges: list[list[Any]] = []

            def mark(n: int) -> None:
                start, end, digest = hashing.mark()
                ranges.append([start, end, n, digest])

            rows = _write(target, batches, schema, mark)
            target.close()
    except OSError as exc:
        if isinstance(exc, ChunkFileError) or path in str(exc):
            raise
        raise OSError(exc.errno, f"Cannot write {path!r}: {exc.strerror or exc}") from exc
    return rows, hashing.size, hashing.hexdigest(), ranges


def _write(
    sink: pa.NativeFile,
    batches: Iterable[pa.RecordBatch],
    schema: pa.Schema,
    written: Callable[[int], None] | None = None,
) -> int:
    """Write the IPC file; ``written(rows)`` is called after each record batch."""
    rows = 0
    with pa.ipc.new_file(sink, schema) as writer:
        for batch in batches:
            if batch.schema != schema:
                batch = pa.RecordBatch.from_arrays(batch.columns, schema=schema)
            writer.write_batch(batch)
            n = batch.num_rows
            del batch  # not held while the next one is made (a gather of many rows)
            rows += n
            if written is not None:
                written(n)
    return rows


def is_ipc_stream(buf: pa.Buffer) -> bool:
    """Whether ``buf`` holds the Arrow IPC *stream* format (HF ``datasets``' ``.arrow`` files).

    The file format starts with the magic ``ARROW1``; a stream starts with its schema
    message (the continuation marker ``0xFFFFFFFF``, or a length in pre-1.0 streams).
    """
    head = memoryview(buf)[:6].tobytes()
    return len(head) >= 4 and head != b"ARROW1"


def read_ipc(buf: pa.Buffer) -> pa.Table:
    """The table in ``buf`` (either IPC format), zero-copy: arrays point into ``buf``."""
    if is_ipc_stream(buf):
        return pa.ipc.open_stream(buf).read_all()
    return pa.ipc.open_file(buf).read_all()


def open_table(
    path: str, storage_options: Mapping[str, Any] | None = None, *, check: str | None = None
) -> pa.Table:
    """Open one Arrow IPC file as a table: memory-mapped when local, via fsspec otherwise.

    Files in the IPC stream format (HF ``datasets`` writes its ``.arrow`` files so) are read
    too, unless ``check="checksum"`` (a cache file arrowmix wrote is always in the file
    format): still zero-copy, but opening reads every record batch's header, not a footer.
    The pages an open reads count toward the resident gauge (:mod:`~arrowmix._storage.resident`:
    a filter opens all its segments at once).

    Args:
        path: A local path or fsspec URL.
        storage_options: fsspec options for a URL.
        check: ``"checksum"`` (cache files: the checksum must be present and match),
            ``"chunk"`` (the checksum must match if present, else the arrays are validated)
            or None (no check: the caller already checked this file).

    Raises:
        ChunkFileError: the file is missing, truncated, corrupt or not Arrow IPC file format.
        CacheCorruptedError: ``check="checksum"`` and the file fails it.
    """
    try:
        local = local_path(path) if is_local(path) else _read_through(path, storage_options)
        # One buffer over the whole mapping, advised random: opening reads the footer and
        # the record batch headers only, and a random row reads its own pages only.
        buf = map_file(local)
        if check is not None:
            _check(path, local, buf, check)
        table = pa.ipc.open_file(buf).read_all() if check == "checksum" else read_ipc(buf)
        if buf.size:  # the open read the file's head, footer and record batch headers
            batches = table.column(0).num_chunks if table.num_columns else 0
            touched(AROUND * (2 + batches))
        return table
    except FileNotFoundError as exc:
        raise ChunkFileError(f"Arrow file not found: {path!r}.") from exc
    except (pa.ArrowInvalid, pa.ArrowIOError, OSError) as exc:
        if isinstance(exc, ChunkFileError):
            raise
        raise ChunkFileError(
            f"Cannot read {path!r} as an Arrow IPC file (truncated, corrupt, or another format"
            f" such as Parquet): {exc}"
        ) from exc


def _check(path: str, local: str, buf: pa.Buffer, check: str) -> None:
    remember = check == "chunk"
    ok, ident = integrity.verified(local, remember=remember)
    if ok:
        return
    # The check reads every byte once: through a mapping of its own with the kernel's
    # read-ahead (``buf`` is advised random), one window of it resident at a time.
    why = integrity.problem(map_pass(local), structural=remember)
    if why is not None:
        if remember:
            raise ChunkFileError(
                f"Chunk file {path!r} is damaged and cannot be used: {why}. Write it again "
                "from its source (`write_chunks`, `save_to_disk`), or restore it from a copy."
            )
        raise CacheCorruptedError(f"Cache file {path!r} fails its integrity check: {why}.")
    integrity.done(local, ident, remember=remember)


def remote_copy_dir() -> str:
    """Where remote files are copied so that they can be memory-mapped."""
    return os.path.join(root_dir(), "remote")


def _read_through(url: str, storage_options: Mapping[str, Any] | None) -> str:
    """A local copy of a remote file, keyed by URL and the remote's size and version tag.

    The copy is downloaded once (atomically) and reused while the remote object is unchanged,
    so remote chunks are memory-mapped like local ones. The version tag comes from the metadata
    the opened file itself holds when it has some (s3fs: a fresh HEAD, and every ranged read is
    made with ``If-Match`` on that ETag), so the key always describes the bytes downloaded.
    """
    fs, p = url_to_fs(url, storage_options)  # drops stale listings: info is asked afresh
    with fs.open(p, "rb") as src:
        info = getattr(src, "details", None) or fs.info(p)
        tag = [info.get(k) for k in _VERSION_KEYS]
        ident = json.dumps([fs.unstrip_protocol(p), tag], default=str)
        key = xxhash.xxh3_64_hexdigest(ident.encode())
        local = os.path.join(remote_copy_dir(), f"{key}-{os.path.basename(p)}")
        if not os.path.exists(local):
            with atomic_sink(local) as sink:
                while block := src.read(8 * 2**20):
                    sink.write(block)
    return local


def local_copy(path: str, storage_options: Mapping[str, Any] | None = None) -> str:
    """A local path holding ``path``'s bytes: itself when local, else its read-through copy."""
    try:
        return local_path(path) if is_local(path) else _read_through(path, storage_options)
    except FileNotFoundError as exc:
        raise ChunkFileError(f"Arrow file not found: {path!r}.") from exc
