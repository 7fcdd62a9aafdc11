"""The numpy format gives HF ``datasets``' values and dtypes, in rows, batches and columns."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrowmix as am

datasets = pytest.importorskip("datasets")


def _table() -> pa.Table:
    point = pa.struct([("a", pa.int32()), ("v", pa.list_(pa.float64()))])
    return pa.table(
        {
            "ids": pa.array([[1, 2], [3], [4, 5]], pa.list_(pa.int32())),
            "same": pa.array([[1, 2], [3, 4], [5, 6]], pa.list_(pa.int32())),
            "u8": pa.array([[1, 2], [3], [250]], pa.list_(pa.uint8())),
            "i64": pa.array([[1, 2], [3], [2**40]], pa.large_list(pa.int64())),
            "f32": pa.array([[1.5, 2.0], [3.0], [0.25]], pa.list_(pa.float32())),
            "f64": pa.array([[0.1, 2.0], [3.0], [1e-9]], pa.list_(pa.float64())),
            "f64same": pa.array([[0.1, 2.0], [3.0, 4.0], [5.0, 6.0]], pa.list_(pa.float64())),
            "flags": pa.array([[True], [False, True], []], pa.list_(pa.bool_())),
            "nested": pa.array([[[1, 2], [3]], [[4]], []], pa.list_(pa.list_(pa.int32()))),
            "nested_eq": pa.array(
                [[[1.0, 2.0]], [[3.0, 4.0]], [[5.0, 6.0]]], pa.list_(pa.list_(pa.float64()))
            ),
            "fixed": pa.array([[1, 2], [3, 4], [5, 6]], pa.list_(pa.int16(), 2)),
            "fixed_f": pa.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], pa.list_(pa.float64(), 2)),
            "null_row": pa.array([[1, 2], [3], None], pa.list_(pa.int32())),
            "null_value": pa.array([[1, None], [3], [4]], pa.list_(pa.int32())),
            "null_float": pa.array([[1.0, None], [3.0], [4.0]], pa.list_(pa.float64())),
            "words": pa.array([["a"], ["b", "cc"], []], pa.list_(pa.string())),
            "empty": pa.array([[], [], []], pa.list_(pa.int32())),
            "i32": pa.array([1, 2, 3], pa.int32()),
            "u16": pa.array([1, 2, 3], pa.uint16()),
            "x": pa.array([0.1, 2.0, 3.0], pa.float64()),
            "x32": pa.array([0.5, 2.0, 3.0], pa.float32()),
            "b": pa.array([True, False, True]),
            "int_null": pa.array([1, None, 3], pa.int64()),
            "float_null": pa.array([0.1, None, 3.0], pa.float64()),
            "s": pa.array(["a", "bb", "c"]),
            "s_null": pa.array(["a", None, "c"]),
            "point": pa.array(
                [{"a": 1, "v": [1.0, 2.0]}, {"a": 2, "v": [3.0]}, {"a": 3, "v": []}], point
            ),
        }
    )


def _same(ours: Any, hf: Any, where: str) -> None:
    """Equal values of the same Python type, numpy dtype and shape, recursively."""
    assert type(ours) is type(hf), f"{where}: {type(ours)} != {type(hf)}"
    if isinstance(hf, dict):
        assert list(ours) == list(hf), where
        for k in hf:
            _same(ours[k], hf[k], f"{where}.{k}")
    elif isinstance(hf, (np.ndarray, np.generic)):
        assert ours.dtype == hf.dtype, f"{where}: {ours.dtype} != {hf.dtype}"
        assert np.shape(ours) == np.shape(hf), where
        if hf.dtype == object:
            for j, (a, b) in enumerate(zip(ours.ravel(), hf.ravel(), strict=True)):
                _same(a, b, f"{where}[{j}]")
        else:
            np.testing.assert_array_equal(ours, hf, err_msg=where)
    else:
        assert ours == hf, where


COLUMNS = _table().column_names


@pytest.mark.parametrize("kwargs", [{}, {"dtype": np.float64}, {"dtype": np.int32}])
@pytest.mark.parametrize("name", COLUMNS)
def test_rows_batches_and_columns_match_hf(name: str, kwargs: dict[str, Any]) -> None:
    if kwargs.get("dtype") is np.int32 and name in (
        "null_value",
        "null_float",
        "float_null",
        "int_null",
    ):
        pytest.skip("NaN cast to int32 is numpy's undefined value")
    table = _table().select([name])
    if kwargs.get("dtype") is np.int32 and name == "i64":
        # HF wraps 2**40 to 0 in int32; arrowmix refuses to change a value
        with pytest.raises(OverflowError, match="column 'i64': the value 1099511627776"):
            am.Dataset.from_arrow(table).with_format("numpy", **kwargs)[2]
        return
    if kwargs.get("dtype") is np.int32 and name in ("f32", "f64", "f64same", "x", "x32"):
        # HF truncates 0.5 to 0 in int32; arrowmix refuses to change a value
        with pytest.raises(ValueError, match=rf"column '{name}': the value .* is not an integer"):
            am.Dataset.from_arrow(table).with_format("numpy", **kwargs)[:]
        return
    hf = datasets.Dataset(table).with_format("numpy", **kwargs)
    ours = am.Dataset.from_arrow(table).with_format("numpy", **kwargs)
    for i in range(table.num_rows):
        _same(ours[i][name], hf[i][name], f"{name} row {i}")
    _same(ours[:2][name], hf[:2][name], f"{name} batch :2")
    _same(ours[1:][name], hf[1:][name], f"{name} batch 1:")
    _same(ours[name], hf[name][:], f"{name} column")
    for j, row in enumerate(ours):
        _same(row[name], hf[j][name], f"{name} iterated row {j}")


def test_float64_lists_come_as_float32_in_rows_and_stacked_batches() -> None:
    ds = am.Dataset.from_dict({"emb": [[0.1, 0.2], [0.3, 0.4]]}).with_format("numpy")
    assert ds[0]["emb"].dtype == np.float32
    assert ds[:]["emb"].dtype == np.float32
    assert ds[:]["emb"].shape == (2, 2)
    np.testing.assert_array_equal(ds[1]["emb"], np.array([0.3, 0.4], np.float32))


def test_stream_rows_are_the_dataset_rows_and_hf_rows() -> None:
    table = _table()
    hf = datasets.Dataset(table).with_format("numpy", dtype=np.float64)
    view = am.Dataset.from_arrow(table).with_format("numpy", dtype=np.float64)
    rows = list(view.to_stream(shuffle=None, infinite=False))
    assert len(rows) == table.num_rows
    for i, row in enumerate(rows):
        assert list(row) == COLUMNS
        for name in COLUMNS:
            _same(row[name], hf[i][name], f"stream {name} row {i}")
            _same(row[name], view[i][name], f"stream vs dataset {name} row {i}")


def test_output_all_columns_rows_are_hf_rows() -> None:
    table = _table().select(["x", "i32", "null_value", "s"])
    kw: dict[str, Any] = {"columns": ["x", "i32", "null_value"], "output_all_columns": True}
    hf = datasets.Dataset(table).with_format("numpy", **kw)
    ours = am.Dataset.from_arrow(table).with_format("numpy", **kw)
    for i in range(table.num_rows):
        assert list(ours[i]) == list(hf[i])
        for name in table.column_names:
            _same(ours[i][name], hf[i][name], f"{name} row {i}")
