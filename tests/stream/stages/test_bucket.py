"""Length bucketing: multiset, budgets, order, boundaries, seeds."""

from __future__ import annotations

import operator
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arrowmix.stream import from_iterable
from tests.stream.helpers import arrow


def rows_of(lengths: list[int]) -> list[dict[str, Any]]:
    return [{"id": i, "n": n, "g": n % 2} for i, n in enumerate(lengths)]


@given(
    lengths=st.lists(st.integers(1, 300), max_size=150),
    read_ahead=st.integers(1, 60),
    budget=st.integers(300, 2000),
)
@settings(max_examples=60, deadline=None)
def test_multiset_kept_and_budget_respected(
    lengths: list[int], read_ahead: int, budget: int
) -> None:
    s = from_iterable(rows_of(lengths)).bucket(
        "n", lambda longest: budget // longest["n"], read_ahead, seed=1
    )
    batches = list(s)
    assert sorted(r["id"] for b in batches for r in b) == list(range(len(lengths)))
    for b in batches:
        assert len(b) * max(r["n"] for r in b) <= budget
        assert [r["n"] for r in b] == sorted((r["n"] for r in b), reverse=True)


def test_unshuffled_windows_are_sorted_descending_and_stable() -> None:
    lengths = [3, 1, 3, 2, 5, 2, 1, 4]
    s = from_iterable(rows_of(lengths)).bucket("n", 3, 4, shuffle=False)
    ids = [[r["id"] for r in b] for b in s]
    # window 1: ids 0-3 -> n 3,3,2,1 ; window 2: ids 4-7 -> n 5,4,2,1
    assert ids == [[0, 2, 3], [1], [4, 7, 5], [6]]


def test_batches_of_a_window_come_in_seeded_random_order() -> None:
    lengths = list(range(1, 101))

    def order(seed: int) -> list[int]:
        s = from_iterable(rows_of(lengths)).bucket("n", 5, 100, seed=seed)
        return [b[0]["n"] for b in s]

    assert order(1) == order(1)
    assert order(1) != order(2)
    assert sorted(order(1)) == sorted(range(5, 101, 5))


def test_boundary_key_cuts_batches() -> None:
    lengths = [9, 8, 8, 7, 6, 6]
    s = from_iterable(rows_of(lengths)).bucket(
        lambda r: r["n"], 10, 6, boundary_key="g", shuffle=False
    )
    assert [[r["n"] for r in b] for b in s] == [[9], [8, 8], [7], [6, 6]]


def test_bucket_over_arrow_rows() -> None:
    s = arrow(200, seed=3).bucket("n_tokens", lambda r: max(1, 1000 // r["n_tokens"]), 64)
    batches = list(s)
    assert Counter(r["id"] for b in batches for r in b) == Counter(range(200))


def test_bad_arguments() -> None:
    src = from_iterable(rows_of([1, 2]))
    with pytest.raises(ValueError, match="read_ahead"):
        src.bucket("n", 2, 0)
    with pytest.raises(ValueError, match="batch_size"):
        src.bucket("n", 0, 4)
    with pytest.raises(TypeError, match="key"):
        src.bucket(3, 2, 4)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="returned -1"):
        list(src.bucket("n", lambda r: -1, 4))


def test_batch_size_zero_makes_a_batch_of_one() -> None:
    # Infinibatch's tutorial: `150 // len(longest)` is 0 for an item over 150 tokens.
    rows = rows_of([400, 200, 30, 20, 10])
    s = from_iterable(rows).bucket("n", lambda r: 150 // r["n"], 5, shuffle=False)
    assert [[r["n"] for r in b] for b in s] == [[400], [200], [30, 20, 10]]


@pytest.mark.parametrize("infinite", [False, True])
def test_index_stream_matches_row_stream(infinite: bool) -> None:
    """Column keys over a row source move positions; the output must not change."""

    def batches(key: Any, boundary: Any) -> list[list[int]]:
        s = arrow(300, seed=4, infinite=infinite).shuffle(50, seed=5)
        b = s.bucket(
            key,
            lambda r: max(1, 700 // r["n_tokens"]),
            64,
            boundary_key=boundary,
            seed=6,
        )
        return [[r["id"] for r in next(b)] for _ in range(40)]

    fast = batches("n_tokens", "lang")
    assert fast == batches(operator.itemgetter("n_tokens"), lambda r: r["lang"])
    assert isinstance(fast[0][0], int)


def test_shuffle_in_position_mode_still_yields_rows() -> None:
    s = arrow(30, seed=1).shuffle(8, seed=2)
    expected = [r["id"] for r in arrow(30, seed=1).shuffle(8, seed=2)]
    assert s.as_positions() is not None  # a consumer takes the positions view
    assert [r["id"] for r in s] == expected


def test_non_numeric_key_is_named() -> None:
    import pyarrow as pa

    from arrowmix._stream.row_source import TableRowSource
    from arrowmix._stream.sources.rows import from_row_source

    src = from_row_source(TableRowSource(pa.table({"lang": ["en", "de"]})), infinite=False)
    with pytest.raises(ValueError, match=r"`key` 'lang' must give a number.*'(en|de)'"):
        next(src.bucket("lang", 2, 4))
    rows = from_iterable([{"k": (1, 2)}, {"k": (3, 4)}])
    with pytest.raises(ValueError, match=r"boundary_key"):
        next(rows.bucket(lambda r: r["k"], 2, 4))


def test_columnar_batches_equal_the_row_batches() -> None:
    import pyarrow as pa

    def build(columnar: bool) -> Any:
        s = arrow(300, shuffle="global", seed=1).shuffle(50, seed=2)
        return s.bucket(
            "n_tokens",
            lambda longest: max(1, 600 // longest["n_tokens"]),
            64,
            boundary_key="lang",
            seed=3,
            columnar=columnar,
        )

    rows, tables = list(build(False)), list(build(True))
    assert all(isinstance(t, pa.Table) for t in tables)
    assert [t.to_pylist() for t in tables] == rows
    assert sum(t.num_rows for t in tables) == 300


def test_columnar_needs_an_index_stream() -> None:
    with pytest.raises(ValueError, match="columnar=True"):
        from_iterable([{"n": 1}]).bucket("n", 2, 4, columnar=True)
    with pytest.raises(ValueError, match="columnar=True"):
        arrow(10).map(lambda r: r).bucket("n_tokens", 2, 4, columnar=True)
