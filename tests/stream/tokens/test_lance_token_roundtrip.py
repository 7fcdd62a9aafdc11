"""Token stages over a Lance dataset read in place, through the checkpoint round-trip harness.

The corpus is one Lance dataset written by pylance (fragments of 50 documents), opened with
``from_lance`` in blocks of 15 rows and a cache of a few blocks, so the token ids come from
blocks taken on demand. The pipelines are those of the bounded remote corpus
(``test_remote_token_roundtrip``) over this source; and one mix of Lance, Parquet read in
place and arrowmix chunks.
"""

from __future__ import annotations

import functools
import os
import tempfile
from typing import Any

import pytest

import arrowmix as am
from arrowmix._dataset.state import state_of
from arrowmix._stream.tokens.collate import CollateIterator
from arrowmix.stream import Stream
from tests.stream.tokens import test_parquet_token_roundtrip as parquet
from tests.stream.tokens import test_remote_token_roundtrip as remote
from tests.stream.tokens.token_helpers import token_table

lance = pytest.importorskip("lance")

ROWS, CACHE = 120, 2 << 10


@functools.cache
def corpus() -> str:
    """A Lance dataset of 120 documents in fragments of 50, written once."""
    # under the test session's home directory (conftest), removed when the session ends
    d = tempfile.mkdtemp(prefix="lance-tokens-", dir=os.path.expanduser("~"))
    uri = f"{d}/tokens.lance"
    lance.write_dataset(token_table(ROWS, 0), uri, max_rows_per_file=50)
    return uri


class LanceTokens(parquet.ParquetTokens):
    def source(self, num_instances: int, instance_rank: int, **kwargs: Any) -> Stream[Any]:
        ds = am.Dataset.from_lance(corpus(), block_rows=15, cache_size=CACHE)
        return remote.token_stream(ds, num_instances, instance_rank, **kwargs)  # blocks

    def test_cache_stays_within_its_limit(self) -> None:
        ds = am.Dataset.from_lance(corpus(), block_rows=15, cache_size=CACHE)
        list(ds.to_stream(shuffle="chunks", seed=0, infinite=False).batch(8).collate())
        stats = state_of(ds).reader.stats()
        assert stats["evicted"] > 0 and stats["cached_bytes"] <= CACHE


class TestLanceBatchColumnarCollate(LanceTokens, parquet.TestParquetBatchColumnarCollate):
    pass


class TestLanceConcatPack(LanceTokens, parquet.TestParquetConcatPack):
    pass


class TestLanceBudgetBucketCollate(LanceTokens, parquet.TestParquetBudgetBucketCollate):
    pass


class TestLanceMixedWithParquetAndChunks(LanceTokens):
    """Lance, Parquet in place and arrowmix chunks mixed, exactly resumable."""

    iterator_cls = CollateIterator
    checkpoint_stride = 3

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        other = am.Dataset.from_dict(token_table(40, 1).select(["input_ids", "id"]).to_pydict())
        shard = {"num_instances": num_instances, "instance_rank": instance_rank}
        chunks = other.to_stream(seed=1, infinite=False, shuffle="chunks", **shard)
        pq = am.Dataset.from_parquet(parquet.corpus(), in_place=True, cache_size=CACHE)
        pq_stream = remote.token_stream(pq.select_columns(["input_ids", "id"]), **shard)
        ln = am.Dataset.from_lance(corpus(), block_rows=15, columns=["input_ids", "id"])
        ln_stream = remote.token_stream(ln, **shard)
        mixed = am.stream.mix([ln_stream, pq_stream, chunks], weights=[0.4, 0.3, 0.3], seed=2)
        return mixed.batch(5, columnar=True).collate()
