"""Atomic file writes: write a temporary file in the target directory, then rename.

A reader never sees half a file: the data goes to ``tmp-<random>.<name>.partial`` beside the
target, is flushed and fsynced, and only then renamed over the final name. Any exception,
``KeyboardInterrupt`` included, removes the temporary file. A process killed with ``kill -9``
can leave a ``tmp-*.partial`` file behind; it never has a final name, and the cache cleanup
removes it once its writer is gone.

fsspec URLs (object stores) follow the same scheme with a temporary *key* and a server-side
copy to the final key (see :func:`_atomic_remote`); a ``tmp-*`` key left by a killed writer is
never listed as a chunk; only a map's next run removes it, in a remote cache directory
(``arrowmix._cache.segments.remove_stale_tmp``).
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

from arrowmix._storage.fs import ensure_parent, is_local, local_path, url_to_fs

__all__ = ["TMP_PREFIX", "TMP_SUFFIX", "atomic_sink", "tmp_name"]

TMP_PREFIX = "tmp-"
TMP_SUFFIX = ".partial"


def tmp_name(final_name: str) -> str:
    """A temporary file name for ``final_name``, tagged with our pid for stale-file cleanup."""
    return f"{TMP_PREFIX}{os.getpid()}-{secrets.token_hex(4)}-{final_name}{TMP_SUFFIX}"


@contextlib.contextmanager
def atomic_sink(
    path: str, storage_options: Mapping[str, Any] | None = None
) -> Iterator[pa.NativeFile]:
    """Yield a writable Arrow sink whose content appears at ``path`` only on success."""
    if is_local(path):
        with _atomic_local(local_path(path)) as sink:
            yield sink
    else:
        with _atomic_remote(path, storage_options) as sink:
            yield sink


@contextlib.contextmanager
def _atomic_local(path: str) -> Iterator[pa.NativeFile]:
    directory, name = os.path.split(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, tmp_name(name))
    try:
        sink = pa.OSFile(tmp, "wb")
        try:
            yield sink
        finally:
            sink.close()
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(directory)


def _fsync_dir(directory: str) -> None:
    # Make the rename itself durable; not supported everywhere (e.g. Windows), which is fine.
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def _atomic_remote(url: str, storage_options: Mapping[str, Any] | None) -> Iterator[pa.NativeFile]:
    """Upload to a temporary key beside ``url``, then server-side copy it to the final key.

    Object stores have no rename: the final key is written by one copy (atomic per object on
    S3/GCS: readers see the old object, nothing, or the whole new one), then the temporary key
    is deleted. ``cp_file``/``rm_file`` rather than ``mv``: ``mv`` probes both keys as
    directories first (two listings per file) and would copy *into* a "directory" if a key
    below the final name existed.
    """
    fs, path = url_to_fs(url, storage_options)
    parent, name = path.rsplit("/", 1) if "/" in path else ("", path)
    tmp = f"{parent}/{tmp_name(name)}" if parent else tmp_name(name)
    ensure_parent(fs, parent, url)
    try:
        with fs.open(tmp, "wb") as f:
            sink = pa.PythonFile(f, mode="w")
            yield sink
            sink.flush()
        fs.cp_file(tmp, path)
    except BaseException:
        with contextlib.suppress(Exception):
            fs.rm_file(tmp)
        raise
    fs.rm_file(tmp)  # the final object is complete even if this fails (a tmp- key remains)
