"""Mixing by tokens (``mix(..., tokens=...)``) and repetition caps (``max_epochs``)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import arrowmix as am
from arrowmix._stream.mixing.mix import WeightedMixIterator
from arrowmix._stream.row_source import TableRowSource
from arrowmix._stream.sources.rows import ArrowSource
from arrowmix.exceptions import ColumnNotFoundError, StateError
from arrowmix.stream import Stream, WeightSchedule, estimate_mix_rows, from_iterable, mix
from arrowmix.testing import CheckpointRoundTripTests

STOPPING = ["shortest", "longest_drop", "longest_cycle"]


def second(item: tuple[int, int]) -> int:
    return item[1]


def docs(src: int, lengths: list[int]) -> list[tuple[int, int]]:
    return [(src, n) for n in lengths]


@settings(max_examples=80, deadline=None)
@given(
    lengths=st.lists(st.lists(st.integers(0, 60), min_size=1, max_size=40), min_size=2, max_size=4),
    weights=st.data(),
    stopping=st.sampled_from(STOPPING),
)
def test_token_share_is_within_one_item_at_every_prefix(
    lengths: list[list[int]], weights: Any, stopping: str
) -> None:
    k = len(lengths)
    w = weights.draw(st.lists(st.sampled_from([1, 2, 3, 7, 0.37, 0.01]), min_size=k, max_size=k))
    share = [x / sum(w) for x in w]
    m = mix(
        [from_iterable(docs(i, ls)) for i, ls in enumerate(lengths)],
        w,
        tokens=second,
        stopping=stopping,
    )
    got, longest, total = [0] * k, 0, 0
    out = []
    for _ in range(400):
        try:
            i, n = next(m)
        except StopIteration:
            break
        out.append((i, n))
        got[i] += n
        total += n
        longest = max(longest, n)
        if stopping != "longest_drop" or not any(m._exhausted):  # a drop renormalises
            for j in range(k):
                # never more than one item ahead; behind by at most k - 1 items
                assert got[j] - share[j] * total <= longest + 1e-6, (j, got, total)
                assert share[j] * total - got[j] <= (k - 1) * longest + 1e-6, (j, got, total)
                if k == 2:
                    assert share[j] * total - got[j] <= longest + 1e-6
    counts = Counter(i for i, _ in out)
    if stopping == "longest_drop":  # every item once
        assert counts == {i: len(ls) for i, ls in enumerate(lengths)}
    if stopping == "shortest":  # stops when the input chosen next has ended: none repeats
        assert all(counts[i] <= len(ls) for i, ls in enumerate(lengths))
        assert any(counts[i] == len(ls) for i, ls in enumerate(lengths))
    if stopping == "longest_cycle" and len(out) < 400:  # every input's first pass done
        assert all(counts[i] >= len(ls) for i, ls in enumerate(lengths))


@pytest.mark.parametrize("stopping", STOPPING)
def test_random_token_share_follows_the_weights(stopping: str) -> None:
    rng = np.random.default_rng(3)
    short = docs(0, rng.integers(5, 15, 6000).tolist())
    long = docs(1, rng.integers(80, 120, 6000).tolist())

    def build() -> Any:
        inputs = [from_iterable(short), from_iterable(long)]
        return mix(inputs, [0.7, 0.3], tokens=second, seed=5, stopping=stopping)

    m = build()
    got = [0, 0]
    for _ in range(3000):
        i, n = next(m)
        got[i] += n
    assert got[0] / sum(got) == pytest.approx(0.7, abs=0.02)
    assert m.stats()["token_ratios"][0] == got[0] / sum(got)
    again = build()
    assert [next(again) for _ in range(50)] == list(build().take(50))


def fortunes_like() -> tuple[am.Dataset, am.Dataset]:
    """Short quotes (about 12 tokens) beside long web pages (about 1,000)."""
    rng = np.random.default_rng(0)
    quotes = [list(range(int(n))) for n in rng.integers(4, 20, 3000)]
    pages = [list(range(int(n))) for n in rng.integers(600, 1400, 3000)]
    q = am.Dataset.from_dict({"src": ["fortunes"] * 3000, "input_ids": quotes})
    p = am.Dataset.from_dict({"src": ["web"] * 3000, "input_ids": pages})
    return q, p


def test_fortunes_get_their_token_share_not_their_row_share() -> None:
    q, p = fortunes_like()

    def build(**kw: Any) -> Any:
        streams = {"fortunes": q.to_stream(seed=1), "web": p.to_stream(seed=2)}
        return mix(streams, {"fortunes": 0.1, "web": 0.9}, **kw)

    by_rows = build()
    rows = [next(by_rows) for _ in range(2000)]
    tok = Counter()
    for r in rows:
        tok[r["src"]] += len(r["input_ids"])
    assert tok["fortunes"] / sum(tok.values()) < 0.02  # 10% of rows, ~1% of tokens
    by_tokens = build(tokens="input_ids")
    tok = Counter()
    for _ in range(2000):
        r = next(by_tokens)
        tok[r["src"]] += len(r["input_ids"])
    assert tok["fortunes"] / sum(tok.values()) == pytest.approx(0.1, abs=0.005)
    assert by_tokens.stats()["token_ratios"]["fortunes"] == pytest.approx(0.1, abs=0.005)
    # the same through the row-position path (collate reads positions of the mix)
    collated = build(tokens="input_ids").batch(16, columnar=True).collate("input_ids")
    seen = Counter()
    for _ in range(100):
        batch = next(collated)
        seen["tokens"] += int(batch["attention_mask"].sum())
    stats = collated.pipeline_stats()
    mix_stats = next(v for k, v in stats.items() if k.endswith("mix"))
    assert mix_stats["token_ratios"]["fortunes"] == pytest.approx(0.1, abs=0.005)
    assert sum(mix_stats["tokens"].values()) == seen["tokens"]


def test_a_missing_token_column_is_named() -> None:
    q, p = fortunes_like()
    with pytest.raises(ColumnNotFoundError, match=r"'ids'.*input_ids"):
        mix([q.to_stream(), p.to_stream()], tokens="ids")
    m = mix([from_iterable([{"a": [1]}])], tokens="ids")
    with pytest.raises(KeyError, match="no column 'ids'"):
        next(m)


def test_a_row_mix_keeps_its_state_and_fingerprint() -> None:
    m = mix({"a": from_iterable("aaa"), "b": from_iterable("bb")})
    assert "tokens" not in m.state_dict()["state"] and "epochs" not in m.state_dict()["state"]
    t = mix({"a": from_iterable("aaa"), "b": from_iterable("bb")}, tokens=len)
    assert t.state_dict()["pipeline"] != m.state_dict()["pipeline"]
    with pytest.raises(StateError):
        t.load_state_dict(m.state_dict())


@pytest.mark.parametrize(
    ("stopping", "expected"),
    [
        ("shortest", "AbAbAbAbA"),  # b read twice, then it counts as exhausted: stop
        ("longest_drop", "AbAbAbAbAA"),  # b twice, then dropped
        ("longest_cycle", "AbAbAbAbAA"),  # b dropped after 2 passes; A ends its first
    ],
)
def test_max_epochs_caps_the_passes(stopping: str, expected: str) -> None:
    m = mix(
        {"A": from_iterable("AAAAAA"), "b": from_iterable("bb")},
        stopping=stopping,
        max_epochs={"b": 2},
    )
    assert "".join(m) == expected
    assert m.stats()["epochs"] == {"A": 1, "b": 2}
    assert estimate_mix_rows({"A": 6, "b": 2}, None, stopping, max_epochs={"b": 2}) == len(expected)


def test_max_epochs_one_stops_a_cycle_from_repeating_a_source() -> None:
    m = mix(
        [from_iterable("ab"), from_iterable("xxxxxx")],
        stopping="longest_cycle",
        max_epochs=[1, None],
    )
    assert "".join(m) == "axbxxxxx"


def test_max_epochs_is_checked() -> None:
    with pytest.raises(ValueError, match="unknown sources"):
        mix({"a": from_iterable("a")}, max_epochs={"z": 1})
    with pytest.raises(ValueError, match="max_epochs"):
        mix([from_iterable("a")], max_epochs=0)


@settings(max_examples=40, deadline=None)
@given(
    counts=st.lists(st.integers(0, 40), min_size=2, max_size=3),
    caps=st.data(),
    stopping=st.sampled_from(STOPPING),
)
def test_estimate_counts_capped_passes_exactly(counts: list[int], caps: Any, stopping: str) -> None:
    cap = caps.draw(
        st.lists(st.sampled_from([None, 1, 2, 3]), min_size=len(counts), max_size=len(counts))
    )
    w = caps.draw(st.lists(st.sampled_from([1, 2, 5]), min_size=len(counts), max_size=len(counts)))
    m = mix([from_iterable(range(c)) for c in counts], w, stopping=stopping, max_epochs=cap)
    assert estimate_mix_rows(counts, w, stopping, max_epochs=cap) == sum(1 for _ in m)


@pytest.mark.parametrize("stopping", STOPPING)
def test_estimate_by_tokens_is_close(stopping: str) -> None:
    rng = np.random.default_rng(1)
    lengths = [rng.integers(1, 20, 500).tolist(), rng.integers(50, 150, 300).tolist()]
    m = mix(
        [from_iterable(docs(i, ls)) for i, ls in enumerate(lengths)],
        [0.4, 0.6],
        tokens=second,
        stopping=stopping,
    )
    rows = sum(1 for _ in m)
    est = estimate_mix_rows([500, 300], [0.4, 0.6], stopping, tokens=[sum(x) for x in lengths])
    assert abs(est - rows) <= 0.03 * rows, (est, rows)
    if stopping == "longest_drop":
        assert est == rows == 800


def test_estimate_by_tokens_is_immediate_for_huge_inputs() -> None:
    est = estimate_mix_rows([10**12, 10**9], [0.3, 0.7], "shortest", tokens=[10**13, 10**12])
    assert est == pytest.approx(10**9 + 0.7**-1 * 0.3 * 10**12 / 10, rel=1e-6)


def wobble(step: int) -> list[float]:
    return [[1, 1, 2, 1][step // 3 % 4], [1, 3, 0, 2][step // 3 % 4]]


def test_a_schedule_by_tokens_carries_the_deficits() -> None:
    sched = WeightSchedule.from_function(lambda s: [0.9, 0.1], every=2)
    rng = np.random.default_rng(2)
    a = docs(0, rng.integers(1, 30, 3000).tolist())
    b = docs(1, rng.integers(1, 30, 3000).tolist())
    m = mix([from_iterable(a), from_iterable(b)], sched, tokens=second)
    got = [0, 0]
    for _ in range(2000):
        i, n = next(m)
        got[i] += n
    assert abs(got[1] - 0.1 * sum(got)) <= 30
    est = estimate_mix_rows(
        [3000, 3000], sched, "shortest", tokens=[sum(x[1] for x in a), sum(x[1] for x in b)]
    )
    assert est > 2000


def test_resume_with_changed_weights_by_tokens() -> None:
    def build(weights: dict[str, float]) -> Any:
        a = from_iterable(docs(0, [3] * 200))
        b = from_iterable(docs(1, [9] * 200))
        return mix({"a": a, "b": b}, weights, tokens=second)

    run1 = build({"a": 1, "b": 1})
    seen = [next(run1) for _ in range(30)]
    ckpt = json.loads(json.dumps(run1.state_dict()))
    assert ckpt["state"]["tokens"]["a"] + ckpt["state"]["tokens"]["b"] == sum(n for _, n in seen)
    run2 = build({"a": 1, "b": 3})
    run2.load_state_dict(ckpt, allow_changes=True)
    rest = [next(run2) for _ in range(120)]
    tok = Counter()
    for i, n in rest:
        tok[i] += n
    assert tok[1] / sum(tok.values()) == pytest.approx(0.75, abs=0.05)
    assert run2.stats()["tokens"]["a"] == ckpt["state"]["tokens"]["a"] + tok[0]


ROWS_A, ROWS_B = 60, 40


def token_table(n: int, offset: int, seed: int) -> TableRowSource:
    lengths = np.random.default_rng(seed).integers(1, 40, n)
    ids = pa.array([[7] * int(k) for k in lengths], pa.list_(pa.int32()))
    t = pa.table({"id": np.arange(offset, offset + n), "input_ids": ids})
    return TableRowSource(t, chunk_rows=16)


TA, TB = token_table(ROWS_A, 0, 1), token_table(ROWS_B, 10_000, 2)


def src(rows: TableRowSource, n: int, r: int, seed: int) -> ArrowSource:
    return ArrowSource(
        rows, seed=seed, num_instances=n, instance_rank=r, block_rows=8, infinite=False
    )


def row_id(row: dict[str, Any]) -> int:
    return int(row["id"])


class TestTokenMixNamed(CheckpointRoundTripTests):
    """Deterministic mix by tokens, named, longest_drop; elastic N -> M."""

    iterator_cls = WeightedMixIterator
    checkpoint_stride = 2

    def make_iterator(self) -> Stream[Any]:
        return self.make_sharded(1, 0)

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        a, b = src(TA, num_instances, instance_rank, 1), src(TB, num_instances, instance_rank, 2)
        return mix({"a": a, "b": b}, {"a": 0.3, "b": 0.7}, tokens="input_ids").map(row_id)


class TestTokenMixSeeded(TestTokenMixNamed):
    """Random mix by tokens (list form), with a cap on passes under longest_cycle."""

    elastic_grid = ()

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        a, b = src(TA, num_instances, instance_rank, 1), src(TB, num_instances, instance_rank, 2)
        m = mix(
            [a, b],
            [0.5, 0.5],
            tokens="input_ids",
            seed=3,
            stopping="longest_cycle",
            max_epochs=[2, 2],
        )
        return m.map(row_id)

    def test_elastic_resume_exactly_once(self) -> None:
        pytest.skip("a cycled source repeats rows: elastic resume is checked on the others")


class TestTokenMixSchedulePositions(TestTokenMixNamed):
    """A schedule by tokens, read through the row positions (batch(columnar=True))."""

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        a, b = src(TA, num_instances, instance_rank, 1), src(TB, num_instances, instance_rank, 2)
        sched = WeightSchedule.from_function(wobble, every=3)
        return mix([a, b], sched, tokens="input_ids").batch(5, columnar=True).map(ids)

    def units(self, item: list[int]) -> list[int]:
        return item


def ids(batch: dict[str, Any]) -> list[int]:
    return [int(x) for x in batch["id"]]


@pytest.mark.parametrize("seed", [None, 4])
@pytest.mark.parametrize("stopping", STOPPING)
@pytest.mark.parametrize("scheduled", [False, True])
def test_row_positions_choose_as_rows_do(seed: int | None, stopping: str, scheduled: bool) -> None:
    """The bulk position path (read-ahead, rewound) yields the per-item path's rows."""

    def build() -> Any:
        weights: Any = WeightSchedule.from_function(wobble, every=3) if scheduled else [2, 1]
        return mix(
            [src(TA, 1, 0, 1), src(TB, 1, 0, 2)],
            weights,
            tokens="input_ids",
            seed=seed,
            stopping=stopping,
        )

    rows = [row_id(r) for r in build().take(300)]
    batches = [i for b in build().batch(16, columnar=True).take(300 // 16 + 1) for i in ids(b)]
    assert batches[: len(rows)] == rows
    assert len(batches) == len(rows) or len(rows) == 300
