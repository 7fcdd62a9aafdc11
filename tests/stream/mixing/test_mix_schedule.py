"""Weight schedules: mix weights as a function of the mix step (tables and functions)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arrowmix._stream.mixing.mix import WeightedMixIterator
from arrowmix.exceptions import StateError
from arrowmix.stream import (
    Stream,
    WeightSchedule,
    estimate_mix_rows,
    from_iterable,
    merge_states,
    mix,
)
from arrowmix.testing import CheckpointRoundTripTests
from tests.stream.helpers import arrow, within
from tests.stream.test_elastic import ROWS_B, A, B, src
from tests.stream.tokens.token_helpers import token_source

CURRICULUM = WeightSchedule([(0, {"a": 1, "b": 0}), (20, {"a": 1, "b": 1}), (50, {"a": 1, "b": 3})])
RAMP = WeightSchedule([(0, [3, 1]), (60, [1, 3])], interpolate="linear", every=8)


def half_then_quarter(step: int) -> dict[str, float]:
    return {"a": 0.5, "b": 0.5} if step < 40 else {"a": 0.75, "b": 0.25}


def letters(c: str, n: int) -> Stream[Any]:
    return from_iterable([f"{c}{i}" for i in range(n)])


def row_id(row: dict[str, Any]) -> int:
    return int(row["id"])


class TestConstantTable(CheckpointRoundTripTests):
    """A named curriculum table, deterministic rule, sharded row sources (elastic)."""

    iterator_cls = WeightedMixIterator

    def make_iterator(self) -> Stream[Any]:
        return self.make_sharded(1, 0)

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        a = src(A, num_instances, instance_rank, 1)
        b = src(B, num_instances, instance_rank, 2, shuffle="chunks")
        return mix({"a": a, "b": b}, CURRICULUM).map(row_id)


class TestLinearRampBatched(CheckpointRoundTripTests):
    """A linear ramp read in blocks (the mix's bulk path), list form."""

    iterator_cls = WeightedMixIterator

    def make_iterator(self) -> Stream[Any]:
        return self.make_sharded(1, 0)

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        a = src(A, num_instances, instance_rank, 1)
        b = src(B, num_instances, instance_rank, 2)
        return mix([a, b], RAMP).map(row_id).batch(7)

    def units(self, item: list[int]) -> list[int]:
        return item


class TestFunctionRandom(CheckpointRoundTripTests):
    """A function schedule with the random rule."""

    iterator_cls = WeightedMixIterator
    seeded = True
    picklable = True

    def make_iterator(self, seed: int = 0) -> Stream[Any]:
        sched = WeightSchedule.from_function(half_then_quarter, every=16)
        return mix({"a": letters("a", 90), "b": letters("b", 60)}, sched, seed=seed)


def test_weights_follow_the_table_exactly_per_segment() -> None:
    m = mix({"a": letters("a", 200), "b": letters("b", 200)}, CURRICULUM)
    out = [next(m)[0] for _ in range(90)]
    assert out[:20] == ["a"] * 20  # b has weight 0 before step 20
    assert Counter(out[20:50]) == {"a": 15, "b": 15}
    assert Counter(out[50:90]) == {"a": 10, "b": 30}
    assert m.stats()["weights"] == {"a": 0.25, "b": 0.75}


def test_linear_ramp_moves_weights_every_block() -> None:
    m = mix([letters("a", 400), letters("b", 400)], RAMP)
    out = [next(m)[0] for _ in range(80)]
    shares = [out[i : i + 8].count("b") for i in range(0, 80, 8)]
    assert shares == sorted(shares) and shares[0] == 2 and shares[-1] == 6
    assert m.weights == [0.25, 0.75]


def test_random_rule_follows_the_schedule() -> None:
    sched = WeightSchedule([(0, [1, 0]), (3000, [1, 1])])
    m = mix([from_iterable("a" * 10_000), from_iterable("b" * 10_000)], sched, seed=3)
    out = "".join(next(m) for _ in range(6000))
    assert out[:3000] == "a" * 3000
    assert 1350 < out[3000:].count("b") < 1650


@given(
    counts=st.lists(st.integers(0, 70), min_size=2, max_size=3),
    which=st.sampled_from(["table", "linear", "function"]),
    stopping=st.sampled_from(["shortest", "longest_drop", "longest_cycle"]),
)
@settings(max_examples=90, deadline=None)
def test_estimate_equals_produced(counts: list[int], which: str, stopping: str) -> None:
    k = len(counts)
    first, later = [1.0] + [0.0] * (k - 1), [float(i + 1) for i in range(k)]
    sched = {
        "table": WeightSchedule([(0, first), (13, later), (40, first[::-1])]),
        "linear": WeightSchedule([(0, later), (30, later[::-1])], interpolate="linear", every=4),
        "function": WeightSchedule.from_function(lambda s: later if s % 20 else first, every=10),
    }[which]
    streams = [from_iterable(range(c)) for c in counts]
    produced = sum(1 for _ in mix(streams, sched, stopping=stopping))
    assert estimate_mix_rows(counts, sched, stopping) == produced


def test_estimate_of_long_segments_is_exact_without_running() -> None:
    sched = WeightSchedule([(0, {"web": 3, "code": 1}), (4_000_000, {"web": 1, "code": 1})])
    counts = {"web": 6_000_000, "code": 3_000_000}
    # 3M web + 1M code by step 4M, then 1:1 (web first) until code, 2M left, is chosen
    # once more at step 8M + 1
    assert estimate_mix_rows(counts, sched, "shortest") == 8_000_001
    assert estimate_mix_rows(counts, sched, "longest_drop") == 9_000_000


@given(
    counts=st.lists(st.integers(0, 80), min_size=2, max_size=3),
    stopping=st.sampled_from(["shortest", "longest_drop", "longest_cycle"]),
    seed=st.sampled_from([None, 0, 7]),
    batch=st.integers(1, 50),
)
@settings(max_examples=60, deadline=None)
def test_bulk_path_equals_per_item_path(
    counts: list[int], stopping: str, seed: int | None, batch: int
) -> None:
    k = len(counts)
    sched = WeightSchedule([(0, [1] + [0] * (k - 1)), (9, [1] * k), (33, list(range(k, 0, -1)))])

    def build() -> Stream[Any]:
        streams = [from_iterable([(i, j) for j in range(c)]) for i, c in enumerate(counts)]
        return mix(streams, sched, stopping=stopping, seed=seed)

    one_by_one = list(build())
    assert [x for b in build().batch(batch) for x in b] == one_by_one


def test_mix_ends_when_every_input_left_has_weight_zero() -> None:
    sched = WeightSchedule([(0, [1, 0]), (100, [1, 1])])
    m = mix([letters("a", 5), letters("b", 5)], sched)
    assert [x[0] for x in m] == ["a"] * 5
    assert estimate_mix_rows([5, 5], sched, "longest_drop") == 5


def b_share(step: int) -> list[float]:
    return [1.0, 1.0]


def test_editing_the_function_changes_the_fingerprint_and_refuses_the_checkpoint() -> None:
    def build(fn: Any) -> Stream[Any]:
        sched = WeightSchedule.from_function(fn, every=4)
        return mix({"a": letters("a", 30), "b": letters("b", 30)}, sched)

    def edited(step: int) -> list[float]:
        return [1.0, 3.0]

    old = build(b_share)
    seen = [next(old) for _ in range(10)]
    state = json.loads(json.dumps(old.state_dict()))
    same = build(b_share)
    assert same.pipeline_fingerprint() == old.pipeline_fingerprint()
    new = build(edited)
    assert new.pipeline_fingerprint() != old.pipeline_fingerprint()
    with pytest.raises(StateError, match=r"different pipeline.*`weights`"):
        new.load_state_dict(state)
    new.load_state_dict(state, allow_changes=True)
    rest = list(new)
    assert sorted(seen + rest) == sorted(
        [f"a{i}" for i in range(30)] + [f"b{i}" for i in range(30)]
    )
    assert Counter(x[0] for x in rest[2:10]) == {"a": 2, "b": 6}  # steps 12..19: 1 to 3


def test_every_and_interpolation_are_part_of_the_fingerprint() -> None:
    def fp(sched: WeightSchedule) -> str:
        return mix([letters("a", 3), letters("b", 3)], sched).pipeline_fingerprint()

    pts = [(0, [1, 0]), (10, [1, 1])]
    assert (
        len(
            {
                fp(WeightSchedule(pts)),
                fp(WeightSchedule(pts, interpolate="linear")),
                fp(WeightSchedule(pts, interpolate="linear", every=2)),
                fp(WeightSchedule([(0, [1, 0]), (11, [1, 1])])),
            }
        )
        == 4
    )


def test_schedule_introduced_on_resume_continues_at_the_step() -> None:
    old = mix({"a": letters("a", 100), "b": letters("b", 100)}, {"a": 1, "b": 1})
    seen = [next(old) for _ in range(30)]
    state = json.loads(json.dumps(old.state_dict()))
    new = mix({"a": letters("a", 100), "b": letters("b", 100)}, CURRICULUM)
    new.load_state_dict(state, allow_changes=True)
    assert new.state_dict()["state"]["step"] == 30
    rest = [next(new) for _ in range(40)]
    assert Counter(x[0] for x in rest[:20]) == {"a": 10, "b": 10}  # steps 30..49: 1:1
    assert Counter(x[0] for x in rest[20:]) == {"a": 5, "b": 15}  # from step 50: 1:3
    assert len(set(seen + rest)) == 70
    back = mix({"a": letters("a", 100), "b": letters("b", 100)}, {"a": 1, "b": 1})
    back.load_state_dict(new.state_dict(), allow_changes=True)  # and dropped again
    assert len({*seen, *rest, *back}) == 200


def test_step_survives_a_removed_source() -> None:
    old = mix({"a": letters("a", 100), "b": letters("b", 100)}, {"a": 1, "b": 1})
    [next(old) for _ in range(30)]
    new = mix(
        {"a": letters("a", 100), "c": letters("c", 100)},
        WeightSchedule([(0, {"a": 1, "c": 0}), (30, {"a": 0, "c": 1})]),
    )
    with pytest.warns(Warning, match=r"\['b'\]"):
        new.load_state_dict(json.loads(json.dumps(old.state_dict())), allow_changes=True)
    assert [next(new) for _ in range(3)] == ["c0", "c1", "c2"]  # step 30 on: only c


def test_bad_schedules_name_the_point_or_function() -> None:
    with pytest.raises(ValueError, match="must start at step 0"):
        WeightSchedule([(5, [1, 1])])
    with pytest.raises(ValueError, match=r"points\[1\]. starts at step 0"):
        WeightSchedule([(0, [1, 1]), (0, [1, 2])])
    with pytest.raises(ValueError, match="interpolate"):
        WeightSchedule([(0, [1, 1])], interpolate="cubic")
    with pytest.raises(TypeError, match="every"):
        WeightSchedule([(0, [1, 1])], every="8")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"point 1 \(step 4\) has 3 weights for 2 streams"):
        mix([letters("a", 3), letters("b", 3)], WeightSchedule([(0, [1, 1]), (4, [1, 1, 1])]))
    with pytest.raises(ValueError, match=r"point 0 \(step 0\): at least one weight"):
        mix([letters("a", 3), letters("b", 3)], WeightSchedule([(0, [0, 0])]))
    with pytest.raises(ValueError, match=r"missing \['b'\], unknown \['c'\]"):
        mix({"a": letters("a", 3), "b": letters("b", 3)}, WeightSchedule([(0, {"a": 1, "c": 1})]))
    with pytest.raises(TypeError, match="callable"):
        WeightSchedule.from_function([1, 2])  # type: ignore[arg-type]

    def bad(step: int) -> list[float]:
        return [1.0, -1.0] if step >= 4 else [1.0, 1.0]

    m = mix([letters("a", 9), letters("b", 9)], WeightSchedule.from_function(bad, every=4))
    with pytest.raises(ValueError, match=r"function '.*bad' at step 4: weight 1 must be >= 0"):
        list(m)


@pytest.mark.parametrize("seed", [None, 3])
@pytest.mark.parametrize("stopping", ["shortest", "longest_drop", "longest_cycle"])
def test_positions_view_selects_the_rows_iteration_yields(seed: int | None, stopping: str) -> None:
    sched = WeightSchedule([(0, [1, 0]), (9, [1, 1]), (30, [1, 4])])

    def build() -> Stream[Any]:
        return mix([arrow(40, seed=1), arrow(25, seed=2)], sched, seed=seed, stopping=stopping)

    expected = [r["id"] for r in build()]
    root = build()
    view = root.as_positions()
    assert view is not None
    root.load_state_dict(None)
    parts = [view.pull(k) for k in (5, 17, 1, 40)]
    while len(parts[-1]):
        parts.append(view.pull(64))
    assert view.rows.take(np.concatenate(parts))["id"].to_pylist() == expected


def test_elastic_resume_continues_the_schedule_at_the_old_step() -> None:
    # a only before step 20, b only from then on
    sched = WeightSchedule([(0, {"a": 1, "b": 0}), (20, {"a": 0, "b": 1})])

    def build(n: int, r: int) -> Stream[Any]:
        a, b = src(A, n, r, 1), src(B, n, r, 2)
        return mix({"a": a, "b": b}, sched).map(row_id)

    old = [build(2, r) for r in range(2)]
    seen = [x for s in old for x in [next(s) for _ in range(25)]]
    merged = json.loads(json.dumps(merge_states([s.state_dict() for s in old])))
    rest = []
    for r in range(3):
        new = build(3, r)
        new.load_state_dict(merged)
        head = [next(new) for _ in range(5)]
        assert all(x >= 10_000 for x in head), f"rank {r} went back to step 0: {head}"
        rest += head + list(new)
    assert len(seen + rest) == len(set(seen + rest))
    assert sorted(x for x in seen + rest if x >= 10_000) == list(range(10_000, 10_000 + ROWS_B))
    assert sum(x < 10_000 for x in seen + rest) == 40  # a has weight 0 from step 20 on


def test_a_bare_function_is_a_schedule_evaluated_every_1024_steps() -> None:
    def web_then_code(step: int) -> dict[str, float]:
        return {"web": 1.0, "code": 0.0} if step < 1024 else {"web": 0.0, "code": 1.0}

    m = mix({"web": letters("w", 3000), "code": letters("c", 3000)}, web_then_code)
    out = [next(m)[0] for _ in range(2048)]
    assert out == ["w"] * 1024 + ["c"] * 1024
    fn = WeightSchedule.from_function(web_then_code)
    same = mix({"web": letters("w", 3000), "code": letters("c", 3000)}, fn)
    assert same.pipeline_fingerprint() == m.pipeline_fingerprint()


@pytest.mark.parametrize("batch", [1, 4])
def test_resume_where_the_schedule_left_no_input(batch: int) -> None:
    # b ends (and is dropped) at step 3; from step 4 only b has weight: the mix ends there
    sched = WeightSchedule([(0, {"a": 1, "b": 1}), (4, {"a": 0, "b": 1})])

    def build() -> Stream[Any]:
        return mix({"a": letters("a", 20), "b": letters("b", 1)}, sched)

    m = build()
    assert [x for b in m.batch(batch) for x in b] == ["a0", "b0", "a1", "a2"]
    again = build()
    again.load_state_dict(json.loads(json.dumps(m.state_dict())))  # no change to allow
    assert list(again) == []


@pytest.mark.parametrize("scheduled", [False, True])
def test_a_tiny_weight_is_honoured_never_rounded_to_another_mixture(scheduled: bool) -> None:
    # 0.00004 is below what denominators of 10 000 can say: it must neither vanish nor
    # become half of the mix
    from arrowmix.stream import WeightSchedule, from_iterable, mix

    weights: Any = [0.99996, 0.00004]
    if scheduled:
        weights = WeightSchedule([(0, weights)])
    big = from_iterable([("big", i) for i in range(200_000)])
    small = from_iterable([("small", i) for i in range(10)])
    out = [name for name, _ in mix([big, small], weights, stopping="longest_drop")]
    first = Counter(out[:100_000])
    assert 2 <= first["small"] <= 6  # 4 expected in 100 000 (within 1% of the share)
    assert Counter(out) == {"big": 200_000, "small": 10}


def _ending_mix() -> Stream[Any]:
    # "b" runs out early; from step 10 "a", the only input left, has weight 0: the mix ends
    sched = WeightSchedule([(0, [1, 1]), (10, [0, 1])])
    return mix([token_source(40), token_source(3, seed=1)], sched)


@pytest.mark.parametrize(
    "stage",
    [
        lambda m: [r["input_ids"] for r in m.shuffle(8, seed=0)],
        lambda m: [x for b in m.batch(4, columnar=True) for x in b["input_ids"]],
        lambda m: [x for b in m.batch(4).collate("input_ids") for x in b["input_ids"]],
    ],
    ids=["shuffle", "batch_columnar", "collate"],
)
def test_stages_reading_positions_end_where_the_schedule_ends_the_mix(stage: Any) -> None:
    rows = [list(r["input_ids"]) for r in _ending_mix()]
    assert len(rows) == 10
    got = within(20, lambda: stage(_ending_mix()))
    tokens = sorted(t for r in rows for t in r)
    assert sorted(int(t) for d in got for t in d if t) == tokens


def test_pack_ends_where_the_schedule_ends_the_mix() -> None:
    tokens = sorted(t for r in _ending_mix() for t in r["input_ids"])
    packed = within(20, lambda: list(_ending_mix().pack("input_ids", seq_len=16, tail="pad")))
    assert sorted(int(t) for b in packed for t in b["input_ids"].ravel() if t) == tokens
