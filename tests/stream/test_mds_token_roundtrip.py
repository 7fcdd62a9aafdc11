"""Token stages over MDS shards read in place, through the checkpoint round-trip harness.

The corpus is written by mosaicml-streaming's own ``MDSWriter`` (token ids as
``ndarray:int32``, zstd-compressed shards of about 15 documents), opened with ``from_mds``
and a decode cache of a few shards, so the token ids come from shards decoded on demand. The
pipelines are those of the bounded remote corpus (``test_remote_token_roundtrip``) over this
source; and one mix of four formats: MDS, a Megatron ``.bin/.idx`` corpus, Parquet read in
place and arrowmix chunks.
"""

from __future__ import annotations

import functools
import os
import tempfile
from typing import Any

import numpy as np
import pytest

import arrowmix as am
from arrowmix._dataset.state import state_of
from arrowmix._stream.tokens.collate import CollateIterator
from arrowmix.stream import Stream
from tests.formats.mds_helpers import streaming_mds, write_mds
from tests.stream.tokens import test_parquet_token_roundtrip as parquet
from tests.stream.tokens import test_remote_token_roundtrip as remote
from tests.stream.tokens.token_helpers import token_table

# A few seconds per class: the slow tier (the fast tier reads MDS in tests/formats/test_mds.py).
pytestmark = pytest.mark.slow

ROWS, CACHE = 120, 4 << 10


@functools.cache
def _home() -> str:
    # under the test session's home directory (conftest), removed when the session ends
    return tempfile.mkdtemp(prefix="mds-tokens-", dir=os.path.expanduser("~"))


@functools.cache
def corpus() -> str:
    """120 documents (token ids unique to this corpus) in zstd MDS shards, written once."""
    t = token_table(ROWS, 2).to_pydict()
    rows = ({"input_ids": np.asarray(ids, np.int32), "id": k}
            for k, ids in zip(t["id"], t["input_ids"], strict=True))  # fmt: skip
    cols = {"input_ids": "ndarray:int32", "id": "int"}
    return write_mds(f"{_home()}/mds", cols, rows, compression="zstd", size_limit=1800)


@functools.cache
def megatron() -> str:
    """60 documents of other token ids as a Megatron ``.bin/.idx`` pair, written once."""
    prefix = f"{_home()}/web_text_document"
    am.Dataset.from_arrow(token_table(60, 3).select(["input_ids"])).to_megatron(prefix)
    return prefix


@pytest.fixture(autouse=True, scope="module")
def _streaming() -> None:
    streaming_mds()  # skip without mosaicml-streaming


class MDSTokens(parquet.ParquetTokens):
    def source(self, num_instances: int, instance_rank: int, **kwargs: Any) -> Stream[Any]:
        ds = am.Dataset.from_mds(corpus(), cache_size=CACHE)
        return remote.token_stream(ds, num_instances, instance_rank, **kwargs)  # shards

    def test_cache_stays_within_its_limit(self) -> None:
        ds = am.Dataset.from_mds(corpus(), cache_size=CACHE)
        assert len(state_of(ds).file_offsets) > 6  # shards: the chunks of the stream
        list(ds.to_stream(shuffle="chunks", seed=0, infinite=False).batch(8).collate())
        stats = state_of(ds).reader.stats()
        assert stats["evicted"] > 0 and stats["cached_bytes"] <= CACHE


class TestMDSBatchColumnarCollate(MDSTokens, parquet.TestParquetBatchColumnarCollate):
    pass


class TestMDSConcatPack(MDSTokens, parquet.TestParquetConcatPack):
    pass


class TestMixedFourFormats(MDSTokens):
    """MDS, Megatron, Parquet in place and arrowmix chunks mixed, exactly resumable."""

    iterator_cls = CollateIterator
    checkpoint_stride = 3

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        shard = {"num_instances": num_instances, "instance_rank": instance_rank}
        chunks = am.Dataset.from_dict(token_table(40, 1).select(["input_ids"]).to_pydict())
        pq = am.Dataset.from_parquet(parquet.corpus(), in_place=True, cache_size=CACHE)
        streams = [
            remote.token_stream(am.Dataset.from_mds(corpus(), columns=["input_ids"]), **shard),
            remote.token_stream(am.Dataset.from_megatron(megatron()), **shard),
            remote.token_stream(pq.select_columns(["input_ids"]), **shard),
            chunks.to_stream(seed=1, infinite=False, shuffle="chunks", **shard),
        ]
        mixed = am.stream.mix(streams, weights=[0.3, 0.3, 0.2, 0.2], seed=2)
        return mixed.batch(5, columnar=True).collate()
