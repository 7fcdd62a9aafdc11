"""The shipped round-trip mixin passes good streams and catches broken ones."""

from __future__ import annotations

import unittest
from typing import Any

import pytest

from arrowmix.stream import Stream, from_iterable
from arrowmix.testing import CheckpointRoundTripTests


class Counter(Stream[int]):
    """A correct user-written stream: counts to ``n``."""

    STATE_KEYS = ("i",)

    def __init__(self, n: int = 20) -> None:
        super().__init__()
        self.n = n

    def reset(self, state: dict[str, Any] | None = None) -> None:
        super().reset(state)
        self.i = 0 if state is None else state["i"]

    def get_state(self) -> dict[str, Any]:
        return {"i": self.i}

    def next(self) -> int:
        if self.i >= self.n:
            raise StopIteration
        self.i += 1
        return self.i - 1


class ForgetfulCounter(Counter):
    """Broken: its state never moves."""

    def get_state(self) -> dict[str, Any]:
        return {"i": 0}


class SharedStateCounter(Counter):
    """Broken: hands out one dict and mutates it afterwards."""

    def reset(self, state: dict[str, Any] | None = None) -> None:
        super().reset(state)
        self._state = {"i": self.i}

    def get_state(self) -> dict[str, Any]:
        self._state["i"] = self.i
        return self._state


class TupleStateCounter(Counter):
    """Broken: its state does not survive JSON (a tuple becomes a list)."""

    def reset(self, state: dict[str, Any] | None = None) -> None:
        Stream.reset(self, None if state is None else {"i": state["i"]})
        self.i = 0 if state is None else state["i"][0]

    def get_state(self) -> dict[str, Any]:
        return {"i": (self.i,)}


class NoSuperInit(Stream[int]):
    def __init__(self) -> None:
        self.x = 1


class NoSuperReset(Counter):
    def reset(self, state: dict[str, Any] | None = None) -> None:
        self.i = 0


class TestGoodUserStream(CheckpointRoundTripTests):
    iterator_cls = Counter
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        return Counter()


class GoodUnittest(CheckpointRoundTripTests, unittest.TestCase):
    iterator_cls = Counter

    def make_iterator(self) -> Stream[Any]:
        return Counter(15).shuffle(4, seed=0)


def _suite_for(cls: type[Counter]) -> CheckpointRoundTripTests:
    class Suite(CheckpointRoundTripTests):
        iterator_cls = cls

        def make_iterator(self) -> Stream[Any]:
            return cls()

    return Suite()


def test_runs_under_unittest() -> None:
    suite = unittest.TestLoader().loadTestsFromTestCase(GoodUnittest)
    result = unittest.TestResult()
    suite.run(result)
    assert result.testsRun >= 10
    assert result.wasSuccessful(), result.failures + result.errors


def test_catches_state_that_does_not_move() -> None:
    with pytest.raises(AssertionError, match="at step 1"):
        _suite_for(ForgetfulCounter).test_resume_fresh_instance()


def test_catches_mutated_state() -> None:
    with pytest.raises(AssertionError, match="was mutated"):
        _suite_for(SharedStateCounter).test_earlier_state_unchanged()


def test_catches_state_that_breaks_in_json() -> None:
    with pytest.raises(AssertionError, match="JSON"):
        _suite_for(TupleStateCounter).test_json_round_trip()


def test_catches_missing_class() -> None:
    class Suite(CheckpointRoundTripTests):
        iterator_cls = ForgetfulCounter

        def make_iterator(self) -> Stream[Any]:
            return from_iterable(range(3))

    with pytest.raises(AssertionError, match="no ForgetfulCounter"):
        Suite().test_pipeline_contains_iterator_cls()


def test_catches_unseeded_pipeline() -> None:
    class Suite(CheckpointRoundTripTests):
        seeded = True

        def make_iterator(self, seed: int = 0) -> Stream[Any]:
            return from_iterable(range(30)).shuffle(10, seed=0)

    with pytest.raises(AssertionError, match="seeds 1 and 2"):
        Suite().test_seeds()


def test_subclass_author_errors() -> None:
    with pytest.raises(RuntimeError, match=r"super\(\).__init__\(\)"):
        next(NoSuperInit())
    with pytest.raises(RuntimeError, match=r"super\(\).reset\(state\)"):
        next(NoSuperReset())
