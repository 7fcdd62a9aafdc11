"""HF's feature rules on plain Arrow schemas (no HF metadata): what the core gets back.

The core calls :mod:`arrowmix._hf.features` and :mod:`arrowmix._hf.info` directly; on a
schema without HF's entry they must behave as plain Arrow: no features beyond the types, no
texts, a lossless cast to the declared types.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from arrowmix._hf import features, info
from arrowmix.exceptions import SchemaMismatchError


def test_features_schema_keeps_only_the_carried_entry() -> None:
    schema = pa.schema([("x", pa.int8())], metadata={b"huggingface": b"{}", b"other": b"1"})
    out = features.features_schema(schema)
    assert out is not None
    assert out.metadata == {b"huggingface": b"{}"}
    assert out.field("x").type == pa.int8()
    assert features.features_schema(None) is None
    with pytest.raises(TypeError, match=r"pyarrow\.Schema"):
        features.features_schema({"x": "int8"})


def test_cast_to_features_orders_and_casts_without_changing_values() -> None:
    batch = pa.RecordBatch.from_pydict({"b": [1, 2], "a": ["x", "y"]})
    target = pa.schema([("a", pa.string()), ("b", pa.int8())])
    out = features.cast_to_features(batch, target, "rows 0-2")
    assert out.schema == target
    assert out.to_pydict() == {"a": ["x", "y"], "b": [1, 2]}
    with pytest.raises(SchemaMismatchError, match=r"'b'.*rows 0-2"):
        features.cast_to_features(
            pa.RecordBatch.from_pydict({"a": ["x"], "b": [300]}), target, "rows 0-2"
        )
    with pytest.raises(SchemaMismatchError, match="do not match"):
        features.cast_to_features(pa.RecordBatch.from_pydict({"a": ["x"]}), target, "rows 0-1")


def test_a_plain_schema_has_no_features_or_texts_to_carry() -> None:
    schema = pa.schema([("x", pa.int64())])
    assert features.output_metadata(schema, schema) == {}
    assert features.label_features(schema, ["x"]) == {}
    assert info.renamed_entry(schema, {"x": "y"}) == {}
    assert info.merged_metadata([schema, schema], schema) is None
