"""Name-keyed mixes and mixtures that change between runs (resume with allow_changes)."""

from __future__ import annotations

import itertools
import json
import warnings
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from arrowmix._stream.mixing.mix import WeightedMixIterator
from arrowmix._stream.row_source import TableRowSource
from arrowmix.exceptions import DroppedDataWarning, StateError
from arrowmix.stream import Stream, from_iterable, merge_states, mix
from arrowmix.testing import CheckpointRoundTripTests
from tests.stream.test_elastic import ROWS_A, ROWS_B, A, B, src


def web() -> Stream[Any]:
    return from_iterable([f"w{i}" for i in range(60)])


def code() -> Stream[Any]:
    return from_iterable([f"c{i}" for i in range(40)])


def maths() -> Stream[Any]:
    return from_iterable([f"m{i}" for i in range(30)])


def first(it: Stream[Any], n: int) -> list[Any]:
    return list(itertools.islice(it, n))


def by_source(items: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for x in items:
        out.setdefault(x[0], []).append(x)
    return out


class TestNamedMix(CheckpointRoundTripTests):
    iterator_cls = WeightedMixIterator
    seeded = True

    def make_iterator(self, seed: int = 0) -> Stream[Any]:
        return mix({"web": web(), "code": code()}, {"web": 0.7, "code": 0.3}, seed=seed)


class TestNamedMixSharded(CheckpointRoundTripTests):
    iterator_cls = WeightedMixIterator

    def make_iterator(self) -> Stream[Any]:
        return self.make_sharded(1, 0)

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        a = src(A, num_instances, instance_rank, 1)
        b = src(B, num_instances, instance_rank, 2, shuffle="chunks")
        return mix({"a": a, "b": b}, {"a": 0.6, "b": 0.4}).map(lambda r: int(r["id"]))


def test_named_output_equals_list_form_and_state_is_keyed_by_name() -> None:
    named = mix({"web": web(), "code": code()}, {"web": 0.7, "code": 0.3})
    listed = mix([web(), code()], [0.7, 0.3])
    assert list(named) == list(listed)
    state = named.state_dict()["state"]
    assert list(state["counts"]) == ["web", "code"]
    assert state["counts"] == {"web": 60, "code": 40}
    assert state["weights"] == pytest.approx({"web": 0.7, "code": 0.3})
    assert named.stats()["counts"] == {"web": 60, "code": 40}


def test_named_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match=r"missing \['code'\], unknown \['cod'\]"):
        mix({"web": web(), "code": code()}, {"web": 0.7, "cod": 0.3})
    with pytest.raises(TypeError, match="by name"):
        mix({"web": web(), "code": code()}, [0.7, 0.3])
    with pytest.raises(TypeError, match="mapping"):
        mix([web(), code()], {"web": 0.7, "code": 0.3})


def resumed(state: dict[str, Any], new: Stream[Any]) -> Stream[Any]:
    new.load_state_dict(json.loads(json.dumps(state)), allow_changes=True)
    return new


def test_reweighting_continues_each_source_where_it_stopped() -> None:
    old = mix({"web": web(), "code": code()}, {"web": 0.5, "code": 0.5})
    seen = first(old, 20)
    new = mix({"web": web(), "code": code()}, {"web": 0.8, "code": 0.2})
    with pytest.raises(StateError, match=r"differs in `weights`.*allow_changes=True"):
        new.load_state_dict(old.state_dict())
    rest = list(resumed(old.state_dict(), new))
    # nothing repeated, nothing skipped, per source and in order
    assert by_source(seen + rest) == by_source([*list(web()), *list(code())])
    # the new weights rule from the resume point on: 8 web items to 2 code items
    assert by_source(rest[:20]) == {
        "w": [f"w{i}" for i in range(10, 26)],
        "c": [f"c{i}" for i in range(10, 14)],
    }


def test_added_source_starts_at_its_beginning_removed_one_is_reported() -> None:
    old = mix({"web": web(), "code": code()}, {"web": 0.5, "code": 0.5}, seed=3)
    seen = first(old, 30)
    state = old.state_dict()
    new = mix({"web": web(), "maths": maths()}, {"web": 0.5, "maths": 0.5}, seed=3)
    with pytest.raises(StateError, match="different pipeline"):
        new.load_state_dict(state)
    with pytest.warns(DroppedDataWarning, match=r"\['code'\]"):
        rest = list(resumed(state, new))
    assert new.stats()["removed"] == ["code"]
    got = by_source(seen + rest)
    assert got["w"] == [f"w{i}" for i in range(60)]
    assert got["m"] == [f"m{i}" for i in range(30)]
    assert got["c"] == by_source(seen)["c"]  # code stopped where it was


def test_changed_mixture_is_exactly_resumable_from_the_new_point() -> None:
    old = mix({"web": web(), "code": code()}, {"web": 0.5, "code": 0.5})
    first(old, 15)
    state = json.loads(json.dumps(old.state_dict()))

    def build() -> Stream[Any]:
        m = mix({"web": web(), "code": code(), "maths": maths()}, {"web": 2, "code": 1, "maths": 1})
        return resumed(state, m)

    a = build()
    head = first(a, 17)
    mid = a.state_dict()
    tail = list(a)
    b = build()
    b.load_state_dict(mid)  # same mixture now: no opt-in needed
    assert list(b) == tail
    assert len(set(head + tail)) == len(head + tail) == 130 - 15


def test_direct_reset_of_a_changed_named_state_names_the_change() -> None:
    old = mix({"web": web(), "code": code()}, {"web": 0.5, "code": 0.5})
    first(old, 5)
    new = mix({"web": web(), "maths": maths()})
    with pytest.raises(StateError, match=r"added \['maths'\]; removed \['code'\]"):
        new.reset(old.get_state())


def test_list_form_state_is_unchanged_and_still_refuses_changes() -> None:
    old = mix([web(), code()], [0.5, 0.5])
    first(old, 5)
    state = old.state_dict()
    assert state["state"]["counts"] == [3, 2]
    assert "names" not in old.describe()
    new = mix([web(), code()], [0.8, 0.2])
    with pytest.raises(StateError, match="differs in `weights`"):
        new.load_state_dict(state)


def test_stats_window_and_overall() -> None:
    m = mix({"web": web(), "code": code()}, {"web": 0.75, "code": 0.25})
    first(m, 8)
    s1 = m.stats()
    assert s1["window_counts"] == s1["counts"] == {"web": 6, "code": 2}
    first(m, 4)
    s2 = m.stats()
    assert s2["window_counts"] == {"web": 3, "code": 1}
    assert s2["window_ratios"] == {"web": 0.75, "code": 0.25}
    assert s2["counts"] == {"web": 9, "code": 3}
    assert s2["wait_seconds"] >= 0.0
    assert s2["removed"] == []


def test_elastic_resume_with_new_weights_delivers_each_row_once() -> None:
    def build(n: int, r: int, wa: float) -> Stream[Any]:
        a, b = src(A, n, r, 1), src(B, n, r, 2, shuffle="chunks")
        return mix({"a": a, "b": b}, {"a": wa, "b": 1 - wa}).map(lambda row: int(row["id"]))

    old = [build(3, r, 0.5) for r in range(3)]
    seen = [x for s in old for x in first(s, 7)]
    merged = json.loads(json.dumps(merge_states([s.state_dict() for s in old])))
    new = [build(2, r, 0.9) for r in range(2)]
    for s in new:
        s.load_state_dict(merged, allow_changes=True)
    rest = [x for s in new for x in s]
    assert sorted(seen + rest) == sorted([*range(ROWS_A), *range(10_000, 10_000 + ROWS_B)])


C_ROWS = TableRowSource(
    pa.table({"id": np.arange(50_000, 50_060), "n": np.ones(60, dtype=np.int64)}), chunk_rows=16
)
ROWS = {
    "a": set(range(ROWS_A)),
    "b": set(range(10_000, 10_000 + ROWS_B)),
    "c": set(range(50_000, 50_060)),
}


def sharded(n: int, r: int, names: str) -> Stream[Any]:
    make = {
        "a": lambda: src(A, n, r, 1),
        "b": lambda: src(B, n, r, 2, shuffle="chunks"),
        "c": lambda: src(C_ROWS, n, r, 3),
    }
    return mix({k: make[k]() for k in names}).map(lambda row: int(row["id"]))


def resume_ranks(merged: dict[str, Any], m: int, names: str, steps: int | None) -> list[int]:
    """The rows all ``m`` new ranks yield after loading ``merged`` (``steps`` each, or all)."""
    out: list[int] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DroppedDataWarning)
        for r in range(m):
            s = sharded(m, r, names)
            s.load_state_dict(merged, allow_changes=True)
            out.extend(s if steps is None else first(s, steps))
    return out


def check_union(seen: list[int], rest: list[int], before: str, after: str) -> None:
    """Kept and new sources: every row once; removed ones: only what was read before."""
    assert len(seen + rest) == len(set(seen + rest)), "a row was delivered twice"
    got = set(seen + rest)
    for name, rows in ROWS.items():
        if name in after:
            assert rows <= got, f"source {name}: {len(rows - got)} rows never delivered"
        elif name in before:
            assert not rows & set(rest), f"removed source {name} was read after the resume"


@pytest.mark.parametrize(
    ("before", "after", "n", "m"),
    [
        ("ab", "abc", 3, 2),
        ("ab", "a", 2, 3),
        ("abc", "bc", 1, 4),
        ("a", "ca", 4, 1),
        ("ab", "ac", 3, 3),
    ],
)
def test_elastic_resume_with_sources_added_or_removed(
    before: str, after: str, n: int, m: int
) -> None:
    old = [sharded(n, r, before) for r in range(n)]
    seen = [x for s in old for x in first(s, 7)]
    merged = json.loads(json.dumps(merge_states([s.state_dict() for s in old])))
    new = sharded(m, 0, after)
    if set(before) - set(after):
        with pytest.warns(DroppedDataWarning, match="are not in this mixture"):
            new.load_state_dict(merged, allow_changes=True)
    check_union(seen, resume_ranks(merged, m, after, None), before, after)


@pytest.mark.parametrize(("after", "m"), [("ac", 3), ("abc", 3), ("c", 1), ("ba", 4)])
def test_sources_change_after_an_earlier_elastic_resume(after: str, m: int) -> None:
    # 3 ranks, then 2 (same mixture), then m ranks with another mixture: the
    # checkpoints of the middle run carry each source's dealing, matched by name
    old = [sharded(3, r, "ab") for r in range(3)]
    seen = [x for s in old for x in first(s, 7)]
    merged = json.loads(json.dumps(merge_states([s.state_dict() for s in old])))
    mid = [sharded(2, r, "ab") for r in range(2)]
    for s in mid:
        s.load_state_dict(merged)
    seen += [x for s in mid for x in first(s, 9)]
    merged = json.loads(json.dumps(merge_states([s.state_dict() for s in mid])))
    check_union(seen, resume_ranks(merged, m, after, None), "ab", after)
