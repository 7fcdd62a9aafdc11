"""Local-disk facts that storage and the layers above share.

The arrowmix root directory (``$ARROWMIX_CACHE`` or ``~/.cache/arrowmix``), where the cache,
the digest records and the remote chunk cache live, and whether an open descriptor still
names a path (the check every lock file and pin file relies on). Both sit here, on the ground
floor, so that storage needs nothing of the cache layer above it.
"""

from __future__ import annotations

import os

__all__ = ["cache_root", "root_dir", "same_file"]


def root_dir() -> str:
    """``$ARROWMIX_CACHE`` or ``~/.cache/arrowmix`` (not created)."""
    return os.environ.get("ARROWMIX_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "arrowmix"
    )


def cache_root() -> str:
    """``$ARROWMIX_CACHE`` or ``~/.cache/arrowmix`` (created on demand)."""
    root = root_dir()
    os.makedirs(root, exist_ok=True)
    return root


def same_file(fd: int, path: str) -> bool:
    """Whether descriptor ``fd`` still refers to the file at ``path`` (not unlinked)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (st.st_dev, st.st_ino)
