"""``shuffle="blocks"``: a permutation of contiguous row blocks, shuffled in windows."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from arrowmix._stream.row_source import TableRowSource
from arrowmix._stream.sources import from_row_source
from arrowmix._stream.sources.blocks import BlockOrder, BlockShape
from arrowmix.exceptions import StateError
from tests.stream.helpers import arrow, rows

SHAPES = [(1, 1), (3, 1), (3, 4), (7, 3), (16, 2), (50, 5), (1000, 2)]


def epoch_order(n: int, size: int, width: int, seed: int = 0, epoch: int = 0) -> np.ndarray:
    return BlockOrder(n, block_size=size, window_blocks=width, seed=seed, epoch=epoch)(np.arange(n))


@pytest.mark.parametrize(("size", "width"), SHAPES)
@pytest.mark.parametrize("n", [0, 1, 6, 7, 100, 211])
def test_each_epoch_is_a_permutation(n: int, size: int, width: int) -> None:
    for epoch in range(3):
        assert sorted(epoch_order(n, size, width, epoch=epoch).tolist()) == list(range(n))


@pytest.mark.parametrize(("size", "width"), [(3, 4), (7, 3), (16, 2)])
def test_a_window_is_whole_blocks_and_its_rows_are_mixed(size: int, width: int) -> None:
    n = 211
    order = BlockOrder(n, block_size=size, window_blocks=width, seed=4, epoch=1)
    pos = order(np.arange(n))
    tail_rows = n % size
    shuffled = 0
    for w in range(order.num_windows):
        stop = order.start(w + 1) if w + 1 < order.num_windows else n
        rows_w = pos[order.start(w) : stop]
        blocks = set((rows_w // size).tolist())
        # every row of each block it touches, and at most `width` whole blocks (+ the tail)
        want = sorted(r for b in blocks for r in range(b * size, min((b + 1) * size, n)))
        assert sorted(rows_w.tolist()) == want, w
        assert len(blocks - {n // size}) <= width
        shuffled += rows_w.tolist() != sorted(rows_w.tolist())
    assert shuffled > 0
    if tail_rows:  # the short tail block sits in the window the seed chose, whole
        tail = pos[np.isin(pos, np.arange(n - tail_rows, n))]
        assert len(set(order.window_of(np.flatnonzero(np.isin(pos, tail))).tolist())) == 1


def test_orders_depend_on_seed_and_epoch_only() -> None:
    a = epoch_order(500, 10, 4, seed=1, epoch=0)
    assert a.tolist() == epoch_order(500, 10, 4, seed=1, epoch=0).tolist()
    assert a.tolist() != epoch_order(500, 10, 4, seed=2, epoch=0).tolist()
    assert a.tolist() != epoch_order(500, 10, 4, seed=1, epoch=1).tolist()


def test_the_tail_block_moves_between_epochs() -> None:
    windows = {BlockOrder(1003, block_size=10, window_blocks=2, seed=3, epoch=e).tail_window
               for e in range(20)}  # fmt: skip
    assert len(windows) > 5


def test_a_batch_draws_from_many_blocks_far_apart() -> None:
    pos = epoch_order(100_000, 100, 64, seed=0)
    batch = pos[:256]
    assert len(set((batch // 100).tolist())) > 40  # "chunks" would give 1-4 chunk files
    assert int(batch.max() - batch.min()) > 50_000


@pytest.mark.parametrize("world", [1, 2, 3, 5, 8])
def test_ranks_of_an_infinite_stream_cover_each_epoch(world: int) -> None:
    n, shape = 97, BlockShape(6, 3)
    per_rank = [
        [r["id"] for r in arrow(n, shuffle="blocks", seed=2, infinite=True, blocks=shape,
                                num_instances=world, instance_rank=k).take(3 * -(-n // world))]
        for k in range(world)
    ]  # fmt: skip
    for epoch in range(3):
        seen = []
        for k, got in enumerate(per_rank):
            mine = len(range(k, n, world))
            seen += got[epoch * mine : (epoch + 1) * mine]
        assert sorted(seen) == list(range(n)), epoch


def test_resume_in_the_middle_of_a_window_is_exact() -> None:
    def build() -> Any:
        return arrow(300, shuffle="blocks", seed=9, infinite=True, blocks=BlockShape(10, 4))

    s = build()
    for _ in range(57):
        next(s)
    state = json.loads(json.dumps(s.state_dict()))
    want = [next(s)["id"] for _ in range(400)]
    t = build()
    t.load_state_dict(state)
    assert [next(t)["id"] for _ in range(400)] == want


def test_block_shape_is_part_of_the_pipeline() -> None:
    s = arrow(300, shuffle="blocks", seed=9, blocks=BlockShape(10, 4))
    next(s)
    other = arrow(300, shuffle="blocks", seed=9, blocks=BlockShape(10, 8))
    with pytest.raises(StateError):
        other.load_state_dict(s.state_dict())


def test_bad_shapes_and_combinations_are_refused() -> None:
    for bad in (0, -1, True, 2.0, "8"):
        with pytest.raises(ValueError, match="`block_size` must be a positive int"):
            BlockShape(block_size=bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="`window_blocks` must be a positive int"):
            BlockShape(window_blocks=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="shuffle='blocks'"):
        BlockShape.for_mode("global", 64, None)
    assert BlockShape.for_mode("blocks", None, None) == BlockShape()
    with pytest.raises(ValueError, match="shard='chunks'"):
        arrow(40, shuffle="blocks", shard="chunks", num_instances=2)


class Announcing(TableRowSource):
    """Records the ranges announced through ``prefetch`` and the positions taken."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.announced: list[tuple[int, int]] = []
        self.early: list[int] = []  # positions taken before any announcement covered them

    def prefetch(self, starts: np.ndarray, stops: np.ndarray) -> None:
        self.announced += list(zip(starts.tolist(), stops.tolist(), strict=True))

    def take(self, positions: np.ndarray) -> pa.Table:
        covered = np.zeros(len(positions), dtype=bool)
        for a, b in self.announced:
            covered |= (positions >= a) & (positions < b)
        self.early += positions[~covered].tolist()
        return super().take(positions)


def test_windows_are_announced_before_they_are_read_and_only_once() -> None:
    src = Announcing(rows(500).take(np.arange(500)), chunk_rows=64)
    s = from_row_source(src, shuffle="blocks", seed=1, infinite=False, blocks=BlockShape(16, 4))
    got = [r["id"] for r in s]
    assert sorted(got) == list(range(500))
    assert src.early == []
    # announced ranges: whole blocks (the tail too), each once
    assert sorted(src.announced) == sorted({(a, min(a + 16, 500)) for a in range(0, 500, 16)})
    # the first window and the next one are announced before the first read
    assert len(src.announced) >= 8


def test_other_modes_announce_nothing() -> None:
    src = Announcing(rows(100).take(np.arange(100)), chunk_rows=10)
    for mode in ("global", "chunks", None):
        list(from_row_source(src, shuffle=mode, seed=1, infinite=False))
    assert src.announced == []


def test_a_pickled_stream_carries_no_window_positions() -> None:
    import pickle

    s = arrow(200_000, shuffle="blocks", seed=1, blocks=BlockShape(64, 512))
    fresh = len(pickle.dumps(s))  # the in-memory table is pickled with it
    for _ in range(10):
        next(s)
    data = pickle.dumps(s)
    assert len(data) - fresh < 10_000  # a window of 32,768 positions would be 262 KB
    t = pickle.loads(data)
    assert [next(t)["id"] for _ in range(5)] == [next(s)["id"] for _ in range(5)]
