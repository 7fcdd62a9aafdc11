"""Sizes and counters of the bounded chunk cache (:mod:`arrowmix._remote.cache`).

:func:`parse_size` reads a ``cache_limit`` / ``read_ahead`` size; :class:`CacheStats` holds what
the readers of a cache directory cost; :func:`counting` makes the downloads of one thread also
count for one reader (a stream counts its own downloads so).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["CacheStats", "count", "counting", "parse_size"]

_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
          "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}  # fmt: skip


def parse_size(value: int | str, name: str = "cache_limit") -> int:
    """Bytes from an int or a size string (``"200GB"``, ``"1.5 TiB"``, ``"512MB"``).

    Raises:
        ValueError: not a positive size (the message shows the value).
    """
    if isinstance(value, bool):
        raise ValueError(f"`{name}` must be a size in bytes or a string, got {value!r}.")
    if isinstance(value, int):
        n = value
    elif isinstance(value, str):
        text = value.strip().upper().replace(" ", "")
        digits = text.rstrip("KMGTIB")
        unit = text[len(digits) :]
        try:
            n = int(float(digits) * _UNITS[unit])
        except (KeyError, ValueError) as exc:
            raise ValueError(
                f"`{name}` {value!r} is not a size; write it as bytes or like '200GB', '512MiB'."
            ) from exc
    else:
        raise ValueError(f"`{name}` must be a size in bytes or a string, got {value!r}.")
    if n <= 0:
        raise ValueError(f"`{name}` must be positive, got {value!r}.")
    return n


@dataclass
class CacheStats:
    """What one process's readers of a cache directory have cost.

    Attributes:
        bytes_downloaded: bytes fetched from the store into local copies.
        chunks_downloaded: copies made.
        wait_seconds: time readers spent waiting for a chunk to be downloaded.
        evicted: copies removed to make room.
        refetched: local copies that failed their check (damaged, truncated, swapped) and
            were downloaded again.
    """

    bytes_downloaded: int = 0
    chunks_downloaded: int = 0
    wait_seconds: float = 0.0
    evicted: int = 0
    refetched: int = 0

    def as_dict(self) -> dict[str, Any]:
        """The counters as a plain dict."""
        return {
            "bytes_downloaded": self.bytes_downloaded,
            "chunks_downloaded": self.chunks_downloaded,
            "wait_seconds": round(self.wait_seconds, 6),
            "evicted": self.evicted,
            "refetched": self.refetched,
        }


_READER = threading.local()  # the CacheStats of the reader this thread works for, if any


@contextlib.contextmanager
def counting(stats: CacheStats) -> Iterator[None]:
    """Also count, in ``stats``, what this thread's reads download and wait for.

    A stream counts its own downloads this way (its reads and its read-ahead threads), as
    the cache's own counters add up every reader of the process.
    """
    before = getattr(_READER, "stats", None)
    _READER.stats = stats
    try:
        yield
    finally:
        _READER.stats = before


def current() -> CacheStats | None:
    """The stats this thread counts its reads in (see :func:`counting`), if any."""
    return getattr(_READER, "stats", None)


def count(field: str, amount: float) -> None:
    """Add ``amount`` to ``field`` of the current reader's stats (caller holds the lock)."""
    mine = getattr(_READER, "stats", None)
    if mine is not None:
        setattr(mine, field, getattr(mine, field) + amount)
