"""Row sources, orders, sharding, epochs and the pipeline checks on load."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arrowmix._stream.row_source import RowSource, TableRowSource
from arrowmix._stream.sources.permutation import FeistelPermutation
from arrowmix._stream.sources.rows import from_row_source
from arrowmix.exceptions import StateError
from arrowmix.stream import from_chunks, from_iterable
from tests.stream.helpers import arrow, ident, rows


@given(n=st.integers(0, 5000), seed=st.integers(0, 2**32))
@settings(max_examples=60, deadline=None)
def test_feistel_is_a_permutation(n: int, seed: int) -> None:
    out = FeistelPermutation(n, seed)(np.arange(n))
    assert sorted(out.tolist()) == list(range(n))


def test_feistel_depends_on_seed_and_mixes() -> None:
    a = FeistelPermutation(1000, 1)(np.arange(1000))
    b = FeistelPermutation(1000, 2)(np.arange(1000))
    assert not np.array_equal(a, b)
    assert (a == np.arange(1000)).sum() < 20  # few fixed points


def test_table_row_source_satisfies_protocol() -> None:
    src = rows(50, chunk_rows=16)
    assert isinstance(src, RowSource)
    assert src.chunk_offsets().tolist() == [0, 16, 32, 48, 50]
    assert len(src.fingerprint) == 16
    assert src.fingerprint == rows(50, chunk_rows=7).fingerprint  # content, not chunking
    assert src.take(np.array([3, 1])).column("id").to_pylist() == [3, 1]


def test_table_row_source_uses_record_batches() -> None:
    t = pa.concat_tables([pa.table({"x": [1, 2]}), pa.table({"x": [3]})])
    assert TableRowSource(t).chunk_offsets().tolist() == [0, 2, 3]
    with pytest.raises(ValueError, match="chunk_rows"):
        TableRowSource(t, chunk_rows=0)


@pytest.mark.parametrize("mode", ["global", "chunks", "blocks", None])
def test_one_pass_yields_every_row_once(mode: str | None) -> None:
    got = [r["id"] for r in arrow(103, shuffle=mode, seed=5)]
    assert sorted(got) == list(range(103))
    if mode is not None:
        assert got != list(range(103))


@pytest.mark.parametrize(
    "worlds",
    # 1 to 25 ranks (fewer, as many and more than the 22 chunks) in the fast tier, every count
    # up to 73 in the CI tier
    [
        pytest.param(range(1, 26), id="1-25"),
        pytest.param(range(26, 74), marks=pytest.mark.slow, id="26-73"),
    ],
)
@pytest.mark.parametrize("mode", ["global", "chunks", "blocks", None])
def test_ranks_are_disjoint_and_cover_everything(mode: str | None, worlds: range) -> None:
    n = 211
    src = rows(n, chunk_rows=10)
    for world in worlds:
        seen: list[int] = []
        for rank in range(world):
            s = from_row_source(
                src,
                shuffle=mode,
                seed=1,
                infinite=False,
                num_instances=world,
                instance_rank=rank,
            )
            seen.extend(r["id"] for r in s)
        assert sorted(seen) == list(range(n)), (mode, world)


class CountingSource(TableRowSource):
    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.taken: list[int] = []

    def take(self, positions: np.ndarray) -> pa.Table:
        self.taken.extend(positions.tolist())
        return super().take(positions)


def test_each_rank_reads_only_its_rows() -> None:
    src = CountingSource(rows(100).take(np.arange(100)), chunk_rows=10)
    s = from_row_source(src, seed=0, infinite=False, num_instances=4, instance_rank=2)
    got = [r["id"] for r in s]
    assert sorted(src.taken) == sorted(got)
    assert len(got) == 25


def test_infinite_source_reshuffles_every_epoch_reproducibly() -> None:
    def epochs(seed: int) -> list[list[int]]:
        s = arrow(50, shuffle="global", seed=seed, infinite=True)
        return [[next(s)["id"] for _ in range(50)] for _ in range(3)]

    a = epochs(7)
    assert all(sorted(e) == list(range(50)) for e in a)
    assert a[0] != a[1] != a[2]
    assert a == epochs(7)
    assert a != epochs(8)


def test_chunks_mode_keeps_windows_of_chunks_together() -> None:
    got = [r["id"] for r in arrow(192, shuffle="chunks", seed=3, window_chunks=2)]
    # chunk_rows=16 and two chunks per window: every 32 rows come from 2 chunks.
    assert all(len({i // 16 for i in got[w : w + 32]}) == 2 for w in range(0, 192, 32))


def test_seed_none_resumes_in_a_fresh_pipeline() -> None:
    a = arrow(60, shuffle="global").shuffle(10)
    for _ in range(17):
        next(a)
    state = json.loads(json.dumps(a.state_dict()))
    rest = [r["id"] for r in a]
    b = arrow(60, shuffle="global").shuffle(10)
    b.load_state_dict(state)
    assert [r["id"] for r in b] == rest


def test_load_into_a_different_pipeline_raises() -> None:
    a = arrow(60, shuffle="global", seed=1).shuffle(10, seed=2)
    next(a)
    state = a.state_dict()
    for other in [
        arrow(60, shuffle="global", seed=1).shuffle(11, seed=2),
        arrow(60, shuffle="global", seed=9).shuffle(10, seed=2),
        arrow(61, shuffle="global", seed=1).shuffle(10, seed=2),
        arrow(60, shuffle="global", seed=1, num_instances=2).shuffle(10, seed=2),
    ]:
        with pytest.raises(StateError, match="different pipeline"):
            other.load_state_dict(state)


def test_bad_state_keys_name_the_class() -> None:
    s = arrow(10)
    with pytest.raises(StateError, match=r"ArrowSource.*missing keys \['seed'\].*\['bogus'\]"):
        s.reset({"epoch": 0, "index": 0, "bogus": 1})
    state = s.state_dict()
    with pytest.raises(StateError, match="format"):
        s.load_state_dict({**state, "format": 99})
    with pytest.raises(StateError, match="index"):
        s.load_state_dict({**state, "state": {**state["state"], "index": 11}})


def test_state_dict_shape() -> None:
    s = arrow(10, seed=4)
    state = s.state_dict()
    assert state["format"] == 1
    assert len(state["pipeline"]) == 16
    assert state["state"] == {"epoch": 0, "index": 0, "seed": 4}


def test_pickle_keeps_position() -> None:
    s = arrow(30, seed=1).map(ident)
    for _ in range(11):
        next(s)
    clone = pickle.loads(pickle.dumps(s))
    assert list(clone) == list(s)


def test_validation_errors() -> None:
    with pytest.raises(ValueError, match="shuffle"):
        arrow(10, shuffle="rows")
    with pytest.raises(ValueError, match="instance_rank"):
        arrow(10, num_instances=2, instance_rank=2)
    with pytest.raises(ValueError, match="num_instances"):
        arrow(10, num_instances=0)
    with pytest.raises(ValueError, match="rank 5 of 8 gets none"):
        arrow(3, infinite=True, num_instances=8, instance_rank=5)
    with pytest.raises(ValueError, match="seed"):
        arrow(10, seed=-1)


def test_from_chunks_sharding_and_epochs() -> None:
    chunks = [list(range(10 * i, 10 * i + 10)) for i in range(7)]
    for world in range(1, 9):
        seen = []
        for rank in range(world):
            s = from_chunks(
                range(7),
                chunks.__getitem__,
                seed=2,
                infinite=False,
                num_instances=world,
                instance_rank=rank,
            )
            seen.extend(s)
        assert sorted(seen) == list(range(70))
    s = from_chunks(range(7), chunks.__getitem__, seed=2)
    e0, e1 = [next(s) for _ in range(70)], [next(s) for _ in range(70)]
    assert sorted(e0) == sorted(e1) == list(range(70))
    assert e0 != e1


def test_from_chunks_errors() -> None:
    with pytest.raises(ValueError, match="gets none of the 2 chunks"):
        from_chunks([0, 1], list, num_instances=3, instance_rank=2)
    s = from_chunks([0, 1], lambda _: [], seed=0)
    with pytest.raises(ValueError, match="empty"):
        next(s)


def test_from_iterable_materialises_one_shot_iterators() -> None:
    s = from_iterable(iter([1, 2, 3]))
    assert list(s) == [1, 2, 3]
    s.load_state_dict(None)
    assert list(s) == [1, 2, 3]
    state = s.state_dict()
    short = from_iterable([1, 2])
    with pytest.raises(StateError, match="only 2 items"):
        short.load_state_dict({**state, "pipeline": short.state_dict()["pipeline"]})


def test_table_to_rows_restores_gc_state() -> None:
    import gc

    from arrowmix._stream.sources.rows import table_to_rows

    t = pa.table({"a": [1, 2], "b": ["x", None], "c": [[1], []]})
    assert gc.isenabled()
    assert table_to_rows(t) == t.to_pylist()
    assert gc.isenabled()
    gc.disable()
    try:
        table_to_rows(t)
        assert not gc.isenabled()
    finally:
        gc.enable()
