"""Hypothesis state machine: random next/save/restore against a recorded reference."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, rule

from arrowmix.stream import Stream, from_chunks, from_iterable, mix
from tests.stream.helpers import arrow, ident

CHUNKS = [list(range(10 * i, 10 * i + i % 5)) for i in range(10)]

PIPELINES: list[Callable[[], Stream[Any]]] = [
    lambda: from_iterable(range(60)).shuffle(7, seed=1).batch(3),
    lambda: arrow(50, seed=2, infinite=True).map(ident).shuffle(9, seed=3).take(90),
    lambda: (
        from_chunks(range(10), CHUNKS.__getitem__, seed=4, infinite=False)
        .flat_map(lambda x: [x] * (x % 3))
        .window(2)
    ),
    lambda: mix(
        [from_iterable(range(30)), arrow(20, seed=5).map(ident).prefetch(4)],
        [0.7, 0.3],
        seed=6,
    ).bucket(lambda x: x % 7, 3, 10, seed=7),
]


class ResumeMachine(RuleBasedStateMachine):
    saved = Bundle("saved")

    @initialize(which=st.integers(0, len(PIPELINES) - 1))
    def build(self, which: int) -> None:
        self.build_fn = PIPELINES[which]
        ref = self.build_fn()
        self.reference = [repr(x) for x in ref]
        ref.close()
        self.stream = self.build_fn()
        self.pos = 0

    @rule(n=st.integers(1, 15))
    def advance(self, n: int) -> None:
        for _ in range(n):
            item = next(self.stream, None)
            if item is None:
                assert self.pos == len(self.reference), f"ended early at {self.pos}"
                return
            assert repr(item) == self.reference[self.pos], f"mismatch at {self.pos}"
            self.pos += 1

    @rule(target=saved)
    def save(self) -> tuple[int, dict[str, Any]]:
        return self.pos, self.stream.state_dict()

    @rule(snapshot=saved, fresh=st.booleans())
    def restore(self, snapshot: tuple[int, dict[str, Any]], fresh: bool) -> None:
        if fresh:
            self.stream.close()
            self.stream = self.build_fn()
        self.stream.load_state_dict(snapshot[1])
        self.pos = snapshot[0]

    def teardown(self) -> None:
        stream = getattr(self, "stream", None)
        if stream is not None:
            stream.close()


TestResumeMachine = ResumeMachine.TestCase
# 40 runs in CI, the dev profile's count (conftest.py) in the fast tier
TestResumeMachine.settings = settings(
    max_examples=min(40, settings.default.max_examples), stateful_step_count=25, deadline=None
)
