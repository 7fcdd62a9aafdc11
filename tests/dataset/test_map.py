"""Dataset.map semantics (HF ``datasets``): inputs, outputs, schemas, views."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import arrowmix as am


@pytest.fixture
def ds():
    return am.Dataset.from_dict({"text": ["a", "bb", "ccc", "dddd", "eeeee"], "n": [1, 2, 3, 4, 5]})


def test_unbatched_adds_and_updates_columns_in_place(ds):
    out = ds.map(lambda row: {"n": row["n"] * 10, "len": len(row["text"])})
    assert out.column_names == ["text", "n", "len"]
    assert out["n"] == [10, 20, 30, 40, 50]
    assert out["len"] == [1, 2, 3, 4, 5]
    assert out["text"] == ds["text"]
    assert out.fingerprint != ds.fingerprint


def test_none_return_means_no_new_columns(ds):
    seen = []
    out = ds.map(lambda row: seen.append(row["n"]))
    assert seen == [1, 2, 3, 4, 5]
    assert out[:] == ds[:]


def test_function_none_with_remove_columns(ds):
    assert ds.map(None, remove_columns="text").column_names == ["n"]


def test_batched_with_batch_size(ds):
    sizes = []

    def fn(batch):
        sizes.append(len(batch["n"]))
        return {"double": [2 * x for x in batch["n"]]}

    out = ds.map(fn, batched=True, batch_size=2)
    assert sizes == [2, 2, 1]
    assert out["double"] == [2, 4, 6, 8, 10]


def test_batch_size_none_is_one_batch(ds):
    sizes = []
    ds.map(lambda b: sizes.append(len(b["n"])), batched=True, batch_size=None)
    assert sizes == [5]


def test_with_indices_input_columns_fn_kwargs(ds):
    out = ds.map(
        lambda n, i, k: {"v": n * k + i},
        with_indices=True,
        input_columns="n",
        fn_kwargs={"k": 100},
    )
    assert out["v"] == [100, 201, 302, 403, 504]
    out = ds.map(
        lambda text, n, idx: {"v": [f"{t}{a}{i}" for t, a, i in zip(text, n, idx, strict=True)]},
        batched=True,
        batch_size=2,
        with_indices=True,
        input_columns=["text", "n"],
    )
    assert out["v"] == ["a10", "bb21", "ccc32", "dddd43", "eeeee54"]


def test_remove_columns(ds):
    out = ds.map(lambda row: {"len": len(row["text"])}, remove_columns=["text"])
    assert out.column_names == ["n", "len"]
    assert out["len"] == [1, 2, 3, 4, 5]


def test_returned_column_that_is_removed_keeps_its_place_as_in_hf(ds):
    out = ds.map(lambda row: {"text": row["text"].upper()}, remove_columns="text")
    assert out.column_names == ["text", "n"]
    assert out["text"] == ["A", "BB", "CCC", "DDDD", "EEEEE"]


def test_batched_one_to_many_when_old_columns_removed(ds):
    def explode(batch):
        return {"ch": [c for t in batch["text"] for c in t]}

    out = ds.map(explode, batched=True, batch_size=2, remove_columns=["text", "n"])
    assert out["ch"] == list("abbcccddddeeeee")
    assert len(out) == 15


def test_batched_many_to_one_when_all_columns_replaced(ds):
    out = ds.map(
        lambda b: {"text": ["".join(b["text"])], "n": [sum(b["n"])]}, batched=True, batch_size=2
    )
    assert out[:] == {"text": ["abb", "cccdddd", "eeeee"], "n": [3, 7, 5]}


def test_returned_batch_object_keeps_unread_columns(ds):
    def add(batch):
        batch["len"] = [len(t) for t in batch["text"]]
        return batch

    out = ds.map(add, batched=True, batch_size=2)
    assert out.column_names == ["text", "n", "len"]
    assert out[:] == {**ds[:], "len": [1, 2, 3, 4, 5]}


@pytest.mark.parametrize(
    "make",
    [
        lambda b: {"v": np.asarray(b["n"]) * 2},
        lambda b: {"v": pa.array([x * 2 for x in b["n"]])},
        lambda b: {"v": pa.chunked_array([[x * 2 for x in b["n"]]])},
        lambda b: {"v": tuple(x * 2 for x in b["n"])},
    ],
)
def test_batched_outputs_numpy_pyarrow_or_python(ds, make):
    assert ds.map(make, batched=True, batch_size=2)["v"] == [2, 4, 6, 8, 10]


def test_two_dimensional_numpy_output_becomes_lists(ds):
    out = ds.map(lambda b: {"m": np.ones((len(b["n"]), 3), dtype=np.int32)}, batched=True)
    assert out["m"] == [[1, 1, 1]] * 5
    assert out.schema.field("m").type == pa.list_(pa.int32())


def test_unbatched_numpy_values(ds):
    out = ds.map(lambda r: {"v": np.arange(r["n"])})
    assert out["v"][2] == [0, 1, 2]


def test_all_null_first_batch_takes_type_from_later_batch(ds):
    out = ds.map(lambda r: {"maybe": None if r["n"] < 4 else str(r["n"])})
    assert out["maybe"] == [None, None, None, "4", "5"]
    assert out.schema.field("maybe").type == pa.string()
    out = ds.map(
        lambda b: {"m": [None] * len(b["n"]) if b["n"][0] == 1 else b["n"]},
        batched=True,
        batch_size=2,
    )
    assert out["m"] == [None, None, 3, 4, 5]
    assert out.schema.field("m").type == pa.int64()


def test_later_batches_cast_to_first_schema(ds):
    out = ds.map(lambda r: {"x": 1.5 if r["n"] == 1 else r["n"]})
    assert out["x"] == [1.5, 2.0, 3.0, 4.0, 5.0]
    assert out.schema.field("x").type == pa.float64()


def test_map_on_shuffled_and_filtered_views(ds):
    view = ds.shuffle(seed=3).select([4, 0, 2])
    out = view.map(lambda r, i: {"twice": r["n"] * 2, "pos": i}, with_indices=True)
    assert out["n"] == view["n"]
    assert out["twice"] == [2 * n for n in view["n"]]
    assert out["pos"] == [0, 1, 2]
    evens = ds.filter(lambda r: r["n"] % 2 == 0)
    out = evens.map(lambda r, i: {"i": i}, with_indices=True)
    assert out[:] == {"text": ["bb", "dddd"], "n": [2, 4], "i": [0, 1]}


def test_map_on_contiguous_view_references_parent_columns(tmp_path):
    am.write_chunks(({"t": "x" * i, "n": i} for i in range(50)), tmp_path / "c", rows_per_chunk=7)
    ds = am.Dataset.from_chunks(str(tmp_path / "c"))
    view = ds.select(range(10, 40))
    out = view.map(lambda r: {"m": r["n"] + 1})
    assert out["t"] == view["t"] and out["m"] == [n + 1 for n in range(10, 40)]
    stored = pa.ipc.open_file(out.cache_files[-1]).read_all()
    assert stored.column_names == ["m"]  # the unchanged columns were not copied
    assert set(ds.cache_files) <= set(out.cache_files)


def test_format_is_kept_and_used_for_inputs(ds):
    seen = []
    out = ds.with_format("numpy").map(
        lambda b: seen.append(type(b["n"])) or {"m": b["n"] * 2}, batched=True
    )
    assert seen == [np.ndarray]
    assert out.format["type"] == "numpy"
    assert out["m"].tolist() == [2, 4, 6, 8, 10]


def test_empty_dataset(ds):
    empty = ds.select([])
    assert len(empty.map(lambda r: {"x": 1})) == 0
    assert empty.map(lambda r: {"x": 1}, remove_columns="n").column_names == ["text"]
    assert len(empty.filter(lambda r: True)) == 0


def test_chained_maps(ds):
    out = ds.map(lambda r: {"a": r["n"] + 1}).map(lambda r: {"b": r["a"] * 2})
    assert out["b"] == [4, 6, 8, 10, 12]
    assert out.map(lambda r: {"b": 0}, remove_columns=["text"]).column_names == ["n", "a", "b"]


def test_lazy_batch_behaves_like_a_dict(ds):
    def fn(batch):
        assert "text" in batch and "nope" not in batch and len(batch) == 2
        assert sorted(batch) == ["n", "text"] and batch.get("nope") is None
        del batch["n"]
        with pytest.raises(KeyError):
            del batch["n"]
        batch["m"] = [len(t) for t in batch["text"]]
        return batch

    out = ds.map(fn, batched=True, batch_size=2)
    assert out.column_names == ["text", "m"]  # deleted from the input: removed, as in HF
    assert out["m"] == [1, 2, 3, 4, 5]


def test_map_result_streams_and_concatenates(tmp_path):
    am.write_chunks(({"n": i} for i in range(30)), tmp_path / "c", rows_per_chunk=8)
    ds = am.Dataset.from_chunks(str(tmp_path / "c"))
    out = ds.map(lambda r: {"m": -r["n"]})
    rows = list(out.to_stream(shuffle="chunks", seed=1, infinite=False))
    assert sorted(r["n"] for r in rows) == list(range(30)) and all(r["m"] == -r["n"] for r in rows)
    both = am.concatenate_datasets([out, out.filter(lambda r: r["n"] < 3)])
    assert both["m"] == [-n for n in range(30)] + [0, -1, -2]
