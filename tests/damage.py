"""Damage done to cache files between two processes, for the tests of what caches serve."""

from __future__ import annotations

import os

from arrowmix._storage import integrity, shard_hashes, trust


def forget_checks() -> None:
    """Forget which files this process checked, as a new process starts."""
    getattr(trust, "_known", set()).clear()  # (absent before the check existed)
    trust._records.clear()
    integrity._checked.clear()
    shard_hashes._verified.clear()


def flip(path: str | os.PathLike[str], near: bytes) -> None:
    """Change one byte of ``path`` in place (the 6th after ``near``): size and inode kept."""
    with open(path, "rb") as f:
        at = f.read().index(near)
    with open(path, "r+b") as f:
        f.seek(at + 5)
        f.write(b"9")


def truncate(path: str | os.PathLike[str]) -> None:
    """Cut ``path`` to half its size."""
    os.truncate(path, os.path.getsize(path) // 2)


def empty(path: str | os.PathLike[str]) -> None:
    """Cut ``path`` to nothing."""
    os.truncate(path, 0)


def swap(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> None:
    """Exchange the files ``a`` and ``b`` (by renames)."""
    tmp = f"{os.fspath(a)}.swap"
    os.rename(a, tmp)
    os.rename(b, a)
    os.rename(tmp, b)
