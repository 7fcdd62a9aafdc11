"""The two small rules every fingerprint shares: a default argument, and a random print.

A keyword argument equal to its default is dropped before hashing (:func:`same_value`), so
passing a default explicitly never changes a fingerprint; what cannot be hashed gets a
random fingerprint (:func:`random_fingerprint`), never a false cache hit. Both the plain
roll (:mod:`~arrowmix._fingerprint.transform`) and the recorded one
(:mod:`~arrowmix._fingerprint.record`) use them, so they sit below both.
"""

from __future__ import annotations

import secrets
from typing import Any

__all__ = ["random_fingerprint", "same_value"]


def same_value(a: Any, b: Any) -> bool:
    """True if ``a`` is ``b``, or of the same type and equal (a kwarg at default)."""
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except (TypeError, ValueError):
        return False


def random_fingerprint() -> str:
    """A fresh random fingerprint (never a false cache hit)."""
    return secrets.token_hex(8)
