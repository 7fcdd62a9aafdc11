"""The options of ``map``/``filter`` that never enter the fingerprint, and HF's rules for them.

``new_fingerprint`` (any string HF ``datasets`` accepts), ``cache_file_name`` (with an
extension), ``suffix_template`` (checked, then unused: segments keep their names) and HF's
other arguments: the ones accepted for compatibility and the ones refused with what to do.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from arrowmix._fingerprint.transform import validate_fingerprint
from arrowmix._storage.fs import is_local
from arrowmix.exceptions import FingerprintError

__all__ = [
    "MapOptions",
    "check_cache_file_name",
    "check_suffix_template",
    "map_options",
    "user_fingerprint",
]


#: Characters HF ``datasets`` refuses in a ``new_fingerprint`` (they break file names).
_BAD_FP_CHARS = '<>:/\\|?*"'


def user_fingerprint(fp: Any) -> tuple[str, str]:
    """``(fingerprint, file key)`` for ``new_fingerprint=fp``: any string, as in HF.

    HF's rule: a non-empty str of at most 64 characters without the characters of
    ``_BAD_FP_CHARS``. The result
    takes it as its fingerprint; 16 hex digits also name its files, other strings name
    them by their hash (``cache-<hash>.arrow``).

    Raises:
        FingerprintError: not such a string.
    """
    if not isinstance(fp, str) or not fp or len(fp) > 64 or any(c in fp for c in _BAD_FP_CHARS):
        raise FingerprintError(
            f"`new_fingerprint` must be a non-empty str of at most 64 characters without any "
            f"of {_BAD_FP_CHARS!r} (they could not name cache files), got {fp!r}."
        )
    if re.fullmatch(r"[0-9a-f]{16}", fp):
        return fp, fp
    from arrowmix._fingerprint.hasher import hash_value

    return fp, validate_fingerprint(hash_value(("new_fingerprint", fp))[:16])


def check_cache_file_name(name: Any) -> str | None:
    """``name`` as an absolute path (URLs kept), or None; HF's error for no extension.

    Raises:
        ValueError: the name has no extension (``.arrow``), as HF ``datasets`` refuses.
    """
    if not name:
        return None
    path: str = os.fspath(name)
    if not os.path.splitext(path)[1]:
        raise ValueError(
            f"Expected cache_file_name to have an extension, but got: {path} (e.g. "
            f"{path}.arrow; segments are named <stem>-<i>-of-<n><ext>)."
        )
    return os.path.abspath(path) if is_local(path) else path


@dataclass(frozen=True)
class MapOptions:
    """How a map/filter runs and where it is stored; nothing here enters the fingerprint."""

    num_proc: int | None = None
    load_from_cache_file: bool | None = None
    cache_file_name: str | None = None
    new_fingerprint: str | None = None
    desc: str | None = None
    executor: Any = None
    #: HF's ``keep_in_memory``: this call neither reads nor leaves a reusable cache entry.
    keep_in_memory: bool = False


#: HF ``datasets`` arguments accepted for compatibility that change nothing here.
_NO_OP_HF_ARGS = {"writer_batch_size"}
_UNSUPPORTED_HF_ARGS = {
    "disable_nullable": "Arrow columns here are always nullable",
}


def map_options(kind: str, **kwargs: Any) -> MapOptions:
    """The :class:`MapOptions` of a ``map``/``filter`` call, HF-only arguments checked.

    Raises:
        TypeError: an unknown argument, or an HF argument not supported (the message says
            what to do instead).
        ValueError: ``keep_in_memory`` with ``cache_file_name`` (HF refuses both too).
    """
    known = set(MapOptions.__dataclass_fields__)
    extra = {k: kwargs.pop(k) for k in list(kwargs) if k not in known}
    for name in sorted(extra):
        if name in _NO_OP_HF_ARGS:
            continue
        if name in _UNSUPPORTED_HF_ARGS:
            raise TypeError(
                f"{kind}() does not support HF datasets' `{name}=` argument: "
                f"{_UNSUPPORTED_HF_ARGS[name]}."
            )
        raise TypeError(f"{kind}() got an unexpected keyword argument {name!r}")
    if kwargs.get("keep_in_memory") and kwargs.get("cache_file_name"):
        raise ValueError("Please use either `keep_in_memory` or `cache_file_name` but not both.")
    kwargs["keep_in_memory"] = bool(kwargs.get("keep_in_memory"))
    return MapOptions(**kwargs)


def check_suffix_template(template: str | None) -> None:
    """HF's check of ``suffix_template`` (accepted; our segments keep their own names)."""
    if template is None:
        return
    import string

    fields = {f for _, f, _, _ in string.Formatter().parse(template) if f}
    if fields != {"rank", "num_proc"}:
        raise ValueError(
            f"suffix_template must contain exactly the fields 'rank' and 'num_proc', got: "
            f"{fields} (it is accepted for HF compatibility; segments are named "
            "<stem>-<i>-of-<n><ext> whatever it says)."
        )
