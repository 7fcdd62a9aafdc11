"""Warnings that point at the user's line, however deep in arrowmix they are raised.

``warnings.warn(stacklevel=N)`` counts frames by hand, and every refactor that adds or
removes a call between the user and the warning moves it. :func:`warn` instead walks out
of arrowmix's own frames and attributes the warning to the first frame outside the
package (what ``skip_file_prefixes`` does on Python 3.12+).
"""

from __future__ import annotations

import os
import sys
import warnings

__all__ = ["warn"]

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _outside_level(extra: int) -> int:
    """``stacklevel`` (for ``warnings.warn`` called by :func:`warn`) of the first outside frame."""
    level = 2  # for warnings.warn inside warn(): 1 is warn itself, 2 its caller
    frame = sys._getframe(2)  # 0: this function, 1: warn, 2: warn's caller
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level + max(extra, 0)


def warn(message: str, category: type[Warning] = UserWarning, *, extra: int = 0) -> None:
    """Emit ``message`` attributed to the first frame outside arrowmix.

    ``extra`` moves it further out by that many frames: a public function whose callers
    pass their own ``stacklevel`` (2 meaning "my caller") passes ``stacklevel - 2``.
    """
    warnings.warn(message, category, stacklevel=_outside_level(extra))
