"""Download one remote chunk into its reserved partial file, and check it.

The object is read by ranged GETs (:func:`~arrowmix._remote.meta.fetch_ranges`, retried by
the one retry layer) and written at its offsets. Every write is checked: a full disk or a
quota raises :class:`~arrowmix.exceptions.WriteError` naming the cache directory and its free
space, never an error blaming the remote object. The copy is then checked: its content
digest must equal the manifest's (then it holds exactly the bytes the corpus was written
with, and no request beyond the ranged GETs is made). On a first mismatch the manifest is
read again (:mod:`arrowmix._remote.rewrite`): one that no longer records this digest means
the corpus was rewritten, and :class:`~arrowmix.exceptions.ObjectChangedError` says so at
once. Otherwise the object's version is asked afresh: a new version (the object replaced
alone) raises :class:`~arrowmix.exceptions.ObjectChangedError` naming it; an unchanged one
is downloaded again (``RETRY.attempts`` downloads in all), then raises
:class:`~arrowmix.exceptions.ChunkFileError` (damaged).
"""

from __future__ import annotations

import errno
import os
import shutil
import time
from collections.abc import Callable, Mapping
from typing import Any

import xxhash

from arrowmix._remote import meta
from arrowmix._remote.meta import RemoteChunk, same_version, version_tag
from arrowmix._remote.retry import RETRY, delay, remote_fs, transient
from arrowmix._remote.rewrite import chunk_rewritten, rewritten_error
from arrowmix.exceptions import ChunkFileError, ObjectChangedError, RemoteReadError, WriteError

__all__ = ["download"]

PART = 8 * 2**20  # bytes per ranged GET of a download
PARTS_IN_FLIGHT = 8


def download(
    chunk: RemoteChunk,
    storage_options: Mapping[str, Any] | None,
    partial: str,
    directory: str,
    counted: Callable[[int], None],
) -> None:
    """Fill ``partial`` with ``chunk``'s checked bytes; ``counted(n)`` after each part.

    Raises:
        WriteError: writing the local copy failed (a full disk: the message names
            ``directory`` and its free space).
        ObjectChangedError: the corpus was rewritten, or the object has a new version.
        ChunkFileError: the object is gone, or its bytes never matched the manifest.
        RemoteReadError: the requests kept failing.
    """
    fs, path = remote_fs(chunk.url, storage_options)
    for attempt in range(RETRY.attempts):
        if attempt:
            time.sleep(delay(attempt, None))
        try:
            got = _write_parts(fs, path, chunk, partial, directory, counted)
        except ObjectChangedError as exc:  # a short answer from a new version
            _check_manifest(chunk, storage_options, exc)
            raise
        if got == chunk.digest:
            return  # the very bytes the manifest records: no version can be mixed in
        if not attempt:
            # Once: a rewritten corpus is not downloaded again (write_chunks removes the
            # manifest first, so from then on it differs from the one opened with).
            _check_manifest(chunk, storage_options)
        now = _version(fs, path, chunk.url)
        if not same_version(now, chunk.tag):
            raise ObjectChangedError(
                f"Remote chunk {chunk.url!r} changed since the dataset was opened "
                f"(then {dict(chunk.tag)}, now {dict(now)}); reopen the dataset to read the "
                "new version. Nothing of the new version was used."
            )
    raise ChunkFileError(
        f"Remote chunk {chunk.url!r} is damaged: its bytes did not match the digest its "
        f"corpus manifest records in {RETRY.attempts} downloads (or it was rewritten without "
        "a new version tag)."
    )


def _check_manifest(
    chunk: RemoteChunk,
    storage_options: Mapping[str, Any] | None,
    cause: BaseException | None = None,
) -> None:
    """Raise ObjectChangedError if ``chunk``'s corpus was rewritten (its manifest re-read)."""
    why = chunk_rewritten(chunk, storage_options)
    if why is not None:
        raise rewritten_error(chunk.url.rsplit("/", 1)[0], why) from cause


def _version(fs: Any, path: str, url: str) -> tuple[tuple[str, str], ...]:
    """The object's version tag, asked afresh (retried)."""
    last: BaseException | None = None
    for attempt in range(RETRY.attempts):
        if attempt:
            time.sleep(delay(attempt, last))
        fs.invalidate_cache(path)
        try:
            return version_tag(fs.info(path))
        except FileNotFoundError as exc:
            raise ChunkFileError(f"Remote chunk {url!r} is gone: {exc}") from exc
        except OSError as exc:
            if not transient(exc):
                raise RemoteReadError(f"Reading {url!r} failed: {exc!r}") from exc
            last = exc
    raise RemoteReadError(f"Asking the version of {url!r} failed: {last!r}") from last


def _write_parts(
    fs: Any,
    path: str,
    chunk: RemoteChunk,
    partial: str,
    directory: str,
    counted: Callable[[int], None],
) -> str:
    """Write ``chunk``'s bytes into ``partial`` (synced); return their content digest.

    The digest is computed from the parts as they arrive, in order (they are the file's
    bytes from its start), so the copy is not read back.
    """
    parts = [(a, min(a + PART, chunk.size)) for a in range(0, chunk.size, PART)]
    digest = xxhash.xxh3_64()
    fd = os.open(partial, os.O_WRONLY)
    try:
        for i in range(0, len(parts), PARTS_IN_FLIGHT):
            group = parts[i : i + PARTS_IN_FLIGHT]
            got = meta.fetch_ranges(fs, path, chunk.url, group, chunk.tag)
            for (a, _), data in zip(group, got, strict=True):
                write_at(fd, data, a, partial, directory)
                digest.update(data)
                counted(len(data))
        try:
            os.fsync(fd)
        except OSError as exc:
            raise disk_error(partial, directory, exc.errno) from exc
    finally:
        os.close(fd)
    return digest.hexdigest()


def write_at(fd: int, data: bytes, offset: int, path: str, directory: str) -> None:
    """Write all of ``data`` at ``offset`` (short writes continued; failures named)."""
    view = memoryview(data)
    while len(view):
        try:
            n = os.pwrite(fd, view, offset)
        except OSError as exc:
            raise disk_error(path, directory, exc.errno) from exc
        if n <= 0:
            raise disk_error(path, directory, errno.ENOSPC)
        view = view[n:]
        offset += n


def disk_error(path: str, directory: str, code: int | None) -> WriteError:
    """The error of a failed local write in the cache ``directory`` (names its free space)."""
    try:
        free = f"{shutil.disk_usage(directory).free} bytes free"
    except OSError:
        free = "free space unknown"
    return WriteError(
        code or errno.EIO,
        f"Writing the local copy {os.path.basename(path)!r} in the chunk cache directory "
        f"{directory!r} failed ({os.strerror(code or errno.EIO)}; {free} there). The remote "
        "object is not at fault: free space there, or choose another `chunk_cache_dir`.",
    )
