"""Map results HF gives where arrowmix used to fail or differ: empty segments, removed names."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

import arrowmix as am

datasets = pytest.importorskip("datasets")

EMPTY = {
    "empty table": lambda b: pa.table({"y": pa.array([], pa.int64())}),
    "empty frame": lambda b: pd.DataFrame({"y": pd.Series([], dtype="int64")}),
    "empty lists": lambda b: {"y": []},
}


@pytest.mark.parametrize("batch_size", [1, 10, 1000])
@pytest.mark.parametrize("fn", EMPTY.values(), ids=EMPTY.keys())
def test_a_segment_whose_batches_return_no_rows_is_empty(tmp_path, fn, batch_size) -> None:
    am.write_chunks(pa.table({"x": list(range(30))}), str(tmp_path / "c"), rows_per_chunk=10)
    ours = am.Dataset.from_chunks(str(tmp_path / "c"))
    out = ours.map(fn, batched=True, batch_size=batch_size, remove_columns=["x"])
    theirs = datasets.Dataset.from_dict({"x": list(range(30))}).map(
        fn, batched=True, batch_size=batch_size, remove_columns=["x"]
    )
    assert len(out) == len(theirs) == 0
    if fn is not EMPTY["empty lists"]:  # HF keeps the removed column's name there
        assert out.column_names == theirs.column_names == ["y"]


def _both(rows: dict[str, list[Any]], fn: Any, **kw: Any) -> tuple[Any, Any]:
    ours = am.Dataset.from_dict(rows).map(fn, **kw)
    theirs = datasets.Dataset.from_dict(rows).map(fn, **kw)
    return ours, theirs


@pytest.mark.parametrize("batched", [False, True])
def test_a_returned_column_also_removed_keeps_its_place(batched) -> None:
    rows = {"a": [1, 2], "x": [3, 4], "w": [5, 6]}
    if batched:
        fn: Any = lambda b: {"x": [v * 2 for v in b["x"]], "z": b["a"]}  # noqa: E731
    else:
        fn = lambda r: {"x": r["x"] * 2, "z": r["a"]}  # noqa: E731
    ours, theirs = _both(rows, fn, batched=batched, remove_columns=["x", "a"])
    assert ours.column_names == theirs.column_names == ["x", "w", "z"]
    assert ours[:] == theirs[:]


def test_disable_nullable_false_is_hfs_default_and_accepted() -> None:
    """``disable_nullable=False`` (HF's default, passed by scripts that spell every argument)
    changes nothing; ``True`` is refused naming the argument."""
    ds = am.Dataset.from_dict({"x": [1, 2, 3]})
    out = ds.map(lambda b: {"y": [v * 2 for v in b["x"]]}, batched=True, disable_nullable=False)
    assert out["y"] == [2, 4, 6]
    with pytest.raises(TypeError, match="disable_nullable"):
        ds.map(lambda r: r, disable_nullable=True)
