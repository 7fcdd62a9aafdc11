"""Formats as HF ``datasets`` defines them: columns, output_all_columns, ds.format, dtypes."""

from __future__ import annotations

import numpy as np
import pytest

import arrowmix as am


@pytest.fixture
def ds() -> am.Dataset:
    return am.Dataset.from_dict(
        {"i": [3, 2, 1], "s": ["a", "bb", "c"], "f": [0.5, 1.5, 2.5], "b": [True, False, True]}
    )


def test_one_column_name_is_one_column_not_its_letters(ds):
    view = ds.with_format("numpy", columns="i")
    assert list(view[0]) == ["i"]
    assert view.format["columns"] == ["i"]
    with pytest.raises(KeyError, match="'ix'"):
        ds.with_format("numpy", columns="ix")


def test_format_is_hf_dict(ds):
    assert ds.format == {
        "type": None,
        "format_kwargs": {},
        "columns": ["i", "s", "f", "b"],
        "output_all_columns": False,
    }
    view = ds.with_format("torch", columns=["f"], output_all_columns=True)
    assert view.format == {
        "type": "torch",
        "format_kwargs": {},
        "columns": ["f"],
        "output_all_columns": True,
    }
    assert ds.with_format("python").format["type"] is None


def test_columns_added_by_map_are_formatted(ds):
    view = ds.with_format("numpy", columns=["i"])
    out = view.map(lambda row: {"j": row["i"] * 2})
    assert sorted(out[0]) == ["i", "j"]
    assert isinstance(out[0]["j"], np.integer)
    assert out.format["columns"] == ["i", "j"]
    # A column the parent left unformatted stays out of the format.
    assert "s" not in out[0]
    assert out["s"] == ["a", "bb", "c"]  # read by name: Python objects, as in HF


def test_rename_keeps_the_renamed_column_formatted(ds):
    view = ds.with_format("numpy", columns=["i", "s"]).rename_column("i", "k")
    assert sorted(view[0]) == ["k", "s"]
    both = ds.with_format("numpy", columns=["i"]).rename_columns({"i": "x", "s": "y"})
    assert list(both[0]) == ["x"] and both.column_names == ["x", "y", "f", "b"]


def test_output_all_columns(ds):
    view = ds.with_format("numpy", columns=["i"], output_all_columns=True)
    row = view[0]
    assert list(row) == ["i", "s", "f", "b"]
    assert isinstance(row["i"], np.integer) and isinstance(row["s"], str)
    batch = view[:2]
    assert isinstance(batch["i"], np.ndarray) and batch["s"] == ["a", "bb"]
    assert [r["s"] for r in view] == ["a", "bb", "c"]
    assert next(iter(view.iter(batch_size=3)))["f"] == [0.5, 1.5, 2.5]
    import pickle

    assert pickle.loads(pickle.dumps(view)).format == view.format


def test_with_format_changes_the_fingerprint(ds):
    fps = {
        ds.fingerprint,
        ds.with_format("numpy").fingerprint,
        ds.with_format("numpy", columns=["i"]).fingerprint,
        ds.with_format("numpy", columns=["i"], output_all_columns=True).fingerprint,
        ds.with_format("torch").fingerprint,
    }
    assert len(fps) == 5
    assert ds.with_format("numpy").fingerprint == ds.with_format("numpy").fingerprint


def test_set_format_in_place(ds):
    view = ds.select([0, 1])
    view.set_format("numpy", columns=["i"])
    assert list(view[0]) == ["i"] and view.format["type"] == "numpy"
    view.reset_format()
    assert view[0] == {"i": 3, "s": "a", "f": 0.5, "b": True}
    assert ds.format["type"] is None  # other views are untouched


def test_numpy_strings(ds):
    view = ds.with_format("numpy")
    assert isinstance(view[0]["s"], np.str_)
    assert view["s"].dtype.kind == "U"
    assert view[:2]["s"].tolist() == ["a", "bb"]
    with_null = am.Dataset.from_dict({"s": ["a", None]}).with_format("numpy")
    assert with_null["s"].tolist() == ["a", None]


def test_numpy_structs_hold_arrays():
    ds = am.Dataset.from_dict({"st": [{"x": 1.0, "y": [1, 2]}, None]}).with_format("numpy")
    first = ds[0]["st"]
    assert isinstance(first["y"], np.ndarray) and first["y"].tolist() == [1, 2]
    assert ds[1]["st"] is None


torch = pytest.importorskip("torch")


def test_torch_dtypes_follow_hf():
    ds = am.Dataset.from_dict(
        {
            "f": [0.5, 1.5],
            "i": [1, 2],
            "l": [[1.0, 2.0], [3.0, 4.0]],
            "r": [[1, 2, 3], [4]],
            "s": ["a", "b"],
            "b": [True, False],
        }
    ).with_format("torch")
    row, batch = ds[0], ds[:2]
    assert row["f"].dtype == torch.float32 and row["f"].shape == ()
    assert batch["f"].dtype == torch.float32 and ds["f"].dtype == torch.float32
    assert batch["i"].dtype == torch.int64
    assert batch["l"].dtype == torch.float32 and tuple(batch["l"].shape) == (2, 2)
    assert [t.tolist() for t in batch["r"]] == [[1, 2, 3], [4]]
    assert batch["s"] == ["a", "b"] and row["s"] == "a"
    assert batch["b"].dtype == torch.bool
    # float32 batches go straight into a float32 layer (float64 ones raise a dtype error).
    torch.nn.Linear(2, 1)(batch["l"])


def test_torch_small_int_and_float_types_widen_as_in_hf():
    import pyarrow as pa

    table = pa.table({"u8": pa.array([1, 2], pa.uint8()), "h": pa.array([1, 2], pa.float16())})
    batch = am.Dataset.from_arrow(table).with_format("torch")[:]
    assert batch["u8"].dtype == torch.int64 and batch["h"].dtype == torch.float32


def test_torch_format_kwargs():
    ds = am.Dataset.from_dict({"f": [0.5, 1.5], "i": [1, 2]})
    view = ds.with_format("torch", dtype=torch.float16)
    assert view[:]["f"].dtype == torch.float16 and view.format["format_kwargs"] == {
        "dtype": torch.float16
    }


def test_torch_structs_hold_tensors():
    ds = am.Dataset.from_dict({"st": [{"x": 1.0, "y": [1, 2]}, {"x": 2.0, "y": [3, 4]}]})
    view = ds.with_format("torch")
    row = view[0]["st"]
    assert isinstance(row["x"], torch.Tensor) and row["x"].dtype == torch.float32
    assert isinstance(row["y"], torch.Tensor) and row["y"].tolist() == [1, 2]
    batch = view[:]["st"]
    assert all(isinstance(r["y"], torch.Tensor) for r in batch)


@pytest.mark.parametrize("batched", [True, False])
def test_map_on_an_arrow_view_keeps_only_what_the_function_returns_as_hf(batched) -> None:
    datasets = pytest.importorskip("datasets")
    data = {"x": [1, 2, 3], "s": ["a", "b", "c"]}

    def fn(batch):
        return {"y": [1] * batch.num_rows} if batched else {"y": 1}

    ours = am.Dataset.from_dict(data).with_format("arrow").map(fn, batched=batched)
    hf = datasets.Dataset.from_dict(data).with_format("arrow").map(fn, batched=batched)
    assert ours.column_names == hf.column_names == ["y"]
    assert ours.with_format(None)[:] == hf.with_format(None)[:]
    dicts = am.Dataset.from_dict(data).map(lambda r: {"y": 1})
    assert dicts.column_names == ["x", "s", "y"]  # a dict input keeps its columns, as in HF
