"""How many rows a block of a numpy stream reads: about 4 MiB of storage, 1024 to 8192 rows."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

import arrowmix as am
from arrowmix._dataset.to_stream import numpy_block_rows


def ids_table(rows: int, tokens: int) -> pa.Table:
    values = np.zeros(rows * tokens, dtype=np.int32)
    offsets = np.arange(0, rows * tokens + 1, tokens, dtype=np.int32)
    return pa.table({"ids": pa.ListArray.from_arrays(pa.array(offsets), pa.array(values))})


def test_small_rows_get_larger_blocks_and_large_rows_keep_1024() -> None:
    assert 3500 <= numpy_block_rows(ids_table(5000, 256)) <= 4096  # ~1 KiB a row
    assert numpy_block_rows(ids_table(5000, 2)) == 8192
    assert numpy_block_rows(ids_table(100, 8192)) == 1024


def test_the_numpy_stream_reads_in_those_blocks_and_others_in_1024() -> None:
    ds = am.Dataset(ids_table(5000, 256))
    assert ds.with_format("numpy").to_stream(shuffle=None).block_rows > 1024
    assert ds.to_stream(shuffle=None).block_rows == 1024
