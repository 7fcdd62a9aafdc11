"""Rolling fingerprints: ``new = H(parent, transform@version, kwargs[, function])``.

``roll`` hashes plain arguments (select, shuffle, ...). ``fingerprint_transform`` adds a
user function hashed by value (map, filter), warns once when something cannot be hashed,
and ``transform_record`` returns the same fingerprint with a record of its components
for ``explain``. Both drop kwargs equal to their defaults and sort the rest.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any

from arrowmix._fingerprint.canonical import random_fingerprint, same_value
from arrowmix._fingerprint.hasher import Hasher
from arrowmix.exceptions import FingerprintError

if TYPE_CHECKING:
    from arrowmix._fingerprint.record import FingerprintRecord

__all__ = [
    "MAP_IGNORED_KWARGS",
    "fingerprint_transform",
    "random_fingerprint",
    "roll",
    "same_value",
    "transform_record",
    "validate_fingerprint",
]

_FP_RE = re.compile(r"^[0-9a-f]{16}$")

#: ``map`` / ``filter`` arguments that change how a result is computed or shown, never
#: what it is: pass them as ``ignore=`` so, e.g., a rerun with another ``num_proc``
#: reuses the cache.
MAP_IGNORED_KWARGS = frozenset(
    {"num_proc", "desc", "load_from_cache_file", "cache_file_name", "new_fingerprint"}
)


def roll(
    parent: str,
    transform: str,
    kwargs: Mapping[str, Any] | None = None,
    *,
    version: int = 1,
    defaults: Mapping[str, Any] | None = None,
) -> str:
    """Fingerprint of ``transform(parent, **kwargs)``.

    Arguments equal to their entry in ``defaults`` are dropped, so passing a default
    explicitly never changes the result; keys are hashed in sorted order.

    Example:
        >>> a = roll("0123456789abcdef", "select", {"indices": [1, 2]})
        >>> kw = {"indices": [1, 2], "x": 0}
        >>> a == roll("0123456789abcdef", "select", kw, defaults={"x": 0})
        True
    """
    defaults = defaults or {}
    canonical = {
        k: v
        for k, v in (kwargs or {}).items()
        if not (k in defaults and same_value(v, defaults[k]))
    }
    h = Hasher()
    h.update(("arrowmix.roll", parent, f"{transform}@{version}"))
    h.update(dict(sorted(canonical.items())))
    return h.hexdigest()


def validate_fingerprint(fp: str) -> str:
    """Return ``fp`` if it is 16 hex characters, else raise FingerprintError."""
    if not isinstance(fp, str) or not _FP_RE.match(fp):
        raise FingerprintError(
            f"`fingerprint` must be 16 lowercase hex characters (filename-safe), got {fp!r}."
        )
    return fp


def transform_record(
    parent_fp: str | None,
    transform_name: str,
    version: int | str,
    function: Callable[..., Any] | None,
    kwargs: Mapping[str, Any] | None = None,
    defaults: Mapping[str, Any] | None = None,
    *,
    ignore: Collection[str] = (),
    stacklevel: int = 2,
) -> FingerprintRecord:
    """Fingerprint of a transform with a user function, and the record of its parts.

    Same arguments and result as :func:`fingerprint_transform` (``record.fingerprint``);
    the record is JSON-ready (``record.to_dict()``) and diffs with ``explain``.
    """
    # Lazy: the function hasher needs dill, which is slow to import.
    from arrowmix._fingerprint.functions import FunctionHasher, warn_hidden_inputs
    from arrowmix._fingerprint.record import build_record

    hasher = FunctionHasher()
    record = build_record(
        parent_fp, transform_name, version, function, kwargs, defaults, ignore, hasher
    )
    if hasher.hidden_inputs and not record.unhashable:
        subject = f"{transform_name} with function {record.function!r}"
        warn_hidden_inputs(subject, hasher.hidden_inputs, extra=stacklevel - 2)
    if record.unhashable:
        from arrowmix._fingerprint.functions import Problem, warn_unhashable

        problems = [Problem(p["path"], p["object"], p["reason"]) for p in record.unhashable]
        subject = f"{transform_name} with function {record.function!r}"
        warn_unhashable(subject, problems, record.fingerprint, extra=stacklevel - 2)
    return record


def fingerprint_transform(
    parent_fp: str | None,
    transform_name: str,
    version: int | str,
    function: Callable[..., Any] | None,
    kwargs: Mapping[str, Any] | None = None,
    defaults: Mapping[str, Any] | None = None,
    *,
    ignore: Collection[str] = (),
    stacklevel: int = 2,
) -> str:
    """Fingerprint of ``transform_name@version`` applying ``function`` with ``kwargs``.

    The function is hashed by value (code without line numbers, closure values, globals
    it reads, user helpers recursively); ``kwargs`` equal to their entry in ``defaults``
    are dropped. If anything cannot be hashed, the result is random (never a false cache
    hit) and exactly one :class:`~arrowmix.exceptions.FingerprintWarning` names each
    culprit and where it was found.

    Args:
        parent_fp: Fingerprint of the input dataset.
        transform_name: E.g. ``"arrowmix.map"``.
        version: Bump to invalidate caches of this transform on purpose.
        function: The user function (or None).
        kwargs: The transform's other arguments.
        defaults: Their defaults.
        ignore: Names of kwargs that never change the result (e.g.
            :data:`MAP_IGNORED_KWARGS`: ``num_proc``, ``desc``, ...); they are dropped.
        stacklevel: Where a warning points when this is called from outside arrowmix
            (2: the caller of this function; a wrapper of it passes 3).

    Returns:
        16 hex characters.

    Example:
        >>> def tok(batch, n=1):
        ...     return batch
        >>> parent, defaults = "0123456789abcdef", {"batched": False}
        >>> kw = {"batched": False}
        >>> a = fingerprint_transform(parent, "map", 1, tok, kw, defaults)
        >>> a == fingerprint_transform(parent, "map", 1, tok, {}, defaults)
        True
        >>> a == fingerprint_transform(parent, "map", 2, tok, {}, defaults)
        False
    """
    return transform_record(
        parent_fp,
        transform_name,
        version,
        function,
        kwargs,
        defaults,
        ignore=ignore,
        stacklevel=stacklevel,
    ).fingerprint
