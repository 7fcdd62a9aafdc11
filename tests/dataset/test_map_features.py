"""HF features (class names...) survive map, and ``map(features=...)`` casts the output."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix.exceptions import SchemaMismatchError

datasets = pytest.importorskip("datasets")
Features, Value, ClassLabel, List = (
    datasets.Features,
    datasets.Value,
    datasets.ClassLabel,
    datasets.List,
)

LABELED = Features({"text": Value("string"), "tags": List(ClassLabel(names=["neg", "pos"]))})


@pytest.fixture
def labeled():
    data = {"text": ["a", "bb", "ccc"], "tags": [[1, 0], [1], []]}
    return am.Dataset.from_dict(data, features=LABELED)


def flip(row):
    return {"tags": [1 - t for t in row["tags"]]}


def test_declared_features_survive_a_map_that_keeps_the_types(labeled):
    assert labeled.features == LABELED
    positional = am.Dataset.from_dict({"text": ["a"], "tags": [[1]]}, LABELED)  # HF's call
    assert positional.features == LABELED
    out = labeled.map(flip)
    assert out.features == LABELED and out["tags"] == [[0, 1], [0], []]
    again = labeled.map(flip)  # read from the cache: the features are in the files
    assert again.cache_files == out.cache_files and again.features == LABELED


def test_new_and_retyped_columns_get_the_inferred_feature(labeled):
    out = labeled.map(lambda r: {"n": len(r["text"]), "tags": [str(t) for t in r["tags"]]})
    assert out.features == Features(
        {"text": Value("string"), "tags": List(Value("string")), "n": Value("int64")}
    )


def test_a_named_cache_file_holds_every_column_and_the_features(labeled, tmp_path):
    path = str(tmp_path / "flipped.arrow")
    labeled.map(flip, cache_file_name=path)
    reopened = am.Dataset.from_file(path)
    assert reopened.column_names == ["text", "tags"]
    assert reopened.features == LABELED and reopened["tags"] == [[0, 1], [0], []]


def test_renames_and_flatten_keep_the_features(labeled):
    swapped = labeled.rename_columns({"text": "tags", "tags": "text"})
    assert swapped.features == Features(
        {"tags": Value("string"), "text": List(ClassLabel(names=["neg", "pos"]))}
    )
    assert labeled.shuffle(seed=0).flatten_indices().features == LABELED


def test_map_features_orders_and_casts_the_output():
    ds = am.Dataset.from_dict({"x": [1, 2, 3]})
    target = Features({"label": ClassLabel(names=["even", "odd"]), "x": Value("int32")})
    out = ds.map(lambda r: {"label": r["x"] % 2}, features=target)
    assert out.column_names == ["label", "x"]
    assert out.schema.field("x").type == pa.int32()
    assert out.features == target and out["label"] == [1, 0, 1]


def test_map_features_encodes_class_names_and_checks_indices():
    ds = am.Dataset.from_dict({"x": [1, 2, 3]})
    target = Features({"x": Value("int64"), "label": ClassLabel(names=["even", "odd"])})
    names = ds.map(lambda r: {"label": ["even", "odd"][r["x"] % 2]}, features=target)
    assert names["label"] == [1, 0, 1]
    with pytest.raises(SchemaMismatchError, match=r"'label'.*class label 3"):
        ds.map(lambda r: {"label": r["x"]}, features=target)
    with pytest.raises(SchemaMismatchError, match=r"'label'.*\['three'\]"):
        ds.map(lambda r: {"label": "three"}, features=target)


def test_map_features_never_changes_a_value():
    ds = am.Dataset.from_dict({"x": [1, 2, 3]})
    ints = Features({"x": Value("int64"), "y": Value("int64")})
    with pytest.raises(SchemaMismatchError, match=r"'y'.*double.*int64"):
        ds.map(lambda r: {"y": r["x"] / 2}, features=ints)
    strings = Features({"x": Value("int64"), "y": Value("string")})
    with pytest.raises(SchemaMismatchError, match=r"'y'.*string"):
        ds.map(lambda r: {"y": r["x"]}, features=strings)
    with pytest.raises(SchemaMismatchError, match=r"do not match `features`' columns \['x'\]"):
        ds.map(lambda r: {"y": 1}, features=Features({"x": Value("int64")}))


def test_map_features_enter_the_fingerprint():
    ds = am.Dataset.from_dict({"x": [0, 1]})
    a = Features({"x": Value("int64"), "y": ClassLabel(names=["a", "b"])})
    b = Features({"x": Value("int64"), "y": ClassLabel(names=["b", "a"])})
    plain = ds.map(lambda r: {"y": r["x"]})
    with_a = ds.map(lambda r: {"y": r["x"]}, features=a)
    with_b = ds.map(lambda r: {"y": r["x"]}, features=b)
    assert len({plain.fingerprint, with_a.fingerprint, with_b.fingerprint}) == 3
    assert with_b.features == b


def test_map_features_as_an_arrow_schema():
    ds = am.Dataset.from_dict({"x": [1, 2]})
    schema = pa.schema([("x", pa.float32()), ("y", pa.int8())])
    out = ds.map(lambda r: {"y": r["x"] * 2}, features=schema)
    assert out.schema == schema and out["y"] == [2, 4]
    with pytest.raises(TypeError, match="`features` must be"):
        ds.map(lambda r: {"y": 1}, features={"y": "int64"})


def test_map_features_with_worker_processes(tmp_path):
    ds = am.Dataset.from_dict({"x": list(range(40))})
    target = Features({"x": Value("int64"), "label": ClassLabel(names=["even", "odd"])})
    out = ds.map(_parity, features=target, num_proc=2)
    assert out.features == target and out["label"] == [i % 2 for i in range(40)]
    assert os.path.exists(out.cache_files[-1])


def _parity(row):
    return {"label": row["x"] % 2}


def test_a_kept_class_label_feature_must_hold_classes(labeled):
    with pytest.raises(SchemaMismatchError, match=r"'tags'.*class label 2.*input's class labels"):
        labeled.map(lambda r: {"tags": [t + 1 for t in r["tags"]]})
    relabeled = Features({"text": Value("string"), "tags": List(ClassLabel(num_classes=3))})
    out = labeled.map(lambda r: {"tags": [t + 1 for t in r["tags"]]}, features=relabeled)
    assert out.features == relabeled and out["tags"] == [[2, 1], [2], []]


def _returns_its_input(example):
    return example


@pytest.mark.parametrize("function", [None, _returns_its_input])
@pytest.mark.parametrize("batched", [False, True])
def test_map_that_changes_nothing_still_casts_to_the_features(function, batched):
    ds = am.Dataset.from_dict({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    out = ds.map(
        function, batched=batched, features=Features({"a": Value("float32"), "b": Value("string")})
    )
    assert out.features == Features({"a": Value("float32"), "b": Value("string")})
    assert out.data.table.schema.field("a").type == pa.float32()
    assert out["a"] == [1.0, 2.0, 3.0] and out["b"] == ["x", "y", "z"]
    assert out.fingerprint != ds.fingerprint
