"""Parse and print the sizes, durations and tables of the command line.

Sizes: ``KB``/``MB``/``GB``/``TB`` are powers of 1000, ``KiB``/``MiB``/``GiB``/``TiB`` and the
bare ``K``/``M``/``G``/``T`` (as in ``du -h``) powers of 1024; a plain number is bytes. Sizes
are printed with their binary unit (``MiB``), and totals with the decimal one beside it
(``1.5 GiB = 1.6 GB``), so neither reading is ever guessed.
Durations: one or more ``<number><unit>`` with units ``s``, ``m``, ``h``, ``d``, ``w``
(``7d``, ``1d12h``, ``1.5h``).
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Sequence

from arrowmix._cache.listing import format_bytes as binary_bytes

__all__ = [
    "ago",
    "binary_bytes",
    "both_units",
    "iso_time",
    "parse_duration",
    "parse_size",
    "positive_int",
    "positive_size",
    "si_bytes",
    "table",
]

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)\s*$", re.IGNORECASE)
_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kb": 1000,
    "kib": 1024,
    "m": 1024**2,
    "mb": 1000**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gb": 1000**3,
    "gib": 1024**3,
    "t": 1024**4,
    "tb": 1000**4,
    "tib": 1024**4,
}
_SPAN_RE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)([smhdw])")
_SPAN_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_size(text: str) -> int:
    """Bytes in ``text`` (an argparse ``type``).

    Example:
        >>> parse_size("500MB"), parse_size("1.5GiB"), parse_size("20g"), parse_size("123")
        (500000000, 1610612736, 21474836480, 123)
    """
    m = _SIZE_RE.match(text)
    unit = m.group(2).lower() if m else ""
    if m is None or unit not in _SIZE_UNITS:
        raise argparse.ArgumentTypeError(
            f"invalid size {text!r}: use a number with an optional unit, e.g. 500MB, 20GB, "
            "1.5GiB (KB/MB/GB/TB = 1000^n bytes, KiB/MiB/GiB/TiB or K/M/G/T = 1024^n)"
        )
    return int(float(m.group(1)) * _SIZE_UNITS[unit])


def positive_size(text: str) -> int:
    """:func:`parse_size` of at least one byte (an argparse ``type``).

    Example:
        >>> positive_size("64MB")
        64000000
    """
    size = parse_size(text)
    if size < 1:
        raise argparse.ArgumentTypeError(f"invalid size {text!r}: must be at least 1 byte")
    return size


def positive_int(text: str) -> int:
    """A whole number of at least 1 (an argparse ``type``).

    Example:
        >>> positive_int("100000")
        100000
    """
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid value {text!r}: expected a whole number, e.g. 100000"
        ) from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: must be at least 1")
    return value


def si_bytes(n: float) -> str:
    """Decimal-unit size: ``"512 B"``, ``"1.5 KB"``, ``"20.0 GB"`` (powers of 1000).

    Example:
        >>> si_bytes(512), si_bytes(1536), si_bytes(20 * 10**9)
        ('512 B', '1.5 KB', '20.0 GB')
    """
    if n < 1000:
        return f"{int(n)} B"
    for unit in ("KB", "MB", "GB", "TB"):
        n /= 1000
        if n < 1000 or unit == "TB":
            break
    return f"{n:.1f} {unit}"


def both_units(n: float) -> str:
    """A size in binary and decimal units, for totals: ``"1.5 GiB = 1.6 GB"``.

    Example:
        >>> both_units(1536 * 2**20), both_units(100)
        ('1.5 GiB = 1.6 GB', '100 B')
    """
    return binary_bytes(n) if n < 1000 else f"{binary_bytes(n)} = {si_bytes(n)}"


def parse_duration(text: str) -> float:
    """Seconds in ``text`` (an argparse ``type``).

    Example:
        >>> parse_duration("7d"), parse_duration("12h"), parse_duration("1d12h")
        (604800.0, 43200.0, 129600.0)
    """
    compact = text.strip().lower().replace(" ", "")
    parts = _SPAN_RE.findall(compact)
    if not compact or "".join(n + u for n, u in parts) != compact:
        raise argparse.ArgumentTypeError(
            f"invalid duration {text!r}: use a number and a unit s/m/h/d/w, e.g. 45s, 30m, "
            "12h, 7d, 1d12h"
        )
    return sum(float(n) * _SPAN_UNITS[u] for n, u in parts)


def iso_time(ts: float) -> str:
    """Local time as ``YYYY-MM-DD HH:MM``."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def ago(ts: float, now: float) -> str:
    """How long ago ``ts`` was, for people: ``"45 s ago"``, ``"3 min ago"``, ``"2 days ago"``.

    Older than 30 days (or in the future): the ISO date.

    Example:
        >>> ago(1000.0 - 180, 1000.0), ago(0.0, 5 * 3600.0), ago(0.0, 2 * 86400.0)
        ('3 min ago', '5 h ago', '2 days ago')
    """
    delta = now - ts
    if delta < 0 or delta >= 30 * 86400:
        return time.strftime("%Y-%m-%d", time.localtime(ts))
    if delta < 5:
        return "just now"
    if delta < 60:
        return f"{int(delta)} s ago"
    if delta < 3600:
        return f"{int(delta // 60)} min ago"
    if delta < 86400:
        return f"{int(delta // 3600)} h ago"
    days = int(delta // 86400)
    return f"{days} day ago" if days == 1 else f"{days} days ago"


def table(rows: Sequence[Sequence[str]], right: Sequence[int] = ()) -> list[str]:
    """Align ``rows`` (the first is the header) into columns; ``right`` aligns to the right.

    Example:
        >>> for line in table([["NAME", "SIZE"], ["a", "1 B"], ["bbb", "10 B"]], right=[1]):
        ...     print(line)
        NAME  SIZE
        a      1 B
        bbb   10 B
    """
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for r in rows:
        cells = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        ]
        out.append("  ".join(cells).rstrip())
    return out
