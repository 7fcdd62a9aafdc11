"""map never changes a value to fit a later batch into the first batch's types."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix.exceptions import SchemaMismatchError

UTC = dt.timezone.utc


def _map(first: Any, later: Any) -> am.Dataset:
    ds = am.Dataset.from_dict({"i": list(range(4))})

    def fn(batch: dict[str, list[Any]]) -> dict[str, Any]:
        return {"y": first if batch["i"][0] == 0 else later}

    return ds.map(fn, batched=True, batch_size=2)


CASES = [
    ("float32 then float64", np.array([0.5, 0.25], dtype=np.float32), [0.1, 0.2], "0.1"),
    ("str then bytes", ["a", "b"], [b"c", b"d"], "b'c'"),
    ("bytes then str", [b"a", b"b"], ["c", "d"], "'c'"),
    (
        "naive then aware",
        [dt.datetime(2020, 1, 1)] * 2,
        [dt.datetime(2020, 1, 1, 5, tzinfo=UTC)] * 2,
        "row 2",
    ),
    (
        "aware then naive",
        [dt.datetime(2020, 1, 1, tzinfo=UTC)] * 2,
        [dt.datetime(2020, 1, 1, 5)] * 2,
        "row 2",
    ),
]


@pytest.mark.parametrize(
    ("first", "later", "shown"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_later_batch_that_would_change_is_refused(first: Any, later: Any, shown: str) -> None:
    with pytest.raises(SchemaMismatchError) as info:
        _map(first, later)
    msg = str(info.value)
    assert "'y'" in msg
    assert shown in msg


def test_float64_values_exact_in_float32_keep_the_float32_column() -> None:
    ds = _map(np.array([0.5, 0.25], dtype=np.float32), [1.5, 2.0])
    assert ds.schema.field("y").type == pa.float32()
    assert ds["y"] == [0.5, 0.25, 1.5, 2.0]


def test_an_input_float32_column_keeps_its_type_as_in_hf() -> None:
    ds = am.Dataset.from_dict({"x": pa.array([0.5, 1.5], type=pa.float32())})
    out = ds.map(lambda b: {"x": [v + 0.1 for v in b["x"]]}, batched=True)
    assert out.schema.field("x").type == pa.float32()


def test_a_first_batch_of_empty_lists_takes_the_later_type() -> None:
    ds = _map([[], []], [["a"], ["b", "c"]])
    assert ds.schema.field("y").type == pa.list_(pa.string())
    assert ds["y"] == [[], [], ["a"], ["b", "c"]]


def test_a_struct_with_an_all_null_field_takes_the_later_type() -> None:
    ds = _map([{"a": None, "b": 1}] * 2, [{"a": "s", "b": 2}] * 2)
    assert ds.schema.field("y").type == pa.struct([("a", pa.string()), ("b", pa.int64())])
    assert ds["y"][2] == {"a": "s", "b": 2}


@pytest.mark.parametrize(
    "values",
    [
        ["a", b"b"],
        [dt.date(2020, 1, 1), dt.datetime(2020, 1, 1, 5)],
        [dt.datetime(2020, 1, 1), dt.datetime(2020, 1, 1, 5, tzinfo=UTC)],
    ],
    ids=["str and bytes", "date and datetime", "naive and aware"],
)
def test_kinds_pyarrow_would_merge_in_one_batch_are_refused(values: list[Any]) -> None:
    ds = am.Dataset.from_dict({"i": [0, 1]})
    with pytest.raises(SchemaMismatchError, match=r"'y'.*row 1"):
        ds.map(lambda b: {"y": values}, batched=True)


def test_a_segment_of_empty_lists_takes_the_type_of_a_later_segment(tmp_path: Any) -> None:
    out = tmp_path / "corpus"
    am.write_chunks(iter([{"i": i} for i in range(4)]), str(out), rows_per_chunk=2)
    ds = am.Dataset.from_chunks(str(out))  # two chunks: two cache segments
    mapped = ds.map(lambda row: {"y": [] if row["i"] < 2 else [str(row["i"])]})
    assert mapped.schema.field("y").type == pa.list_(pa.string())
    assert mapped["y"] == [[], [], ["2"], ["3"]]
