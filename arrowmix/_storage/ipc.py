"""Arrow IPC *file* format: write atomically, open memory-mapped, summarise cheaply.

Local files are opened with :func:`pyarrow.memory_map`, so opening costs the footer only, not
the data (O(1) in the file size). Other URLs go through fsspec: each file is copied once into
``$ARROWMIX_CACHE/remote/`` (keyed by URL and object version) and that copy is memory-mapped.
Metadata that arrowmix records (kind, fingerprint, version...) lives under one JSON value in the
schema metadata key ``arrowmix``. Content digests of chunk files live in ``digests.py``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa
import xxhash

from arrowmix._storage.atomic import atomic_sink
from arrowmix._storage.fs import is_local, local_path, url_to_fs
from arrowmix._version import __version__
from arrowmix.exceptions import ChunkFileError

__all__ = [
    "META_KEY",
    "local_copy",
    "open_table",
    "read_meta",
    "with_meta",
    "write_file",
    "write_file_hashed",
]

META_KEY = b"arrowmix"
#: Info keys that identify one version of a remote object (S3, GCS, Azure, memory, HTTP...).
_VERSION_KEYS = (
    "size", "ETag", "etag", "VersionId", "generation", "mtime", "LastModified", "created",
)  # fmt: skip


def with_meta(schema: pa.Schema, meta: Mapping[str, Any] | None) -> pa.Schema:
    """``schema`` with our JSON metadata (plus the arrowmix version) attached."""
    if meta is None:
        return schema
    existing = dict(schema.metadata or {})
    existing[META_KEY] = json.dumps({**meta, "version": __version__}, sort_keys=True).encode()
    return schema.with_metadata(existing)


def read_meta(schema: pa.Schema) -> dict[str, Any]:
    """Our JSON metadata from a schema, ``{}`` when absent."""
    raw = (schema.metadata or {}).get(META_KEY)
    return dict(json.loads(raw)) if raw else {}


def write_file(
    path: str,
    batches: Iterable[pa.RecordBatch],
    schema: pa.Schema,
    *,
    meta: Mapping[str, Any] | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> int:
    """Write ``batches`` as one Arrow IPC file at ``path``, atomically. Returns the row count."""
    schema = with_meta(schema, meta)
    with atomic_sink(path, storage_options) as sink:
        return _write_batches(sink, batches, schema)


def write_file_hashed(
    path: str,
    batches: Iterable[pa.RecordBatch],
    schema: pa.Schema,
    *,
    storage_options: Mapping[str, Any] | None = None,
) -> tuple[int, int, str]:
    """Write ``batches`` (with ``schema`` as given) atomically, hashing the bytes written.

    Returns ``(rows, size, digest)``: the digest is the xxh3-64 of the whole file, computed
    on the way out (the file is not read back).
    """
    from arrowmix._storage.digests import HashingWriter

    with atomic_sink(path, storage_options) as sink:
        hashing = HashingWriter(sink)
        target = pa.PythonFile(hashing, mode="w")  # type: ignore[arg-type]  # duck-typed
        rows = _write_batches(target, batches, schema)
        target.close()
    return rows, hashing.size, hashing.hexdigest()


def _write_batches(sink: Any, batches: Iterable[pa.RecordBatch], schema: pa.Schema) -> int:
    rows = 0
    with pa.ipc.new_file(sink, schema) as writer:
        for batch in batches:
            if batch.schema != schema:
                batch = pa.RecordBatch.from_arrays(batch.columns, schema=schema)
            writer.write_batch(batch)
            rows += batch.num_rows
    return rows


def open_table(path: str, storage_options: Mapping[str, Any] | None = None) -> pa.Table:
    """Open one Arrow IPC file as a table: memory-mapped when local, via fsspec otherwise.

    Raises:
        ChunkFileError: the file is missing, truncated, corrupt or not Arrow IPC file format.
    """
    try:
        local = local_path(path) if is_local(path) else _read_through(path, storage_options)
        # One buffer over the whole mapping: zero-copy, and it avoids one madvise call per
        # record batch that reading through the memory-mapped file itself makes.
        return pa.ipc.open_file(pa.memory_map(local, "r").read_buffer()).read_all()
    except FileNotFoundError as exc:
        raise ChunkFileError(f"Arrow file not found: {path!r}.") from exc
    except (pa.ArrowInvalid, pa.ArrowIOError, OSError) as exc:
        raise ChunkFileError(
            f"Cannot read {path!r} as an Arrow IPC file (truncated, corrupt, or another format"
            f" such as the IPC stream format or Parquet): {exc}"
        ) from exc


def remote_copy_dir() -> str:
    """Where remote files are copied so that they can be memory-mapped."""
    root = os.environ.get("ARROWMIX_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "arrowmix"
    )
    return os.path.join(root, "remote")


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
