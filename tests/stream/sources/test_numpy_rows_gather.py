"""Numpy rows whose list columns are gathered straight out of storage.

A ``list<int*>`` column without nulls is copied out of the storage buffers into the block's
``int64`` (or ``dtype=``) arrays; every other column, and columns holding nulls, are taken
as Arrow rows and converted. The rows must be the same as ``ds.with_format("numpy")[i]``
gives, over views of every kind (range, selection, shuffle, filter), with any mix of
columns, and resume exactly from any step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._stream.sources.rows import ArrowSource
from arrowmix.stream import Stream
from arrowmix.testing import CheckpointRoundTripTests

N = 90


def mixed(n: int = N) -> pa.Table:
    """Columns of every kind: some gathered from storage, the others converted."""
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "ids": pa.array([list(range(i, i + i % 9)) for i in range(n)], pa.list_(pa.int32())),
            "wide": pa.array([[i * 10**12, -i] for i in range(n)], pa.list_(pa.int64())),
            "mask": pa.array([[1] * (i % 4) for i in range(n)], pa.list_(pa.uint8())),
            "long": pa.array([[i, 2 * i] for i in range(n)], pa.large_list(pa.int16())),
            "huge": pa.array([[2**62 + i] for i in range(n)], pa.list_(pa.uint64())),
            "holes": pa.array(
                [None if i % 11 == 3 else [i, None if i % 7 == 0 else i + 1] for i in range(n)],
                pa.list_(pa.int32()),
            ),
            "gaps": pa.array(
                [None if i % 6 == 1 else [i] * (i % 3) for i in range(n)], pa.list_(pa.int64())
            ),
            "score": pa.array([[i / 4] for i in range(n)], pa.list_(pa.float64())),
            "vec": pa.array([[i, i + 1] for i in range(n)], pa.list_(pa.int16(), 2)),
            "nested": pa.array(
                [[[i % 99], [i % 7]] for i in range(n)], pa.list_(pa.list_(pa.int8()))
            ),
            "n": pa.array([i % 300 for i in range(n)], pa.int16()),
            "text": [f"t{i}" for i in range(n)],
        }
    )


def same(ours: Any, want: Any, where: str) -> None:
    if want is None:
        assert ours is None, where
        return
    if not isinstance(want, (np.ndarray, np.generic)):  # a column left unformatted
        assert type(ours) is type(want) and ours == want, f"{where}: {ours!r} vs {want!r}"
        return
    a, b = np.asarray(ours), np.asarray(want)
    assert type(ours) is type(want), f"{where}: {ours!r} vs {want!r}"
    assert a.dtype == b.dtype and a.shape == b.shape, f"{where}: {a!r} vs {b!r}"
    if a.dtype.kind == "f":
        assert np.array_equal(a, b, equal_nan=True), f"{where}: {a!r} vs {b!r}"
    elif a.dtype == object:
        for k, (x, y) in enumerate(zip(ours, want, strict=True)):
            same(x, y, f"{where}[{k}]")
    else:
        assert np.array_equal(a, b), f"{where}: {a!r} vs {b!r}"


VIEWS: dict[str, Callable[[am.Dataset], am.Dataset]] = {
    "whole": lambda d: d,
    "range": lambda d: d.select(range(13, 71)),
    "selection": lambda d: d.select([5, 88, 5, 0, 41, 40, 39, 77]),
    "shuffle": lambda d: d.shuffle(seed=3),
    "shuffled range": lambda d: d.shuffle(seed=4).select(range(7, 60)),
    "filter": lambda d: d.filter(lambda r: r["id"] % 3 != 1),
}

FORMATS: dict[str, dict[str, Any]] = {
    "hf dtypes": {},
    "dtype int64": {"dtype": np.int64},
    "dtype float64": {"dtype": np.float64},
    "dtype int32": {"dtype": np.int32},
    "some columns": {"columns": ["ids", "wide", "text"], "output_all_columns": True},
    "only ids": {"columns": ["ids", "id"]},
}


def check_rows(view: am.Dataset, fmt: dict[str, Any], **stream: Any) -> list[dict[str, Any]]:
    """The stream's rows of ``view``, each checked against the view's own numpy row."""
    base = view.with_format("numpy", **fmt)
    want = {int(base[i]["id"]): base[i] for i in range(len(base))}
    kw: dict[str, Any] = {"shuffle": "chunks", "seed": 2, "infinite": False, **stream}
    rows = list(base.to_stream(**kw))
    assert sorted(int(r["id"]) for r in rows) == sorted(int(k) for k in view["id"])
    for k, row in enumerate(rows):
        ref = want[int(row["id"])]
        assert list(row) == list(ref), f"row {k}"
        for name in row:
            same(row[name], ref[name], f"row {k} ({int(row['id'])}) column {name!r}")
    return rows


@pytest.mark.parametrize("fmt", FORMATS.values(), ids=FORMATS.keys())
@pytest.mark.parametrize("view", VIEWS.values(), ids=VIEWS.keys())
def test_rows_equal_the_views_numpy_rows(view: Any, fmt: dict[str, Any]) -> None:
    ds = am.Dataset(pa.concat_tables([mixed().slice(0, 40), mixed().slice(40)]))
    if "dtype" in fmt:  # a null id cast to an integer dtype is numpy's undefined value
        ds = ds.remove_columns(["holes"])
    if fmt.get("dtype") in (np.int32, np.int64):  # 0.25 as an integer raises (not truncated)
        ds = ds.remove_columns(["score"])
    if fmt.get("dtype") == np.int32:  # int32 cannot hold the wide values: leave them out
        ds = ds.remove_columns(["wide", "huge"])
    check_rows(view(ds), fmt)


def test_rows_over_chunk_files(tmp_path: Any) -> None:
    am.write_chunks(mixed(), str(tmp_path / "c"), rows_per_chunk=17)
    ds = am.Dataset.from_chunks(str(tmp_path / "c"))
    for view in VIEWS.values():
        check_rows(view(ds), {})


def test_a_narrow_dtype_still_refuses_values_it_cannot_hold() -> None:
    ds = am.Dataset(mixed()).with_format("numpy", dtype=np.int8)
    with pytest.raises(OverflowError, match="'wide'"):
        list(ds.select_columns(["id", "wide"]).to_stream(shuffle=None, infinite=False))


def test_rows_are_writable_copies_of_their_own() -> None:
    ds = am.Dataset(mixed()).select_columns(["id", "ids"])
    rows = list(ds.with_format("numpy").to_stream(shuffle=None, infinite=False))
    for row in rows:
        row["ids"][:] = -1  # no other row, and not the dataset, sees this
    again = list(ds.with_format("numpy").to_stream(shuffle=None, infinite=False))
    assert [r["ids"].tolist() for r in again] == [list(range(i, i + i % 9)) for i in range(N)]
    assert all((r["ids"] == -1).all() for r in rows)


class TestGatheredRowsRoundTrip(CheckpointRoundTripTests):
    """Resume at every step, mid-block, over a shuffled selection of mixed columns.

    (No null ids: NaN is not equal to itself in the harness's comparison.)
    """

    iterator_cls = ArrowSource
    seeded = True
    picklable = True

    def make_iterator(self, seed: int = 0, n: int = 1, r: int = 0) -> Stream[Any]:
        ds = am.Dataset(mixed(150)).shuffle(seed=1).select(range(10, 140))
        fmt = ds.select_columns(["id", "ids", "gaps", "mask", "text"]).with_format("numpy")
        return fmt.to_stream(
            shuffle="chunks", seed=seed, infinite=False, num_instances=n, instance_rank=r
        )

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        return self.make_iterator(seed=3, n=num_instances, r=instance_rank)

    def units(self, item: Any) -> list[Any]:
        return [int(item["id"])]


def test_a_block_ending_in_an_empty_row_of_a_column_with_null_ids() -> None:
    t = pa.table({"h": pa.array([[1, None], [2], None, []], pa.list_(pa.int32()))})
    ds = am.Dataset(t).with_format("numpy")
    rows = list(ds.to_stream(shuffle=None, infinite=False))
    for i, row in enumerate(rows):
        same(row["h"], ds[i]["h"], f"row {i}")
    assert rows[0]["h"].dtype == np.float32 and rows[1]["h"].dtype == np.int64
