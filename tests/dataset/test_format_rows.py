"""format_rows(table, None) gives exactly ``table.to_pylist()``, for one row and for many."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._dataset.formats import format_rows


def _rich_table() -> pa.Table:
    ts = dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)
    return pa.table(
        {
            "i": pa.array([1, None, 3], pa.int64()),
            "f": pa.array([1.5, float("nan"), None], pa.float32()),
            "s": pa.array(["a", None, "ccc"], pa.large_string()),
            "b": pa.array([b"\x00", b"", None], pa.binary()),
            "bool": pa.array([True, None, False]),
            "ts": pa.array([ts, None, ts], pa.timestamp("us", tz="UTC")),
            "d": pa.array([decimal.Decimal("1.25"), None, decimal.Decimal("-3.50")]),
            "lst": pa.array([[1, 2], None, []], pa.list_(pa.int32())),
            "fsl": pa.array([[1.0, 2.0], [3.0, 4.0], None], pa.list_(pa.float64(), 2)),
            "st": pa.array([{"x": 1, "y": "a"}, None, {"x": None, "y": "c"}]),
            "m": pa.array([[("k", 1)], None, []], pa.map_(pa.string(), pa.int64())),
            "dict": pa.array(["u", "v", "u"]).dictionary_encode(),
        }
    )


@pytest.mark.parametrize("start", [0, 1, 2])
def test_one_row_equals_to_pylist(start):
    row = _rich_table().slice(start, 1)
    assert repr(format_rows(row, None)) == repr(row.to_pylist())  # repr: NaN != NaN


def test_many_rows_and_chunked_one_row():
    table = _rich_table()
    assert repr(format_rows(table, None)) == repr(table.to_pylist())
    chunked = pa.concat_tables([table.slice(0, 0), table.slice(1, 1)])  # empty first chunk
    assert repr(format_rows(chunked, None)) == repr(chunked.to_pylist())


def test_duplicate_column_names_and_no_columns():
    dup = pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["a", "a"])
    assert format_rows(dup, None) == dup.to_pylist()
    assert format_rows(pa.table({"a": [1, 2]}).select([]), None) == [{}, {}]


def test_dataset_getitem_row(tmp_path):
    rows = [{"id": i, "text": f"t{i}", "tags": [i] * (i % 3)} for i in range(10)]
    am.write_chunks(rows, tmp_path / "c", rows_per_chunk=4)
    ds = am.Dataset.from_chunks(tmp_path / "c")
    assert [ds[i] for i in range(10)] == rows
    assert ds.shuffle(seed=1)[3] == rows[ds.shuffle(seed=1)["id"][3]]


def test_torch_tensors_from_memory_mapped_slices_are_writable(tmp_path):
    torch = pytest.importorskip("torch")
    am.write_chunks(pa.table({"n": list(range(10))}), tmp_path / "c")
    ds = am.Dataset.from_chunks(tmp_path / "c").with_format("torch")
    t = ds[2:5]["n"]  # a zero-copy slice of the memory-mapped file underneath
    assert isinstance(t, torch.Tensor) and t.tolist() == [2, 3, 4]
    t += 1  # writable: a copy, the file is untouched
    assert ds[2:5]["n"].tolist() == [2, 3, 4]
