"""concatenate_datasets as in HF datasets: null-filled columns, axis=1, the common format."""

from __future__ import annotations

import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix.exceptions import SchemaMismatchError


def test_missing_columns_are_filled_with_nulls():
    a = am.Dataset.from_dict({"x": ["a", "b"]})
    b = am.Dataset.from_dict({"x": ["c"], "y": [True]})
    out = am.concatenate_datasets([a, b])
    assert out[:] == {"x": ["a", "b", "c"], "y": [None, None, True]}
    assert out.schema.field("y").type == pa.bool_()
    c = am.Dataset.from_dict({"z": [1]})
    out = am.concatenate_datasets([out, c.shuffle(seed=0)])
    assert out.column_names == ["x", "y", "z"]
    assert out["z"] == [None, None, None, 1]


def test_all_null_column_takes_the_other_type():
    a = am.Dataset.from_dict({"x": [None, None]})
    b = am.Dataset.from_dict({"x": [1]})
    out = am.concatenate_datasets([a, b])
    assert out.schema.field("x").type == pa.int64() and out["x"] == [None, None, 1]


def test_shared_column_of_another_type_raises_naming_it():
    a = am.Dataset.from_dict({"x": [1]})
    b = am.Dataset.from_arrow(pa.table({"x": pa.array([1], pa.int32())}))
    with pytest.raises(SchemaMismatchError, match="'x' is int32 in dataset 1 but int64"):
        am.concatenate_datasets([a, b])


def test_empty_inputs_are_skipped():
    a = am.Dataset.from_dict({"x": [1, 2]})
    empty = am.Dataset.from_dict({"x": ["no"]}).select([])
    assert am.concatenate_datasets([empty, a])["x"] == [1, 2]


def test_format_only_when_all_inputs_share_it():
    a = am.Dataset.from_dict({"x": [1, 2]})
    b = am.Dataset.from_dict({"x": [3]})
    mixed = am.concatenate_datasets([a.with_format("numpy"), b])
    assert mixed.format["type"] is None and mixed[:] == {"x": [1, 2, 3]}
    mixed = am.concatenate_datasets([a, b.with_format("numpy")])
    assert mixed.format["type"] is None
    same = am.concatenate_datasets([a.with_format("numpy"), b.with_format("numpy")])
    assert same.format["type"] == "numpy" and same[:]["x"].tolist() == [1, 2, 3]


def test_axis_1_joins_columns():
    a = am.Dataset.from_dict({"x": [1, 2, 3]})
    b = am.Dataset.from_dict({"y": ["a", "b", "c"], "z": [0.5, 1.5, 2.5]})
    out = am.concatenate_datasets([a, b], axis=1)
    assert out.column_names == ["x", "y", "z"] and out[1] == {"x": 2, "y": "b", "z": 1.5}
    shuffled = am.concatenate_datasets([a.shuffle(seed=1), b.select([2, 1, 0])], axis=1)
    assert shuffled["y"] == ["c", "b", "a"]
    assert shuffled["x"] == a.shuffle(seed=1)["x"]
    sliced = am.concatenate_datasets([a.select(range(1, 3)), b.select(range(2))], axis=1)
    assert sliced[:] == {"x": [2, 3], "y": ["a", "b"], "z": [0.5, 1.5]}
    assert sliced.map(lambda r: {"w": r["x"] * 10})["w"] == [20, 30]


def test_axis_1_errors():
    a = am.Dataset.from_dict({"x": [1, 2]})
    with pytest.raises(ValueError, match="dataset 1 has 1 rows, dataset 0 has 2"):
        am.concatenate_datasets([a, am.Dataset.from_dict({"y": [1]})], axis=1)
    with pytest.raises(ValueError, match=r"duplicated column name\(s\) \['x'\]"):
        am.concatenate_datasets([a, a], axis=1)
    with pytest.raises(ValueError, match="`axis`"):
        am.concatenate_datasets([a], axis=2)
