"""A filter over an index stream keeps the positions fast path of the stages after it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from arrowmix.stream import Stream, from_row_source
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


@pytest.mark.parametrize("after", [1, 4, 9])
def test_columnar_batches_after_a_filter_resume_exactly(after: int) -> None:
    ref = _ids(list(_filtered().batch(5, columnar=True)))
    s = _filtered().batch(5, columnar=True)
    head = _ids([next(s) for _ in range(after)])
    state = json.loads(json.dumps(s.state_dict()))
    b = _filtered().batch(5, columnar=True)
    b.load_state_dict(state)
    assert head + _ids(list(b)) == ref


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
