"""Token stages over Parquet read in place, through the checkpoint round-trip harness.

The corpus is two Parquet files written by pyarrow (row groups of 15 documents), opened with
``from_parquet(..., in_place=True)`` and a decode cache of a few row groups, so the token
ids come from row groups decoded on demand (a ``PinnedTokenColumn`` over them). The
pipelines are those of the bounded remote corpus (``test_remote_token_roundtrip``), over
this source instead; and one mix of Parquet with arrowmix chunks.
"""

from __future__ import annotations

import functools
import os
import tempfile
from typing import Any

import pyarrow.parquet as pq
import pytest

import arrowmix as am
from arrowmix._dataset.state import state_of
from arrowmix._stream.tokens.collate import CollateIterator
from arrowmix.stream import Stream
from arrowmix.testing import CheckpointRoundTripTests
from tests.stream.tokens import test_remote_token_roundtrip as remote
from tests.stream.tokens.token_helpers import token_table, tokens_of

ROWS, CACHE = 120, 8 << 10


@functools.cache
def corpus() -> list[str]:
    """Two Parquet files of 60 documents each, in row groups of 15, written once."""
    # under the test session's home directory (conftest), removed when the session ends
    d = tempfile.mkdtemp(prefix="parquet-tokens-", dir=os.path.expanduser("~"))
    t = token_table(ROWS, 0)
    paths = [f"{d}/part-0.parquet", f"{d}/part-1.parquet"]
    pq.write_table(t.slice(0, 60), paths[0], row_group_size=15)
    pq.write_table(t.slice(60), paths[1], row_group_size=15)
    return paths


class ParquetTokens(CheckpointRoundTripTests):
    elastic_steps = (0, 2)

    @pytest.fixture(autouse=True)
    def _cache(self) -> None:
        """No chunk cache directory: the decode cache lives in the process."""

    def source(self, num_instances: int, instance_rank: int, **kwargs: Any) -> Stream[Any]:
        ds = am.Dataset.from_parquet(corpus(), in_place=True, cache_size=CACHE)
        return remote.token_stream(ds, num_instances, instance_rank, **kwargs)  # row groups

    def make_iterator(self) -> Stream[Any]:
        return self.make_sharded(1, 0)

    def units(self, item: dict[str, Any]) -> list[int]:
        return [t for t in tokens_of(item) if t]  # separators are not units

    def test_cache_stays_within_its_limit(self) -> None:
        ds = am.Dataset.from_parquet(corpus(), in_place=True, cache_size=CACHE)
        list(ds.to_stream(shuffle="chunks", seed=0, infinite=False).batch(8).collate())
        stats = state_of(ds).reader.stats()
        assert stats["evicted"] > 0 and stats["cached_bytes"] <= CACHE


class TestParquetBatchColumnarCollate(ParquetTokens, remote.TestRemoteBatchColumnarCollate):
    pass


class TestParquetConcatPack(ParquetTokens, remote.TestRemoteConcatPack):
    pass


class TestParquetBudgetBucketCollate(ParquetTokens, remote.TestRemoteBudgetBucketCollate):
    # the instance counts divide the batches left in every window of this corpus's order
    elastic_grid = ((1, 2), (2, 1))


class TestParquetMixedWithChunks(ParquetTokens):
    """Parquet in place mixed with arrowmix chunks of other documents, exactly resumable."""

    iterator_cls = CollateIterator
    checkpoint_stride = 3

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        other = am.Dataset.from_dict(token_table(40, 1).select(["input_ids", "id"]).to_pydict())
        shard = {"num_instances": num_instances, "instance_rank": instance_rank}
        chunks = other.to_stream(seed=1, infinite=False, shuffle="chunks", **shard)
        parquet = self.source(num_instances, instance_rank)
        mixed = am.stream.mix([parquet, chunks], weights=[0.6, 0.4], seed=2)
        return mixed.batch(5, columnar=True).collate()
