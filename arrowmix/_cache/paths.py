"""Cache locations and file names.

The cache root is ``$ARROWMIX_CACHE`` or ``~/.cache/arrowmix``. A dataset read from chunk files
keeps its derived files beside its first chunk (one directory per lineage), falling back to the
root when that directory is not writable or not local. ``disable_caching()`` sends new results
to a temporary directory removed at interpreter exit.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile

__all__ = [
    "CACHE_FILE_RE",
    "INDICES_FILE_RE",
    "cache_file_name",
    "cache_root",
    "dataset_cache_dir",
    "disable_caching",
    "enable_caching",
    "indices_file_name",
    "is_caching_enabled",
    "temp_cache_dir",
]

CACHE_FILE_RE = re.compile(r"^cache-([0-9a-f]{16})(?:-(\d+)-of-(\d+))?\.arrow$")
INDICES_FILE_RE = re.compile(r"^indices-([0-9a-f]{16})\.arrow$")

_caching_enabled = True
_temp_dir: str | None = None


def cache_root() -> str:
    """``$ARROWMIX_CACHE`` or ``~/.cache/arrowmix`` (created on demand)."""
    root = os.environ.get("ARROWMIX_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "arrowmix"
    )
    os.makedirs(root, exist_ok=True)
    return root


def dataset_cache_dir(first_file: str | None) -> str:
    """Where results derived from a dataset go.

    The directory of its first backing file when local and writable, else the cache root;
    a temporary directory while caching is disabled.
    """
    if not _caching_enabled:
        return temp_cache_dir()
    if first_file is not None and "://" not in first_file:
        directory = os.path.dirname(os.path.abspath(first_file))
        if os.access(directory, os.W_OK):
            return directory
    return cache_root()


def cache_file_name(fingerprint: str, segment: int | None = None, of: int | None = None) -> str:
    """``cache-<fp>.arrow`` or ``cache-<fp>-<i>-of-<n>.arrow``."""
    if segment is None:
        return f"cache-{fingerprint}.arrow"
    return f"cache-{fingerprint}-{segment:05d}-of-{of:05d}.arrow"


def indices_file_name(fingerprint: str) -> str:
    """``indices-<fp>.arrow``."""
    return f"indices-{fingerprint}.arrow"


def temp_cache_dir() -> str:
    """A per-process temporary cache directory, removed at interpreter exit."""
    global _temp_dir
    if _temp_dir is None or not os.path.isdir(_temp_dir):
        _temp_dir = tempfile.mkdtemp(prefix="arrowmix-")
        atexit.register(shutil.rmtree, _temp_dir, True)
    return _temp_dir


def enable_caching() -> None:
    """Store map/filter/indices results in the cache directory (the default).

    Example:
        >>> import arrowmix
        >>> arrowmix.disable_caching(); arrowmix.is_caching_enabled()
        False
        >>> arrowmix.enable_caching(); arrowmix.is_caching_enabled()
        True
    """
    global _caching_enabled
    _caching_enabled = True


def disable_caching() -> None:
    """Write new results to a temporary directory removed at exit; nothing is reused."""
    global _caching_enabled
    _caching_enabled = False


def is_caching_enabled() -> bool:
    """Whether results are stored in (and reused from) the cache directory."""
    return _caching_enabled
