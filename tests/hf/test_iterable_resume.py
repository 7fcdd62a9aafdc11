"""``IterableDataset.state_dict`` resumes exactly at every row, a shuffle buffer included.

HF's iterable dataset drops its shuffle buffer on resume (and refills it with new rows); the
arrowmix one replays the open window, so a checkpoint taken anywhere gives exactly the rows
an uninterrupted run gives. A checkpoint travels as JSON into a freshly built dataset, as it
would into a new process. The stages themselves go through the shared round-trip suite.
"""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest

import arrowmix as am
from arrowmix._hf.interleave_stream import HFInterleave
from arrowmix._hf.iterable_calls import (
    FilterBatches,
    FilterRows,
    MapBatches,
    MapRows,
    hf_filter,
    hf_map,
)
from arrowmix._hf.iterable_stages import ColumnOp, EveryNth, FormatRows, RepeatRows, SkipRows
from arrowmix.stream import Stream, from_iterable
from arrowmix.testing import CheckpointRoundTripTests

N = 41


def base(n_shards=3, n=N, offset=0):
    data = {"a": list(range(offset, offset + n)), "t": [f"s{i}" for i in range(n)]}
    return am.Dataset.from_dict(data).to_iterable_dataset(num_shards=n_shards)


def times_ten(row):
    return {"b": row["a"] * 10}


def keep_batch(batch):
    return [a % 3 != 0 for a in batch["a"]]


PIPELINES = {
    "plain": lambda: base(),
    "map_filter": lambda: base().map(times_ten).filter(lambda r: r["a"] % 4 != 1),
    "map_batched_more_rows": lambda: base().map(
        lambda b: {"a": b["a"] * 2}, batched=True, batch_size=5, remove_columns="t"
    ),
    "filter_batched": lambda: base().filter(keep_batch, batched=True, batch_size=7),
    "skip_take": lambda: base().skip(5).take(20),
    "batch": lambda: base().batch(6),
    "repeat_shuffled": lambda: base(n=9).shuffle(seed=0, buffer_size=4).repeat(3),
    "shuffle": lambda: base().shuffle(seed=3, buffer_size=8),
    "shuffle_map_batch": lambda: base(5).shuffle(seed=1, buffer_size=10).map(times_ten).batch(3),
    "map_shuffle_filter": lambda: (
        base().map(times_ten).shuffle(seed=7, buffer_size=6).filter(lambda r: r["a"] % 2 == 0)
    ),
    "interleave": lambda: am.interleave_datasets(
        [base(2, 17), base(3, 9, 100), base(1, 12, 200)], probabilities=[0.5, 0.2, 0.3], seed=4
    ),
    "interleave_all_exhausted_shuffled": lambda: am.interleave_datasets(
        [base(2, 17).shuffle(seed=2, buffer_size=4), base(3, 9, 100)],
        stopping_strategy="all_exhausted",
    ),
    "node_examples": lambda: am.split_dataset_by_node(base(3), rank=1, world_size=2),
    "torch": lambda: base().with_format("torch").map(times_ten),
}


def values(rows: list[Any]) -> list[Any]:
    return [repr(r) for r in rows]  # tensors compare by their repr (dtype and values)


@pytest.mark.parametrize("epoch", [0, 2])
@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_resume_at_every_row(name, epoch):
    make = PIPELINES[name]
    ref = make()
    ref.set_epoch(epoch)
    want = values(list(ref))
    assert want
    for k in range(len(want) + 1):
        ds = make()
        ds.set_epoch(epoch)
        it = iter(ds)
        head = [next(it) for _ in range(k)]
        state = json.loads(json.dumps(ds.state_dict()))
        again = make()
        again.set_epoch(epoch)
        again.load_state_dict(state)
        assert values(head) + values(list(again)) == want, f"resumed after {k} rows"


def test_shuffle_is_a_permutation_that_changes_with_seed_and_epoch():
    rows = [r["a"] for r in base().shuffle(seed=0, buffer_size=10)]
    assert sorted(rows) == list(range(N)) and rows != list(range(N))
    assert rows == [r["a"] for r in base().shuffle(seed=0, buffer_size=10)]
    assert rows != [r["a"] for r in base().shuffle(seed=1, buffer_size=10)]
    ds = base().shuffle(seed=0, buffer_size=10)
    orders = []
    for epoch in (0, 1, 2, 1):
        ds.set_epoch(epoch)
        orders.append([r["a"] for r in ds])
    assert orders[0] == rows and orders[1] == orders[3]
    assert len({tuple(o) for o in orders}) == 3
    assert all(sorted(o) == list(range(N)) for o in orders)


def test_a_state_of_another_epoch_starts_that_epoch_over():
    """As in HF: a checkpoint of epoch 0 is ignored once the dataset reads epoch 1."""
    ds = base().shuffle(seed=0, buffer_size=5)
    it = iter(ds)
    next(it)
    state = ds.state_dict()
    ds.set_epoch(1)
    ds.load_state_dict(state)
    fresh = base().shuffle(seed=0, buffer_size=5)
    fresh.set_epoch(1)
    assert [r["a"] for r in ds] == [r["a"] for r in fresh]


def test_state_before_iteration_and_pickled_dataset():
    ds = base().map(times_ten)
    assert ds.state_dict() == {"epoch": 0, "stream": None}
    it = iter(ds)
    [next(it) for _ in range(4)]
    state = ds.state_dict()
    copy = pickle.loads(pickle.dumps(ds))  # a DataLoader worker's copy: no live stream
    copy.load_state_dict(state)
    assert [r["a"] for r in copy] == list(range(4, N))


def test_loading_into_another_pipeline_is_refused():
    ds = base().map(times_ten)
    it = iter(ds)
    next(it)
    other = base().map(lambda r: {"b": r["a"] * 11})
    other.load_state_dict(ds.state_dict())
    with pytest.raises(am.exceptions.StateError, match="different pipeline"):
        next(iter(other))


# ------------------------------------------------------------ the stages, one by one
def rows(n: int = 40) -> Stream[Any]:
    return from_iterable([{"a": i, "t": f"s{i}"} for i in range(n)])


def plus_index(row: dict[str, Any], idx: int) -> dict[str, Any]:
    return {"i": idx}


def grow(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
    return {"a": batch["a"] + batch["a"]}


def even_mask(batch: dict[str, list[Any]]) -> list[bool]:
    return [a % 2 == 0 for a in batch["a"]]


def odd(row: dict[str, Any], idx: int) -> bool:
    return idx % 2 == 1


class TestMapRows(CheckpointRoundTripTests):
    iterator_cls = MapRows
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        return hf_map(rows(), plus_index, with_indices=True)


class TestMapBatches(CheckpointRoundTripTests):
    iterator_cls = MapBatches
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        return hf_map(rows(), grow, batched=True, batch_size=6, remove_columns=["t"])


class TestFilterRows(CheckpointRoundTripTests):
    iterator_cls = FilterRows
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        return hf_filter(rows(), odd, with_indices=True)


class TestFilterBatches(CheckpointRoundTripTests):
    iterator_cls = FilterBatches
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        return hf_filter(rows(), even_mask, batched=True, batch_size=7)


class TestSkipRows(CheckpointRoundTripTests):
    iterator_cls = SkipRows
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        return SkipRows(rows(), 13)


class TestEveryNth(CheckpointRoundTripTests):
    iterator_cls = EveryNth
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        return EveryNth(rows(41), 3, 2)


class TestColumnOp(CheckpointRoundTripTests):
    iterator_cls = ColumnOp
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        return ColumnOp(rows(), "rename", {"a": "z"})


class TestFormatRows(CheckpointRoundTripTests):
    iterator_cls = FormatRows
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        return FormatRows(ColumnOp(rows(), "select", ["a"]), "numpy")


class TestHFInterleave(CheckpointRoundTripTests):
    iterator_cls = HFInterleave
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        streams = [from_iterable(range(100 * i, 100 * i + n)) for i, n in enumerate([9, 4, 7])]
        return HFInterleave(
            streams, probabilities=[0.3, 0.3, 0.4], seeds=[5], stopping_strategy="all_exhausted"
        )


class TestRepeatRows(CheckpointRoundTripTests):
    iterator_cls = RepeatRows
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        return RepeatRows(rows(9), 4)


@pytest.mark.parametrize("epoch", [-5, "0", None, True])
def test_a_state_whose_epoch_is_not_an_epoch_is_refused(epoch):
    ds = am.Dataset.from_dict({"x": list(range(20))})
    it = ds.to_iterable_dataset(num_shards=4)
    rows = iter(it)
    _ = [next(rows) for _ in range(3)]
    state = json.loads(json.dumps(it.state_dict()))
    state["epoch"] = epoch  # otherwise the next pass would silently start over at row 0
    with pytest.raises(ValueError, match=r"`epoch` must be an int >= 0, got"):
        ds.to_iterable_dataset(num_shards=4).load_state_dict(state)
