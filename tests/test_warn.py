"""Warnings point at the user's line, however deep in arrowmix they are raised."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from arrowmix import Dataset
from arrowmix._stream.row_source import TableRowSource
from arrowmix._stream.sources.rows import ArrowSource
from arrowmix._warn import warn
from arrowmix.exceptions import DroppedDataWarning, FingerprintWarning


def test_a_warning_from_arrowmix_code_points_here() -> None:
    with pytest.warns(UserWarning, match="deep") as got:
        warn("deep")  # the call site is this test file, outside the package
    assert got[0].filename == __file__


def test_extra_moves_the_warning_out_by_frames() -> None:
    def library_wrapper() -> int:
        warn("from a wrapper", extra=1)
        return 0

    with pytest.warns(UserWarning, match="wrapper") as got:
        line = _caller_line(library_wrapper)
    assert (got[0].filename, got[0].lineno) == (__file__, line)


def _caller_line(fn: object) -> int:
    import inspect

    line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
    fn()  # type: ignore[operator]
    return line


def test_map_fingerprint_warning_points_at_the_users_map_call() -> None:
    ds = Dataset.from_dict({"a": [1, 2, 3]})
    lock = __import__("threading").Lock()
    with pytest.warns(FingerprintWarning) as got:
        ds.map(lambda r: {"b": r["a"] + (0 if lock else 1)})
    assert got[0].filename == __file__


def test_stream_warning_points_at_the_users_loop() -> None:
    lengths = np.random.default_rng(0).zipf(1.4, 400).clip(1, 64)
    rows = TableRowSource(pa.table({"n": lengths}), chunk_rows=256)
    s = ArrowSource(rows, seed=1, infinite=False).budget_bucket(
        "n", 64, 40, num_instances=4, instance_rank=0, seed=3
    )
    with pytest.warns(DroppedDataWarning) as got:
        list(s)  # the warning is raised inside the stage, several frames down
    assert got[0].filename == __file__
