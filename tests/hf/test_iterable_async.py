"""``IterableDataset.map``/``filter`` of ``async`` functions: HF's rows, calls run concurrently."""

from __future__ import annotations

import asyncio
import gc
import warnings
from typing import Any

import pytest

import arrowmix as am
from arrowmix._hf.iterable_async import FilterConcurrent, MapBatchesConcurrent, MapConcurrent
from arrowmix._hf.iterable_calls import hf_filter, hf_map
from arrowmix.stream import Stream, from_iterable
from arrowmix.testing import CheckpointRoundTripTests
from tests.hf.test_iterable_examples import assert_resumes_at_every_row

hf = pytest.importorskip("datasets")


async def double(row: dict[str, Any]) -> dict[str, Any]:
    await asyncio.sleep(0)
    return {"y": row["x"] * 2}


async def every_seventh(row: dict[str, Any], idx: int) -> bool:
    await asyncio.sleep(0)
    return idx % 7 == 0


async def plus_one(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
    await asyncio.sleep(0)
    return {"y": [x + 1 for x in batch["x"]]}


async def plus_one_indexed(batch: dict[str, list[Any]], idx: list[int]) -> dict[str, list[Any]]:
    await asyncio.sleep(0)
    return {"y": [x + 1 for x in batch["x"]], "i": idx}


async def at_once(row: dict[str, Any], state: dict[str, int]) -> dict[str, Any]:
    state["running"] += 1
    state["most"] = max(state["most"], state["running"])
    await asyncio.sleep(0)
    state["running"] -= 1
    return {}


async def at_once_batched(batch: dict[str, list[Any]], state: dict[str, int]) -> dict[str, Any]:
    return await at_once(batch, state)


def pipelines(lib: Any) -> dict[str, Any]:
    ds = lib.Dataset.from_dict({"x": list(range(30))}).to_iterable_dataset(num_shards=3)
    return {
        "map": ds.map(double, remove_columns="x"),
        "filter": ds.filter(every_seventh, with_indices=True),
        "batched": ds.map(plus_one, batched=True, batch_size=4),
        "filter_then_map": ds.filter(every_seventh, with_indices=True).map(double),
        "batched_drop_last": ds.map(
            plus_one_indexed, batched=True, batch_size=4, drop_last_batch=True, with_indices=True
        ),
    }


NAMES = ["map", "filter", "batched", "filter_then_map", "batched_drop_last"]


@pytest.fixture(scope="module")
def hf_rows() -> dict[str, list[Any]]:
    """HF's rows of each pipeline (HF leaves its event loops open: they are closed here)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        rows = {name: list(ds) for name, ds in pipelines(hf).items()}
        gc.collect()
    return rows


@pytest.mark.parametrize("name", NAMES)
def test_async_functions_give_hfs_rows(name, hf_rows):
    assert list(pipelines(am)[name]) == hf_rows[name]


def test_async_calls_run_concurrently():
    state = {"running": 0, "most": 0}
    ds = am.Dataset.from_dict({"x": list(range(50))}).to_iterable_dataset()
    assert len(list(ds.map(at_once, fn_kwargs={"state": state}))) == 50
    assert state["most"] == 50
    state = {"running": 0, "most": 0}
    batched = ds.map(at_once_batched, batched=True, batch_size=4, fn_kwargs={"state": state})
    assert len(list(batched)) == 50
    assert state["most"] == 13  # every batch of the 50 rows


@pytest.mark.parametrize("name", ["map", "filter_then_map"])
def test_async_map_resumes_at_every_row(name):
    assert_resumes_at_every_row(lambda: pipelines(am)[name])


def test_async_map_inside_a_running_event_loop(hf_rows):
    async def main() -> list[Any]:
        return list(pipelines(am)["map"])

    assert asyncio.run(main()) == hf_rows["map"]


def rows(n: int = 40) -> Stream[Any]:
    return from_iterable([{"x": i} for i in range(n)])


class TestMapConcurrent(CheckpointRoundTripTests):
    iterator_cls = MapConcurrent
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        stage = hf_map(rows(), double)
        stage.batch_size = 6  # small windows: resumes land inside and between them
        return stage


class TestFilterConcurrent(CheckpointRoundTripTests):
    iterator_cls = FilterConcurrent
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        stage = hf_filter(rows(), every_seventh, with_indices=True)
        stage.batch_size = 5
        return stage


def grow(batch: dict[str, list[Any]], idx: list[int]) -> dict[str, list[Any]]:
    return {"x": batch["x"] + idx}


async def grow_async(batch: dict[str, list[Any]], idx: list[int]) -> dict[str, list[Any]]:
    return grow(batch, idx)


class TestMapBatchesConcurrent(CheckpointRoundTripTests):
    iterator_cls = MapBatchesConcurrent
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        stage = hf_map(rows(41), grow_async, batched=True, batch_size=3, with_indices=True)
        stage.batch_size = 9  # windows of three batches: resumes land inside and between them
        return stage
