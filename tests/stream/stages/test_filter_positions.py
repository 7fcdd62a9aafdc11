"""A filter over an index stream keeps the positions fast path of the stages after it."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest

from arrowmix.stream import ElasticRole, Positions, Stream, from_row_source
from tests.stream.helpers import rows


def keep(row: dict[str, Any]) -> bool:
    return int(row["id"]) % 3 != 0


def _filtered() -> Stream[Any]:
    return from_row_source(rows(80), seed=0, infinite=False).shuffle(16, seed=2).filter(keep)


def _ids(batches: list[Any]) -> list[int]:
    return [i for t in batches for i in t.column("id").to_pylist()]


def test_columnar_batches_after_a_filter_hold_the_kept_rows_in_order() -> None:
    want = [int(r["id"]) for r in _filtered()]
    got = list(_filtered().batch(5, columnar=True))
    assert [t.num_rows for t in got] == [5] * (len(want) // 5) + [len(want) % 5]
    assert _ids(got) == want


def _resumes_exactly(build: Any, size: int, after: int) -> None:
    """Columnar batches of ``build()`` resumed after ``after`` batches (checkpoint, pickle)."""
    ref = _ids(list(build().batch(size, columnar=True)))
    s = build().batch(size, columnar=True)
    head = _ids([next(s) for _ in range(after)])
    state = json.loads(json.dumps(s.state_dict()))
    b = build().batch(size, columnar=True)
    b.load_state_dict(state)
    assert head + _ids(list(b)) == ref
    assert head + _ids(list(pickle.loads(pickle.dumps(s)))) == ref


@pytest.mark.parametrize("after", [1, 4, 9])
def test_columnar_batches_after_a_filter_resume_exactly(after: int) -> None:
    _resumes_exactly(_filtered, 5, after)


def test_a_shuffle_after_a_filter_reads_positions() -> None:
    want = sorted(int(r["id"]) for r in _filtered())
    s = _filtered().shuffle(8, seed=3).batch(4, columnar=True)
    assert sorted(_ids(list(s))) == want


def test_a_user_stage_offers_positions_through_the_public_protocol() -> None:
    from arrowmix.stream import PassThrough, Positions

    class Evens(PassThrough[Any]):
        """Keeps rows at even positions (a user filter-like stage)."""

        def next(self) -> Any:
            raise AssertionError("read through positions only")

        def row_source(self) -> Any:
            return self.source.row_source()

        def as_positions(self) -> Positions | None:
            inner = self.source.as_positions()
            assert inner is not None

            def pull(n: int) -> Any:
                pos = inner.pull(n)
                return pos[pos % 2 == 0]

            return Positions(inner.rows, pull, inner.to_rows)

    s = Evens(from_row_source(rows(20), seed=None, shuffle=None, infinite=False))
    assert _ids(list(s.batch(30, columnar=True))) == list(range(0, 20, 2))


class Dedup(Stream[Any]):
    """Keeps the first row of each ``id // 4`` (a user filter-like stage with state)."""

    STATE_KEYS = ("source", "seen")
    ELASTIC_ROLE = ElasticRole.TRANSPARENT

    def __init__(self, source: Stream[Any]) -> None:
        super().__init__()
        self.source = source

    def reset(self, state: dict[str, Any] | None = None) -> None:
        super().reset(state)
        self.source.reset(None if state is None else state["source"])
        self.seen = set() if state is None else set(state["seen"])

    def get_state(self) -> dict[str, Any]:
        return {"source": self.source.get_state(), "seen": sorted(self.seen)}

    def next(self) -> Any:
        while True:
            row = self.source.next()
            if self.keeps([row])[0]:
                return row

    def row_source(self) -> Any:
        return self.source.row_source()

    def as_positions(self) -> Positions | None:
        inner = self.source.as_positions()
        return None if inner is None else inner.filtered(self.keeps)

    def keeps(self, items: list[Any]) -> list[bool]:
        out = []
        for row in items:
            key = int(row["id"]) // 4
            out.append(key not in self.seen)
            self.seen.add(key)
        return out


def _deduped() -> Stream[Any]:
    return Dedup(from_row_source(rows(80), seed=0, infinite=False).shuffle(16, seed=2))


def test_a_stateful_user_filter_keeps_the_columnar_path_with_the_row_path_values() -> None:
    want = [int(r["id"]) for r in _deduped()]
    assert len(want) == 20 and len({i // 4 for i in want}) == 20
    assert _ids(list(_deduped().batch(3, columnar=True))) == want
    assert sorted(_ids(list(_deduped().shuffle(5, seed=1).batch(4, columnar=True)))) == sorted(want)


@pytest.mark.parametrize("after", [1, 3, 6])
def test_a_stateful_user_filter_on_positions_resumes_exactly(after: int) -> None:
    _resumes_exactly(_deduped, 3, after)


def test_keep_must_answer_once_per_item() -> None:
    class Bad(Dedup):
        def keeps(self, items: list[Any]) -> list[bool]:
            return [True]

    s = Bad(from_row_source(rows(10), seed=None, shuffle=None, infinite=False))
    with pytest.raises(ValueError, match="returned 1 values for 4 items"):
        next(s.batch(4, columnar=True))
