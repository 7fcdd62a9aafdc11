"""shard="chunks": each rank reads one contiguous span of the epoch's chunk order."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arrowmix._stream.sources.rows import ArrowSource
from arrowmix.exceptions import DroppedDataWarning
from arrowmix.stream import Stream, mix
from arrowmix.testing import CheckpointRoundTripTests
from tests.stream.helpers import ident, rows

CHUNK_ROWS = 16


def sharded(n_rows: int, n: int, r: int, **kwargs: Any) -> ArrowSource:
    kwargs.setdefault("infinite", False)
    kwargs.setdefault("block_rows", 7)
    kwargs.setdefault("shuffle", "chunks")
    return ArrowSource(
        rows(n_rows, chunk_rows=CHUNK_ROWS),
        shard="chunks",
        num_instances=n,
        instance_rank=r,
        **kwargs,
    )


def chunks_of(ids: list[int]) -> set[int]:
    return {i // CHUNK_ROWS for i in ids}


@pytest.mark.parametrize("shuffle", ["chunks", None])
def test_each_rank_reads_a_span_of_whole_chunks_and_the_same_count(shuffle: str | None) -> None:
    # 12 chunks of 16 rows on 4 ranks: 48 rows, i.e. 3 whole chunks, per rank.
    got = [[ident(x) for x in sharded(192, 4, r, seed=5, shuffle=shuffle)] for r in range(4)]
    assert [len(g) for g in got] == [48] * 4
    assert sorted([i for part in got for i in part]) == list(range(192))
    spans = [chunks_of(g) for g in got]
    assert all(len(s) == 3 for s in spans)
    assert set().union(*spans) == set(range(12))
    # Row sharding deals rows of every chunk to every rank.
    rowwise = ArrowSource(rows(192, chunk_rows=CHUNK_ROWS), shuffle=shuffle, seed=5,
                          infinite=False, num_instances=4, instance_rank=0)  # fmt: skip
    assert len(chunks_of([ident(x) for x in rowwise])) == 12


def test_spans_that_cut_chunks_share_only_their_end_chunks() -> None:
    # 150 rows (chunks of 16, the last of 6) on 3 ranks: 50 rows each.
    got = [[ident(x) for x in sharded(150, 3, r, seed=2)] for r in range(3)]
    assert [len(g) for g in got] == [50] * 3
    assert sorted([i for part in got for i in part]) == list(range(150))
    spans = [chunks_of(g) for g in got]
    for k in range(3):
        others = set().union(*(spans[j] for j in range(3) if j != k))
        assert len(spans[k] & others) <= 2
        assert len(spans[k]) <= -(-50 // CHUNK_ROWS) + 2


def test_the_remainder_is_dropped_with_a_warning_and_changes_every_epoch() -> None:
    with pytest.warns(DroppedDataWarning, match=r"each of the 4 instances 25 of the 102 rows"):
        srcs = [sharded(102, 4, r, seed=1, infinite=True) for r in range(4)]
    per_epoch = []
    for _epoch in range(3):
        ids = [ident(next(s)) for s in srcs for _ in range(25)]
        assert len(set(ids)) == 100
        per_epoch.append(frozenset(range(102)) - set(ids))
    assert all(len(d) == 2 for d in per_epoch)
    assert len(set(per_epoch)) > 1  # other rows each epoch


def test_one_instance_reads_the_same_order_as_row_sharding() -> None:
    for shuffle in ("chunks", None):
        a = [ident(x) for x in sharded(150, 1, 0, seed=4, shuffle=shuffle)]
        b = ArrowSource(rows(150, chunk_rows=CHUNK_ROWS), shuffle=shuffle, seed=4, infinite=False)
        assert a == [ident(x) for x in b]


def test_bad_shard_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="shuffle='global'"):
        sharded(64, 2, 0, shuffle="global")
    with pytest.raises(ValueError, match="`shard` must be one of"):
        ArrowSource(rows(64), shard="files")


def test_dataloader_split_gives_each_worker_its_own_span() -> None:
    from arrowmix._stream.topology import split

    s = sharded(192, 2, 1, seed=3)
    split(s, [(2, 1)], 2, 1)  # worker 1 of 2 of rank 1: instance 3 of 4
    mine = [ident(x) for x in s]
    assert mine == [ident(x) for x in sharded(192, 4, 3, seed=3)]
    assert len(chunks_of(mine)) == 3


def test_describe_names_the_sharding_only_when_it_changes_the_order() -> None:
    assert "shard" not in ArrowSource(rows(64)).describe()
    assert "shard" not in sharded(64, 1, 0).describe()  # the same order as rows
    assert sharded(64, 2, 0).describe()["shard"] == "chunks"


def _pipeline(seed: int, n: int, r: int) -> Stream[Any]:
    a = sharded(120, n, r, seed=seed, block_rows=5)
    b = ArrowSource(rows(60, chunk_rows=7), shard="chunks", shuffle=None, seed=seed, infinite=False,
                    num_instances=n, instance_rank=r, block_rows=4)  # fmt: skip
    m = mix([a.map(ident), b.map(lambda x: 1000 + ident(x))], [0.6, 0.4], seed=seed)
    return m.shuffle(9, seed=seed).batch(3)


class TestChunkShardedMix(CheckpointRoundTripTests):
    """Exact resume and elastic N -> M of a mixed, shuffled, chunk-sharded pipeline."""

    iterator_cls = ArrowSource
    seeded = True

    def make_iterator(self, seed: int = 0) -> Stream[Any]:
        return _pipeline(seed, 2, 1)

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        return _pipeline(0, num_instances, instance_rank)

    def units(self, item: list[int]) -> list[int]:
        return item


def test_elastic_resize_keeps_later_epochs_chunk_sharded() -> None:
    from arrowmix.stream import merge_states

    def build(n: int, r: int) -> ArrowSource:
        return sharded(192, n, r, seed=7, infinite=True)

    old = [build(2, r) for r in range(2)]
    seen = [ident(next(s)) for s in old for _ in range(30)]
    merged = merge_states([s.state_dict() for s in old])
    new = [build(3, r) for r in range(3)]
    for s in new:
        s.load_state_dict(merged)
    # The rest of epoch 0 (192 - 60 rows), then epoch 1 dealt in spans of 64 rows.
    rest = [[ident(next(s)) for _ in range(44)] for s in new]
    assert sorted(seen + [i for part in rest for i in part]) == list(range(192))
    nxt = [[ident(next(s)) for _ in range(64)] for s in new]
    assert sorted([i for part in nxt for i in part]) == list(range(192))
    assert [len(chunks_of(g)) for g in nxt] == [4, 4, 4]
    fresh = build(3, 1)
    _ = [next(fresh) for _ in range(64)]  # epoch 0 of an uninterrupted 3-rank run
    assert nxt[1] == [ident(next(fresh)) for _ in range(64)]


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 40), min_size=1, max_size=12),
    n=st.integers(1, 5),
    shuffle=st.booleans(),
    window=st.integers(1, 4),
    epoch=st.integers(0, 3),
)
def test_spans_partition_the_epoch_into_equal_contiguous_shares(
    sizes: list[int], n: int, shuffle: bool, window: int, epoch: int
) -> None:
    from arrowmix._stream.sources.spans import ChunkSpans

    offsets = np.cumsum([0, *sizes])
    total = int(offsets[-1])
    spans = ChunkSpans(offsets, seed=11, shuffle=shuffle, window_chunks=window)
    size = spans.per_instance(n)
    got = [spans.local(epoch, n, k, np.arange(size)).tolist() for k in range(n)]
    flat = [p for g in got for p in g]
    assert len(flat) == len(set(flat)) == n * size == total - total % n
    assert all(0 <= p < total for p in flat)
    for k, g in enumerate(got):
        chunks, lo, hi = spans.pieces(epoch, n, k)
        pieces = list(zip(chunks.tolist(), lo.tolist(), hi.tolist(), strict=True))
        assert sorted(g) == sorted(
            p for c, a, b in pieces for p in range(offsets[c] + a, offsets[c] + b)
        )
        for c, a, b in pieces[1:-1]:  # whole chunks but the first and the last piece
            assert (a, b) == (0, sizes[c])
