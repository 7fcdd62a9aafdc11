"""Streams of numpy rows: ``ds.with_format("numpy").to_stream()``.

Rows as HF ``datasets``' numpy format gives them (list columns as ``int64``/``float32`` arrays,
scalars as numpy scalars, strings as ``str``), in the plain stream's order, with its state.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._stream.row_source import TableRowSource
from arrowmix._stream.sources import NumpyRows
from arrowmix._stream.sources.rows import ArrowSource
from arrowmix.stream import Stream
from arrowmix.testing import CheckpointRoundTripTests


def corpus(n: int = 60) -> pa.Table:
    ids = [None if i % 13 == 5 else list(range(i, i + i % 7)) for i in range(n)]
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "input_ids": pa.array(ids, pa.list_(pa.int32())),
            "mask": pa.array([[1] * (i % 4) for i in range(n)], pa.list_(pa.uint8())),
            "score": pa.array([[i / 4, -i] for i in range(n)], pa.list_(pa.float64())),
            "half": pa.array([[i / 2] for i in range(n)], pa.list_(pa.float16())),
            "vec": pa.array([[i, i + 1] for i in range(n)], pa.list_(pa.int16(), 2)),
            "n": pa.array([i % 300 for i in range(n)], pa.int16()),
            "w": pa.array([i / 8 for i in range(n)], pa.float32()),
            "text": [f"t{i}" for i in range(n)],
        }
    )


def same_value(ours: Any, theirs: Any, where: str) -> None:
    if theirs is None:
        assert ours is None, where
        return
    a, b = np.asarray(ours), np.asarray(theirs)
    assert a.dtype == b.dtype and a.shape == b.shape, f"{where}: {a!r} vs HF {b!r}"
    assert np.array_equal(a, b), f"{where}: {a!r} vs HF {b!r}"
    assert isinstance(ours, np.ndarray) == (np.ndim(theirs) > 0), where


def test_rows_match_hf_numpy_rows() -> None:
    datasets = pytest.importorskip("datasets")
    t = corpus()
    hf = datasets.Dataset(t).with_format("numpy")
    rows = list(am.Dataset(t).with_format("numpy").to_stream(shuffle=None, infinite=False))
    assert len(rows) == len(t)
    for i, row in enumerate(rows):
        want = hf[i]
        assert list(row) == list(want)
        for k in row:
            same_value(row[k], want[k], f"row {i} column {k}")
        assert type(row["text"]) is type(want["text"]) is np.str_  # a str, as HF gives it


def test_order_and_state_are_the_plain_streams() -> None:
    ds = am.Dataset(corpus(2500))  # three blocks of 1,024 rows
    kw: dict[str, Any] = {"shuffle": "global", "seed": 4, "infinite": False}
    plain, fmt = ds.to_stream(**kw), ds.with_format("numpy").to_stream(**kw)
    for _ in range(1500):
        a, b = next(plain), next(fmt)
        assert a["id"] == b["id"]
        assert (a["input_ids"] is None and b["input_ids"] is None) or a["input_ids"] == b[
            "input_ids"
        ].tolist()
    # the same position and layout; the fingerprints differ, as the views' do (with_format)
    a_state, b_state = plain.state_dict(), fmt.state_dict()
    assert a_state["state"] == b_state["state"] and a_state["format"] == b_state["format"]
    resumed = ds.with_format("numpy").to_stream(**kw)
    resumed.load_state_dict(b_state)
    rest = list(resumed)
    assert [r["id"] for r in rest] == [r["id"] for r in plain]
    assert all(isinstance(r["score"], np.ndarray) for r in rest)


def test_a_blocks_ids_are_one_copy_and_rows_are_views_of_it() -> None:
    rows = NumpyRows()(corpus(30).slice(3, 20))  # a sliced block: offsets start mid-buffer
    arrays = [r["input_ids"] for r in rows if r["input_ids"] is not None and len(r["input_ids"])]
    owner = arrays[0].base
    assert owner is not None and owner.flags.owndata and owner.flags.writeable
    assert all(a.base is owner for a in arrays)
    assert [r["id"] for r in rows] == list(range(3, 23))
    assert rows[0]["input_ids"].tolist() == list(range(3, 6))


def test_format_columns_and_kwargs() -> None:
    ds = am.Dataset(corpus(10))
    row = next(iter(ds.with_format("numpy", columns=["input_ids"]).to_stream(shuffle=None)))
    assert list(row) == ["input_ids"] and row["input_ids"].dtype == np.int64
    row = next(
        iter(
            ds.with_format("numpy", columns=["input_ids"], output_all_columns=True).to_stream(
                shuffle=None
            )
        )
    )
    assert isinstance(row["input_ids"], np.ndarray) and row["mask"] == []
    ints = ds.remove_columns(["score", "half"])  # 0.25 as int32 raises (numpy_format_overflow)
    row = next(iter(ints.with_format("numpy", dtype=np.int32).to_stream(shuffle=None)))
    assert row["input_ids"] is not None and row["vec"].dtype == np.int32


def test_numpy_rows_through_a_shuffle_buffer() -> None:
    ds = am.Dataset(corpus(80))
    kw: dict[str, Any] = {"shuffle": "global", "seed": 1, "infinite": False}
    plain = [r["id"] for r in ds.to_stream(**kw).shuffle(16, seed=2)]
    rows = list(ds.with_format("numpy").to_stream(**kw).shuffle(16, seed=2))
    assert [r["id"] for r in rows] == plain
    assert all(isinstance(r["score"], np.ndarray) for r in rows)


def test_format_enters_the_fingerprint_only_when_set() -> None:
    src = TableRowSource(corpus(10))
    assert "format" not in ArrowSource(src).describe()
    assert ArrowSource(src, row_format=NumpyRows()).describe()["format"] == {"type": "numpy"}


class TestNumpyRowsRoundTrip(CheckpointRoundTripTests):
    iterator_cls = ArrowSource
    seeded = True
    picklable = True

    def make_iterator(self, seed: int = 0, n: int = 1, r: int = 0) -> Stream[Any]:
        src = TableRowSource(corpus(90), chunk_rows=16)
        return ArrowSource(
            src,
            shuffle="chunks",
            seed=seed,
            infinite=False,
            block_rows=7,
            row_format=NumpyRows(),
            num_instances=n,
            instance_rank=r,
        ).shuffle(9, seed=seed)

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        return self.make_iterator(seed=3, n=num_instances, r=instance_rank)

    def units(self, item: Any) -> list[Any]:
        return [int(item["id"])]


def test_buckets_on_a_column_keep_the_format() -> None:
    ds = am.Dataset(corpus(80))
    kw: dict[str, Any] = {"shuffle": "global", "seed": 1, "infinite": False}
    bucket: dict[str, Any] = {"batch_size": 4, "read_ahead": 16, "seed": 0}
    plain = list(ds.to_stream(**kw).bucket("n", **bucket))
    batches = list(ds.with_format("numpy").to_stream(**kw).bucket("n", **bucket))
    assert [[r["id"] for r in b] for b in batches] == [[r["id"] for r in b] for b in plain]
    assert all(isinstance(r["mask"], np.ndarray) for b in batches for r in b)
    toks = am.Dataset.from_dict({"ids": [[i] * (i % 5 + 1) for i in range(40)]})
    budget = toks.with_format("numpy").to_stream(**kw).budget_bucket("ids", budget=8, read_ahead=16)
    rows = [r for b in budget for r in b]
    assert len(rows) == 40 and all(r["ids"].tolist() == [r["ids"][0]] * len(r["ids"]) for r in rows)
    assert all(isinstance(r["ids"], np.ndarray) and r["ids"].dtype == np.int64 for r in rows)


def test_a_row_format_of_the_users_own_needs_only_call_and_describe() -> None:
    """``from_row_source(row_format=...)`` takes any object with ``__call__(table)`` and
    ``describe()``; the storage-reading ``reader`` is optional."""
    from arrowmix.stream import from_row_source

    class Tens:
        def __call__(self, table: pa.Table) -> list[Any]:
            return [{"x": v * 10} for v in table.column("x").to_pylist()]

        def describe(self) -> dict[str, Any]:
            return {"tens": 1}

    src = TableRowSource(pa.table({"x": [1, 2, 3]}))
    s = from_row_source(src, shuffle=None, infinite=False, row_format=Tens())
    assert [r["x"] for r in s] == [10, 20, 30]
