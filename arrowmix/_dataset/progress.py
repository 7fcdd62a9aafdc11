"""Progress bars for ``map``/``filter``: rows/s and segments done, on stderr.

Shown when stderr is a terminal; ``ARROWMIX_PROGRESS=0`` silences them and
``ARROWMIX_PROGRESS=1`` forces them on (e.g. in a notebook or a log file).
"""

from __future__ import annotations

import os
import sys
from types import TracebackType
from typing import Any

__all__ = ["Progress", "progress_enabled"]


def progress_enabled() -> bool:
    """Whether progress bars are shown (see the module docstring)."""
    env = os.environ.get("ARROWMIX_PROGRESS", "").strip()
    if env in ("0", "1"):
        return env == "1"
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class Progress:
    """Counts input rows and finished segments; a no-op when bars are disabled."""

    def __init__(self, desc: str, total_rows: int, num_segments: int, done_segments: int) -> None:
        self._bar: Any = None
        self._segments = num_segments
        self._done = done_segments
        self._cached = done_segments
        if progress_enabled():
            from tqdm.auto import tqdm

            self._bar = tqdm(
                total=total_rows,
                desc=desc,
                unit=" rows",
                unit_scale=True,
                dynamic_ncols=True,
                file=sys.stderr,
            )
            self._postfix()

    def _postfix(self) -> None:
        cached = f" ({self._cached} from cache)" if self._cached else ""
        text = f"segments {self._done}/{self._segments}{cached}"
        self._bar.set_postfix_str(text, refresh=False)

    def rows(self, n: int) -> None:
        """``n`` more input rows processed."""
        if self._bar is not None:
            self._bar.update(n)

    def segment_done(self, rows: int = 0) -> None:
        """One more segment committed (``rows`` input rows not yet counted)."""
        self._done += 1
        if self._bar is not None:
            self._postfix()
            self._bar.update(rows)

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.close()
