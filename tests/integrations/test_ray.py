"""Map/filter on Ray (``executor="ray"``) and the Ray Data conversions, on a local cluster."""

from __future__ import annotations

import os
import sys
import time

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import arrowmix as am

ray_module = pytest.importorskip("ray")
pytest.importorskip("ray.data")
cloudpickle = ray_module.cloudpickle

pytestmark = [
    pytest.mark.integration,
    # Ray Data warns about its own deprecated settings when it copies its context.
    pytest.mark.filterwarnings("ignore::DeprecationWarning:ray"),
]

# This module is imported by file path (pytest's importlib mode): Ray workers cannot import it,
# so its functions travel by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture
def ray(ray_session):
    return ray_session


@pytest.fixture
def chunked(tmp_path):
    rows = ({"n": i, "t": f"row{i}"} for i in range(40))
    am.write_chunks(rows, tmp_path / "c", rows_per_chunk=15)
    return am.Dataset.from_chunks(str(tmp_path / "c"))


def counting(log):
    """A map function that appends each row it computes to ``log`` (from any process)."""

    def fn(row):
        with open(log, "a") as f:
            f.write(f"{row['n']}\n")
        return {"sq": row["n"] ** 2, "pid": os.getpid()}

    return fn


def calls(log):
    if not os.path.exists(log):
        return []
    with open(log) as f:
        return sorted(int(x) for x in f.read().split())


def inodes(ds):
    return {f: os.stat(f).st_ino for f in ds.cache_files if "cache-" in os.path.basename(f)}


def test_map_on_ray_matches_local_and_runs_in_ray_workers(ray, chunked, small_segments, tmp_path):
    log = tmp_path / "log"
    out = chunked.map(counting(log), executor="ray")
    assert out["sq"] == [n * n for n in range(40)] and out["t"] == chunked["t"]
    assert calls(log) == list(range(40))
    assert os.getpid() not in set(out["pid"])
    local = chunked.map(counting(log), load_from_cache_file=False, num_proc=1)
    assert local.fingerprint == out.fingerprint and local.cache_files == out.cache_files
    assert local["sq"] == out["sq"] and set(local["pid"]) == {os.getpid()}


def test_a_ray_result_is_a_local_cache_hit_and_back(ray, chunked, small_segments, tmp_path):
    log = tmp_path / "log"
    out = chunked.map(counting(log), executor="ray")
    before = inodes(out)
    assert len(before) == 4
    hit = chunked.map(counting(log))  # local: nothing computed, files untouched
    assert calls(log) == list(range(40)) and inodes(hit) == before
    again = chunked.map(counting(log), executor="ray")  # a hit needs no task either
    assert calls(log) == list(range(40)) and inodes(again) == before


@pytest.mark.parametrize(("first", "second"), [(None, "ray"), ("ray", None)])
def test_resume_computes_only_missing_segments_across_executors(
    ray, chunked, small_segments, tmp_path, first, second
):
    log = tmp_path / "log"
    out = chunked.map(counting(log), executor=first)
    files = sorted(inodes(out))
    os.unlink(files[1])
    os.unlink(files[3])
    kept = {f: os.stat(f).st_ino for f in (files[0], files[2])}
    resumed = chunked.map(counting(log), executor=second)
    assert calls(log) == sorted([*range(40), *range(10, 20), *range(30, 40)])
    assert {f: os.stat(f).st_ino for f in kept} == kept
    assert resumed["sq"] == out["sq"] and resumed.fingerprint == out.fingerprint


def test_filter_on_ray_over_an_indexed_view(ray, chunked, small_segments):
    view = chunked.shuffle(seed=3)
    want = view.filter(lambda r: r["n"] % 3 == 0)
    got = view.filter(lambda r: r["n"] % 3 == 0, executor="ray", load_from_cache_file=False)
    assert got["n"] == want["n"] and sorted(got["n"]) == list(range(0, 40, 3))
    assert got.fingerprint == want.fingerprint


def test_batched_map_on_views_of_a_map_result(ray, chunked, small_segments):
    first = chunked.map(lambda r: {"sq": r["n"] ** 2})  # references the parent's columns
    view = first.rename_column("n", "m").select_columns(["sq", "m"])

    def add(batch, idx):
        return {"s": [a + b + i for a, b, i in zip(batch["sq"], batch["m"], idx, strict=True)]}

    kw = {"batched": True, "batch_size": 4, "with_indices": True}
    got = view.map(add, executor="ray", **kw)
    assert got["s"] == view.map(add, load_from_cache_file=False, **kw)["s"]
    assert got["s"] == [n * n + 2 * n for n in range(40)]


def test_in_memory_dataset_goes_through_the_object_store(ray, small_segments):
    ds = am.Dataset.from_dict({"x": list(range(40))})
    out = ds.map(lambda r: {"y": r["x"] + 1}, executor="ray", num_proc=1)
    assert out["y"] == list(range(1, 41)) and len(out.cache_files) == 4


def test_tasks_reopen_files_instead_of_receiving_data(ray, chunked, small_segments):
    from arrowmix._storage.mapped import TableRef
    from arrowmix.integrations.ray import _source

    src = _source(ray, chunked.map(lambda r: {"sq": r["n"]}))
    assert isinstance(src.table, TableRef)
    assert len(cloudpickle.dumps(src)) < 4096  # references, not the rows


def test_user_exception_keeps_type_and_row_note(ray, chunked, small_segments):
    def boom(row):
        if row["n"] == 25:
            raise KeyError("twenty-five")
        return {"ok": 1}

    with pytest.raises(KeyError, match="twenty-five") as e:
        chunked.map(boom, executor="ray")
    notes = e.value.__notes__
    assert any("on row 25" in n for n in notes) and any("Ray task" in n for n in notes)
    assert not [n for n in os.listdir(chunked.cache_dir) if n.endswith(".partial")]


def test_batched_filter_exception_names_the_batch(ray, chunked, small_segments):
    def boom(batch):
        if 33 in batch["n"]:
            raise ZeroDivisionError("thirty-three")
        return [True] * len(batch["n"])

    with pytest.raises(ZeroDivisionError, match="thirty-three") as e:
        chunked.filter(boom, batched=True, batch_size=4, executor="ray")
    assert any("on the batch of rows 32..35" in n for n in e.value.__notes__)  # batches of 4


def test_custom_executor_options(ray, chunked, small_segments):
    from arrowmix.integrations.ray import RayExecutor

    ex = RayExecutor(num_cpus=0.5, max_retries=0)
    out = chunked.filter(lambda b: [n < 5 for n in b["n"]], batched=True, executor=ex)
    assert out["n"] == [0, 1, 2, 3, 4] and "num_cpus" in repr(ex)


def test_to_ray_keeps_rows_and_order(ray, chunked):
    got = chunked.to_ray(rows_per_block=7)
    assert got.num_blocks() == 6
    assert got.take_all() == list(chunked)
    view = chunked.shuffle(seed=1).select(range(0, 40, 2))
    assert view.to_ray().take_all() == list(view)
    with pytest.raises(ValueError, match="rows_per_block"):
        chunked.to_ray(rows_per_block=0)


def doubled(table):
    return table.append_column("t2", pc.binary_join_element_wise(table["t"], table["t"], ""))


def test_from_ray_round_trip_is_content_addressed(ray, chunked):
    rd = chunked.to_ray(rows_per_block=7).map_batches(doubled, batch_format="pyarrow")
    back = am.Dataset.from_ray(rd)
    assert back["n"] == list(range(40)) and back["t2"] == [f"row{i}" * 2 for i in range(40)]
    assert all(os.path.exists(f) for f in back.cache_files)
    again = am.Dataset.from_ray(
        chunked.to_ray(rows_per_block=5).map_batches(doubled, batch_format="pyarrow")
    )
    assert again.cache_files == back.cache_files and again.fingerprint == back.fingerprint
    root = os.path.dirname(os.path.dirname(back.cache_files[0]))
    assert [n for n in os.listdir(root) if n.startswith("tmp-")] == []


def test_from_ray_of_an_empty_dataset(ray, tmp_path):
    empty = ray.data.from_arrow(pa.table({"x": pa.array([], pa.int64())}))
    out = am.Dataset.from_ray(empty, cache_dir=str(tmp_path / "r"))
    assert len(out) == 0 and out.column_names == ["x"]


def late_blocks_first(table):
    """The first block finishes last (when the workers are cold, Ray yields it last)."""
    time.sleep(0.3 if table["id"][0].as_py() == 0 else 0.0)
    return table.append_column("sq", pc.multiply(table["id"], table["id"]))


def test_from_ray_keeps_the_order_of_a_parallel_pipeline(ray, tmp_path):
    rds = ray.data.range(200, override_num_blocks=20).map_batches(
        late_blocks_first, batch_format="pyarrow"
    )
    out = am.Dataset.from_ray(rds, cache_dir=str(tmp_path / "r"))
    assert out["id"] == list(range(200)) and out["sq"] == [i * i for i in range(200)]


class RecordingRayDataset:
    """Stands for a ray.data.Dataset: records Ray's preserve_order flag when executed."""

    def __init__(self, ray):
        self.context = ray.data.DataContext.get_current().copy()
        self.context.execution_options.preserve_order = False
        self.seen = []

    def iter_batches(self, *, batch_size, batch_format):
        assert (batch_size, batch_format) == (None, "pyarrow")
        self.seen.append(self.context.execution_options.preserve_order)
        yield pa.table({"x": [1, 2]})
        yield pa.table({"x": [3]})


def test_from_ray_asks_ray_to_preserve_the_order(ray, tmp_path):
    fake = RecordingRayDataset(ray)
    out = am.Dataset.from_ray(fake, cache_dir=str(tmp_path / "r"))
    assert out["x"] == [1, 2, 3] and fake.seen == [True]
    assert fake.context.execution_options.preserve_order is False  # restored
