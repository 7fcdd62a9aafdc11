"""Rolling fingerprints: ``new = H(parent, transform@version, canonical kwargs)``."""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from typing import Any

from arrowmix._fingerprint.hasher import Hasher
from arrowmix.exceptions import FingerprintError

__all__ = ["random_fingerprint", "roll", "validate_fingerprint"]

_FP_RE = re.compile(r"^[0-9a-f]{16}$")


def roll(
    parent: str,
    transform: str,
    kwargs: Mapping[str, Any] | None = None,
    *,
    version: int = 1,
    defaults: Mapping[str, Any] | None = None,
) -> str:
    """Fingerprint of ``transform(parent, **kwargs)``.

    Arguments equal to their entry in ``defaults`` are dropped, so passing a default explicitly
    never changes the result; keys are hashed in sorted order.

    Example:
        >>> a = roll("0123456789abcdef", "select", {"indices": [1, 2]})
        >>> a == roll("0123456789abcdef", "select", {"indices": [1, 2], "x": 0}, defaults={"x": 0})
        True
    """
    defaults = defaults or {}
    canonical = {
        k: v for k, v in (kwargs or {}).items() if not (k in defaults and _same(v, defaults[k]))
    }
    h = Hasher()
    h.update(("arrowmix.roll", parent, f"{transform}@{version}"))
    h.update(canonical)
    return h.hexdigest()


def _same(a: Any, b: Any) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except (TypeError, ValueError):
        return False


def random_fingerprint() -> str:
    """A fresh random fingerprint (never a false cache hit)."""
    return secrets.token_hex(8)


def validate_fingerprint(fp: str) -> str:
    """Return ``fp`` if it is 16 lowercase hex characters, else raise FingerprintError."""
    if not isinstance(fp, str) or not _FP_RE.match(fp):
        raise FingerprintError(
            f"`fingerprint` must be 16 lowercase hex characters (filename-safe), got {fp!r}."
        )
    return fp
