"""Buffer shuffle: permutation, windows, seeds, state size and resume cost."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from arrowmix.stream import Stream, from_iterable

from .helpers import arrow


@given(n=st.integers(0, 300), buffer_size=st.integers(1, 50), seed=st.integers(0, 99))
@settings(max_examples=60, deadline=None)
def test_shuffle_is_a_permutation(n: int, buffer_size: int, seed: int) -> None:
    out = list(from_iterable(range(n)).shuffle(buffer_size, seed=seed))
    assert sorted(out) == list(range(n))
    for w in range(0, n, buffer_size):  # items stay inside their window
        assert sorted(out[w : w + buffer_size]) == list(
            range(w, min(n, w + buffer_size))
        )


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
