"""Row gathers from record batches: unchecked ``take`` calls with zero-copy int64 indices.

Shared by the local table reader (:mod:`arrowmix._dataset.reader`) and the bounded remote
cache (:mod:`arrowmix._remote.table`). The indices are in range by construction at both
callers, so the calls skip pyarrow's per-call bounds check and its Python wrapper.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["int64_array", "take_unchecked"]

_TAKE = pc.get_function("take")
_UNCHECKED = pc.TakeOptions(boundscheck=False)


def int64_array(values: np.ndarray) -> pa.Array[Any]:
    """An Arrow int64 array over ``values`` without a copy.

    ``pa.array(numpy_array)`` imports pandas on first use (pyarrow probes for pandas
    objects); reading rows must not pay that import.
    """
    idx = np.ascontiguousarray(values, dtype=np.int64)
    data: Any = idx  # numpy arrays expose the buffer protocol
    return pa.Array.from_buffers(pa.int64(), len(idx), [None, pa.py_buffer(data)])


def take_unchecked(batch: pa.RecordBatch, local: pa.Array[Any]) -> pa.RecordBatch:
    """Rows ``local`` (int64, each in ``[0, batch.num_rows)``) of ``batch``, copied."""
    result: pa.RecordBatch = _TAKE.call([batch, local], _UNCHECKED)
    return result
