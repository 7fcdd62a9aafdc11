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
