"""HF ``datasets.utils``' switches that scripts call: logging verbosity and progress bars.

``arrowmix.utils.logging.set_verbosity_error()`` and ``arrowmix.disable_progress_bars()``
act on arrowmix's own logger (``"arrowmix"``) and ``map``/``filter`` progress, as HF's act
on its own.
"""

from __future__ import annotations

from arrowmix.utils import logging
from arrowmix.utils.logging import (
    are_progress_bars_disabled,
    disable_progress_bar,
    disable_progress_bars,
    enable_progress_bar,
    enable_progress_bars,
    is_progress_bar_enabled,
)

__all__ = [
    "are_progress_bars_disabled",
    "disable_progress_bar",
    "disable_progress_bars",
    "enable_progress_bar",
    "enable_progress_bars",
    "is_progress_bar_enabled",
    "logging",
]
