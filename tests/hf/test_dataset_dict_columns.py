"""DatasetDict.cast_column / class_encode_column per split, as HF's, and the split pair."""

from __future__ import annotations

import pyarrow as pa
import pytest

import arrowmix as am

TRAIN = {"label": ["pos", "neg", "pos", None], "x": [1, 2, 3, 4]}
TEST = {"label": ["neu", "pos"], "x": [5, 6]}


def _dd(module):
    return module.DatasetDict(
        {"train": module.Dataset.from_dict(TRAIN), "test": module.Dataset.from_dict(TEST)}
    )


@pytest.mark.parametrize("include_nulls", [False, True])
def test_class_encode_column_per_split_matches_hf(include_nulls) -> None:
    datasets = pytest.importorskip("datasets")
    with pytest.warns(UserWarning, match="other numbers in different splits"):
        ours = _dd(am).class_encode_column("label", include_nulls=include_nulls)
    hf = _dd(datasets).class_encode_column("label", include_nulls=include_nulls)
    assert list(ours.keys()) == list(hf.keys())
    for split in hf:
        assert ours[split].features == hf[split].features, split
        assert ours[split].to_dict() == hf[split].to_dict(), split


def test_splits_with_other_classes_are_named_in_a_warning_never_silent() -> None:
    # "pos" is 1 in train (neg, pos) and 1 in test (neu, pos), but "neu" and "neg" share 0
    with pytest.warns(UserWarning, match=r"'train': \['neg', 'pos'\], 'test': \['neu', 'pos'\]"):
        _dd(am).class_encode_column("label")
    same = am.DatasetDict(
        {
            "train": am.Dataset.from_dict({"y": ["a", "b"]}),
            "test": am.Dataset.from_dict({"y": ["b", "a"]}),
        }
    )
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = same.class_encode_column("y")
    assert out["test"]["y"] == [1, 0]


def test_cast_column_per_split_matches_hf() -> None:
    datasets = pytest.importorskip("datasets")
    labels = datasets.ClassLabel(names=["neg", "neu", "pos"])
    for column, feature in [("x", datasets.Value("float32")), ("label", labels)]:
        ours = _dd(am).cast_column(column, feature)
        hf = _dd(datasets).cast_column(column, feature)
        for split in hf:
            assert ours[split].features == hf[split].features, (column, split)
            assert ours[split].to_dict() == hf[split].to_dict(), (column, split)


def test_each_split_keeps_its_own_fingerprint_and_cache() -> None:
    dd = am.DatasetDict({"train": am.Dataset.from_dict(TRAIN), "test": am.Dataset.from_dict(TEST)})
    with pytest.warns(UserWarning, match="different classes"):
        first = dd.class_encode_column("label")
    assert first["train"]["label"] == [1, 0, 1, None]  # names: ['neg', 'pos']
    assert first["test"]["label"] == [0, 1]  # names: ['neu', 'pos']
    assert first["train"].fingerprint != first["test"].fingerprint
    with pytest.warns(UserWarning, match="different classes"):
        again = dd.class_encode_column("label")
    assert {k: d.fingerprint for k, d in again.items()} == {
        k: d.fingerprint for k, d in first.items()
    }
    cast = dd.cast_column("x", pa.int32())
    assert cast["test"].schema.field("x").type == pa.int32()
    assert cast["train"].fingerprint == dd["train"].cast_column("x", pa.int32()).fingerprint
    with pytest.raises(Exception, match="nope"):
        dd.cast_column("nope", pa.int32())


def test_split_pair_transforms_take_per_split_arguments(tmp_path) -> None:
    pair = am.Dataset.from_dict({"x": list(range(10))}).train_test_split(test_size=0.3, seed=0)
    names = {"train": str(tmp_path / "tr.arrow"), "test": str(tmp_path / "te.arrow")}
    out = pair.map(lambda r, split: {"s": split}, with_split=True, cache_file_names=names)
    assert out["test"]["s"] == ["test"] * 3 and out["train"].cache_files == [names["train"]]
    shuffled = pair.shuffle(seeds=1)
    assert shuffled["train"]["x"] == pair["train"].shuffle(seed=1)["x"]
    assert pair.cast_column("x", pa.float64())["test"].schema.field("x").type == pa.float64()
