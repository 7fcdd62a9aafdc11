"""HF datasets' arguments of sort, shuffle, train_test_split, from_dict/from_pylist schemas."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix.exceptions import SchemaMismatchError


def test_sort_null_placement():
    ds = am.Dataset.from_dict({"c": ["b", None, "a", None, "c"]})
    assert ds.sort("c")["c"] == ["a", "b", "c", None, None]
    assert ds.sort("c", null_placement="at_start")["c"] == [None, None, "a", "b", "c"]
    assert ds.sort("c", null_placement="first")["c"] == [None, None, "a", "b", "c"]
    assert ds.sort("c", null_placement="last")["c"] == ["a", "b", "c", None, None]
    assert ds.sort("c", null_placement="first").fingerprint != ds.sort("c").fingerprint
    assert ds.sort("c", null_placement="last").fingerprint == ds.sort("c").fingerprint
    with pytest.raises(ValueError, match="null_placement"):
        ds.sort("c", null_placement="middle")


def test_unseeded_shuffle_follows_numpy_global_seed():
    ds = am.Dataset.from_dict({"x": list(range(50))})
    np.random.seed(0)
    first, second = ds.shuffle()["x"], ds.shuffle()["x"]
    np.random.seed(0)
    assert ds.shuffle()["x"] == first and ds.shuffle()["x"] == second
    assert first != second  # each unseeded shuffle advances numpy's generator
    np.random.seed(0)
    split = ds.train_test_split(test_size=10)
    np.random.seed(0)
    assert ds.train_test_split(test_size=10)["test"]["x"] == split["test"]["x"]


def test_seeded_shuffle_and_split_are_hf_permutations():
    ds = am.Dataset.from_dict({"x": list(range(20))})
    perm = np.random.default_rng(3).permutation(20).tolist()
    assert ds.shuffle(seed=3)["x"] == perm
    split = ds.train_test_split(test_size=5, seed=3)
    assert split["test"]["x"] == perm[:5] and split["train"]["x"] == perm[5:]


def test_train_size():
    ds = am.Dataset.from_dict({"x": list(range(10))})
    split = ds.train_test_split(train_size=0.75, seed=0)  # floor: 7 train, 3 test
    assert (len(split.train), len(split.test)) == (7, 3)
    split = ds.train_test_split(test_size=2, train_size=5, seed=0)  # a subset of the rows
    assert (len(split.train), len(split.test)) == (5, 2)
    assert not set(split.train["x"]) & set(split.test["x"])
    assert len(ds.train_test_split(seed=0).test) == 3  # default: test_size=0.25, rounded up
    assert ds.train_test_split(train_size=4, shuffle=False).train["x"] == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="more than the dataset's 10"):
        ds.train_test_split(test_size=6, train_size=5)
    with pytest.raises(ValueError, match="train_size"):
        ds.train_test_split(train_size=1.5)


def test_stratified_split_keeps_label_shares():
    labels = [0] * 60 + [1] * 30 + [2] * 10
    ds = am.Dataset.from_dict({"x": list(range(100)), "label": labels})
    split = ds.train_test_split(test_size=0.2, stratify_by_column="label", seed=0)
    assert len(split.test) == 20 and len(split.train) == 80
    assert np.bincount(split.test["label"]).tolist() == [12, 6, 2]
    assert np.bincount(split.train["label"]).tolist() == [48, 24, 8]
    assert sorted(split.train["x"] + split.test["x"]) == list(range(100))
    again = ds.train_test_split(test_size=0.2, stratify_by_column="label", seed=0)
    assert again.test["x"] == split.test["x"]
    assert again.test.fingerprint != ds.train_test_split(test_size=0.2, seed=0).test.fingerprint
    strings = am.Dataset.from_dict({"label": ["a", "b"] * 10})
    assert (
        sorted(strings.train_test_split(0.5, stratify_by_column="label", seed=1).test["label"])
        == ["a"] * 5 + ["b"] * 5
    )


def test_stratified_split_errors():
    ds = am.Dataset.from_dict({"label": [0, 0, 0, 1, 2, 2]})
    with pytest.raises(ValueError, match="label 1 has only 1 row"):
        ds.train_test_split(0.5, stratify_by_column="label")
    ds = am.Dataset.from_dict({"label": [0, 0, 1, 1, 2, 2, 3, 3]})
    with pytest.raises(ValueError, match="4 labels need at least 4 rows in each split"):
        ds.train_test_split(0.25, stratify_by_column="label")
    with pytest.raises(ValueError, match="'labl'"):
        ds.train_test_split(0.5, stratify_by_column="labl")
    with pytest.raises(ValueError, match="shuffle=True"):
        ds.train_test_split(0.5, shuffle=False, stratify_by_column="label")


SCHEMA = pa.schema([("f", pa.float32()), ("s", pa.string()), ("i", pa.int32())])


def test_from_dict_schema_casts_compatible_values():
    ds = am.Dataset.from_dict({"f": [1, 2], "s": [1, 2], "i": [1.0, 2.0]}, schema=SCHEMA)
    assert ds.schema == SCHEMA
    assert ds[:] == {"f": [1.0, 2.0], "s": ["1", "2"], "i": [1, 2]}
    rows = am.Dataset.from_pylist([{"f": 1, "s": 3, "i": 4.0}, {"f": 2.5}], schema=SCHEMA)
    assert rows[:] == {"f": [1.0, 2.5], "s": ["3", None], "i": [4, None]}
    assert am.Dataset.from_dict({"f": [1], "s": ["a"], "i": [1]}, features=SCHEMA).schema == SCHEMA


def test_from_dict_schema_never_truncates():
    with pytest.raises(SchemaMismatchError, match=r"Column 'i'.*double.*int32"):
        am.Dataset.from_dict({"f": [1.0], "s": ["a"], "i": [2.5]}, schema=SCHEMA)
    with pytest.raises(SchemaMismatchError, match=r"missing: \['i'\]"):
        am.Dataset.from_dict({"f": [1.0], "s": ["a"]}, schema=SCHEMA)
    with pytest.raises(SchemaMismatchError, match="not in the schema"):
        am.Dataset.from_pylist([{"f": 1.0, "s": "a", "i": 1, "extra": 0}], schema=SCHEMA)
    with pytest.raises(TypeError, match="not both"):
        am.Dataset.from_dict({"f": [1.0]}, schema=SCHEMA, features=SCHEMA)


def test_hf_features_object_is_accepted():
    datasets = pytest.importorskip("datasets")
    features = datasets.Features({"x": datasets.Value("int32"), "t": datasets.Value("string")})
    ds = am.Dataset.from_dict({"x": [1, 2], "t": ["a", "b"]}, features=features)
    assert ds.schema.field("x").type == pa.int32()


def test_columns_and_shape():
    ds = am.Dataset.from_dict({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    assert ds.num_columns == 2 and ds.shape == (3, 2)
    assert ds.select([0]).shape == (1, 2)
    out = ds.rename_columns({"a": "n", "b": "t"})
    assert out.column_names == ["n", "t"] and out[0] == {"n": 1, "t": "x"}
    with pytest.raises(ValueError, match=r"duplicate column\(s\) \['b'\]"):
        ds.rename_columns({"a": "b"})
    with pytest.raises(KeyError, match="'c'"):
        ds.rename_columns({"c": "d"})
    assert ds.to_dict() == {"a": [1, 2, 3], "b": ["x", "y", "z"]}
    assert ds.select([2]).to_list() == [{"a": 3, "b": "z"}]
    with ds as same:
        assert same is ds


def test_features_as_hf_features():
    datasets = pytest.importorskip("datasets")
    ds = am.Dataset.from_dict({"x": [1], "t": ["a"]})
    assert ds.features == datasets.Features(
        {"x": datasets.Value("int64"), "t": datasets.Value("string")}
    )
