"""Elastic resume: checkpoints of N instances restored on M (merge_states)."""

from __future__ import annotations

import itertools
import json
import pickle
from builtins import zip as bzip
from collections import Counter
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from arrowmix._stream.dealing import Dealing, Generation
from arrowmix._stream.root import root_of
from arrowmix._stream.row_source import TableRowSource
from arrowmix._stream.sources.blocks import BlockShape
from arrowmix._stream.sources.rows import ArrowSource
from arrowmix.exceptions import StateError
from arrowmix.stream import Stream, from_chunks, from_iterable, merge_states, mix, zip

ROWS_A = 150
ROWS_B = 90


def table(n: int, offset: int, seed: int) -> TableRowSource:
    lengths = np.random.default_rng(seed).zipf(1.5, n).clip(1, 60)
    t = pa.table({"id": np.arange(offset, offset + n), "n": lengths.astype(np.int64)})
    return TableRowSource(t, chunk_rows=16)


A = table(ROWS_A, 0, 1)
B = table(ROWS_B, 10_000, 2)
EPOCH = sorted([*range(ROWS_A), *range(10_000, 10_000 + ROWS_B)])


def src(rows: TableRowSource, n: int, r: int, seed: int, **kw: Any) -> ArrowSource:
    kw.setdefault("infinite", False)
    return ArrowSource(rows, seed=seed, num_instances=n, instance_rank=r, block_rows=8, **kw)


def ids(batch: list[dict[str, Any]]) -> list[int]:
    return [int(r["id"]) for r in batch]


def keep(row: dict[str, Any]) -> bool:
    return True


def one(row: dict[str, Any]) -> list[int]:
    return [int(row["id"])]


def p_shuffle(n: int, r: int) -> Stream[Any]:
    return src(A, n, r, 1, shuffle="chunks").shuffle(13, seed=2).map(one)


def p_bucket(n: int, r: int) -> Stream[Any]:
    s = src(A, n, r, 1).shuffle(9, seed=3)
    return s.bucket("n", lambda longest: max(1, 120 // longest["n"]), 21, seed=4).map(ids)


def p_mix(n: int, r: int) -> Stream[Any]:
    a = src(A, n, r, 1).shuffle(11, seed=5)
    b = src(B, n, r, 6, shuffle="chunks").filter(keep)
    m = mix([a, b], [0.7, 0.3], seed=7)
    return m.bucket("n", 4, 10, seed=8).map(ids)


def p_prefetch(n: int, r: int) -> Stream[Any]:
    a = src(A, n, r, 1).prefetch(6).shuffle(7, seed=2)
    m = mix([a, src(B, n, r, 3)]).prefetch(5)
    return m.bucket("n", 3, 8, shuffle=False).map(ids)


CHUNKS = [list(range(20_000 + 10 * i, 20_000 + 10 * i + (i % 5) * 3)) for i in range(40)]


def read_chunk(i: int) -> list[dict[str, int]]:
    return [{"id": x, "n": 1 + x % 7} for x in CHUNKS[i]]


def p_chunks(n: int, r: int) -> Stream[Any]:
    c = from_chunks(range(40), read_chunk, seed=4, infinite=False, num_instances=n, instance_rank=r)
    m = mix([c.shuffle(6, seed=1), src(A, n, r, 1)], [0.5, 0.5], seed=2)
    return m.bucket("n", 3, 9, seed=3).map(ids)


def p_blocks(n: int, r: int) -> Stream[Any]:
    s = src(A, n, r, 1, shuffle="blocks", blocks=BlockShape(8, 3))
    return s.shuffle(5, seed=2).map(one)


PIPELINES = {
    "blocks": p_blocks,
    "shuffle": p_shuffle,
    "bucket": p_bucket,
    "mix": p_mix,
    "prefetch": p_prefetch,
    "chunks": p_chunks,
}
EXPECTED = {
    "blocks": list(range(ROWS_A)),
    "shuffle": list(range(ROWS_A)),
    "bucket": list(range(ROWS_A)),
    "chunks": sorted([*range(ROWS_A), *(x for c in CHUNKS for x in c)]),
}


def expected(name: str) -> list[int]:
    return EXPECTED.get(name, EPOCH)


def take(streams: list[Stream[Any]], steps: int) -> list[int]:
    return [x for s in streams for b in itertools.islice(s, steps) for x in b]


def resize(states: list[dict[str, Any]], build: Any, m: int) -> list[Stream[Any]]:
    merged = json.loads(json.dumps(merge_states(states)))
    new = [build(m, r) for r in range(m)]
    for s in new:
        s.load_state_dict(merged)
    return new


CASES = [
    *[(1, 1), (1, 4), (2, 3), (3, 2), (4, 1), (5, 16), (16, 5)],
    # in the CI tier: (5, 16) and (16, 5) reach 16 instances, (1, 4), (2, 3) and (5, 16) grow
    # and (1, 1) keeps the count in the fast tier
    *[pytest.param(n, m, marks=pytest.mark.slow) for n, m in [(7, 7), (2, 13), (16, 16)]],
]


@pytest.mark.parametrize("name", sorted(PIPELINES))
@pytest.mark.parametrize(("n", "m"), CASES)
def test_union_is_the_epoch(name: str, n: int, m: int) -> None:
    build = PIPELINES[name]
    want = expected(name)
    for steps in (0, 1, 4, 9):
        old = [build(n, r) for r in range(n)]
        seen = take(old, steps)
        new = resize([s.state_dict() for s in old], build, m)
        rest = [x for s in new for b in s for x in b]
        for s in old + new:
            s.close()
        assert sorted(seen + rest) == want, (name, n, m, steps)


@pytest.mark.parametrize("name", ["mix", "prefetch", "bucket", "chunks", "blocks"])
def test_resize_twice(name: str) -> None:
    build = PIPELINES[name]
    want = expected(name)
    for n, m, p in [(3, 5, 2), (4, 1, 6), (1, 7, 3)]:
        old = [build(n, r) for r in range(n)]
        seen = take(old, 3)
        mid = resize([s.state_dict() for s in old], build, m)
        seen += take(mid, 2)
        new = resize([s.state_dict() for s in mid], build, p)
        rest = [x for s in new for b in s for x in b]
        for s in old + mid + new:
            s.close()
        assert sorted(seen + rest) == want, (name, n, m, p)


def test_resume_same_instance_during_drain_and_pickle() -> None:
    old = [p_mix(3, r) for r in range(3)]
    seen = take(old, 4)
    merged = merge_states([s.state_dict() for s in old])
    new = [p_mix(2, r) for r in range(2)]
    for s in new:
        s.load_state_dict(merged)
    seen += take(new, 1)  # inside the drains
    states = [json.loads(json.dumps(s.state_dict())) for s in new]
    reference = [[x for b in s for x in b] for s in new]
    again = [p_mix(2, r) for r in range(2)]
    for s, state in bzip(again, states, strict=True):
        s.load_state_dict(state)
    assert [[x for b in s for x in b] for s in again] == reference
    assert sorted(seen + [x for part in reference for x in part]) == EPOCH
    # a pickled elastic stream resumes where it stood
    fresh = [p_mix(2, r) for r in range(2)]
    for s, state in bzip(fresh, states, strict=True):
        s.load_state_dict(state)
    copies = [pickle.loads(pickle.dumps(s)) for s in fresh]
    assert [[x for b in s for x in b] for s in copies] == reference


def test_load_none_leaves_elastic_mode() -> None:
    old = [p_shuffle(2, r) for r in range(2)]
    take(old, 3)
    s = p_shuffle(3, 1)
    s.load_state_dict(merge_states([o.state_dict() for o in old]))
    s.load_state_dict(None)
    assert [x for b in s for x in b] == [x for b in p_shuffle(3, 1) for x in b]
    assert "elastic" not in s.state_dict()


def test_infinite_sources_each_row_once_per_epoch() -> None:
    def build(n: int, r: int) -> ArrowSource:
        return src(A, n, r, 9, infinite=True)

    def run_until_epoch_end(s: ArrowSource, epoch: int) -> list[int]:
        out = []
        while True:
            run = root_of(s).elastic
            draining = run is not None and len(run.tasks) > 1
            if not draining and s.frontier() >= (epoch, s._order.count_for(epoch)):
                return out
            out.append(int(next(s)["id"]))

    for n, m in [(3, 2), (2, 5), (4, 4)]:
        old = [build(n, r) for r in range(n)]
        # instances at different places, some already in epoch 1
        seen = [int(next(s)["id"]) for r, s in enumerate(old) for _ in range(30 + 17 * r)]
        new = resize([s.state_dict() for s in old], build, m)
        seen += [x for s in new for x in run_until_epoch_end(s, 2)]
        counts = Counter(seen)
        assert set(counts) == set(range(ROWS_A)), (n, m)
        assert set(counts.values()) == {3}, (n, m)


def test_errors_name_the_problem() -> None:
    with pytest.raises(ValueError, match="at least one"):
        merge_states([])
    with pytest.raises(StateError, match="not a stream checkpoint"):
        merge_states([{"x": 1}])
    old = [p_shuffle(2, r) for r in range(2)]
    states = [s.state_dict() for s in old]
    with pytest.raises(StateError, match=r"different pipeline.*`instance_rank`.*instance order"):
        p_shuffle(2, 0).load_state_dict(merge_states(states[::-1]))
    with pytest.raises(StateError, match="already merged"):
        merge_states([merge_states(states)])
    items = from_iterable(range(3))
    with pytest.raises(ValueError, match="needs row or chunk sources"):
        items.load_state_dict(merge_states([items.state_dict()]))
    pair = zip([src(A, 1, 0, 1), from_iterable(range(3))])
    with pytest.raises(ValueError, match="ZipIterator"):
        pair.load_state_dict(merge_states([pair.state_dict()]))
    unseeded = [ArrowSource(A, num_instances=2, instance_rank=r, infinite=False) for r in range(2)]
    for s in unseeded:
        next(s)
    with pytest.raises(StateError, match="same seed"):
        ArrowSource(A, num_instances=2, instance_rank=0, infinite=False).load_state_dict(
            merge_states([s.state_dict() for s in unseeded])
        )


@given(st.integers(1, 80), st.integers(1, 7), st.integers(1, 7), st.data())
def test_dealing_partitions_what_is_left(rows: int, n: int, m: int, data: st.DataObject) -> None:
    frontiers = []
    for k in range(n):
        count = len(range(k, rows, n))
        epoch = data.draw(st.integers(0, 1))
        frontiers.append((epoch, data.draw(st.integers(0, count))))
    gens = [Generation(frontiers)]
    new = [Dealing(rows, gens, m, j) for j in range(m)]
    for epoch in (0, 1, 2):
        read = {
            k + n * i
            for k, (e, f) in enumerate(frontiers)
            for i in range(len(range(k, rows, n)))
            if e > epoch or (e == epoch and i < f)
        }
        got = [u for d in new for u in d.units(epoch, 0, d.count(epoch)).tolist()]
        assert len(got) == len(set(got))
        assert set(got) == set(range(rows)) - read, epoch


def test_resume_after_the_end_yields_nothing_more() -> None:
    old = [p_bucket(3, r) for r in range(3)]
    seen = [x for s in old for b in s for x in b]
    new = resize([s.state_dict() for s in old], p_bucket, 2)
    assert [x for s in new for b in s for x in b] == []
    assert sorted(seen) == list(range(ROWS_A))


def test_elastic_resume_inside_a_set_epoch_epoch() -> None:
    def build(n: int, r: int) -> Stream[Any]:
        return src(A, n, r, 1, shuffle="global").shuffle(7, seed=2).map(one)

    for n, m in [(2, 3), (3, 1)]:
        old = [build(n, r) for r in range(n)]
        for s in old:
            s.set_epoch(2)
        seen = take(old, 5)
        merged = json.loads(json.dumps(merge_states([s.state_dict() for s in old])))
        new = [build(m, r) for r in range(m)]
        for s in new:
            s.load_state_dict(merged)
        rest = [x for s in new for b in s for x in b]
        assert sorted(seen + rest) == list(range(ROWS_A)), (n, m)
        # the new instances read epoch 2's order: the same union as an uninterrupted run
        ref = [build(n, r) for r in range(n)]
        for s in ref:
            s.set_epoch(2)
        assert sorted(x for s in ref for b in s for x in b) == list(range(ROWS_A))
