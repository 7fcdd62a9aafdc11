"""A deterministic scheduled mix follows the running sum of its weights at every step.

The deficits of the most-behind rule carry from one stretch of the schedule to the
next, so short stretches (``every=1``) and small weights (``0.1`` over stretches of 5)
get their share.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arrowmix._stream.mixing.mix import WeightedMixIterator
from arrowmix.exceptions import StateError
from arrowmix.stream import Stream, WeightSchedule, estimate_mix_rows, from_iterable, mix
from arrowmix.testing import CheckpointRoundTripTests
from tests.stream.mixing.test_mix_schedule import letters, row_id
from tests.stream.test_elastic import A, B, src


def wobble(step: int) -> dict[str, float]:
    """Weights that change every 3 steps; ``b`` (read out first) is at times at 0."""
    k = step // 3
    return {"a": [1, 1, 2, 1, 1][k % 5], "b": [1, 3, 0, 2, 5][k % 5]}


def weight_rows(n: int) -> st.SearchStrategy[list[list[float]]]:
    w = st.sampled_from([0, 0, 1, 2, 3, 7, 0.37, 0.01])
    row = st.lists(w, min_size=n, max_size=n).filter(any)
    return st.lists(row, min_size=1, max_size=12)


def test_stretches_of_one_step_alternate_equal_weights() -> None:
    sched = WeightSchedule.from_function(lambda s: {"a": 1, "b": 1}, every=1)
    m = mix({"a": letters("a", 100), "b": letters("b", 100)}, sched)
    assert [next(m)[0] for _ in range(40)] == ["a", "b"] * 20


def test_a_small_weight_is_read_when_stretches_are_shorter_than_its_period() -> None:
    sched = WeightSchedule.from_function(lambda s: [0.9, 0.1], every=5)
    m = mix([letters("a", 1000), letters("b", 1000)], sched)
    assert Counter(next(m)[0] for _ in range(500)) == {"a": 450, "b": 50}


@settings(max_examples=60, deadline=None)
@given(data=st.data(), n=st.integers(2, 4), every=st.integers(1, 12))
def test_counts_follow_the_running_sum_of_the_weights(data: Any, n: int, every: int) -> None:
    rows = data.draw(weight_rows(n))
    steps = 400

    def fn(step: int) -> list[float]:
        return rows[(step // every) % len(rows)]

    sched = WeightSchedule.from_function(fn, every=every)
    m = mix([from_iterable([i] * steps) for i in range(n)], sched)
    counts, target = [0] * n, [0.0] * n
    for k in range(steps):
        row = fn(k)
        target = [t + w / sum(row) for t, w in zip(target, row, strict=True)]
        counts[next(m)] += 1
        worst = max(abs(c - t) for c, t in zip(counts, target, strict=True))
        assert worst <= 1.5, (k, counts, target)


@settings(max_examples=40, deadline=None)
@given(
    data=st.data(),
    counts=st.lists(st.integers(0, 60), min_size=2, max_size=3),
    every=st.integers(1, 9),
    stopping=st.sampled_from(["shortest", "longest_drop"]),
)
def test_estimate_equals_the_rows_of_short_stretches(
    data: Any, counts: list[int], every: int, stopping: str
) -> None:
    rows = data.draw(weight_rows(len(counts)))
    sched = WeightSchedule.from_function(lambda s: rows[(s // every) % len(rows)], every=every)
    inputs = [from_iterable(range(c)) for c in counts]
    produced = sum(1 for _ in mix(inputs, sched, stopping=stopping))
    assert estimate_mix_rows(counts, sched, stopping) == produced


TABLE = WeightSchedule(
    [(0, {"a": 1, "b": 1}), (3, {"a": 3, "b": 1}), (5, {"a": 1, "b": 2}), (9, {"a": 1, "b": 1})]
)
#: ``state_dict()`` after 7 items, written when the deficits restarted at every stretch.
OLD_CHECKPOINT = (
    '{"format": 1, "pipeline": "063c28a80d90e7db", "state": {"sources": {"a": {"index": 5}, '
    '"b": {"index": 2}}, "counts": {"a": 5, "b": 2}, "deficits": {"a": -1, "b": 1}, '
    '"exhausted": {"a": false, "b": false}, "active": {"a": true, "b": true}, "peeked": '
    '{"a": false, "b": false}, "seed": null, "weights": {"a": 0.3333333333333333, '
    '"b": 0.6666666666666666}, "step": 7}, "nodes": ["149e.c12d.2682.99a5.cb5c", '
    '"dd1c.addd.ffdf", "dd1c.addd.ffdf"]}'
)


def table_mix() -> Stream[Any]:
    return mix({"a": letters("a", 30), "b": letters("b", 30)}, TABLE)


def test_a_checkpoint_written_before_the_deficits_carried_resumes() -> None:
    m = table_mix()
    m.load_state_dict(json.loads(OLD_CHECKPOINT))
    rest = list(m)
    seen = ["a0", "b0", "a1", "a2", "a3", "b1", "a4"]  # what the old version had yielded
    assert sorted(seen + rest) == sorted([f"{c}{i}" for c in "ab" for i in range(30)])
    # from the old deficits (a one third of an item ahead), the 1:2 stretch goes on
    assert "".join(x[0] for x in rest[:2]) == "bb"
    state = m.state_dict()["state"]
    assert state["deficit_scale"] == 720_720 * 10_000


def test_a_checkpoint_in_unknown_deficit_units_is_refused() -> None:
    m = table_mix()
    _ = [next(m) for _ in range(7)]
    state = m.state_dict()
    state["state"]["deficit_scale"] = 1000
    with pytest.raises(StateError, match=r"deficit_scale.*another version"):
        table_mix().load_state_dict(state)


class TestShortStretchesNamed(CheckpointRoundTripTests):
    """Weights that change every 3 steps, sharded row sources (elastic N -> M)."""

    iterator_cls = WeightedMixIterator

    def make_iterator(self) -> Stream[Any]:
        return self.make_sharded(1, 0)

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        a = src(A, num_instances, instance_rank, 1)
        b = src(B, num_instances, instance_rank, 2, shuffle="chunks")
        sched = WeightSchedule.from_function(wobble, every=3)
        return mix({"a": a, "b": b}, sched).map(row_id)


class TestShortStretchesBulk(TestShortStretchesNamed):
    """The same schedule read in blocks (the mix's bulk path), list form."""

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        a = src(A, num_instances, instance_rank, 1)
        b = src(B, num_instances, instance_rank, 2)
        sched = WeightSchedule.from_function(lambda s: list(wobble(s).values()), every=3)
        return mix([a, b], sched).map(row_id).batch(7)

    def units(self, item: list[int]) -> list[int]:
        return item
