"""Argument checks shared by the public API: one exception type per kind of mistake.

- an argument of the wrong type (``"3"`` where an int goes, ``True`` for a count): ``TypeError``;
- the right type but a value outside the allowed ones (``0`` rows, an unknown mode):
  ``ValueError``;
- a position outside a sequence (a shard or row index): ``IndexError``.

Messages name the argument, say what is allowed and show what was passed.
"""

from __future__ import annotations

import numbers
from collections.abc import Collection
from typing import Any

__all__ = ["OutOfRangeError", "check_callable", "check_choice", "check_index", "check_int"]


def _shown(value: Any) -> str:
    return f"{type(value).__name__} {value!r:.80}"


def check_int(name: str, value: Any, *, minimum: int | None = None, none_ok: bool = False) -> Any:
    """``value`` as an ``int`` (numpy integers accepted, ``bool`` refused); None if allowed.

    Raises:
        TypeError: not an integer (or None when ``none_ok``).
        ValueError: below ``minimum``.

    Example:
        >>> check_int("batch_size", 8, minimum=1)
        8
        >>> check_int("batch_size", "8", minimum=1)
        Traceback (most recent call last):
        ...
        TypeError: `batch_size` must be an int, got str '8'.
        >>> check_int("batch_size", 0, minimum=1)
        Traceback (most recent call last):
        ...
        ValueError: `batch_size` must be a positive int, got 0.
    """
    if value is None and none_ok:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        kind = "an int or None" if none_ok else "an int"
        raise TypeError(f"`{name}` must be {kind}, got {_shown(value)}.")
    value = int(value)
    if minimum is not None and value < minimum:
        rule = {0: "a non-negative int", 1: "a positive int"}.get(minimum, f"an int >= {minimum}")
        raise ValueError(f"`{name}` must be {rule}{' or None' if none_ok else ''}, got {value}.")
    return value


class OutOfRangeError(IndexError, ValueError):
    """An index outside its range: an ``IndexError`` that is also a ``ValueError``.

    A shard index out of range is a bad value (as ``to_stream``'s ``instance_rank``,
    and as Hugging Face raises it) and an index error at once.
    """


def check_index(name: str, value: Any, length: int) -> int:
    """``value`` as an index in ``[0, length)``.

    Raises:
        TypeError: not an integer.
        OutOfRangeError: outside ``[0, length)`` (an ``IndexError`` and a ``ValueError``).
    """
    value = check_int(name, value)
    if not 0 <= value < length:
        raise OutOfRangeError(f"`{name}` must be in [0, {length}), got {value}.")
    return int(value)


def check_callable(name: str, value: Any) -> Any:
    """``value`` if callable.

    Raises:
        TypeError: it is not.
    """
    if not callable(value):
        raise TypeError(f"`{name}` must be callable, got {_shown(value)}.")
    return value


def check_choice(name: str, value: Any, choices: Collection[str]) -> str:
    """``value`` if it is one of the strings ``choices``.

    Raises:
        TypeError: not a string.
        ValueError: not one of ``choices``; the message lists them.
    """
    if not isinstance(value, str):
        raise TypeError(f"`{name}` must be one of {sorted(choices)}, got {_shown(value)}.")
    if value not in choices:
        raise ValueError(f"`{name}` must be one of {sorted(choices)}, got {value!r}.")
    return value
