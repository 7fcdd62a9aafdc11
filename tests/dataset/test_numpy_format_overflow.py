"""The numpy format never wraps an integer into another value."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import arrowmix as am


@pytest.fixture
def ds(tmp_path) -> am.Dataset:
    table = pa.table(
        {
            "u": pa.array([[2**63 + 5, 1], [2]], pa.list_(pa.uint64())),
            "ids": pa.array([[40000, 1], [7]], pa.list_(pa.int32())),
        }
    )
    am.write_chunks(table, tmp_path / "c")
    return am.Dataset.from_chunks(tmp_path / "c")


def test_uint64_ids_above_int64_stay_uint64(ds) -> None:
    # HF's int64 would turn 2**63 + 5 into -9223372036854775803
    fmt = ds.with_format("numpy")
    row = fmt[0]["u"]
    assert row.dtype == np.uint64 and int(row[0]) == 2**63 + 5
    assert fmt[1]["u"].dtype == np.int64  # a row whose values fit keeps HF's int64
    streamed = next(iter(fmt.to_stream(shuffle=None, infinite=False)))["u"]
    assert int(streamed[0]) == 2**63 + 5


@pytest.mark.parametrize("read", ["row", "batch", "column", "stream"])
def test_a_dtype_too_narrow_raises_naming_the_column_and_value(ds, read) -> None:
    fmt = ds.select_columns(["ids"]).with_format("numpy", dtype=np.int16)
    readers = {
        "row": lambda: fmt[0],
        "batch": lambda: fmt[:2],
        "column": lambda: fmt["ids"],
        "stream": lambda: list(fmt.to_stream(shuffle=None, infinite=False)),
    }
    with pytest.raises(OverflowError, match=r"column 'ids': the value 40000 .* int16"):
        readers[read]()
    wide = ds.select_columns(["ids"]).with_format("numpy", dtype=np.int32)
    assert wide[0]["ids"].tolist() == [40000, 1]


READS = {
    "batch": lambda fmt: fmt[:2],
    "column": lambda fmt: fmt["v"],
    "rows": lambda fmt: [fmt[i] for i in range(len(fmt))],
}
CHANGED = [  # (column values, dtype, error, what the message says)
    (
        [1e6, 2.0],
        np.float16,
        OverflowError,
        r"1000000\.0 .* float16: it would be silently made inf",
    ),
    ([7, 70000], np.float16, OverflowError, r"70000 .* float16"),
    ([0.5, 2.0], np.int64, ValueError, r"0\.5 is not an integer"),
    ([[1.0, 2.5]], np.int32, ValueError, r"2\.5 is not an integer"),
    ([1.0, None], np.int64, ValueError, r"NaN \(null\)"),
    ([{"a": 1e6}], np.float16, OverflowError, r"1000000\.0 .* float16"),
]


@pytest.mark.parametrize("read", sorted(READS))
@pytest.mark.parametrize(("values", "dtype", "error", "message"), CHANGED)
def test_a_dtype_that_would_change_a_value_raises(read, values, dtype, error, message) -> None:
    if read == "rows":  # a row's scalar keeps its type (as HF): its list values are converted
        values = [[v] for v in values]
    fmt = am.Dataset.from_dict({"v": values}).with_format("numpy", dtype=dtype)
    with pytest.raises(error, match=rf"column 'v': the value {message}|column 'v': .*{message}"):
        READS[read](fmt)


def test_a_dtype_that_holds_every_value_converts_as_numpy() -> None:
    fmt = am.Dataset.from_dict({"v": [1.0, 2.0, -3.0]}).with_format("numpy", dtype=np.int8)
    assert fmt["v"].dtype == np.int8 and fmt["v"].tolist() == [1, 2, -3]
    half = am.Dataset.from_dict({"v": [0.5, float("inf")]}).with_format("numpy", dtype=np.float16)
    assert half["v"].tolist() == [0.5, float("inf")]  # an infinity stays one
