"""Values that must match HF ``datasets`` exactly (compared against it where installed)."""

from __future__ import annotations

import pytest

import arrowmix as am


@pytest.mark.parametrize(
    ("labels", "test_size", "seed"),
    [
        ([0, 1] * 5, 0.5, 0),
        ([0, 1] * 5, 0.5, 7),
        ([0] * 60 + [1] * 30 + [2] * 10, 0.2, 0),
        ([0] * 60 + [1] * 30 + [2] * 10, 0.33, 123),
        ([2, 0, 1, 1, 0, 2, 2, 1, 0, 1, 1, 2, 0, 0, 1], 6, 5),
        ([i % 7 for i in range(101)], 0.3, 42),
    ],
)
def test_stratified_split_picks_hf_rows(labels: list[int], test_size: float, seed: int) -> None:
    datasets = pytest.importorskip("datasets")
    data = {"x": list(range(len(labels))), "label": labels}
    features = datasets.Features(
        {
            "x": datasets.Value("int64"),
            "label": datasets.ClassLabel(num_classes=max(labels) + 1),
        }
    )
    hf = datasets.Dataset.from_dict(data, features=features).train_test_split(
        test_size=test_size, stratify_by_column="label", seed=seed
    )
    ours = am.Dataset.from_dict(data).train_test_split(
        test_size=test_size, stratify_by_column="label", seed=seed
    )
    assert ours["test"]["x"] == hf["test"]["x"]
    assert ours["train"]["x"] == hf["train"]["x"]


def test_stratified_split_rows_are_fixed_by_seed() -> None:
    ds = am.Dataset.from_dict({"x": list(range(10)), "label": [0, 1] * 5})
    split = ds.train_test_split(test_size=0.5, stratify_by_column="label", seed=0)
    assert split["test"]["x"] == [1, 2, 6, 0, 7]  # HF datasets 5.2.0 picks these rows


def _keep_rank_zero(row: dict, rank: int | None) -> bool:
    return rank == 0


def _add_rank(row: dict, rank: int | None) -> dict:
    return {"rank": -1 if rank is None else rank}


def test_filter_with_rank_passes_hf_shard_ranks(tmp_path) -> None:
    ds = am.Dataset.from_dict({"x": list(range(30))})
    kept = ds.filter(_keep_rank_zero, with_rank=True, num_proc=2)
    assert kept["x"] == list(range(15))  # HF keeps the first of two contiguous shards
    ranks = am.Dataset.from_dict({"x": list(range(31))}).map(_add_rank, with_rank=True, num_proc=2)
    assert ranks["rank"] == [0] * 16 + [1] * 15  # HF's shards: the first gets the extra row
    assert ds.map(_add_rank, with_rank=True)["rank"] == [-1] * 30  # one process: None
    three = ds.map(_add_rank, with_rank=True, num_proc=3)
    assert three["rank"] == [0] * 10 + [1] * 10 + [2] * 10
    assert three.fingerprint != ds.map(_add_rank, with_rank=True, num_proc=2).fingerprint
    tiny = am.Dataset.from_dict({"x": [1, 2]}).map(_add_rank, with_rank=True, num_proc=4)
    assert tiny["rank"] == [0, 1]  # at most one shard per row, as in HF


def test_filter_with_rank_matches_hf() -> None:
    datasets = pytest.importorskip("datasets")
    data = {"x": list(range(30))}
    hf = datasets.Dataset.from_dict(data).filter(_keep_rank_zero, with_rank=True, num_proc=2)
    ours = am.Dataset.from_dict(data).filter(_keep_rank_zero, with_rank=True, num_proc=2)
    assert ours["x"] == hf["x"]


def _same(row: dict) -> dict:
    return row


@pytest.mark.parametrize("function", [None, _same])
def test_map_to_named_file_returns_the_dataset_backed_by_it(tmp_path, function) -> None:
    ds = am.Dataset.from_dict({"x": [1, 2, 3], "y": ["a", "b", "c"]})
    path = str(tmp_path / "out.arrow")
    out = ds.map(function, cache_file_name=path)
    assert out.cache_files == [path]  # HF: the dataset backed by the file it names
    assert out.fingerprint != ds.fingerprint
    assert out.to_dict() == ds.to_dict() and out.features == ds.features
    assert am.Dataset.from_file(path).to_dict() == ds.to_dict()  # every column is in the file
    assert ds.map(function) is ds  # without a named file, the input itself, as before


def _tokenized(batch: dict) -> dict:
    n = len(batch["text"])
    return {
        "input_ids": [[101, 7, 102]] * n,
        "attention_mask": [[1, 1, 1]] * n,
        "token_type_ids": [[0, 0, 0]] * n,
        "special_tokens_mask": [[1, 0, 1]] * n,
        "other_ids": [[5]] * n,
    }


def _overflowing(batch: dict) -> dict:
    return {"attention_mask": [[1000]] * len(batch["text"])}


def _row_masks(row: dict) -> dict:
    return {"attention_mask": 1, "token_type_ids": [[0, 1]]}


@pytest.mark.parametrize(
    ("function", "batched"), [(_tokenized, True), (_overflowing, True), (_row_masks, False)]
)
def test_tokenizer_outputs_get_hf_optimized_types(function, batched) -> None:
    datasets = pytest.importorskip("datasets")
    data = {"text": ["a b", "c d e", "f"]}
    ours = am.Dataset.from_dict(data).map(function, batched=batched)
    hf = datasets.Dataset.from_dict(data).map(function, batched=batched)
    assert ours.features == hf.features
    assert ours.to_dict() == hf.to_dict()


def test_tokenizer_output_types() -> None:
    out = am.Dataset.from_dict({"text": ["a", "b"]}).map(_tokenized, batched=True)
    assert out.features["input_ids"].feature.dtype == "int32"
    assert out.features["attention_mask"].feature.dtype == "int8"
    assert out.features["token_type_ids"].feature.dtype == "int8"
    assert out.features["other_ids"].feature.dtype == "int64"
    wide = out.map(_overflowing, batched=True)  # values that do not fit stay int64, as in HF
    assert wide.features["attention_mask"].feature.dtype == "int64"
    assert wide["attention_mask"] == [[1000], [1000]]
