"""budget_bucket / plan_batches: token budgets and equal batch counts on every rank."""

from __future__ import annotations

import itertools
import json
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from arrowmix._stream.row_source import TableRowSource
from arrowmix._stream.sources.rows import ArrowSource
from arrowmix._stream.stages.budget_bucket import BudgetBucketIterator, deal_batches
from arrowmix.exceptions import DroppedDataWarning, StateError
from arrowmix.stream import Stream, from_iterable, merge_states, plan_batches
from arrowmix.testing import CheckpointRoundTripTests
from tests.stream.helpers import arrow, ident

# remainder="drop" warns how much it drops (tested below); the other tests count rows.
pytestmark = pytest.mark.filterwarnings("ignore::arrowmix.exceptions.DroppedDataWarning")

BUDGET = 2048


def skewed(n: int, dist: str, seed: int = 0) -> TableRowSource:
    rng = np.random.default_rng(seed)
    lengths = rng.zipf(1.4, n) if dist == "zipf" else np.rint(rng.lognormal(4.0, 1.2, n))
    lengths = lengths.clip(1, BUDGET).astype(np.int64)
    return TableRowSource(pa.table({"id": np.arange(n), "n": lengths}), chunk_rows=256)


def run_ranks(rows: TableRowSource, world: int, remainder: str, read_ahead: int) -> list[list[Any]]:
    out = []
    for rank in range(world):
        src = ArrowSource(rows, seed=7, infinite=False, block_rows=100)
        s = src.budget_bucket(
            "n",
            BUDGET,
            read_ahead,
            num_instances=world,
            instance_rank=rank,
            remainder=remainder,
            seed=11,
        )
        out.append([[(r["id"], r["n"]) for r in b] for b in s])
    return out


@pytest.mark.parametrize("dist", ["zipf", "lognormal"])
@pytest.mark.parametrize("world", [1, 2, 3, 5, 8, 13, 16, 31, 64])
def test_equal_counts_budget_and_coverage(dist: str, world: int) -> None:
    rows = skewed(3000, dist, seed=world)
    for remainder in ("drop", "pad"):
        per_rank = run_ranks(rows, world, remainder, read_ahead=1000)
        counts = {len(b) for b in per_rank}
        assert len(counts) == 1, (remainder, counts)
        batches = [b for r in per_rank for b in r]
        assert all(len(b) * max(n for _, n in b) <= BUDGET for b in batches)
        ids = [i for b in batches for i, _ in b]
        if remainder == "drop":
            assert len(ids) == len(set(ids))
        else:
            assert set(ids) == set(range(3000))
            assert counts.pop() > 0


# The CI tier (ARROWMIX_TEST_SLOW=1 scripts/test): the fast tier checks the same counts, budget
# and coverage at 1, 2, 3, 5, 8, 13, 16, 31 and 64 ranks (test_equal_counts_budget_and_coverage).
@pytest.mark.slow
@pytest.mark.parametrize("world", range(1, 65))
def test_every_world_size_1_to_64(world: int) -> None:
    rows = skewed(1000, "zipf" if world % 2 else "lognormal", seed=world)
    for remainder in ("drop", "pad"):
        per_rank = run_ranks(rows, world, remainder, read_ahead=600)
        assert len({len(b) for b in per_rank}) == 1, (remainder, [len(b) for b in per_rank])
        batches = [b for r in per_rank for b in r]
        assert all(len(b) * max(n for _, n in b) <= BUDGET for b in batches)
        ids = [i for b in batches for i, _ in b]
        if remainder == "drop":
            assert len(ids) == len(set(ids))
        else:
            assert set(ids) == set(range(1000))


def test_row_stream_key_callable_matches_column_key() -> None:
    rows = skewed(400, "lognormal")

    def build(index: bool) -> list[list[int]]:
        src = ArrowSource(rows, seed=3, infinite=False, block_rows=50)
        key: Any = "n" if index else (lambda r: r["n"])
        s = src.budget_bucket(key, BUDGET, 128, num_instances=3, instance_rank=1, seed=5)
        return [[r["id"] for r in b] for b in s]

    assert build(True) == build(False)


@given(st.lists(st.integers(1, 300), max_size=200), st.integers(300, 5000))
def test_plan_batches_partitions_within_budget(lengths: list[int], budget: int) -> None:
    batches = plan_batches(lengths, budget)
    flat = sorted(i for b in batches for i in b.tolist())
    assert flat == list(range(len(lengths)))
    for b in batches:
        assert len(b) * max(lengths[i] for i in b) <= budget
        assert len(b) >= 1


@given(
    st.lists(st.integers(1, 64), max_size=300), st.integers(64, 700), st.none() | st.integers(1, 9)
)
def test_plan_batches_is_the_greedy_cut(lengths: list[int], budget: int, cap: int | None) -> None:
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])  # stable
    expected, i = [], 0
    while i < len(order):
        size = budget // lengths[order[i]]
        size = size if cap is None else min(size, cap)
        expected.append(order[i : i + size])
        i += size
    got = plan_batches(lengths, budget, max_batch_size=cap)
    assert [b.tolist() for b in got] == expected


def test_plan_batches_max_batch_size_and_errors() -> None:
    assert max(len(b) for b in plan_batches([1] * 50, 100, max_batch_size=8)) == 8
    with pytest.raises(ValueError, match="item 1 has length 50, more than the budget 40"):
        plan_batches([3, 50], 40)
    with pytest.raises(ValueError, match="lengths must be >= 1"):
        plan_batches([3, 0], 40)
    with pytest.raises(ValueError, match="budget"):
        plan_batches([3], 0)


@given(st.integers(0, 100), st.integers(1, 20))
def test_deal_batches_equal_counts(batches: int, world: int) -> None:
    for remainder in ("drop", "pad"):
        dealt = [deal_batches(batches, world, r, remainder) for r in range(world)]
        assert len({len(d) for d in dealt}) == 1
        flat = [i for d in dealt for i in d]
        if remainder == "drop":
            assert len(flat) == len(set(flat)) == batches - batches % world
        else:
            assert set(flat) == set(range(batches))


def test_bad_arguments() -> None:
    src = ArrowSource(skewed(10, "zipf"), seed=1, infinite=False)
    with pytest.raises(ValueError, match="remainder"):
        src.budget_bucket("n", 100, 10, remainder="keep")
    with pytest.raises(ValueError, match="give `seed`"):
        src.budget_bucket("n", 100, 10, num_instances=2, instance_rank=0)
    sharded = ArrowSource(skewed(10, "zipf"), seed=1, num_instances=2, instance_rank=0)
    with pytest.raises(ValueError, match="same stream on every instance"):
        sharded.budget_bucket("n", 100, 10, seed=1)
    with pytest.raises(ValueError, match="instance_rank"):
        src.budget_bucket("n", 100, 10, num_instances=2, instance_rank=2, seed=1)


def test_too_long_row_names_it() -> None:
    s = from_iterable([{"n": 5}, {"n": 500}]).budget_bucket("n", 100, 10)
    with pytest.raises(ValueError, match="length 500, more than the budget 100"):
        list(s)


def ids(batch: list[dict[str, Any]]) -> list[int]:
    return [ident(r) for r in batch]


class TestBudgetBucketIndex(CheckpointRoundTripTests):
    iterator_cls = BudgetBucketIterator
    seeded = True

    def make_iterator(self, seed: int = 0) -> Stream[Any]:
        s = arrow(150, shuffle="global", seed=3).budget_bucket(
            "n_tokens", 600, 40, num_instances=3, instance_rank=2, remainder="pad", seed=seed
        )
        return s.map(ids)


class TestBudgetBucketRows(CheckpointRoundTripTests):
    iterator_cls = BudgetBucketIterator
    seeded = True

    def make_iterator(self, seed: int = 0) -> Stream[Any]:
        s = arrow(120, shuffle="chunks", seed=3).map(lambda r: r).shuffle(9, seed=1)
        b = s.budget_bucket("n_tokens", 700, 30, num_instances=2, instance_rank=1, seed=seed)
        return b.map(ids)


def budget_pipeline(rows: TableRowSource, remainder: str) -> Any:
    def build(n: int, r: int) -> Stream[Any]:
        s = ArrowSource(rows, seed=4, infinite=False, block_rows=64).shuffle(40, seed=5)
        b = s.budget_bucket(
            "n", BUDGET, 300, num_instances=n, instance_rank=r, remainder=remainder, seed=6
        )
        return b.map(lambda batch: [int(x["id"]) for x in batch])

    return build


@pytest.mark.parametrize("remainder", ["drop", "pad"])
@pytest.mark.parametrize(
    ("n", "m"),
    # 6 to 11 in the CI tier: (1, 3) and (2, 5) grow, (4, 2) and (16, 1) shrink in the fast tier
    [(1, 3), (2, 5), (4, 2), (3, 3), pytest.param(6, 11, marks=pytest.mark.slow), (16, 1)],
)
def test_elastic_resize_keeps_equal_counts(remainder: str, n: int, m: int) -> None:
    rows = skewed(1200, "lognormal", seed=n * m)
    build = budget_pipeline(rows, remainder)
    for steps in (0, 2, 5):
        old = [build(n, r) for r in range(n)]
        seen = [x for s in old for b in itertools.islice(s, steps) for x in b]
        merged = json.loads(json.dumps(merge_states([s.state_dict() for s in old])))
        new = [build(m, r) for r in range(m)]
        for s in new:
            s.load_state_dict(merged)
        per_rank = [list(s) for s in new]
        assert len({len(p) for p in per_rank}) == 1, (steps, [len(p) for p in per_rank])
        got = seen + [x for p in per_rank for b in p for x in b]
        if remainder == "drop":
            assert len(got) == len(set(got))
        else:
            assert set(got) == set(range(1200))


def test_elastic_resize_twice_and_window_mismatch() -> None:
    rows = skewed(900, "zipf", seed=5)
    build = budget_pipeline(rows, "pad")
    old = [build(3, r) for r in range(3)]
    seen = [x for s in old for b in itertools.islice(s, 2) for x in b]
    mid = [build(5, r) for r in range(5)]
    for s in mid:
        s.load_state_dict(merge_states([o.state_dict() for o in old]))
    seen += [x for s in mid for b in itertools.islice(s, 1) for x in b]
    new = [build(2, r) for r in range(2)]
    for s in new:
        s.load_state_dict(merge_states([o.state_dict() for o in mid]))
    per_rank = [list(s) for s in new]
    assert len(per_rank[0]) == len(per_rank[1])
    assert set(seen + [x for p in per_rank for b in p for x in b]) == set(range(900))
    # ranks checkpointed in different read-ahead windows cannot be re-dealt
    skew = [build(2, r) for r in range(2)]
    list(itertools.islice(skew[0], 40))
    with pytest.raises(StateError, match="another read-ahead window"):
        build(3, 0).load_state_dict(merge_states([s.state_dict() for s in skew]))


def test_to_torch_split_shards_the_stage_not_the_source() -> None:
    from arrowmix._stream.topology import shard_points, split

    rows = skewed(800, "zipf", seed=9)

    def build() -> Any:
        src = ArrowSource(rows, seed=1, infinite=False, block_rows=64)
        return src.budget_bucket("n", BUDGET, 200, remainder="pad", seed=2)

    parts = []
    for j in range(3):
        s = build()
        shardable, other = shard_points(s)
        assert [type(x).__name__ for x in shardable] == ["BudgetBucketIterator"] and not other
        split(s, [(1, 0)], 3, j)
        assert s.source.sharding == (1, 0) and s.sharding == (3, j)
        parts.append([[r["id"] for r in b] for b in s])
    assert len({len(p) for p in parts}) == 1
    assert {i for p in parts for b in p for i in b} == set(range(800))


def test_drop_warns_once_with_the_share_and_the_fix() -> None:
    rows = skewed(400, "zipf")
    s = ArrowSource(rows, seed=1, infinite=False).budget_bucket(
        "n", BUDGET, 40, num_instances=4, instance_rank=0, seed=3
    )
    with pytest.warns(
        DroppedDataWarning, match=r"on 4 instances dropped \d of the \d+ batches"
    ) as w:
        list(s)
    assert len(w) == 1
    assert "%" in str(w[0].message) and "remainder='pad'" in str(w[0].message)
    padded = ArrowSource(rows, seed=1, infinite=False).budget_bucket(
        "n", BUDGET, 40, num_instances=4, instance_rank=0, remainder="pad", seed=3
    )
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        list(padded)  # padding drops nothing: no warning
