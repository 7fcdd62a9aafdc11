"""Constructors store tokenizer-shaped columns in HF's optimized int types, as HF does."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import arrowmix as am

TOKENIZED = {
    "input_ids": [[101, 7592, 102], [101, 102]],
    "attention_mask": [[1, 1, 1], [1, 1]],
    "token_type_ids": [0, 1],
    "special_tokens_mask": [[[1, 0]], [[0, 1]]],
    "other_ids": [[1], [2]],
}

CASES = {
    "lists": TOKENIZED,
    "too wide": {"input_ids": [[1, 2**40]], "attention_mask": [[300]]},
    "numpy 2-D": {"input_ids": np.array([[1, 2], [3, 4]])},
    "numpy 3-D floats": {"input_ids": np.arange(12.0).reshape(2, 3, 2)},
    "numpy int32": {"attention_mask": np.array([1, 0], dtype=np.int32)},
    "arrow kept": {"input_ids": pa.array([[1, 2]])},
    "bools": {"attention_mask": [[True, False]]},
    "nulls": {"input_ids": [None, None]},
}


def _generate(rows):
    yield from rows


@pytest.mark.parametrize("data", CASES.values(), ids=CASES.keys())
def test_from_dict_types_match_hf(data) -> None:
    datasets = pytest.importorskip("datasets")
    ours = am.Dataset.from_dict(data)
    hf = datasets.Dataset.from_dict(data)
    assert ours.features == hf.features
    assert ours.to_dict() == hf.to_dict()


@pytest.mark.parametrize("data", [TOKENIZED, CASES["too wide"]], ids=["fits", "too wide"])
def test_row_constructors_types_match_hf(data, tmp_path) -> None:
    datasets = pytest.importorskip("datasets")
    rows = [dict(zip(data, values, strict=True)) for values in zip(*data.values(), strict=True)]
    hf = datasets.Dataset.from_list(rows)
    assert am.Dataset.from_list(rows).features == hf.features
    assert am.Dataset.from_pylist(rows).features == hf.features
    assert am.Dataset.from_dict(data, on_mixed_types="use_json").features == hf.features
    generated = am.Dataset.from_generator(
        _generate, gen_kwargs={"rows": rows}, cache_dir=str(tmp_path)
    )
    hf_generated = datasets.Dataset.from_generator(
        _generate, gen_kwargs={"rows": rows}, cache_dir=str(tmp_path / "hf")
    )
    assert generated.features == hf_generated.features == hf.features
    assert generated.to_dict() == hf_generated.to_dict()


def test_optimized_types_without_hf() -> None:
    ds = am.Dataset.from_dict(TOKENIZED)
    assert ds.schema.field("input_ids").type == pa.list_(pa.int32())
    assert ds.schema.field("attention_mask").type == pa.list_(pa.int8())
    assert ds.schema.field("token_type_ids").type == pa.int8()
    assert ds.schema.field("special_tokens_mask").type == pa.list_(pa.list_(pa.int8()))
    assert ds.schema.field("other_ids").type == pa.list_(pa.int64())
    assert ds["input_ids"] == TOKENIZED["input_ids"]


def test_declared_types_and_other_constructors_keep_int64() -> None:
    """As HF: features, pandas, add_column and Arrow data are not optimized."""
    pd = pytest.importorskip("pandas")
    typed = pa.schema([("input_ids", pa.list_(pa.int64()))])
    assert am.Dataset.from_dict({"input_ids": [[1]]}, features=typed).schema == typed
    frame = am.Dataset.from_pandas(pd.DataFrame({"input_ids": [1, 2]}))
    assert frame.schema.field("input_ids").type == pa.int64()
    added = am.Dataset.from_dict({"a": [1]}).add_column("input_ids", [[1]])
    assert added.schema.field("input_ids").type == pa.list_(pa.int64())


def test_generated_rows_too_wide_after_the_first_block_are_refused(tmp_path) -> None:
    rows = [{"attention_mask": 1}] * 1000 + [{"attention_mask": 300}]
    with pytest.raises(am.exceptions.SchemaMismatchError, match="attention_mask"):
        am.Dataset.from_generator(_generate, gen_kwargs={"rows": rows}, cache_dir=str(tmp_path))
