"""``IterableDataset.batch(by_column=...)`` gives HF's batches, and resumes exactly."""

from __future__ import annotations

from typing import Any

import pytest

import arrowmix as am
from arrowmix._hf.iterable_runs import RunBatches
from arrowmix.stream import Stream, from_iterable
from arrowmix.testing import CheckpointRoundTripTests
from tests.hf.test_iterable_examples import assert_resumes_at_every_row

hf = pytest.importorskip("datasets")

DATA = {
    "id": list(range(1, 11)),
    "category": list("AABBBCBBBB"),
    "sub": list("XXYYZXYYYY"),
    "value": [10 * i for i in range(1, 11)],
}


def both(num_shards: int) -> tuple[Any, Any]:
    return (
        am.IterableDataset.from_dict(DATA, num_shards=num_shards),
        hf.IterableDataset.from_dict(DATA, num_shards=num_shards),
    )


@pytest.mark.parametrize("num_shards", [1, 3, 7])
@pytest.mark.parametrize("by", ["category", ["category", "sub"]])
def test_batch_by_column_is_hfs(num_shards, by):
    a, h = both(num_shards)
    ba, bh = a.batch(by_column=by), h.batch(by_column=by)
    assert list(ba) == list(bh)
    assert ba.features == bh.features
    for index in range(2 if num_shards > 1 else 0):  # HF's shard() needs the shards
        assert list(ba.shard(2, index)) == list(bh.shard(2, index))


def test_batch_by_column_formatted_and_refusals_are_hfs():
    a, h = both(2)
    fa = list(a.with_format("numpy").batch(by_column="category"))
    fh = list(h.with_format("numpy").batch(by_column="category"))
    assert [{k: (v.dtype, v.tolist()) for k, v in r.items()} for r in fa] == [
        {k: (v.dtype, v.tolist()) for k, v in r.items()} for r in fh
    ]
    for ds in (a, h):
        with pytest.raises(ValueError, match="misses `batch_size` or `by_column`"):
            ds.batch()
    with pytest.raises(ValueError, match="not in the dataset"):
        a.batch(by_column="nope")
    with pytest.raises(NotImplementedError, match="drop_last_batch"):
        a.batch(by_column="category", drop_last_batch=True)


def test_batch_by_column_resumes_at_every_row():
    assert_resumes_at_every_row(
        lambda: am.IterableDataset.from_dict(DATA, num_shards=3).batch(by_column="category")
    )


class TestRunBatches(CheckpointRoundTripTests):
    iterator_cls = RunBatches
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        rows = [{"k": (i // 3) % 4 + (i % 7 == 0), "i": i} for i in range(40)]
        return RunBatches(from_iterable(rows), ["k"])
