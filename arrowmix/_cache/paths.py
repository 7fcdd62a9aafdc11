"""Cache locations and file names.

The cache root is ``$ARROWMIX_CACHE`` or ``~/.cache/arrowmix``. A dataset read from chunk files
keeps its derived files beside its first chunk (one directory per lineage), falling back to the
root when that directory is not writable or not local. A read-only corpus may ship its cache
files beside its chunks: results found complete and valid there are read in place (see
:func:`shipped_cache_dir`), and only what is missing is computed into the root.
``disable_caching()`` sends new results to a temporary directory removed at interpreter exit.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile

from arrowmix._storage.local import cache_root

__all__ = [
    "CACHE_FILE_RE",
    "INDICES_FILE_RE",
    "SAVED_DIR_FILE_RE",
    "cache_file_name",
    "cache_root",
    "dataset_cache_dir",
    "disable_caching",
    "enable_caching",
    "indices_file_name",
    "is_caching_enabled",
    "lock_file_name",
    "shard_path",
    "shipped_cache_dir",
    "temp_cache_dir",
]

CACHE_FILE_RE = re.compile(r"^cache-([0-9a-f]{16})(?:-(\d+)-of-(\d+))?\.arrow$")
INDICES_FILE_RE = re.compile(r"^indices-([0-9a-f]{16})\.arrow$")
#: What a ``save_to_disk`` directory may hold besides its JSONs: its data files, the caches
#: arrowmix derived from a loaded save (files, locks, indices) and atomic-write temporaries.
SAVED_DIR_FILE_RE = re.compile(
    r"^(data-\d+-of-\d+\.arrow|cache-[0-9a-f]{16}(-\d+-of-\d+)?\.(arrow|lock)"
    r"|indices-[0-9a-f]{16}\.arrow|tmp-\d+-[0-9a-f]+-.+\.partial)$"
)

_caching_enabled = True
_temp_dir: str | None = None


def dataset_cache_dir(first_file: str | None) -> str:
    """Where results derived from a dataset go.

    The directory of its first backing file when local and writable, else the cache root;
    a temporary directory while caching is disabled.
    """
    if not _caching_enabled:
        return temp_cache_dir()
    if first_file is not None and "://" not in first_file:
        directory = os.path.dirname(os.path.abspath(first_file))
        if _writable(directory):
            return directory
    return cache_root()


def shipped_cache_dir(files: tuple[str, ...] | list[str]) -> str | None:
    """The read-only local directory of a dataset's first file, where caches may ship.

    None when caching is disabled, there is no file, it is remote, or its directory is
    writable (that directory is then the dataset's cache directory itself). Files there are
    only ever read: a result found there complete and valid is used as is; anything else is
    computed into the dataset's cache directory.
    """
    if not _caching_enabled or not files or "://" in files[0]:
        return None
    directory = os.path.dirname(os.path.abspath(files[0]))
    if _writable(directory) or not os.path.isdir(directory):
        return None
    return directory


def _writable(directory: str) -> bool:
    return os.access(directory, os.W_OK)


def cache_file_name(fingerprint: str, segment: int | None = None, of: int | None = None) -> str:
    """``cache-<fp>.arrow`` or ``cache-<fp>-<i>-of-<n>.arrow``."""
    if segment is None:
        return f"cache-{fingerprint}.arrow"
    return f"cache-{fingerprint}-{segment:05d}-of-{of:05d}.arrow"


def shard_path(path: str, segment: int, of: int) -> str:
    """HF's name for segment ``segment`` of ``of`` of a user-named file: ``<stem>-<i>-of-<n><ext>``.

    Example:
        >>> shard_path("/data/tok.arrow", 1, 4)
        '/data/tok-00001-of-00004.arrow'
    """
    stem, ext = os.path.splitext(path)
    return f"{stem}-{segment:05d}-of-{of:05d}{ext}"


def lock_file_name(fingerprint: str) -> str:
    """``cache-<fp>.lock``: the writer's lock beside the result it is writing."""
    return f"cache-{fingerprint}.lock"


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
