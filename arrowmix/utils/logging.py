"""HF ``datasets.utils.logging``'s functions, on arrowmix's logger and progress.

The logger is ``logging.getLogger("arrowmix")`` (cache reuse, locks, map pieces are logged
there); ``set_verbosity_error()`` and the like set its level, as HF's set the ``datasets``
logger's. ``disable_progress_bars()`` silences ``map``/``filter`` progress in this process
(``ARROWMIX_PROGRESS=0`` does it from the environment); ``enable_progress_bars()`` gives it
back to the environment and terminal rules.

Example:
    >>> from arrowmix.utils import logging as am_logging
    >>> am_logging.set_verbosity_error()
    >>> am_logging.get_verbosity() == am_logging.ERROR
    True
    >>> am_logging.set_verbosity_warning()
"""

from __future__ import annotations

import logging as _logging
from logging import CRITICAL, DEBUG, ERROR, FATAL, INFO, NOTSET, WARN, WARNING

__all__ = [
    "CRITICAL",
    "DEBUG",
    "ERROR",
    "FATAL",
    "INFO",
    "NOTSET",
    "WARN",
    "WARNING",
    "are_progress_bars_disabled",
    "disable_progress_bar",
    "disable_progress_bars",
    "disable_propagation",
    "enable_progress_bar",
    "enable_progress_bars",
    "enable_propagation",
    "get_logger",
    "get_verbosity",
    "is_progress_bar_enabled",
    "set_verbosity",
    "set_verbosity_debug",
    "set_verbosity_error",
    "set_verbosity_info",
    "set_verbosity_warning",
]

_ROOT = "arrowmix"


def get_logger(name: str | None = None) -> _logging.Logger:
    """The logger of arrowmix (``"arrowmix"``), or the logger ``name``."""
    return _logging.getLogger(_ROOT if name is None else name)


def get_verbosity() -> int:
    """The effective level of arrowmix's logger (``WARNING`` unless set)."""
    return get_logger().getEffectiveLevel()


def set_verbosity(verbosity: int) -> None:
    """Set the level of arrowmix's logger (``logging.ERROR``, ``INFO``...)."""
    get_logger().setLevel(verbosity)


def set_verbosity_info() -> None:
    """``set_verbosity(INFO)``."""
    set_verbosity(INFO)


def set_verbosity_warning() -> None:
    """``set_verbosity(WARNING)``."""
    set_verbosity(WARNING)


def set_verbosity_debug() -> None:
    """``set_verbosity(DEBUG)``."""
    set_verbosity(DEBUG)


def set_verbosity_error() -> None:
    """``set_verbosity(ERROR)``."""
    set_verbosity(ERROR)


def disable_propagation() -> None:
    """Stop arrowmix's log records from reaching the root logger's handlers."""
    get_logger().propagate = False


def enable_propagation() -> None:
    """Let arrowmix's log records reach the root logger's handlers (the default)."""
    get_logger().propagate = True


def disable_progress_bars() -> None:
    """Silence the progress of ``map``/``filter`` in this process."""
    from arrowmix._dataset.progress import set_progress

    set_progress(False)


def enable_progress_bars() -> None:
    """Show progress again as ``ARROWMIX_PROGRESS`` and the terminal say (the default)."""
    from arrowmix._dataset.progress import set_progress

    set_progress(None)


def are_progress_bars_disabled() -> bool:
    """Whether :func:`disable_progress_bars` silenced the progress."""
    from arrowmix._dataset import progress

    return progress._enabled is False


def is_progress_bar_enabled() -> bool:
    """``not are_progress_bars_disabled()`` (HF's older name)."""
    return not are_progress_bars_disabled()


#: HF's older singular names.
disable_progress_bar = disable_progress_bars
enable_progress_bar = enable_progress_bars
