"""A stream has one consumer: a second stage reading it is refused when it is built."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from arrowmix.stream import ElasticRole, PassThrough, Stream, from_iterable, from_row_source, mix
from arrowmix.stream import zip as szip
from tests.stream.helpers import double, ident, rows

SECOND = r"`map` .* already feeds `batch` .*it cannot also feed `{}`.*build the stream twice"


def test_two_pipelines_on_one_stage_are_refused_naming_both() -> None:
    shared = from_row_source(rows(20), seed=0, infinite=False).map(ident)
    first = shared.batch(4)
    with pytest.raises(ValueError, match=SECOND.format("shuffle")) as info:
        shared.shuffle(4, seed=1)
    assert "MapIterator" in str(info.value) and "BufferShuffleIterator" in str(info.value)
    assert len([x for b in first for x in b]) == 20  # the first pipeline is untouched


@pytest.mark.parametrize(
    "second",
    [
        lambda s: mix([s, from_iterable(range(3))], [1, 1]),
        lambda s: mix({"a": s, "b": from_iterable(range(3))}),
        lambda s: szip([from_iterable(range(3)), s]),
        lambda s: s.take(3),
        lambda s: s.prefetch(2),
        lambda s: s.map(double, num_workers=2),
        lambda s: s.window(2),
        lambda s: s.bucket(lambda x: x, 2, 4),
    ],
    ids=["mix", "named_mix", "zip", "take", "prefetch", "parallel_map", "window", "bucket"],
)
def test_every_builder_refuses_a_claimed_stream(second: Any) -> None:
    shared = from_iterable(range(10)).map(double)
    keep = shared.batch(2)
    with pytest.raises(ValueError, match="already feeds `batch`"):
        second(shared)
    assert next(keep) == [0, 2]


@pytest.mark.parametrize("build", [lambda s: mix([s, s], [1, 1]), lambda s: szip([s, s])])
def test_one_stage_reading_a_stream_twice_is_refused(build: Any) -> None:
    with pytest.raises(ValueError, match=r"reads the same stream .* twice"):
        build(from_iterable(range(10)))


class Upper(PassThrough[str]):
    def next(self) -> str:
        return str(self.source.next()).upper()


class Pairs(Stream[tuple[Any, Any]]):
    """A user stage on ``Stream`` that holds its inputs in attributes."""

    STATE_KEYS = ("left", "right")
    ELASTIC_ROLE = ElasticRole.REFUSING

    def __init__(self, left: Stream[Any], right: Stream[Any]) -> None:
        super().__init__()
        self.left, self.right = left, right

    def reset(self, state: dict[str, Any] | None = None) -> None:
        super().reset(state)
        self.left.reset(None if state is None else state["left"])
        self.right.reset(None if state is None else state["right"])

    def get_state(self) -> dict[str, Any]:
        return {"left": self.left.get_state(), "right": self.right.get_state()}

    def next(self) -> tuple[Any, Any]:
        return self.left.next(), self.right.next()


def test_user_stages_claim_their_inputs() -> None:
    src = from_iterable("abc")
    up = Upper(src)
    with pytest.raises(ValueError, match=r"already feeds `Upper` \(Upper\(\)\)"):
        Upper(src)
    other = from_iterable("xyz")
    pairs = Pairs(up, other)
    with pytest.raises(ValueError, match="already feeds `Pairs`"):
        other.map(str.upper)
    assert list(pairs) == [("A", "x"), ("B", "y"), ("C", "z")]
    same = from_iterable("ab")
    with pytest.raises(ValueError, match="reads the same stream"):
        Pairs(same, same)


def test_a_dropped_consumer_frees_its_input() -> None:
    src = from_iterable(range(6))
    assert list(src.map(double)) == [0, 2, 4, 6, 8, 10]  # that pipeline is gone
    assert list(src.take(2)) == [0, 1]


def test_an_unpickled_pipeline_claims_its_inputs_again() -> None:
    s = from_iterable(range(10)).map(double).batch(3)
    next(s)
    copy = pickle.loads(pickle.dumps(s))
    assert list(copy) == [[6, 8, 10], [12, 14, 16], [18]]
    inner = copy.source
    with pytest.raises(ValueError, match="already feeds `batch`"):
        inner.take(1)
