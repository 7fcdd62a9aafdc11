"""Local paths and fsspec URLs behind one small interface."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

__all__ = ["is_local", "join", "local_path", "url_to_fs"]


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
    """Return ``(filesystem, path)`` for an fsspec URL, with an install hint on failure."""
    import fsspec

    try:
        fs, path = fsspec.core.url_to_fs(url, **dict(storage_options or {}))
    except ImportError as exc:
        scheme = url.split("://", 1)[0]
        raise ImportError(
            f"Reading {scheme}:// URLs needs an fsspec backend for {scheme!r}: {exc}. "
            f"For S3: pip install 'arrowmix[s3]'."
        ) from exc
    return fs, path
