"""Values where arrowmix differed from HF ``datasets`` 5.2 in calls real scripts make.

Each compares with HF on the same data, value by value, types included.
"""

from __future__ import annotations

import numpy as np
import pytest

import arrowmix as am
from arrowmix.exceptions import NotLocalError

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


def _formatted(value):
    """A formatted value as ``(kind, dtype, shape, values)``, nested lists recursed."""
    if isinstance(value, dict):
        return {k: _formatted(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_formatted(v) for v in value]
    if isinstance(value, np.ndarray) and value.dtype == object:
        return ("object array", tuple(value.shape), [_formatted(v) for v in value])
    if hasattr(value, "dtype") and hasattr(value, "shape"):
        return (type(value).__name__, str(value.dtype), tuple(value.shape), value.tolist())
    return value


NESTED = {
    "ragged": [[[1], [2, 3]], [[4]], [], None],
    "square": [[[1, 2], [3, 4]], [[5, 6]], [[7, 8]], [[9, 10]]],
    "empty_rows": [[1], [], [2, 3], []],
    "strings": [["a"], [], ["b", "c"], None],
    "bools": [[True], [], [False], [True]],
    "structs": [[{"a": 1}], [{"a": 2}, {"a": 3}], [], [{"a": 4}]],
}


@pytest.mark.parametrize("fmt", ["torch", "numpy"])
def test_nested_and_empty_lists_format_as_hf(fmt):
    if fmt == "torch":
        pytest.importorskip("torch")
    ours = am.Dataset.from_dict(NESTED).with_format(fmt)
    theirs = hf.Dataset.from_dict(NESTED).with_format(fmt)
    for key in (0, 1, 3, slice(0, 4), slice(1, 3)):
        assert _formatted(ours[key]) == _formatted(theirs[key]), key


def test_rows_of_numpy_matrices_are_list_columns_as_hf():
    square = [np.zeros((2, 2), np.float32), np.ones((2, 2), np.float32)]
    ragged = [np.zeros((2, 2), np.float32), np.ones((1, 3), np.float32)]
    for rows in (square, ragged):
        for lib in (am, hf):
            built = lib.Dataset.from_dict({"v": rows})
            per_row = lib.Dataset.from_dict({"i": [0, 1]}).map(
                lambda ex, i, rows=rows: {"v": rows[i]}, with_indices=True
            )
            batched = lib.Dataset.from_dict({"i": [0, 1]}).map(
                lambda b, rows=rows: {"v": rows}, batched=True
            )
            for ds in (built, per_row, batched):
                assert ds.features["v"] == hf.List(hf.List(hf.Value("float32")))
                assert ds["v"][1] == rows[1].tolist()


def test_dataset_dict_with_transform_and_set_transform():
    def upper(batch):
        return {"up": [t.upper() for t in batch["text"]]}

    splits = {"train": {"text": ["a", "b"], "n": [1, 2]}, "test": {"text": ["c"], "n": [3]}}
    ours = am.DatasetDict({k: am.Dataset.from_dict(v) for k, v in splits.items()})
    theirs = hf.DatasetDict({k: hf.Dataset.from_dict(v) for k, v in splits.items()})
    for split in splits:
        assert ours.with_transform(upper)[split][:] == theirs.with_transform(upper)[split][:]
    ours.set_transform(upper, columns=["text"], output_all_columns=True)
    theirs.set_transform(upper, columns=["text"], output_all_columns=True)
    assert ours["train"][0] == theirs["train"][0] == {"up": "A", "n": 1}


def test_align_labels_with_mapping_as_hf():
    rows = {"label": [0, 1, 2, 1], "tags": [[0, 1], [], [2], [1, 1]]}
    names = ["neg", "neu", "pos"]
    label2id = {"POS": 0, "neg": 1, "Neu": 2}  # names matched without case, as HF

    def built(lib):
        features = lib.Features(
            {"label": lib.ClassLabel(names=names), "tags": lib.List(lib.ClassLabel(names=names))}
        )
        return lib.Dataset.from_dict(rows, features=features)

    ours = built(am).align_labels_with_mapping(label2id, "label")
    theirs = built(hf).align_labels_with_mapping(label2id, "label")
    assert ours.features == theirs.features and ours.to_dict() == theirs.to_dict()
    tags = built(am).align_labels_with_mapping(label2id, "tags")  # HF 5.2 raises NameError
    assert tags["tags"] == [[1, 2], [], [0], [2, 2]]
    assert tags.features["tags"] == hf.List(hf.ClassLabel(names=["POS", "neg", "Neu"]))
    dd = am.DatasetDict({"train": built(am)}).align_labels_with_mapping(label2id, "label")
    assert dd["train"]["label"] == [1, 2, 0, 2]
    with pytest.raises(ValueError, match="only supported for ClassLabel"):  # HF 5.2: NameError
        am.Dataset.from_dict({"x": [1]}).align_labels_with_mapping({"a": 0}, "x")
    for lib in (am, hf):
        with pytest.raises(ValueError, match="not in table columns"):
            built(lib).align_labels_with_mapping(label2id, "nope")


def test_push_to_hub_says_how_to_upload_without_a_network_call():
    ds = am.Dataset.from_dict({"x": [1]})
    for target in (ds, am.DatasetDict({"train": ds})):
        with pytest.raises(NotLocalError, match=r"to_hub_folder.*upload_folder"):
            target.push_to_hub("me/data", private=True)
