"""Elastic resume of a mix's own state: token counters, deficits and capped passes.

N instances' counters are summed and shared among M (``mix_elastic``); a pass begun
after the resize reads the input's whole share; a schedule that ends the mix resumes
exactly on as many instances and follows the schedule's steps on another number.
"""

from __future__ import annotations

import json
from collections import Counter
from itertools import islice
from typing import Any

import pytest

from arrowmix._stream.mixing.mix import WeightedMixIterator
from arrowmix._stream.mixing.mix_elastic import split_sum, split_zero_sum
from arrowmix.exceptions import ElasticResumeError
from arrowmix.stream import Stream, WeightSchedule, merge_states, mix
from arrowmix.testing import CheckpointRoundTripTests
from tests.stream.mixing.test_mix_tokens import TA, TB, row_id, src
from tests.stream.test_elastic import ROWS_A, ROWS_B, A, B
from tests.stream.test_elastic import src as row_src


def capped(n: int, r: int, stopping: str = "longest_drop", seed: int | None = None) -> Any:
    a, b = src(TA, n, r, 1), src(TB, n, r, 2)
    return mix(
        {"a": a, "b": b},
        {"a": 0.3, "b": 0.7},
        tokens="input_ids",
        max_epochs={"a": 2, "b": 1},
        stopping=stopping,
        seed=seed,
    )


class TestCappedTokenMix(CheckpointRoundTripTests):
    """A token mix repeating one source twice (max_epochs): every row twice, N -> M."""

    iterator_cls = WeightedMixIterator
    checkpoint_stride = 17
    elastic_steps = (3, 40)  # before and after the first instance begins a's second pass

    def make_iterator(self) -> Stream[Any]:
        return self.make_sharded(1, 0)

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        return capped(num_instances, instance_rank).map(row_id)


@pytest.mark.slow
class TestCappedTokenMixSeededCycle(TestCappedTokenMix):
    """The random token rule under longest_cycle, capped."""

    checkpoint_stride = 29
    elastic_steps = (40,)

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        return capped(num_instances, instance_rank, "longest_cycle", seed=3).map(row_id)


def _take(s: Any, k: int) -> list[Any]:
    return list(islice(s, k))


def _resized(old: list[Any], k: int, build: Any, m: int) -> list[Any]:
    """``m`` new instances loading the merged checkpoint of ``old`` after ``k`` items each."""
    for s in old:
        _take(s, k)
    merged = json.loads(json.dumps(merge_states([s.state_dict() for s in old])))
    new = [build(m, r) for r in range(m)]
    for s in new:
        s.load_state_dict(merged)
    return new


def test_a_second_resize_after_a_pass_began_keeps_every_row_twice() -> None:
    # 2 -> 3 early, then 3 -> 2 once every new instance is in a's second pass: the
    # second checkpoint must say that pass reads the whole share, not the old remainder
    want = Counter(row_id(x) for r in range(2) for x in capped(2, r))
    old = [capped(2, r) for r in range(2)]
    seen = [x for s in old for x in _take(s, 4)]
    mid = [capped(3, r) for r in range(3)]
    merged = json.loads(json.dumps(merge_states([o.state_dict() for o in old])))
    for s in mid:
        s.load_state_dict(merged)
        while s.get_state()["epochs"]["a"] == 1:
            seen.append(next(s))
        seen += _take(s, 2)
    states = json.loads(json.dumps(merge_states([s.state_dict() for s in mid])))
    for r in range(2):
        new = capped(2, r)
        new.load_state_dict(states)
        seen += list(new)
    got = Counter(row_id(x) for x in seen)
    assert got == want, (sorted((want - got).elements())[:5], sorted((got - want).elements())[:5])


def test_old_instances_in_different_passes_are_refused_naming_the_source() -> None:
    old = [capped(2, r) for r in range(2)]
    while old[0].state_dict()["state"]["epochs"]["a"] == 1:  # instance 0 into a's second pass
        next(old[0])
    _take(old[1], 2)  # instance 1 still in its first
    merged = merge_states([s.state_dict() for s in old])
    with pytest.raises(ElasticResumeError, match=r"different passes \[1, 2\] of 'a'"):
        capped(3, 0).load_state_dict(merged)


def test_counters_continue_across_a_resize() -> None:
    # the counts and tokens the new instances report add up to those of the whole run
    def build(n: int, r: int) -> Any:
        a, b = src(TA, n, r, 1), src(TB, n, r, 2)
        return mix({"a": a, "b": b}, {"a": 0.3, "b": 0.7}, tokens="input_ids")

    ref = build(1, 0)
    total = sum(1 for _ in ref)
    new = _resized([build(2, r) for r in range(2)], 12, build, 3)
    for s in new:
        list(s)
    counts = Counter[str]()
    tokens = Counter[str]()
    for s in new:
        counts.update(s.stats()["counts"])
        tokens.update(s.stats()["tokens"])
    assert sum(counts.values()) == total
    assert tokens == Counter(ref.stats()["tokens"])


def test_shares_split_evenly_and_deficits_keep_a_zero_sum() -> None:
    assert split_sum([7, 0, 3], 3) == [[3, 0, 1], [2, 0, 1], [2, 0, 1]]
    for parts in (1, 2, 3, 5):
        for d in ([5, -5], [7, -3, -4], [-1, 0, 1], [0, 0]):
            shares = split_zero_sum(d, parts)
            assert all(sum(s) == 0 for s in shares)
            assert [sum(col) for col in zip(*shares, strict=True)] == d


# ------------------------------------------------------ a schedule that ends the mix
# "a" has weight 0 from step 30: once "b" ends (and is dropped) no input is left.
ENDS = WeightSchedule([(0, {"a": 1, "b": 1}), (30, {"a": 0, "b": 1})])


def ending(n: int, r: int) -> Stream[Any]:
    a, b = row_src(A, n, r, 1), row_src(B, n, r, 2)
    return mix({"a": a, "b": b}, ENDS).map(row_id)


@pytest.mark.slow
class TestScheduleEndsTheMix(CheckpointRoundTripTests):
    """Resumed on as many instances, the mix yields exactly the uninterrupted rows."""

    iterator_cls = WeightedMixIterator
    checkpoint_stride = 23
    elastic_grid = ((1, 1), (2, 2), (3, 3))
    elastic_steps = (1, 25)

    def make_iterator(self) -> Stream[Any]:
        return ending(1, 0)

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        return ending(num_instances, instance_rank)


def test_a_schedule_ending_the_mix_resumes_exactly_on_as_many_instances() -> None:
    # restarted deficits took "a" once more per instance (2 rows too many on 2 -> 2)
    want = sorted(x for r in range(2) for x in ending(2, r))
    new = _resized([ending(2, r) for r in range(2)], 1, ending, 2)
    seen = [x for r in range(2) for x in _take(ending(2, r), 1)]
    assert sorted(seen + [x for s in new for x in s]) == want


@pytest.mark.parametrize(("n", "m"), [(1, 2), (2, 3), (3, 2), (2, 1)])
@pytest.mark.parametrize("steps", [1, 25])
def test_a_schedule_ending_the_mix_follows_its_steps_on_another_number_of_instances(
    n: int, m: int, steps: int
) -> None:
    # Every row of "b" once; "a" is read at the steps the schedule gives it, by every
    # instance: the old ones up to their checkpoint, the new ones from there to step 30.
    old = [ending(n, r) for r in range(n)]
    seen = [x for s in old for x in _take(s, steps)]
    merged = json.loads(json.dumps(merge_states([s.state_dict() for s in old])))
    rest = []
    for r in range(m):
        new = ending(m, r)
        new.load_state_dict(merged)
        rest += list(new)
    got = seen + rest
    assert len(got) == len(set(got))
    assert sorted(x for x in got if x >= 10_000) == list(range(10_000, 10_000 + ROWS_B))
    a_rows = sum(x < 10_000 for x in got)
    at = min(steps, 30)
    assert abs(a_rows - (n * at + m * (30 - at)) / 2) <= max(n, m), a_rows
    assert a_rows <= ROWS_A


def test_an_elastic_checkpoint_without_the_mix_entry_still_loads() -> None:
    # written before the mix merged its state: "own" holds take's entry only
    def build(n: int, r: int) -> Any:
        a, b = src(TA, n, r, 1), src(TB, n, r, 2)
        return mix({"a": a, "b": b}, {"a": 0.3, "b": 0.7}, tokens="input_ids").take(30)

    old = [build(2, r) for r in range(2)]
    seen = [x for s in old for x in _take(s, 5)]
    merged = json.loads(json.dumps(merge_states([s.state_dict() for s in old])))
    new = build(1, 0)
    new.load_state_dict(merged)
    seen += _take(new, 10)
    state = json.loads(json.dumps(new.state_dict()))
    own = state["elastic"]["own"]
    assert len(own) == 2 and "left" in own[0]
    state["elastic"]["own"] = [own[0]]
    again = build(1, 0)
    again.load_state_dict(state)
    rest = list(again)
    assert len(seen) + len(rest) == 60
    assert len({row_id(x) for x in seen + rest}) == 60


def test_a_second_resize_with_instances_in_different_passes_is_refused() -> None:
    mid = _resized([capped(2, r) for r in range(2)], 4, capped, 3)
    for s in mid:
        _take(s, 2)
    while mid[0].state_dict()["state"]["epochs"]["a"] == 1:  # only instance 0 moves on
        next(mid[0])
    states = merge_states([s.state_dict() for s in mid])
    with pytest.raises(ElasticResumeError, match="begun a new pass of a mix input"):
        capped(2, 0).load_state_dict(states)
