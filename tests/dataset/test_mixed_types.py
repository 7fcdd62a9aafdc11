"""``on_mixed_types="use_json"``: values of mixed types are stored as JSON, read back as given."""

from __future__ import annotations

import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix.exceptions import SchemaMismatchError

MIXED = {
    "scalars": [-1, "two", 3.5],
    "dict_keys": [{"a": 0}, {"b": "x"}, {}],
    "shapes": [{"a": 0}, [0], None],
    "per_item": [[{"a": 0}, {"b": 0}], [], [{"c": [1]}]],
    "field": [{"k": 1, "v": "one"}, {"k": 2, "v": 2}, {"k": 3, "v": None}],
    "plain": [1, 2, 3],
    "text": ["1", "true", '{"a": 1}'],  # strings that look like JSON stay strings
}


def rows(data):
    n = len(next(iter(data.values())))
    return [{k: v[i] for k, v in data.items()} for i in range(n)]


def test_from_dict_keeps_mixed_values_as_json():
    ds = am.Dataset.from_dict(MIXED, on_mixed_types="use_json")
    assert ds[:] == MIXED and ds.to_dict() == MIXED
    assert ds[1] == rows(MIXED)[1] and list(ds) == rows(MIXED) == ds.to_list()
    assert ds["field"] == MIXED["field"] and ds.column("scalars")[1] == "two"
    types = ds.schema
    assert str(types.field("scalars").type) == "extension<arrow.json>"
    assert types.field("per_item").type.value_type == pa.json_()
    assert types.field("field").type == pa.struct([("k", pa.int64()), ("v", pa.json_())])
    assert types.field("plain").type == pa.int64() and types.field("text").type == pa.string()
    assert ds.shuffle(seed=0).sort("plain")[:] == MIXED


def test_the_only_mixed_value_is_a_string_among_ints():
    ds = am.Dataset.from_pylist([{"x": "1"}, {"x": 2}], on_mixed_types="use_json")
    assert ds["x"] == ["1", 2]  # HF reads the str "1" back as the int 1


def test_without_use_json_mixed_types_raise():
    with pytest.raises(SchemaMismatchError, match="'x': row 1"):  # a ValueError, as pyarrow's
        am.Dataset.from_dict({"x": [1, "a"]})
    with pytest.raises(ValueError, match="`on_mixed_types` must be None or 'use_json'"):
        am.Dataset.from_dict({"x": [1, "a"]}, on_mixed_types="json")
    ds = am.Dataset.from_dict({"n": [1, 2]})
    with pytest.raises(SchemaMismatchError, match="on_mixed_types='use_json'"):
        ds.map(lambda r: {"y": r["n"] if r["n"] == 1 else "two"})


def test_map_stores_mixed_outputs_as_json_and_reads_them_back():
    ds = am.Dataset.from_dict({"n": [0, 1, 2]})
    out = ds.map(
        lambda r: {k: v[r["n"]] for k, v in MIXED.items()},
        on_mixed_types="use_json",
        remove_columns=["n"],
    )
    assert out[:] == MIXED
    batched = ds.map(lambda b: dict(MIXED), batched=True, on_mixed_types="use_json")
    assert batched.select_columns(list(MIXED))[:] == MIXED


def test_map_reads_json_as_values_and_writes_them_back_as_json():
    ds = am.Dataset.from_dict({"v": [1, "a", {"k": [2]}]}, on_mixed_types="use_json")
    seen = []
    ds.map(lambda r: seen.append(r["v"]))
    assert seen == [1, "a", {"k": [2]}]
    wrapped = ds.map(lambda r: {"v": [r["v"]]})  # the column stays JSON (the input's type)
    assert wrapped["v"] == [[1], ["a"], [{"k": [2]}]]
    assert wrapped.schema.field("v").type == pa.json_()
    kept = ds.filter(lambda r: isinstance(r["v"], dict))
    assert kept[:] == {"v": [{"k": [2]}]}


def test_on_mixed_types_enters_the_fingerprint():
    ds = am.Dataset.from_dict({"n": [1, 2]})
    plain = ds.map(lambda r: {"y": r["n"]})
    as_json = ds.map(lambda r: {"y": r["n"]}, on_mixed_types="use_json")
    assert plain.fingerprint != as_json.fingerprint
    assert as_json["y"] == [1, 2] and as_json.schema.field("y").type == pa.int64()


def test_hf_features_of_json_columns():
    datasets = pytest.importorskip("datasets")
    ds = am.Dataset.from_dict({"x": [{}], "y": [[{"a": 0}, {"b": 0}]]}, on_mixed_types="use_json")
    assert ds.features == datasets.Features(
        {"x": datasets.Json(), "y": datasets.List(datasets.Json())}
    )


def test_other_extension_types_are_not_json():
    datasets = pytest.importorskip("datasets")
    features = datasets.Features({"a": datasets.Array2D(shape=(1, 2), dtype="int32")})
    ds = am.Dataset.from_dict({"a": [[[1, 2]], [[3, 4]]]}, features=features)
    assert ds[1] == {"a": [[3, 4]]}  # its type has a `value_type` that is not an Arrow type
    assert ds.map(lambda r: {"b": 1})[0] == {"a": [[1, 2]], "b": 1}
