"""What every subcommand shares: the error that exits with status 1, the cache directory."""

from __future__ import annotations

import os

from arrowmix._cache.paths import cache_root

__all__ = ["CommandError", "resolve_cache_dir"]


class CommandError(Exception):
    """A failure to report as ``arrowmix: error: <message>`` with exit status 1."""


def resolve_cache_dir(arg: str | None) -> str:
    """``arg``, or ``$ARROWMIX_CACHE`` / ``~/.cache/arrowmix`` when None, as an absolute path.

    Raises:
        CommandError: The directory does not exist, is not a directory, or is a URL.
    """
    if arg is None:
        return cache_root()
    if "://" in arg:
        raise CommandError(
            f"CACHE_DIR {arg!r} is a URL; only local cache directories are supported."
        )
    path = os.path.abspath(os.path.expanduser(arg))
    if not os.path.exists(path):
        raise CommandError(f"CACHE_DIR {arg!r} does not exist.")
    if not os.path.isdir(path):
        raise CommandError(f"CACHE_DIR {arg!r} is not a directory.")
    return path
