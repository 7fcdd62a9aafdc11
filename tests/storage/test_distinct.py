"""Distinct small ints and where each first and last occurs, as ``np.unique`` would say."""

from __future__ import annotations

import numpy as np
import pytest

from arrowmix._storage.distinct import distinct, first_and_last


@pytest.mark.parametrize("seed", range(20))
def test_first_and_last_agree_with_np_unique(seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = rng.integers(0, rng.integers(1, 40), size=rng.integers(1, 300))
    values = values.astype((np.int32, np.int64, np.intp)[seed % 3])
    expected, first = np.unique(values, return_index=True)
    last = len(values) - 1 - np.unique(values[::-1], return_index=True)[1]
    got = first_and_last(values)
    assert [a.tolist() for a in got] == [expected.tolist(), first.tolist(), last.tolist()]
    assert all(a.dtype == np.int64 for a in got)
    assert distinct(values).tolist() == expected.tolist()


def test_empty() -> None:
    assert [a.tolist() for a in first_and_last(np.zeros(0, np.int64))] == [[], [], []]
    assert distinct(np.zeros(0, np.int64)).tolist() == []
