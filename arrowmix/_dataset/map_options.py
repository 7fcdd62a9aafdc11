"""HF's rules for the fingerprint and cache-file arguments of map, filter and the views.

``new_fingerprint`` (any string HF ``datasets`` accepts), ``cache_file_name`` (with an
extension), ``suffix_template`` (checked, then unused: segments keep their names) and HF's
other arguments: the ones accepted for compatibility and the ones refused with what to do.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from arrowmix._fingerprint.transform import validate_fingerprint
from arrowmix._storage.fs import is_local
from arrowmix.exceptions import FingerprintError

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = [
    "check_cache_file_name",
    "check_suffix_template",
    "named",
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


def named(ds: Dataset, new_fingerprint: str | None) -> Dataset:
    """``ds`` with HF's ``new_fingerprint=`` as its fingerprint (``ds`` itself for None).

    Raises:
        FingerprintError: not a string HF accepts (see :func:`user_fingerprint`).
    """
    if new_fingerprint is None:
        return ds
    from arrowmix._dataset.state import state_of

    fp = user_fingerprint(new_fingerprint)[0]
    return type(ds)(replace(state_of(ds), fingerprint=fp))


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
