"""write_chunks keeps every value: later rows follow the first rows' types only without loss.

The schema of a corpus is fixed by its first rows where no column is all-null; later rows are
cast to it when no value changes, and otherwise refused with an error naming the column, both
types and the row (the rule ``map`` follows).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix.exceptions import ArrowmixError, SchemaMismatchError

FIRST = 8192  # rows of the first batch write_chunks reads from an iterable of row dicts


def _write(tmp_path: Any, rows: list[dict[str, Any]], **kw: Any) -> list[dict[str, Any]]:
    out = tmp_path / "corpus"
    am.write_chunks(iter(rows), str(out), **kw)
    return am.Dataset.from_chunks(str(out)).to_list()


LOSSY = [
    ("float into int", 1, 2.5, "2.5"),
    ("float list into int list", [1], [0.5], "0.5"),
    ("new struct field", {"a": 1}, {"a": 1, "b": 2}, "'b'"),
    ("datetime into date", dt.date(2020, 1, 1), dt.datetime(2020, 1, 1, 5), "2020, 1, 1, 5"),
    (
        "aware into naive",
        dt.datetime(2020, 1, 1),
        dt.datetime(2020, 1, 1, 5, tzinfo=dt.timezone.utc),
        "2020",
    ),
    (
        "naive into aware",
        dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc),
        dt.datetime(2020, 1, 1, 5),
        "2020",
    ),
    ("bytes into str", "a", b"b", "b'b'"),
    ("str into bytes", b"a", "b", "'b'"),
]


@pytest.mark.parametrize(
    ("first", "later", "shown"), [c[1:] for c in LOSSY], ids=[c[0] for c in LOSSY]
)
def test_a_later_value_that_would_change_is_refused_naming_column_types_and_row(
    tmp_path: Any, first: Any, later: Any, shown: str
) -> None:
    rows = [{"x": first}] * FIRST + [{"x": first}] * 3 + [{"x": later}]
    with pytest.raises(SchemaMismatchError) as info:
        _write(tmp_path, rows)
    msg = str(info.value)
    assert "'x'" in msg
    assert f"row {FIRST + 3}" in msg
    assert shown in msg
    inferred = pa.array([later]).type
    assert str(inferred) in msg
    assert str(pa.array([first]).type) in msg


def test_whole_floats_into_an_int_column_keep_their_values(tmp_path: Any) -> None:
    rows = [{"x": 1}] * FIRST + [{"x": 2.0}]
    got = _write(tmp_path, rows)
    assert got[-1] == {"x": 2}
    assert got[0] == {"x": 1}


def test_ints_into_a_float_column_are_promoted(tmp_path: Any) -> None:
    rows = [{"x": 0.5}] * FIRST + [{"x": 3}]
    got = _write(tmp_path, rows)
    assert got[-1] == {"x": 3.0}


def test_an_all_null_first_batch_takes_the_type_of_later_rows(tmp_path: Any) -> None:
    rows = [{"x": None, "y": 1}] * FIRST + [{"x": "s", "y": 2}]
    out = tmp_path / "corpus"
    am.write_chunks(iter(rows), str(out), rows_per_chunk=3000)
    ds = am.Dataset.from_chunks(str(out))
    assert ds.schema.field("x").type == pa.string()
    assert ds[-1] == {"x": "s", "y": 2}
    assert ds[0] == {"x": None, "y": 1}


def test_empty_lists_first_take_the_type_of_later_lists(tmp_path: Any) -> None:
    rows = [{"x": []}] * FIRST + [{"x": ["a"]}]
    got = _write(tmp_path, rows)
    assert got[-1] == {"x": ["a"]}
    assert got[0] == {"x": []}


@pytest.mark.parametrize("big", [2**63, 2**64, -(2**63) - 1])
def test_integers_beyond_64_bits_name_column_and_row(tmp_path: Any, big: int) -> None:
    rows = [{"x": 1, "y": "a"}] * 5 + [{"x": big, "y": "b"}]
    with pytest.raises(ArrowmixError) as info:
        _write(tmp_path, rows)
    assert isinstance(info.value, (ValueError, OverflowError))
    assert "'x'" in str(info.value)
    assert "row 5" in str(info.value)


def test_a_huge_integer_in_a_later_batch_names_column_and_row(tmp_path: Any) -> None:
    rows = [{"x": 1}] * FIRST + [{"x": 2**63}]
    with pytest.raises(ArrowmixError) as info:
        _write(tmp_path, rows)
    assert "'x'" in str(info.value)
    assert f"row {FIRST}" in str(info.value)


def test_a_key_first_seen_after_the_first_row_is_kept(tmp_path: Any) -> None:
    rows = [{"a": 1}, {"a": 2, "b": "x"}, {"a": 3}]
    assert _write(tmp_path, rows) == [
        {"a": 1, "b": None},
        {"a": 2, "b": "x"},
        {"a": 3, "b": None},
    ]


def test_mixed_types_in_one_batch_name_column_and_row(tmp_path: Any) -> None:
    rows = [{"x": 1}, {"x": 2}, {"x": "three"}]
    with pytest.raises(SchemaMismatchError) as info:
        _write(tmp_path, rows)
    assert "'x'" in str(info.value)
    assert "row 2" in str(info.value)


def test_record_batches_of_another_schema_are_cast_without_loss_or_refused(
    tmp_path: Any,
) -> None:
    first = pa.record_batch({"x": pa.array([None, None], type=pa.null())})
    later = pa.record_batch({"x": pa.array(["a", "b"])})
    got = _write(tmp_path, [first, later])  # type: ignore[list-item]
    assert got == [{"x": None}, {"x": None}, {"x": "a"}, {"x": "b"}]
    ints = pa.record_batch({"x": pa.array([1, 2])})
    halves = pa.record_batch({"x": pa.array([0.5, 1.0])})
    with pytest.raises(SchemaMismatchError, match="'x'"):
        _write(tmp_path / "b", [ints, halves])  # type: ignore[list-item]


def test_a_refused_row_after_chunks_were_written_leaves_no_complete_corpus(
    tmp_path: Any,
) -> None:
    from arrowmix.exceptions import ChunkFileError

    out = tmp_path / "corpus"
    rows = [{"x": 1}] * FIRST + [{"x": 2.5}]
    with pytest.raises(SchemaMismatchError, match=f"row {FIRST}"):
        am.write_chunks(iter(rows), str(out), rows_per_chunk=1000)
    # The chunks of the first rows were not rewritten with another type, nor left as a
    # corpus that opens: all chunks of a corpus share one schema, and this one is unfinished.
    with pytest.raises(ChunkFileError):
        am.Dataset.from_chunks(str(out))
