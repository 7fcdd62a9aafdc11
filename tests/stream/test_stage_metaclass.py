"""A user stage may have a metaclass of its own: ``Stream``'s is plain ``type``."""

from __future__ import annotations

import abc
import pickle
from typing import Any, ClassVar

import pytest

from arrowmix.stream import Stream, from_iterable
from arrowmix.testing import CheckpointRoundTripTests
from tests.test_testing import Counter


class Counting(Counter, abc.ABC):
    """An abstract stage: counts up to ``n``, each count turned by ``value``."""

    @abc.abstractmethod
    def value(self, i: int) -> int:
        """The item of count ``i``."""

    def next(self) -> int:
        return self.value(super().next())


class Squares(Counting):
    def value(self, i: int) -> int:
        return i * i


class Registry(type):
    """A user's own metaclass: records every class it builds."""

    built: ClassVar[list[str]] = []

    def __new__(mcs, name: str, bases: tuple[type, ...], ns: dict[str, Any]) -> Registry:
        cls = super().__new__(mcs, name, bases, ns)
        mcs.built.append(name)
        return cls


class Doubles(Counter, metaclass=Registry):
    def next(self) -> int:
        return 2 * super().next()


class ABCRegistry(abc.ABCMeta):
    """A metaclass derived from ``ABCMeta`` (a conflict with ``typing.Protocol``'s)."""


class Thirds(Squares, metaclass=ABCRegistry):
    def value(self, i: int) -> int:
        return 3 * i


def test_stream_has_a_plain_metaclass() -> None:
    assert type(Stream) is type
    assert type(Squares) is abc.ABCMeta and type(Doubles) is Registry
    assert "Doubles" in Registry.built and type(Thirds) is ABCRegistry


def test_an_abstract_stage_stays_abstract() -> None:
    with pytest.raises(TypeError, match="abstract"):
        Counting()  # type: ignore[abstract]


def test_stages_with_their_own_metaclass_resume_mid_pipeline() -> None:
    for make in (lambda: Squares().batch(5), lambda: Doubles().shuffle(4, seed=1)):
        ref = list(make())
        s = make()
        head = [next(s), next(s)]
        state = s.state_dict()
        resumed = make()
        resumed.load_state_dict(state)
        assert head + list(resumed) == ref
        assert list(pickle.loads(pickle.dumps(make()))) == ref
    assert list(from_iterable([0, 1]).map(int)) == [0, 1]


class TestAbstractUserStage(CheckpointRoundTripTests):
    iterator_cls = Squares
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        return Squares(12)


class TestUserStageWithItsOwnMetaclass(CheckpointRoundTripTests):
    iterator_cls = Doubles
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        return Doubles().batch(3)


class TestUserStageWithADerivedABCMeta(CheckpointRoundTripTests):
    iterator_cls = Thirds
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        return Thirds(9)
