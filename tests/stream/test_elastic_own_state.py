"""Elastic resume carries a stage's own state: take's count, user stages' merge hooks."""

from __future__ import annotations

import json
from typing import Any, ClassVar

import pytest

from arrowmix.exceptions import ElasticResumeError
from arrowmix.stream import ElasticRole, Stream, from_row_source, merge_states
from arrowmix.testing import CheckpointRoundTripTests
from tests.stream.helpers import ident, rows


def _ids(n: int, r: int) -> Stream[Any]:
    src = from_row_source(rows(120), seed=0, infinite=False, num_instances=n, instance_rank=r)
    return src.map(ident)


PIPELINES = {
    "take": lambda n, r: _ids(n, r).take(7),
    "shuffle_take": lambda n, r: _ids(n, r).shuffle(4, seed=1).take(7),
    "take_shuffle": lambda n, r: _ids(n, r).take(7).shuffle(4, seed=1),
    "take_batch": lambda n, r: _ids(n, r).take(9).batch(2),
    "parallel_map_take": lambda n, r: _ids(n, r).map(ident_int, num_workers=2).take(6),
}


def ident_int(x: int) -> int:
    return x


def _resize(build: Any, n: int, m: int, steps: int, state: Any = None) -> tuple[list[Any], Any]:
    """Items of N instances before a checkpoint, and the merged checkpoint."""
    old = [build(n, r) for r in range(n)]
    if state is not None:
        for s in old:
            s.load_state_dict(state)
    seen = [x for s in old for x in (next(s, None) for _ in range(steps)) if x is not None]
    merged = json.loads(json.dumps(merge_states([s.state_dict() for s in old])))
    return seen, merged


def _flat(items: list[Any]) -> list[Any]:
    return [x for it in items for x in (it if isinstance(it, list) else [it])]


@pytest.mark.parametrize("name", sorted(PIPELINES))
@pytest.mark.parametrize(("n", "m"), [(2, 2), (2, 3), (3, 2), (2, 1), (1, 3)])
@pytest.mark.parametrize("steps", [0, 2, 5])
def test_take_keeps_the_run_total_across_a_resize(name: str, n: int, m: int, steps: int) -> None:
    build = PIPELINES[name]
    want = _flat([x for r in range(n) for x in build(n, r)])
    seen, merged = _resize(build, n, m, steps)
    rest = []
    for r in range(m):
        s = build(m, r)
        s.load_state_dict(merged)
        rest.extend(s)
    got = _flat(seen + rest)
    assert len(got) == len(want), f"{len(got)} items after {n} -> {m}, uninterrupted {len(want)}"
    assert len(set(got)) == len(got)


@pytest.mark.parametrize(("n", "m", "p"), [(2, 3, 2), (3, 1, 2), (2, 2, 3)])
def test_take_keeps_the_total_over_two_resizes(n: int, m: int, p: int) -> None:
    """An elastic run checkpointed mid-way (drains pending) and resized again."""
    build = PIPELINES["shuffle_take"]
    want = len(_flat([x for r in range(n) for x in build(n, r)]))
    seen, merged = _resize(build, n, m, 3)
    middle, merged2 = _resize(build, m, p, 2, state=merged)
    rest = []
    for r in range(p):
        s = build(p, r)
        s.load_state_dict(merged2)
        rest.extend(s)
    got = seen + middle + rest
    assert (len(got), len(set(got))) == (want, want)


def test_an_elastic_checkpoint_of_one_instance_resumes_its_share() -> None:
    build = PIPELINES["take"]
    _, merged = _resize(build, 2, 3, 2)
    a = build(3, 1)
    a.load_state_dict(merged)
    head = [next(a), next(a)]
    state = json.loads(json.dumps(a.state_dict()))
    b = build(3, 1)
    b.load_state_dict(state)
    assert head + list(b) == [*head, *list(a)]


class Dedup(Stream[int]):
    """A user stage with state of its own: the items it has seen."""

    STATE_KEYS = ("source", "seen")
    ELASTIC_ROLE = ElasticRole.TRANSPARENT
    merge: ClassVar[bool] = False

    def __init__(self, source: Stream[int]) -> None:
        super().__init__()
        self.source = source

    def reset(self, state: dict[str, Any] | None = None) -> None:
        super().reset(state)
        self.source.reset(None if state is None else state["source"])
        self.seen: set[int] = set() if state is None else set(state["seen"])

    def get_state(self) -> dict[str, Any]:
        return {"source": self.source.get_state(), "seen": sorted(self.seen)}

    def next(self) -> int:
        while True:
            x = self.source.next() % 10
            if x not in self.seen:
                self.seen.add(x)
                return x


class MergingDedup(Dedup):
    def elastic_state(self) -> list[int]:
        return sorted(self.seen)

    @classmethod
    def merge_elastic_states(cls, states: list[Any], num_instances: int) -> list[Any]:
        union = sorted({x for st in states for x in st})
        return [union] * num_instances

    def load_elastic_state(self, state: Any) -> None:
        if state is not None:
            self.seen |= set(state)


def test_a_user_stage_with_state_and_no_merge_is_refused_by_name() -> None:
    _, merged = _resize(lambda n, r: Dedup(_ids(n, r)), 2, 3, 2)
    with pytest.raises(ElasticResumeError, match=r"Dedup: it keeps state of its own \(seen\)"):
        Dedup(_ids(3, 0)).load_state_dict(merged)


@pytest.mark.parametrize(("n", "m"), [(2, 3), (3, 2), (2, 1)])
def test_a_user_stage_merges_its_state_through_its_hook(n: int, m: int) -> None:
    """The new instances start from the union of what the old ones had seen."""
    seen, merged = _resize(lambda k, r: MergingDedup(_ids(k, r)), n, m, 3)
    for r in range(m):
        s = MergingDedup(_ids(m, r))
        s.load_state_dict(merged)
        assert not set(s) & set(seen), "an item the old instances yielded came again"


class TestTakeHarness(CheckpointRoundTripTests):
    """The shipped harness runs take through N -> M elastic resumes."""

    iterator_cls = Stream
    elastic_exact = False
    elastic_grid = ((1, 2), (2, 3), (3, 2), (2, 1), (2, 2))

    def make_iterator(self, **kwargs: Any) -> Stream[Any]:
        return PIPELINES["shuffle_take"](1, 0)

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        return PIPELINES["shuffle_take"](num_instances, instance_rank)


def _budget(n: int, r: int, take_below: int | None, take_above: int | None) -> Stream[Any]:
    s: Stream[Any] = from_row_source(rows(96), seed=0, infinite=False).map(ident)
    if take_below is not None:
        s = s.take(take_below)
    s = s.map(_as_row).budget_bucket(
        "n", 10_000, 12, num_instances=n, instance_rank=r, max_batch_size=2, seed=1
    )
    return s if take_above is None else s.take(take_above)


def _as_row(i: int) -> dict[str, int]:
    return {"n": 1, "id": i}


@pytest.mark.parametrize(("below", "above"), [(36, None), (None, 7), (48, 5)])
@pytest.mark.parametrize(("n", "m"), [(2, 3), (3, 2), (2, 2)])
def test_take_around_a_dealer(below: int | None, above: int | None, n: int, m: int) -> None:
    """Below the dealer every instance reads the same rows: its take is not shared out."""

    def build(k: int, r: int) -> Stream[Any]:
        return _budget(k, r, below, above)

    want = [i for r in range(n) for b in build(n, r) for i in (x["id"] for x in b)]
    seen, merged = _resize(build, n, m, 6 // n)  # the window's 6 batches were all dealt
    rest = []
    for r in range(m):
        s = build(m, r)
        s.load_state_dict(merged)
        rest.extend(s)
    got = [x["id"] for b in seen + rest for x in b]
    assert len(got) == len(set(got))
    if above is None:
        assert sorted(got) == sorted(want)
    else:
        assert len(got) == len(want)
