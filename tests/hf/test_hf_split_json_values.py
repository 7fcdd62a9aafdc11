"""Split names, ``from_generator``'s split and fingerprint, and ``Json()`` values, as HF gives.

Each test builds the same data with arrowmix and HF ``datasets`` and compares the values.
"""

from __future__ import annotations

from typing import Any

import pytest

import arrowmix as am

datasets = pytest.importorskip("datasets")

MIXED = {
    "m": [1, "a", {"x": [1, 2]}, None],
    "s": [{"a": 1, "j": 1}, {"a": 2, "j": "x"}, {"a": 3, "j": [1]}, {"a": 4, "j": None}],
}


def _both() -> tuple[Any, am.Dataset]:
    hf = datasets.Dataset.from_dict(MIXED, on_mixed_types="use_json")
    return hf, am.Dataset.from_dict(MIXED, on_mixed_types="use_json")


def test_json_column_to_pandas_gives_the_values_as_hf() -> None:
    hf, ours = _both()
    assert ours.to_pandas().to_dict("list") == hf.to_pandas().to_dict("list")
    assert ours.to_pandas()["m"].tolist() == [1, "a", {"x": [1, 2]}, None]
    assert list(ours.to_pandas().dtypes) == list(hf.to_pandas().dtypes)
    frame, hf_frame = ours.with_format("pandas"), hf.with_format("pandas")
    assert frame[1:3].to_dict("list") == hf_frame[1:3].to_dict("list")
    assert frame["m"].tolist() == hf_frame["m"].tolist()
    assert frame[2].to_dict("list") == hf_frame[2].to_dict("list")


def test_json_text_is_laid_out_as_hf_writes_it() -> None:
    hf, ours = _both()
    stored = ours.with_format("arrow")["m"].to_pylist()
    assert stored == hf.data.column("m").to_pylist() == ["1", '"a"', '{"x":[1,2]}', None]
    rows = [{"m": {"a": 1, "b": [1, 2]}}, {"m": "t"}]
    hf_rows = datasets.Dataset.from_list(rows, on_mixed_types="use_json")
    ours_rows = am.Dataset.from_list(rows, on_mixed_types="use_json")
    assert ours_rows.with_format("arrow")["m"].to_pylist() == hf_rows.data.column("m").to_pylist()


def _gen() -> Any:
    yield {"a": 1}
    yield {"a": 2}


def test_from_generator_split_and_fingerprint_as_hf(tmp_path: Any) -> None:
    cache = str(tmp_path / "hf")
    hf = datasets.Dataset.from_generator(_gen, cache_dir=cache)
    ours = am.Dataset.from_generator(_gen, cache_dir=str(tmp_path / "am"))
    assert ours.split == hf.split == "train"
    named = am.Dataset.from_generator(_gen, cache_dir=str(tmp_path / "am"), fingerprint="abc")
    hf_named = datasets.Dataset.from_generator(_gen, cache_dir=cache, fingerprint="abc")
    assert named._fingerprint == hf_named._fingerprint == "abc"
    assert named.map(lambda r: {"b": r["a"]})._fingerprint != "abc"  # derived from it
    test = am.Dataset.from_generator(_gen, split=datasets.Split.TEST)
    assert test.split == datasets.Dataset.from_generator(_gen, split=datasets.Split.TEST).split


def test_from_dict_split_is_kept_as_hf() -> None:
    for split in (None, "validation", datasets.Split.TRAIN):
        hf = datasets.Dataset.from_dict({"x": [1]}, split=split)
        ours = am.Dataset.from_dict({"x": [1]}, split=split)
        assert ours.split == hf.split
        assert ours.select([0]).split == hf.select([0]).split


def test_dataset_dict_takes_named_split_keys(tmp_path: Any) -> None:
    split = datasets.Split
    hf = datasets.DatasetDict(
        {split.TRAIN: datasets.Dataset.from_dict({"x": [1, 2]}), split.TEST: _hf_one([3])}
    )
    ours = am.DatasetDict(
        {split.TRAIN: am.Dataset.from_dict({"x": [1, 2]}), split.TEST: _am_one([3])}
    )
    assert list(ours) == list(hf) == ["train", "test"]
    assert ours[split.TRAIN]["x"] == ours["train"]["x"] == list(hf[split.TRAIN]["x"])
    ours[split.VALIDATION] = _am_one([4])
    assert ours["validation"]["x"] == [4]
    ours.save_to_disk(tmp_path / "dd")
    assert list(am.load_from_disk(str(tmp_path / "dd"))) == ["train", "test", "validation"]


def _hf_one(x: list[int]) -> Any:
    return datasets.Dataset.from_dict({"x": x})


def _am_one(x: list[int]) -> am.Dataset:
    return am.Dataset.from_dict({"x": x})


@pytest.mark.parametrize("kind", ["csv", "json", "parquet", "text"])
def test_from_files_take_a_named_split(tmp_path: Any, kind: str) -> None:
    path = tmp_path / f"d.{kind}"
    if kind == "parquet":
        am.Dataset.from_dict({"text": ["a", "b"]}).to_parquet(str(path))
    else:
        texts = {"csv": "text\na\nb\n", "json": '{"text": "a"}\n{"text": "b"}\n'}
        path.write_text(texts.get(kind, "a\nb\n"))
    split = datasets.Split.TEST
    hf = getattr(datasets.Dataset, f"from_{kind}")(
        str(path), split=split, cache_dir=str(tmp_path / "hf")
    )
    ours = getattr(am.Dataset, f"from_{kind}")(str(path), split=split)
    assert ours.split == hf.split == "test"
    assert ours["text"] == list(hf["text"])
    one = getattr(am.Dataset, f"from_{kind}")({split: str(path)})
    assert list(one) == ["test"] and one[split]["text"] == ["a", "b"]


def test_json_floats_keep_every_digit_where_hfs_encoder_rounds() -> None:
    # docs/migrating-from-datasets.md, "What changes, and why": a documented difference
    rows = {"m": [1e-12, "x", 3.141592653589793]}
    hf = datasets.Dataset.from_dict(rows, on_mixed_types="use_json")
    ours = am.Dataset.from_dict(rows, on_mixed_types="use_json")
    assert ours["m"] == rows["m"]
    assert list(hf["m"]) == [0.0, "x", 3.1415926536]
