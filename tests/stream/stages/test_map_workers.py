"""A map's worker count is a performance knob: its checkpoints load across counts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from arrowmix.exceptions import StateError
from arrowmix.stream import Stream, from_row_source, merge_states, mix
from tests.stream.helpers import ident, rows


def square(x: int) -> int:
    return x * x


def other(x: int) -> int:
    return x + 1


def _src(n: int = 1, r: int = 0, size: int = 120, seed: int = 0) -> Stream[Any]:
    return from_row_source(
        rows(size), seed=seed, infinite=False, num_instances=n, instance_rank=r
    ).map(ident)


BUILDS = {
    "plain": lambda w, n=1, r=0: _src(n, r).map(square, num_workers=w),
    "shuffle_after": lambda w, n=1, r=0: _src(n, r).map(square, num_workers=w).shuffle(8, seed=1),
    "batch_after": lambda w, n=1, r=0: _src(n, r).map(square, num_workers=w).batch(5),
    "two_maps": lambda w, n=1, r=0: (
        _src(n, r).map(square, num_workers=w).map(other, num_workers=None if w else 2)
    ),
    "mix_before": lambda w, n=1, r=0: mix(
        [_src(n, r, 60), _src(n, r, 40, seed=1)], [2, 1], seed=3
    ).map(square, num_workers=w),
}


@pytest.mark.parametrize("name", sorted(BUILDS))
@pytest.mark.parametrize(("before", "after"), [(None, 4), (4, None), (None, 1), (2, None)])
@pytest.mark.parametrize("steps", [0, 7, 19])
def test_a_checkpoint_loads_across_num_workers_none(
    name: str, before: int | None, after: int | None, steps: int
) -> None:
    build = BUILDS[name]
    ref = list(build(before))
    a = build(before)
    head = [next(a) for _ in range(steps)]
    state = json.loads(json.dumps(a.state_dict()))
    a.close()
    b = build(after)
    b.load_state_dict(state)
    assert head + list(b) == ref
    b.close()


def test_another_function_is_still_refused() -> None:
    a = _src().map(square, num_workers=None)
    next(a)
    state = a.state_dict()
    b = _src().map(other, num_workers=3)
    with pytest.raises(StateError, match="different pipeline"):
        b.load_state_dict(state)


@pytest.mark.parametrize(("n", "m"), [(2, 3), (3, 2)])
def test_an_elastic_resume_may_change_the_worker_count(n: int, m: int) -> None:
    build = BUILDS["shuffle_after"]
    want = sorted(x for r in range(n) for x in build(None, n, r))
    old = [build(None, n, r) for r in range(n)]
    seen = [next(s) for s in old for _ in range(5)]
    merged = json.loads(json.dumps(merge_states([s.state_dict() for s in old])))
    rest = []
    for r in range(m):
        s = build(3, m, r)
        s.load_state_dict(merged)
        rest.extend(s)
        s.close()
    assert sorted(seen + rest) == want
