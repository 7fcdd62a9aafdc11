"""Removing cache files a dataset does not use."""

from __future__ import annotations

import os
from collections.abc import Set

from arrowmix._cache.paths import CACHE_FILE_RE, INDICES_FILE_RE

__all__ = ["remove_unused"]


def remove_unused(cache_dir: str, keep: Set[str]) -> int:
    """Delete ``cache-*.arrow``/``indices-*.arrow`` in ``cache_dir`` not in ``keep`` (abs paths)."""
    removed = 0
    if not os.path.isdir(cache_dir):
        return 0
    for name in sorted(os.listdir(cache_dir)):
        path = os.path.abspath(os.path.join(cache_dir, name))
        if (CACHE_FILE_RE.match(name) or INDICES_FILE_RE.match(name)) and path not in keep:
            try:
                os.unlink(path)
            except FileNotFoundError:
                continue
            removed += 1
    return removed
