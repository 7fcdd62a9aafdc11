"""Calls where arrowmix differed from HF ``datasets`` 5.2, each compared with HF value by value.

Label alignment to a model's ``label2id``, per-split transforms, whole numbers in an integer
CSV column, rows that add or lack columns, ``batch`` of a table format, ``from_polars`` and
``from_pandas(split=)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import arrowmix as am

hf = pytest.importorskip("datasets")
hf.disable_progress_bar()


def _moods() -> tuple[dict[str, list[Any]], Any]:
    data = {"text": ["grim", "fine", "meh", "fine", "grim"], "mood": [2, 0, 1, 0, None]}
    feats = hf.Features(
        {"text": hf.Value("string"), "mood": hf.ClassLabel(names=["happy", "flat", "sad"])}
    )
    return data, feats


def test_align_labels_with_mapping_renumbers_as_hf() -> None:
    data, feats = _moods()
    model = {"SAD": 0, "Happy": 2, "flat": 1}  # the model's ids; names differ in case only
    ours = am.Dataset.from_dict(data, features=feats).align_labels_with_mapping(model, "mood")
    theirs = hf.Dataset.from_dict(data, features=feats).align_labels_with_mapping(model, "mood")
    assert ours["mood"] == theirs["mood"] == [0, 2, 1, 2, None]
    assert ours.features == theirs.features
    assert ours.features["mood"].names == ["SAD", "flat", "Happy"]
    assert ours.schema.field("mood").type == pa.int64()


def test_align_labels_with_mapping_of_label_lists_and_splits() -> None:
    # HF 5.2 fails on a List of ClassLabel (a NameError in its type check); its later
    # releases align them as here, each id of each list.
    feats = hf.Features({"tags": hf.List(hf.ClassLabel(names=["o", "per", "loc"]))})
    rows = {"tags": [[0, 1], [], [2, 2, 0]]}
    model = {"loc": 0, "o": 1, "per": 2}
    dd = am.DatasetDict(
        {"train": am.Dataset.from_dict(rows, features=feats), "test": am.Dataset.from_dict(rows)}
    )
    with pytest.raises(ValueError, match="'tags'"):  # "test" holds plain ints
        dd.align_labels_with_mapping(model, "tags")
    out = am.DatasetDict({"train": dd["train"]}).align_labels_with_mapping(model, "tags")
    assert out["train"]["tags"] == [[1, 2], [], [0, 0, 1]]
    assert out["train"].features == hf.Features(
        {"tags": hf.List(hf.ClassLabel(names=["loc", "o", "per"]))}
    )
    with pytest.raises(KeyError):  # a dataset label the mapping lacks, as HF
        dd["train"].align_labels_with_mapping({"o": 0, "per": 1}, "tags")
    with pytest.raises(ValueError, match="nope"):
        dd["train"].align_labels_with_mapping(model, "nope")
    data, label_feats = _moods()  # and a DatasetDict of ClassLabel splits, against HF
    ours = am.DatasetDict({"x": am.Dataset.from_dict(data, features=label_feats)})
    theirs = hf.DatasetDict({"x": hf.Dataset.from_dict(data, features=label_feats)})
    mapping = {"sad": 1, "flat": 2, "happy": 0}
    a = ours.align_labels_with_mapping(mapping, "mood")["x"]
    b = theirs.align_labels_with_mapping(mapping, "mood")["x"]
    assert a["mood"] == b["mood"] and a.features == b.features


def _upper(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
    return {k: [str(v).upper() for v in vs] for k, vs in batch.items()}


def test_dataset_dict_transforms_apply_to_every_split() -> None:
    data = {"w": ["ab", "cd", "ef"], "n": [1, 2, 3]}
    ours = am.DatasetDict({"a": am.Dataset.from_dict(data), "b": am.Dataset.from_dict(data)})
    theirs = hf.DatasetDict({"a": hf.Dataset.from_dict(data), "b": hf.Dataset.from_dict(data)})
    view = ours.with_transform(_upper, columns=["w"], output_all_columns=True)
    hf_view = theirs.with_transform(_upper, columns=["w"], output_all_columns=True)
    assert ours["a"].format["type"] is None  # with_transform leaves the dict as it was
    for split in ("a", "b"):
        assert view[split][0] == hf_view[split][0] == {"w": "AB", "n": 1}
        assert view[split][:2] == hf_view[split][:2]
        assert view[split].format["type"] == hf_view[split].format["type"] == "custom"
    ours.set_transform(_upper, columns=["n"])
    theirs.set_transform(_upper, columns=["n"])
    assert ours["b"][1] == theirs["b"][1] == {"n": "2"}
    ours.set_transform(None)  # back to Python rows (HF 5.2's DatasetDict fails on None)
    assert ours["b"][1] == {"w": "cd", "n": 2}


def test_whole_numbers_read_into_an_int_feature_as_hf(tmp_path: Path) -> None:
    path = tmp_path / "n.csv"
    path.write_text("k,v,w\n0,0.0,1e3\n1,1.0, 3.0 \n2,2,-2.00\n3,4,+5.0\n")
    feats = hf.Features({c: hf.Value("int32") for c in "kvw"})
    ours = am.Dataset.from_csv(str(path), features=feats)
    theirs = hf.Dataset.from_csv(str(path), features=feats, cache_dir=str(tmp_path / "hf"))
    assert ours.to_dict() == theirs.to_dict()
    assert ours["v"] == [0, 1, 2, 4] and ours["w"] == [1000, 3, -2, 5]
    assert ours.features == theirs.features
    assert ours.schema.field("w").type == pa.int32()
    path.write_text("k,v\n0,7\n1,\n2,8.0\n")  # a missing cell (HF, through pandas, refuses it)
    two = hf.Features({"k": hf.Value("int32"), "v": hf.Value("int32")})
    assert am.Dataset.from_csv(str(path), features=two)["v"] == [7, None, 8]


def test_a_fraction_in_an_int_feature_still_raises(tmp_path: Path) -> None:
    path = tmp_path / "n.csv"
    path.write_text("v\n1.0\n2.5\n")
    with pytest.raises(am.exceptions.InputFormatError, match=r"row 2 .*'2.5'"):
        am.Dataset.from_csv(str(path), features=hf.Features({"v": hf.Value("int64")}))


def test_add_item_with_new_and_missing_columns_as_hf() -> None:
    base = {"a": [1, 2], "b": ["x", "y"]}
    for item in ({"a": 3}, {"c": 1.5}, {"b": "z", "d": [4, 5]}, {"e": None}):
        ours = am.Dataset.from_dict(base).select([1, 0]).add_item(item)
        theirs = hf.Dataset.from_dict(base).select([1, 0]).add_item(item)
        assert ours.to_dict() == theirs.to_dict()
        assert ours.features == theirs.features
        assert ours.column_names == theirs.column_names
    grown = am.Dataset.from_dict(base).add_item({"c": True})
    assert len(grown.data.blocks) == 1  # HF's table blocks: one in-memory block


@pytest.mark.parametrize("fmt", ["pandas", "arrow"])
def test_batch_of_a_table_format_keeps_the_format(fmt: str) -> None:
    data = {"a": [1, 2, 3, 4, 5], "s": list("vwxyz")}
    ours = am.Dataset.from_dict(data).with_format(fmt).batch(2)
    theirs = hf.Dataset.from_dict(data).with_format(fmt).batch(2)
    assert ours.format["type"] == theirs.format["type"]
    assert type(ours[0]) is type(theirs[0])
    assert ours.with_format(None)[:] == theirs.with_format(None)[:]
    assert ours.with_format(None)[0] == {"a": [1, 2], "s": ["v", "w"]}


def test_from_pandas_names_its_split_as_hf() -> None:
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"a": [1, 2]})
    ours = am.Dataset.from_pandas(df, split="validation")
    assert ours.split == hf.Dataset.from_pandas(df, split="validation").split == "validation"
    assert am.Dataset.from_pandas(df).split is hf.Dataset.from_pandas(df).split is None


def test_from_polars_as_hf() -> None:
    pl = pytest.importorskip("polars")
    df = pl.from_dict({"n": [3, 1], "s": ["a", "b"], "l": [[1, 2], [3]]})
    ours = am.Dataset.from_polars(df, split="test")
    theirs = hf.Dataset.from_polars(df, split="test")
    assert ours.to_dict() == theirs.to_dict()
    assert ours.features == theirs.features
    assert ours.split == theirs.split == "test"
    feats = hf.Features(
        {
            "n": hf.Value("int32"),
            "s": hf.Value("large_string"),
            "l": hf.LargeList(hf.Value("int64")),
        }
    )
    typed = am.Dataset.from_polars(df, features=feats)
    assert typed.features == hf.Dataset.from_polars(df, features=feats).features
