"""Buffer shuffle: permutation, windows, seeds, state size and resume cost."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from arrowmix._stream.row_source import TableRowSource
from arrowmix._stream.sources.rows import from_row_source
from arrowmix.stream import Stream, from_iterable, mix
from tests.stream.helpers import arrow, table


@given(n=st.integers(0, 300), buffer_size=st.integers(1, 50), seed=st.integers(0, 99))
@settings(max_examples=60, deadline=None)
def test_shuffle_is_a_permutation(n: int, buffer_size: int, seed: int) -> None:
    out = list(from_iterable(range(n)).shuffle(buffer_size, seed=seed))
    assert sorted(out) == list(range(n))
    for w in range(0, n, buffer_size):  # items stay inside their window
        assert sorted(out[w : w + buffer_size]) == list(range(w, min(n, w + buffer_size)))


def test_windows_differ() -> None:
    out = list(from_iterable(list(range(10)) * 2).shuffle(10, seed=0))
    assert out[:10] != out[10:]


class Counting(Stream[int]):
    """Counts how many items were produced (to measure replay cost)."""

    STATE_KEYS = ("i",)
    produced = 0

    def reset(self, state: dict[str, Any] | None = None) -> None:
        super().reset(state)
        self.i = 0 if state is None else state["i"]

    def get_state(self) -> dict[str, Any]:
        return {"i": self.i}

    def next(self) -> int:
        Counting.produced += 1
        self.i += 1
        return self.i


def test_state_is_small_whatever_the_buffer() -> None:
    s = arrow(300_000, seed=1, infinite=True, block_rows=4096).shuffle(100_000, seed=2)
    for _ in range(150_001):
        next(s)
    state = s.state_dict()
    assert len(json.dumps(state)) < 400
    assert state["state"]["emitted"] == 50_001


def test_resume_replays_at_most_one_window() -> None:
    def pipeline() -> Stream[int]:
        return Counting().shuffle(1000, seed=0).shuffle(100, seed=1)

    s = pipeline()
    for _ in range(55_555):
        next(s)
    state = s.state_dict()
    expected = [next(s) for _ in range(10)]
    Counting.produced = 0
    fresh = pipeline()
    fresh.load_state_dict(state)
    assert [next(fresh) for _ in range(10)] == expected
    assert Counting.produced <= 1000 + 100


def test_bucket_and_mix_states_are_small() -> None:
    a = arrow(5000, seed=1, infinite=True).shuffle(4000, seed=2)
    b = from_iterable(range(10**6)).shuffle(50_000, seed=3)
    m = mix([a.map(lambda r: r["n_tokens"]), b], [0.5, 0.5], seed=4)
    s = m.bucket(lambda x: x, 8, 60_000, seed=5).prefetch(64)
    for _ in range(5000):
        next(s)
    state = json.dumps(s.state_dict())
    s.close()
    assert len(state) < 2048


def test_deep_resume_of_a_row_source_reads_one_block() -> None:
    src = CountingRows(table(1000), chunk_rows=100)
    s = from_row_source(src, seed=1)
    s.reset({"epoch": 5000, "index": 500, "seed": 1})
    state = s.state_dict()
    src.taken.clear()
    fresh = from_row_source(src, seed=1)
    fresh.load_state_dict(state)
    next(fresh)
    assert 0 < len(src.taken) <= 1024


class CountingRows(TableRowSource):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.taken: list[int] = []

    def take(self, positions: Any) -> Any:
        self.taken.extend(positions.tolist())
        return super().take(positions)


def test_shuffle_of_a_shuffled_index_stream() -> None:
    def build() -> Stream[Any]:
        src = from_row_source(TableRowSource(table(70), chunk_rows=8), seed=0, infinite=False)
        return src.shuffle(5, seed=1).shuffle(7, seed=2).map(lambda r: int(r["id"]))

    out = list(build())
    assert sorted(out) == list(range(70))
    s = build()
    head = [next(s) for _ in range(23)]
    state = s.state_dict()
    fresh = build()
    fresh.load_state_dict(state)
    assert head + list(fresh) == out
