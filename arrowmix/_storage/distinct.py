"""Distinct small non-negative ints (chunk, window or span numbers), without ``np.unique``.

``np.unique`` imports ``numpy.ma`` on its first call, 10-50 ms that a fresh process would spend
before its first row. The numbers here are small non-negative ints (chunk, window or span
indices), which ``np.bincount`` counts and a stable sort groups.
"""

from __future__ import annotations

import numpy as np

__all__ = ["distinct", "first_and_last"]


def distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values of an array of small non-negative ints, ascending (int64).

    >>> distinct(np.array([3, 1, 3, 0])).tolist()
    [0, 1, 3]
    """
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.bincount(values)).astype(np.int64, copy=False)


def first_and_last(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct values of small non-negative ints, with where each first and last occurs.

    ``(distinct, first, last)``, ascending by value: ``values[first[k]] == values[last[k]]
    == distinct[k]``, at its lowest and highest index.

    >>> [a.tolist() for a in first_and_last(np.array([3, 1, 3, 0, 1]))]
    [[0, 1, 3], [3, 1, 0], [3, 4, 2]]
    """
    values = np.asarray(values)
    if len(values) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    order = np.argsort(values, kind="stable")  # equal values keep their order of occurrence
    ranked = values[order]
    starts = np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]])
    ends = np.r_[starts[1:], len(values)] - 1
    return (
        ranked[starts].astype(np.int64, copy=False),
        order[starts].astype(np.int64, copy=False),
        order[ends].astype(np.int64, copy=False),
    )
