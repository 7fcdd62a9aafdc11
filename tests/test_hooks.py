"""The core's extension points (arrowmix._hooks): the plain defaults and the HF layer's."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix import _hooks
from arrowmix._hf import HFAdapter
from arrowmix.exceptions import SchemaMismatchError

PLAIN = _hooks.Adapter()
LABEL = {"names": ["a", "b"], "_type": "ClassLabel"}


def test_importing_arrowmix_registers_the_hf_layer() -> None:
    assert isinstance(_hooks.adapter(), HFAdapter)


def test_plain_features_schema_keeps_only_the_carried_entry() -> None:
    schema = pa.schema([("x", pa.int8())], metadata={b"huggingface": b"{}", b"other": b"1"})
    out = PLAIN.features_schema(schema)
    assert out is not None
    assert out.metadata == {b"huggingface": b"{}"}
    assert out.field("x").type == pa.int8()
    assert PLAIN.features_schema(None) is None
    with pytest.raises(TypeError, match=r"pyarrow\.Schema"):
        PLAIN.features_schema({"x": "int8"})


def test_plain_cast_to_features_orders_and_casts_without_changing_values() -> None:
    batch = pa.RecordBatch.from_pydict({"b": [1, 2], "a": ["x", "y"]})
    target = pa.schema([("a", pa.string()), ("b", pa.int8())])
    out = PLAIN.cast_to_features(batch, target, "rows 0-2")
    assert out.schema == target
    assert out.to_pydict() == {"a": ["x", "y"], "b": [1, 2]}
    with pytest.raises(SchemaMismatchError, match=r"'b'.*rows 0-2"):
        PLAIN.cast_to_features(
            pa.RecordBatch.from_pydict({"a": ["x"], "b": [300]}), target, "rows 0-2"
        )
    with pytest.raises(SchemaMismatchError, match="do not match"):
        PLAIN.cast_to_features(pa.RecordBatch.from_pydict({"a": ["x"]}), target, "rows 0-1")


def test_plain_adapter_knows_no_features_texts_or_foreign_tables() -> None:
    schema = pa.schema([("x", pa.int64())])
    ds = am.Dataset.from_dict({"x": [1]})
    assert PLAIN.output_metadata(schema, schema) == {}
    assert PLAIN.label_features(schema, ["x"]) == {}
    assert PLAIN.renamed_entry(schema, {"x": "y"}) == {}
    assert PLAIN.merged_metadata([schema, schema], schema) is None
    assert PLAIN.dataset_with_info(ds, object()) is ds
    with pytest.raises(TypeError, match=r"Dataset\.from_"):
        PLAIN.state_from_table(pa.table({"x": [1]}), None, None, None)


def test_a_registered_adapter_answers_the_core(monkeypatch: pytest.MonkeyPatch) -> None:
    class Renaming(_hooks.Adapter):
        def renamed_entry(self, schema: pa.Schema, renamed: dict[str, str]) -> dict[bytes, bytes]:
            return {b"huggingface": json.dumps({"info": {"features": {"y": LABEL}}}).encode()}

    monkeypatch.setattr(_hooks, "_ADAPTERS", [*_hooks._ADAPTERS])
    _hooks.register(Renaming())
    ds = am.Dataset.from_dict({"x": [1]}).rename_column("x", "y")
    pytest.importorskip("datasets")
    assert ds.features["y"].names == ["a", "b"]  # the adapter's entry is what HF reads
