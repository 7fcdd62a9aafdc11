"""The positions protocol and the one read hook (``pull``) that built-in stages use."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from arrowmix.stream import PassThrough, Stream, from_iterable, mix
from tests.stream.helpers import arrow, ident


class Tagged(PassThrough):
    """A user stage that reads in blocks: only ``pull`` marks the items."""

    def next(self) -> Any:
        return ("next", self.source.next())

    def pull(self, n: int) -> list[Any]:
        return [("pull", x) for x in self.source.pull(n)]


def test_builtin_stages_read_their_input_through_pull() -> None:
    batches = list(Tagged(from_iterable(range(5))).batch(2))
    assert batches == [[("pull", 0), ("pull", 1)], [("pull", 2), ("pull", 3)], [("pull", 4)]]
    assert list(Tagged(from_iterable(range(3))).take(2).batch(5)) == [[("pull", 0), ("pull", 1)]]


def test_index_streams_offer_positions_and_others_do_not() -> None:
    assert from_iterable(range(3)).as_positions() is None
    assert arrow(10).map(ident).as_positions() is None
    assert from_iterable(range(3)).batch(2).as_position_batches("x") is None
    src = arrow(20, seed=3, shuffle="global")
    expected = [r["id"] for r in arrow(20, seed=3, shuffle="global")]
    view = src.as_positions()
    assert view is not None
    src.load_state_dict(None)  # a view is read inside a started pipeline
    pos = np.concatenate([view.pull(7), view.pull(7), view.pull(7), view.pull(7)])
    assert view.rows.take(pos)["id"].to_pylist() == expected


def test_shuffle_and_mix_views_select_the_rows_iteration_yields() -> None:
    def build() -> Stream[Any]:
        return mix([arrow(30, seed=1), arrow(20, seed=2).shuffle(6, seed=4)], [2, 1], seed=3)

    expected = [r["id"] for r in build()]
    root = build().shuffle(9, seed=5)
    view = root.as_positions()
    assert view is not None
    root.load_state_dict(None)
    got = view.rows.take(view.pull(1000))["id"].to_pylist()
    assert sorted(got) == sorted(expected) and len(got) == 50
    plain = [r["id"] for r in build().shuffle(9, seed=5)]
    assert got == plain


def test_columnar_batch_yields_tables_and_its_view_yields_their_positions() -> None:
    tables = list(arrow(23, seed=1).shuffle(8, seed=2).batch(5, columnar=True))
    assert all(isinstance(t, pa.Table) for t in tables)
    root = arrow(23, seed=1).shuffle(8, seed=2).batch(5, columnar=True)
    view = root.as_position_batches()
    assert view is not None
    root.load_state_dict(None)
    for table in tables:
        assert view.rows.take(view.next()).equals(table)
