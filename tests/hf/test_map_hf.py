"""map/filter follow HF ``datasets``'s semantics for what a function returns and receives."""

from __future__ import annotations

import asyncio
import logging
import os
from itertools import chain

import numpy as np
import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix.exceptions import SchemaMismatchError, WorkerDiedError

WORDS = ["a", "bb", "ccc", "dddd"]


@pytest.fixture
def texts():
    rows = [" ".join(WORDS[: i % 4 + 1] * (i % 7 + 1)) for i in range(2500)]
    return am.Dataset.from_dict({"text": rows, "meta": list(range(2500))})


def tokenize(batch):  # run_clm's idiom: mutate the batch and return it
    batch["input_ids"] = [[len(w) for w in t.split()] for t in batch["text"]]
    return batch


def group_texts(examples, block=32):
    joined = {k: list(chain(*examples[k])) for k in examples}
    total = len(joined[next(iter(examples.keys()))]) // block * block
    return {k: [v[i : i + block] for i in range(0, total, block)] for k, v in joined.items()}


def test_returned_input_batch_still_drops_removed_columns(texts, small_segments):
    tok = texts.map(tokenize, batched=True, remove_columns=["text", "meta"])
    assert tok.column_names == ["input_ids"]
    grouped = tok.map(group_texts, batched=True)
    # HF's count: every batch of 1000 rows (segments follow batch boundaries) loses its rest.
    lengths = [len(t.split()) for t in texts["text"]]
    expected = sum(sum(lengths[lo : lo + 1000]) // 32 for lo in range(0, 2500, 1000))
    assert len(grouped) == expected
    assert all(len(ids) == 32 for ids in grouped["input_ids"])


def test_returned_input_row_drops_removed_and_deleted_columns():
    ds = am.Dataset.from_dict({"a": [0, 1, 2, 3], "b": ["w", "x", "y", "z"]})

    def f(row):
        row["c"] = row["a"] * 10
        return row

    assert ds.map(f, remove_columns=["a"])[:] == {"b": ["w", "x", "y", "z"], "c": [0, 10, 20, 30]}

    def g(row):
        del row["b"]
        row["a"] = -row["a"]
        return {"d": 1}  # the deletion and the assignment still count, as in HF

    assert ds.map(g)[:] == {"a": [0, -1, -2, -3], "d": [1, 1, 1, 1]}
    # A new dict that returns a removed column keeps it, in its place (as HF).
    assert ds.map(lambda r: {"a": r["a"] + 1}, remove_columns=["a"]).column_names == ["a", "b"]


def test_struct_changed_in_place_is_stored():
    ds = am.Dataset.from_dict({"a": [{"b": 0}, {"b": 1}]})

    def f(row):
        row["a"]["c"] = row["a"]["b"] * 2
        return row

    assert ds.map(f)["a"] == [{"b": 0, "c": 0}, {"b": 1, "c": 2}]

    def g(row):  # changed in place, not returned: HF keeps the change
        row["a"]["c"] = -1
        return {"x": 1} if row["a"]["b"] else {}

    assert ds.map(g)["a"] == [{"b": 0, "c": -1}, {"b": 1, "c": -1}]
    out = ds.map(lambda r: {"a": r["a"]["b"]} if r["a"]["b"] else r, remove_columns="a")
    assert out["a"] == [None, 1]  # removed where the input came back, returned elsewhere


def test_rows_returning_some_columns_fill_inputs_then_nulls():
    ds = am.Dataset.from_dict({"a": [0, 1, 2, 3]})
    out = ds.map(lambda r: {"a": -1} if r["a"] < 2 else {})
    assert out["a"] == [-1, -1, 2, 3]
    out = ds.map(lambda r: {"b": r["a"]} if r["a"] % 2 else {})
    assert out["b"] == [None, 1, None, 3]


def test_row_column_first_returned_after_the_first_block_raises_clearly():
    ds = am.Dataset.from_dict({"a": list(range(1100))})
    with pytest.raises(SchemaMismatchError, match=r"must appear in the first block \(1024 rows\)"):
        ds.map(lambda r: {"b": 1} if r["a"] > 1050 else {})


def test_async_map_and_filter_are_awaited_concurrently():
    ds = am.Dataset.from_dict({"x": list(range(100))})
    waiting = {"now": 0, "most": 0}

    async def wait():
        waiting["now"] += 1
        waiting["most"] = max(waiting["most"], waiting["now"])
        await asyncio.sleep(0.01)
        waiting["now"] -= 1

    async def add(row):
        await wait()
        return {"y": row["x"] + 1}

    async def keep(row):
        await wait()
        return row["x"] == 42

    async def keep_batch(batch):
        await wait()
        return [x % 10 == 0 for x in batch["x"]]

    assert ds.map(add)["y"] == list(range(1, 101))
    assert waiting["most"] > 1  # calls overlap: awaited concurrently, not one after another
    waiting["most"] = 0
    assert ds.filter(keep)["x"] == [42]  # the awaited value decides, not the coroutine
    assert waiting["most"] > 1
    waiting["most"] = 0
    assert ds.filter(keep_batch, batched=True, batch_size=10)["x"] == list(range(0, 100, 10))
    assert waiting["most"] > 1


def test_async_errors_keep_type_and_name_the_row():
    ds = am.Dataset.from_dict({"x": [1, 2, 3]})

    async def boom(row):
        if row["x"] == 2:
            raise KeyError("nope")
        return {"y": 1}

    with pytest.raises(KeyError) as e:
        ds.map(boom)
    assert any("row 1" in n for n in e.value.__notes__)


def test_async_map_inside_a_running_event_loop():
    ds = am.Dataset.from_dict({"x": [1, 2]})

    async def double(batch):
        return {"y": [x * 2 for x in batch["x"]]}

    async def main():  # a notebook's situation
        return ds.map(double, batched=True)["y"]

    assert asyncio.run(main()) == [2, 4]


def test_batched_table_is_the_whole_output():
    ds = am.Dataset.from_dict({"x": [1, 2, 3]})
    out = ds.map(lambda b: pa.table({"y": [v * 2 for v in b["x"]]}), batched=True)
    assert out[:] == {"y": [2, 4, 6]}
    both = ds.map(lambda b: pa.table({"y": b["x"], "x": b["x"]}), batched=True, remove_columns="x")
    assert both.column_names == ["y", "x"]  # a returned table is kept whole, as in HF
    fmt = ds.with_format("arrow").map(lambda t: t.rename_columns(["z"]), batched=True)
    assert fmt.with_format(None)[:] == {"z": [1, 2, 3]}


def test_row_table_and_tensors():
    torch = pytest.importorskip("torch")
    ds = am.Dataset.from_dict({"x": [1, 2, 3]})
    assert ds.map(lambda r: pa.table({"y": [r["x"]]}))[:] == {"y": [1, 2, 3]}
    with pytest.raises(ValueError, match="table of 2 rows for row 0"):
        ds.map(lambda r: pa.table({"y": [1, 2]}))
    out = ds.map(lambda r: {"s": torch.tensor(float(r["x"])), "v": torch.tensor([1.0, 2.0])})
    assert out.schema.field("s").type == pa.float32()  # the tensor's dtype, as in HF
    assert out.schema.field("v").type == pa.list_(pa.float32())
    assert out["v"][0] == [1.0, 2.0]
    assert ds.map(lambda r: {"n": np.array([1.0, 2.0])}).schema.field("n").type == pa.list_(
        pa.float64()
    )


def test_try_original_type():
    ds = am.Dataset.from_dict({"n": [1, 2, 3], "flag": [True, False, True]})
    same = ds.map(lambda b: {"n": [float(v) for v in b["n"]]}, batched=True)
    assert same.schema.field("n").type == pa.int64() and same["n"] == [1, 2, 3]
    lossy = ds.map(lambda b: {"n": [v + 0.5 for v in b["n"]]}, batched=True)
    assert lossy.schema.field("n").type == pa.float64()
    off = ds.map(lambda r: {"n": float(r["n"])}, try_original_type=False)
    assert off.schema.field("n").type == pa.float64()
    # HF would turn 5 into True; the values stay ints here.
    ints = ds.map(lambda r: {"flag": 5 if r["flag"] else 0})
    assert ints["flag"] == [5, 0, 5]


def test_with_rank_in_process_and_in_workers(small_segments):
    ds = am.Dataset.from_dict({"x": list(range(40))})
    assert set(ds.map(lambda r, rank: {"r": rank}, with_rank=True)["r"]) == {None}
    out = ds.map(
        lambda r, i, rank: {"r": rank, "i": i}, with_indices=True, with_rank=True, num_proc=2
    )
    assert set(out["r"]) <= {0, 1} and out["i"] == list(range(40))
    kept = ds.filter(lambda b, rank: [rank is None] * len(b["x"]), batched=True, with_rank=True)
    assert len(kept) == 40


def test_function_none_and_unchanged_results():
    ds = am.Dataset.from_dict({"a": [1, 2], "b": [3, 4]})
    assert ds.map(None, remove_columns="a")[:] == {"b": [3, 4]}
    empty = ds.map(remove_columns=["a", "b"])
    assert len(empty) == 2 and empty.column_names == []
    same = ds.map(lambda r: None)
    assert same.fingerprint == ds.fingerprint and same[:] == ds[:]
    seen = []
    ds.map(seen.append)
    ds.map(seen.append)  # called again for its side effects, as in HF: nothing to reuse
    assert len(seen) == 4
    assert len(ds.filter(None)) == 2


def test_drop_last_batch(small_segments):
    ds = am.Dataset.from_dict({"x": list(range(25))})
    out = ds.map(lambda b: {"y": b["x"]}, batched=True, batch_size=4, drop_last_batch=True)
    assert out["x"] == list(range(24)) and out["y"] == list(range(24))
    whole = ds.map(
        lambda b: {"s": [sum(b["x"])]},
        batched=True,
        batch_size=10,
        drop_last_batch=True,
        remove_columns="x",
    )
    assert whole["s"] == [45, 145]


def test_cache_file_names(tmp_path):
    ds = am.Dataset.from_dict({"x": list(range(6))})
    with pytest.raises(ValueError, match="to have an extension"):
        ds.map(lambda r: {"y": 1}, cache_file_name=str(tmp_path / "noext"))
    with pytest.raises(ValueError, match="to have an extension"):
        ds.filter(lambda r: True, cache_file_name=str(tmp_path / "noext"))
    with pytest.raises(ValueError, match="to have an extension"):
        ds.select([1, 0]).flatten_indices(cache_file_name=str(tmp_path / "noext"))
    kept = ds.filter(lambda r: r["x"] > 2, cache_file_name=str(tmp_path / "f.arrow"))
    assert kept["x"] == [3, 4, 5] and os.path.exists(tmp_path / "f.arrow")
    flat = ds.select([2, 1]).flatten_indices(cache_file_name=str(tmp_path / "flat.arrow"))
    assert flat["x"] == [2, 1] and str(tmp_path / "flat.arrow") in flat.cache_files
    with pytest.raises(ValueError, match="exactly the fields 'rank' and 'num_proc'"):
        ds.map(lambda r: {"y": 1}, suffix_template="_{i}")
    assert ds.map(lambda r: {"y": 1}, suffix_template="_{rank}_{num_proc}")["y"] == [1] * 6
    with pytest.raises(TypeError, match="features"):
        ds.map(lambda r: {"y": 1}, features={"y": "int64"})


def test_new_fingerprint_any_string():
    ds = am.Dataset.from_dict({"x": [1, 2]})
    out = ds.map(lambda r: {"y": 1}, new_fingerprint="my run #1")
    assert out.fingerprint == "my run #1"
    assert all(os.path.basename(f).startswith("cache-") for f in out.cache_files)
    assert out.map(lambda r: {"z": 2})["z"] == [2, 2]


def test_disable_caching_gives_each_call_its_own_files():
    ds = am.Dataset.from_dict({"x": [1, 2]})
    am.disable_caching()
    try:
        a = ds.map(lambda r: {"y": 1})
        b = ds.map(lambda r: {"y": 1})
    finally:
        am.enable_caching()
    assert a.fingerprint == b.fingerprint
    assert set(a.cache_files).isdisjoint(b.cache_files)


def _crash(row):
    os._exit(3)


def test_worker_crash_raises_naming_the_function():
    ds = am.Dataset.from_dict({"x": [1, 2, 3]})  # one segment: still run in a worker
    with pytest.raises(WorkerDiedError) as e:
        ds.map(_crash, num_proc=2)
    assert isinstance(e.value, RuntimeError)
    assert "abruptly died" in str(e.value) and "_crash" in "".join(e.value.__notes__)


def test_cache_hit_is_logged_and_shown(caplog, capsys, monkeypatch):
    ds = am.Dataset.from_dict({"x": [1, 2]})
    ds.map(lambda r: {"y": 1})
    monkeypatch.setenv("ARROWMIX_PROGRESS", "1")
    with caplog.at_level(logging.INFO, logger="arrowmix"):
        ds.map(lambda r: {"y": 1})
    assert "Loading cached processed dataset at" in caplog.text
    assert "(cached)" in capsys.readouterr().err


def test_progress_advances_with_worker_processes(small_segments, monkeypatch):
    from arrowmix._dataset import progress
    from arrowmix._dataset.mapping import local as workers

    seen = []
    monkeypatch.setattr(progress.Progress, "rows", lambda self, n: seen.append(n))
    monkeypatch.setattr(workers, "_POLL_S", 0.01)
    ds = am.Dataset.from_dict({"x": list(range(40))})
    ds.map(lambda r: {"y": r["x"]}, num_proc=2)
    assert sum(seen) == 40


def test_format_kwargs_reach_the_function_and_the_fingerprint():
    ds = am.Dataset.from_dict({"x": [1.0, 2.0], "i": [1, 2]})
    seen = []

    def record(batch):
        seen.append((batch["x"].dtype, batch["i"].dtype))
        return {"y": batch["x"] * 2}

    half = ds.with_format("numpy", dtype=np.float16).map(record, batched=True)
    assert seen == [(np.float16, np.float16)]
    assert half.schema.field("y").type == pa.float16()
    single = ds.with_format("numpy", dtype=np.float32).map(record, batched=True)
    assert single.schema.field("y").type == pa.float32()
    assert half.fingerprint != single.fingerprint
