"""Progress of ``map``/``filter``: rows/s and segments done, on stderr.

A bar when stderr is a terminal. When it is not (a log file, a batch job's output), a map
that runs longer than ``LOG_EVERY`` seconds writes one plain line every ``LOG_EVERY`` seconds
and a last one when it ends; shorter maps write nothing. ``ARROWMIX_PROGRESS=0`` silences
both and ``ARROWMIX_PROGRESS=1`` forces the bar (e.g. in a notebook).
"""

from __future__ import annotations

import os
import sys
from types import TracebackType
from typing import Any

__all__ = ["LOG_EVERY", "Progress", "progress_enabled", "set_progress"]

#: Seconds between two progress lines in a log (and before the first one).
LOG_EVERY = 30.0


#: Set by :func:`set_progress` (HF's ``disable_progress_bars``): ``False`` silences the
#: progress of this process whatever ``ARROWMIX_PROGRESS`` says; ``None`` leaves it to it.
_enabled: bool | None = None


def set_progress(enabled: bool | None) -> None:
    """Silence (``False``) or restore (``True``/``None``) the progress of this process."""
    global _enabled
    _enabled = enabled


def progress_enabled() -> bool:
    """Whether progress bars are shown (see the module docstring)."""
    return _mode() == "bar"


def _mode() -> str:
    """``"bar"``, ``"lines"`` (stderr is not a terminal) or ``"off"``."""
    if _enabled is False:
        return "off"
    env = os.environ.get("ARROWMIX_PROGRESS", "").strip()
    if env in ("0", "1"):
        return "bar" if env == "1" else "off"
    try:
        return "bar" if sys.stderr.isatty() else "lines"
    except (AttributeError, ValueError):
        return "off"


class _Lines:
    """A file for tqdm that writes each refresh as one line (no carriage returns)."""

    def write(self, text: str) -> None:
        text = text.strip("\r\n")
        if text:
            sys.stderr.write(text + "\n")

    def flush(self) -> None:
        sys.stderr.flush()


class Progress:
    """Counts input rows and finished segments; a no-op when bars are disabled."""

    def __init__(self, desc: str, total_rows: int, num_segments: int, done_segments: int) -> None:
        self._bar: Any = None
        self._segments = num_segments
        self._done = done_segments
        self._cached = done_segments
        mode = _mode()
        if mode == "bar":
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
        elif mode == "lines":
            from tqdm import tqdm as plain

            self._bar = plain(
                total=total_rows,
                desc=desc,
                unit=" rows",
                unit_scale=True,
                ncols=100,
                ascii=True,
                file=_Lines(),
                mininterval=LOG_EVERY,
                maxinterval=LOG_EVERY,
                delay=LOG_EVERY,
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
