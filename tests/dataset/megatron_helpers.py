"""Megatron corpora written by megatron-core's own builder, for the token-file tests."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest


def indexed_dataset_module() -> Any:
    """megatron-core's ``indexed_dataset`` (the test group installs it; skip without it)."""
    with warnings.catch_warnings():  # "Transformer Engine and Apex are not installed" on CPU
        warnings.simplefilter("ignore")
        return pytest.importorskip("megatron.core.datasets.indexed_dataset")


def documents(n: int, seed: int, vocab: int = 50_000, max_len: int = 40) -> list[list[int]]:
    """``n`` documents of 0..max_len token ids below ``vocab`` (some empty)."""
    rng = np.random.default_rng(seed)
    return [rng.integers(0, vocab, int(rng.integers(0, max_len + 1))).tolist() for _ in range(n)]


def build_with_megatron(
    prefix: str, docs: list[list[int]], dtype: Any, split_every: int | None = None
) -> None:
    """Write ``docs`` with megatron-core's ``IndexedDatasetBuilder``.

    ``split_every``: documents whose sequences are pieces of that many tokens (as
    ``preprocess_data --split-sentences`` writes them); None: one sequence per document.
    """
    import torch

    mod = indexed_dataset_module()
    builder = mod.IndexedDatasetBuilder(f"{prefix}.bin", dtype=dtype)
    for doc in docs:
        if split_every is None:
            builder.add_item(torch.tensor(doc, dtype=torch.int64))
            builder.end_document()
        else:
            lengths = [min(split_every, len(doc) - i) for i in range(0, len(doc), split_every)]
            builder.add_document(np.asarray(doc, dtype=np.int64), lengths or [0])
    builder.finalize(f"{prefix}.idx")


def read_with_megatron(prefix: str) -> list[list[int]]:
    """Every sequence of ``prefix`` as megatron-core's ``IndexedDataset`` returns it."""
    mod = indexed_dataset_module()
    ref = mod.IndexedDataset(prefix, mmap=True)
    return [ref[i].tolist() for i in range(len(ref))]
