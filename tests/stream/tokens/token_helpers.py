"""A small tokenized corpus for the token, collation and packing tests."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from arrowmix._stream.row_source import TableRowSource
from arrowmix._stream.sources.rows import ArrowSource


def token_table(n: int = 60, seed: int = 0, max_len: int = 30) -> pa.Table:
    """``n`` documents of 1..max_len token ids, in record batches of 17 rows.

    Token ``j`` of document ``k`` is ``100000 * (seed + 1) + 100 * k + j``: made unique
    per corpus, so a multiset of tokens tells which documents were delivered.
    """
    rng = np.random.default_rng(seed)
    base = 100_000 * (seed + 1)
    docs = [
        (base + 100 * k + np.arange(int(rng.integers(1, max_len + 1)))).tolist() for k in range(n)
    ]
    t = pa.table({"input_ids": pa.array(docs, pa.list_(pa.int32())), "id": np.arange(n)})
    return pa.Table.from_batches(t.to_batches(max_chunksize=17))


def token_rows(n: int = 60, seed: int = 0, max_len: int = 30) -> TableRowSource:
    return TableRowSource(token_table(n, seed, max_len), chunk_rows=10)


def tokens_of(batch: dict[str, Any]) -> list[int]:
    """The non-padding token ids of a collated or packed batch (units for elastic checks)."""
    ids = np.asarray(batch["input_ids"])
    keep = np.asarray(batch["segment_ids"] if "segment_ids" in batch else batch["attention_mask"])
    return [int(x) for x in ids[keep > 0]]


def token_source(n: int = 60, seed: int = 0, **kwargs: Any) -> ArrowSource:
    kwargs.setdefault("shuffle", "global")
    kwargs.setdefault("infinite", False)
    return ArrowSource(token_rows(n, seed), seed=kwargs.pop("order_seed", 0), **kwargs)


def docs_in_order(stream: Any) -> list[list[int]]:
    return [list(r["input_ids"]) for r in stream]
