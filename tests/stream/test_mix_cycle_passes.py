"""The passes of an uncapped ``"longest_cycle"`` mix: checkpointed, and checked on resizes.

Input ``a`` (40 rows) ends long before ``b`` (150 rows), so the mix cycles it; ``b`` is
read once. Old instances in different passes of ``a`` are refused, as with ``max_epochs``.
"""

from __future__ import annotations

import json
from itertools import islice
from typing import Any

import pytest

from arrowmix._stream.mixing.mix import WeightedMixIterator
from arrowmix.exceptions import ElasticResumeError
from arrowmix.stream import Stream, merge_states, mix
from arrowmix.testing import CheckpointRoundTripTests
from tests.stream.test_elastic import A, src, table

SHORT = table(40, 20_000, 3)  # ids 20000..20039: cycled


def cycling(n: int, r: int) -> WeightedMixIterator[Any]:
    a, b = src(SHORT, n, r, 1), src(A, n, r, 2)
    return mix({"a": a, "b": b}, {"a": 0.5, "b": 0.5}, stopping="longest_cycle")


def row_id(row: dict[str, Any]) -> int:
    return int(row["id"])


def _old(n: int, steps: int) -> list[WeightedMixIterator[Any]]:
    old = [cycling(n, r) for r in range(n)]
    for s in old:
        list(islice(s, steps))
    return old


def test_the_pass_is_checkpointed_once_an_input_cycles() -> None:
    s = cycling(1, 0)
    list(islice(s, 3))
    assert "epochs" not in s.state_dict()["state"]  # the form of older checkpoints
    list(islice(s, 80))
    state = json.loads(json.dumps(s.state_dict()))
    assert state["state"]["epochs"] == {"a": 2, "b": 1}
    assert s.stats()["epochs"] == {"a": 2, "b": 1}
    rest = [row_id(x) for x in s]
    resumed = cycling(1, 0)
    resumed.load_state_dict(state)
    assert [row_id(x) for x in resumed] == rest
    assert resumed.stats()["epochs"] == s.stats()["epochs"] == {"a": 4, "b": 1}
    # a checkpoint written before passes were recorded loads, in its first pass
    del state["state"]["epochs"]
    older = cycling(1, 0)
    older.load_state_dict(state)
    assert [row_id(x) for x in older] == rest


def test_a_bad_pass_record_is_refused() -> None:
    s = cycling(1, 0)
    list(islice(s, 90))
    state = s.get_state()
    state["epochs"] = {"a": 0, "b": 1}
    with pytest.raises(Exception, match="epochs"):
        cycling(1, 0).reset(state)


def test_old_instances_in_different_passes_of_a_cycled_input_are_refused() -> None:
    old = _old(3, 28)  # instance 0 (14 rows of a) is still in its first pass
    passes = [s.stats()["epochs"]["a"] for s in old]
    assert passes == [1, 2, 2]
    merged = merge_states([s.state_dict() for s in old])
    with pytest.raises(ElasticResumeError, match=r"different passes \[1, 2\] of 'a'"):
        cycling(2, 0).load_state_dict(merged)


@pytest.mark.parametrize(("n", "m"), [(2, 3), (3, 2)])
def test_the_new_instances_continue_the_old_ones_pass(n: int, m: int) -> None:
    old = _old(n, 60)  # 2 instances: pass 2 of a; 3 instances: pass 3
    merged = json.loads(json.dumps(merge_states([s.state_dict() for s in old])))
    for r in range(m):
        new = cycling(m, r)
        new.load_state_dict(merged)
        next(new)
        assert new.stats()["epochs"] == {"a": n, "b": 1}


@pytest.mark.slow
class TestUncappedCycleResize(CheckpointRoundTripTests):
    """N -> M with ``a`` cycled: every row of ``b`` exactly once (``a``'s last pass is cut
    where each instance's ``b`` ends, which depends on the number of instances)."""

    iterator_cls = WeightedMixIterator
    checkpoint_stride = 13
    elastic_steps = (3, 60)  # every old instance in the same pass (1, 2 or 3) of a
    late_state_keys = frozenset({"epochs"})

    def make_iterator(self) -> Stream[Any]:
        return self.make_sharded(1, 0)

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        return cycling(num_instances, instance_rank).map(row_id)

    def units(self, item: Any) -> list[Any]:
        return [item] if item < 20_000 else []
