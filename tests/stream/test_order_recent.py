"""The global order's recent ranges: repeated and overlapping asks give the order itself."""

from __future__ import annotations

import numpy as np

from arrowmix._stream.sources.order import PositionOrder


def fresh(epoch: int, start: int, stop: int) -> np.ndarray:
    return PositionOrder(5000, np.array([0, 5000]), "global", seed=3).positions(epoch, start, stop)


def test_overlapping_asks_match_a_fresh_order() -> None:
    order = PositionOrder(5000, np.array([0, 5000]), "global", seed=3)
    rng = np.random.default_rng(0)
    for _ in range(200):
        epoch = int(rng.integers(0, 3))
        start = int(rng.integers(0, 4900))
        stop = min(5000, start + int(rng.integers(0, 700)))
        got = order.positions(epoch, start, stop)
        assert np.array_equal(got, fresh(epoch, start, stop))


def test_callers_own_what_they_get() -> None:
    order = PositionOrder(5000, np.array([0, 5000]), "global", seed=3)
    first = order.positions(0, 0, 1000)
    first[:] = -1  # a caller writing into its positions changes no later answer
    assert np.array_equal(order.positions(0, 100, 600), fresh(0, 100, 600))
    assert np.array_equal(order.positions(0, 500, 1500), fresh(0, 500, 1500))
