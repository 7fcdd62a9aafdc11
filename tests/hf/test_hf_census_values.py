"""Values where arrowmix differed from HF ``datasets`` 5.2 in calls real scripts make.

Each compares with HF on the same data, value by value, types included.
"""

from __future__ import annotations

import pytest

import arrowmix as am

hf = pytest.importorskip("datasets")

from tests.hf.test_load_dataset import hf_load  # noqa: E402, F401  # the fixture


def _same(ours, theirs):
    assert ours.column_names == theirs.column_names
    assert ours.features == theirs.features
    assert ours.to_dict() == theirs.to_dict()
    assert [type(v) for v in ours[0].values()] == [type(v) for v in theirs[0].values()]


def _csvs(tmp_path):
    (tmp_path / "train.csv").write_text("text,label,extra\na,0,\nb,1,7\nc,0,3\n")
    (tmp_path / "dev.csv").write_text("text,label,extra\nd,1,1\ne,0,2\n")
    return {"train": str(tmp_path / "train.csv"), "validation": str(tmp_path / "dev.csv")}


def test_later_splits_take_the_first_splits_types(tmp_path, hf_load):  # noqa: F811
    # run_glue-style: train has a missing cell (float64), validation only integers
    files = _csvs(tmp_path)
    ours, theirs = am.load_dataset("csv", data_files=files), hf_load("csv", data_files=files)
    for split in ("train", "validation"):
        _same(ours[split], theirs[split])
    assert ours["validation"]["extra"] == [1.0, 2.0]
    alone = am.load_dataset("csv", data_files=files, split="validation")  # HF prepares all
    _same(alone, hf_load("csv", data_files=files, split="validation"))
    only = {"validation": files["validation"]}
    first = am.load_dataset("csv", data_files=only, split="validation")
    assert first["extra"] == [1, 2]  # a split alone keeps its own types


def test_later_splits_with_other_columns_keep_their_own(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"x": 1.5}\n')
    (tmp_path / "b.jsonl").write_text('{"y": 2}\n')
    files = {"train": str(tmp_path / "a.jsonl"), "test": str(tmp_path / "b.jsonl")}
    dd = am.load_dataset("json", data_files=files)
    assert dd["test"].to_dict() == {"y": [2]}  # HF raises here; nothing is cast


def test_torch_format_of_a_struct_scalar_is_a_0d_tensor():
    torch = pytest.importorskip("torch")
    rows = {"meta": [{"s": "a", "n": 1}, {"s": "b", "n": 2}], "x": [[1, 2], [3]]}
    ours = am.Dataset.from_dict(rows).with_format("torch")
    theirs = hf.Dataset.from_dict(rows).with_format("torch")
    for a, b in ((ours[0]["meta"], theirs[0]["meta"]), (ours[:]["meta"][1], theirs[:]["meta"][1])):
        assert a["s"] == b["s"]
        assert a["n"].shape == b["n"].shape == torch.Size([])
        assert a["n"].dtype == b["n"].dtype and a["n"].item() == b["n"].item()


@pytest.mark.parametrize("arg", ["remove_columns", "input_columns"])
def test_map_with_an_unknown_column_raises_value_error_as_hf(arg):
    rows = {"a": [1, 2]}
    for lib in (am, hf):
        with pytest.raises(ValueError, match="nope"):
            lib.Dataset.from_dict(rows).map(lambda *r: {}, **{arg: ["nope"]})
