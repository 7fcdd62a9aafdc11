"""Distinct chunk or window numbers of a position array, without ``np.unique``.

``np.unique`` (without ``return_index``/``return_counts``) imports ``numpy.ma`` on its first
call, 20-50 ms that a fresh process would spend before its first row. The numbers here are
small non-negative ints (chunk, window or span indices), which ``np.bincount`` counts
directly.
"""

from __future__ import annotations

import numpy as np

__all__ = ["distinct"]


def distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values of an array of small non-negative ints, ascending (int64).

    >>> distinct(np.array([3, 1, 3, 0])).tolist()
    [0, 1, 3]
    """
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.bincount(values)).astype(np.int64, copy=False)
