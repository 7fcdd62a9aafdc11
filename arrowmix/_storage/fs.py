"""Local paths and fsspec URLs behind one small interface."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Mapping
from typing import Any

from arrowmix._storage.gcpause import gc_paused

__all__ = [
    "ensure_parent",
    "exists",
    "is_local",
    "join",
    "listdir",
    "local_path",
    "makedirs",
    "modified",
    "remove",
    "split",
    "url_to_fs",
]

Options = Mapping[str, Any] | None


def is_local(path: str) -> bool:
    """True for plain paths and ``file://`` URLs."""
    return "://" not in path or path.startswith("file://")


def local_path(path: str) -> str:
    """Strip a ``file://`` scheme."""
    return path[len("file://") :] if path.startswith("file://") else path


def join(base: str, name: str) -> str:
    """Join a directory (path or URL) and a file name."""
    if is_local(base):
        return os.path.join(local_path(base), name)
    return base.rstrip("/") + "/" + name


def url_to_fs(url: str, storage_options: Mapping[str, Any] | None = None) -> tuple[Any, str]:
    """Return ``(filesystem, path)`` for an fsspec URL, with an install hint on failure.

    fsspec reuses one filesystem instance per set of options, and object-store filesystems
    (s3fs, gcsfs...) keep a listing cache in it that never sees another process's writes. The
    listings of ``path`` and of its parents are dropped here, so what follows (``ls``, ``glob``,
    ``info``, ``exists``) asks the store again instead of answering from a stale listing.
    """
    import fsspec

    try:
        fs, path = fsspec.core.url_to_fs(url, **dict(storage_options or {}))
    except ImportError as exc:
        scheme = url.split("://", 1)[0]
        raise ImportError(
            f"Reading {scheme}:// URLs needs an fsspec backend for {scheme!r}: {exc}. "
            f"For S3: pip install 'arrowmix[s3]'."
        ) from exc
    fs.invalidate_cache(path)
    _connect_s3(fs)
    return fs, path


_CONNECT_LOCK = threading.Lock()


def _new_connect_lock() -> None:  # a fork while another thread connected: not held in the child
    global _CONNECT_LOCK
    _CONNECT_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_connect_lock)


def _connect_s3(fs: Any) -> None:
    """Make an s3fs filesystem's client now, with the garbage collector paused.

    botocore builds the client from its JSON service descriptions: some 10^5 objects, which
    in a process that imported torch set off a full collection pass over all of torch's
    objects (~0.1 s, on the way to the first row; see :mod:`arrowmix._storage.gcpause`).
    One client per filesystem: opening a corpus reads its manifest and lists it at once, and
    both would make one otherwise. A failure here is left for the first request to explain.
    """
    if "s3" not in fs.protocol or getattr(fs, "_s3", False) is not None:
        return  # not s3fs, or its client exists already
    import asyncio  # (imported by s3fs already)

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass  # no event loop runs in this thread
    else:
        # On fsspec's loop thread the lock's holder may be waiting for this very loop (a
        # deadlock), and another loop would be blocked: the first request makes the client.
        return
    with _CONNECT_LOCK:
        if fs._s3 is not None or getattr(fs, "asynchronous", False):
            return
        with gc_paused(), contextlib.suppress(Exception):
            fs.connect()


def ensure_parent(fs: Any, directory: str, url: str) -> None:
    """Make ``directory`` ready to receive files, without ever creating a bucket.

    Object stores (filesystems with buckets: s3fs, gcsfs, adlfs) have no directories, and their
    ``makedirs`` creates a *bucket* when the first path component does not exist: a typo in a
    bucket name would silently make a new bucket. There we only check that the bucket exists.
    Other filesystems get their directories created.

    Raises:
        FileNotFoundError: the bucket of ``url`` does not exist (the message names ``url``).
    """
    split = getattr(fs, "split_path", None)
    if split is None:
        if directory:
            fs.makedirs(directory, exist_ok=True)
        return
    bucket = split(directory)[0]
    if not fs.exists(bucket):
        raise FileNotFoundError(
            f"Cannot write to {url!r}: the bucket {bucket!r} does not exist (or these "
            "credentials cannot see it). Create it first; arrowmix never creates buckets."
        )


# ---- the few file operations the cache needs, on a local path or a URL alike ----------------


def split(path: str) -> tuple[str, str]:
    """``(directory, name)`` of a path or URL; a local directory is made absolute."""
    if is_local(path):
        return os.path.split(os.path.abspath(local_path(path)))
    directory, _, name = path.rstrip("/").rpartition("/")
    return directory, name


def exists(path: str, storage_options: Options = None) -> bool:
    """Whether the file (or object) ``path`` exists, asked afresh of the store."""
    if is_local(path):
        return os.path.exists(local_path(path))
    fs, p = url_to_fs(path, storage_options)
    return bool(fs.exists(p))


def listdir(directory: str, storage_options: Options = None) -> list[str]:
    """The names in ``directory`` (``[]`` when it does not exist)."""
    if is_local(directory):
        try:
            return os.listdir(local_path(directory))
        except OSError:
            return []
    fs, p = url_to_fs(directory, storage_options)
    try:
        found = fs.ls(p, detail=False)
    except FileNotFoundError:
        return []
    return [str(f).rstrip("/").rsplit("/", 1)[-1] for f in found]


def remove(path: str, storage_options: Options = None) -> bool:
    """Delete one file (or object); False when it was already gone."""
    if is_local(path):
        try:
            os.unlink(local_path(path))
        except FileNotFoundError:
            return False
        return True
    fs, p = url_to_fs(path, storage_options)
    try:
        fs.rm_file(p)
    except FileNotFoundError:
        return False
    return True


def makedirs(directory: str, storage_options: Options = None) -> None:
    """Create a local directory; a no-op for a URL.

    Object stores have no directories, and writes there check the bucket themselves (see
    :func:`ensure_parent`).
    """
    if is_local(directory):
        os.makedirs(local_path(directory), exist_ok=True)


def modified(path: str, storage_options: Options = None) -> float | None:
    """Last modification time (unix seconds) of a file or object, None when unknown."""
    if is_local(path):
        try:
            return os.stat(local_path(path)).st_mtime
        except OSError:
            return None
    fs, p = url_to_fs(path, storage_options)
    with contextlib.suppress(Exception):  # not implemented by every backend, or gone
        return float(fs.modified(p).timestamp())
    return None
