"""The token stages over a bounded remote corpus through the checkpoint round-trip harness.

The corpus lives on fsspec's in-process ``memory://`` filesystem and is read through a
chunk cache of three chunks' size (``from_chunks(..., cache_limit=...)``), so the token ids
come from pinned cached copies (``PinnedTokenColumn``). The S3 tests against a real server
are in ``tests/remote/test_remote_tokens.py``.
"""

from __future__ import annotations

import functools
import os
import uuid
from typing import Any, ClassVar

import pytest

import arrowmix as am
from arrowmix._stream.stages.budget_bucket import BudgetBucketIterator
from arrowmix._stream.tokens.collate import CollateIterator
from arrowmix._stream.tokens.pack import BinPackIterator, ConcatPackIterator
from arrowmix.stream import Stream
from arrowmix.testing import CheckpointRoundTripTests
from tests.stream.tokens.token_helpers import token_table, tokens_of

ROWS, PER_CHUNK = 120, 15


def cache_bytes(directory: str) -> int:
    """The bytes a chunk cache directory holds once its streams have ended.

    The end of a stream stops its read-ahead (downloads under way are awaited), so nothing
    writes to the directory any more: every file listed is there to be sized, and no
    download is left.
    """
    names = os.listdir(directory)
    assert not [n for n in names if n.endswith((".dl", ".partial"))], names
    return sum(os.path.getsize(os.path.join(directory, n)) for n in names)


@functools.cache
def corpus_url(seed: int = 0) -> tuple[str, int]:
    """A corpus (8 chunks of 15 documents), written once; and its largest chunk's size.

    Corpora of different ``seed`` hold different token ids.
    """
    import fsspec

    url = f"memory://remote-tokens-{uuid.uuid4().hex[:8]}"
    am.write_chunks(token_table(ROWS, seed), url, rows_per_chunk=PER_CHUNK)
    fs = fsspec.filesystem("memory")
    sizes = [f["size"] for f in fs.ls(url[len("memory://") :]) if f["name"].endswith(".arrow")]
    return url, max(sizes)


def token_stream(
    ds: am.Dataset, num_instances: int, instance_rank: int, **kwargs: Any
) -> Stream[Any]:
    """The stream of ``ds`` the pipelines read: chunk order unless told, rows dealt."""
    kwargs.setdefault("shuffle", "chunks")  # a global shuffle would touch every chunk
    return ds.to_stream(
        seed=0, infinite=False, num_instances=num_instances, instance_rank=instance_rank,
        shard="rows", **kwargs,
    )  # fmt: skip


class RemoteTokens(CheckpointRoundTripTests):
    """Builds every pipeline from the bounded corpus (one cache directory per class)."""

    cache_dir: ClassVar[str] = ""
    elastic_steps = (0, 2)

    @pytest.fixture(autouse=True)
    def _cache(self, tmp_path_factory: pytest.TempPathFactory) -> None:
        if not type(self).cache_dir:
            type(self).cache_dir = str(tmp_path_factory.mktemp("chunk-cache"))

    def source(self, num_instances: int, instance_rank: int, **kwargs: Any) -> Stream[Any]:
        url, size = corpus_url()
        ds = am.Dataset.from_chunks(url, cache_limit=5 * size, chunk_cache_dir=self.cache_dir)
        return token_stream(ds, num_instances, instance_rank, **kwargs)

    def make_iterator(self) -> Stream[Any]:
        return self.make_sharded(1, 0)

    def units(self, item: dict[str, Any]) -> list[int]:
        return [t for t in tokens_of(item) if t]  # separators are not units

    def test_cache_stays_within_its_limit(self) -> None:
        list(self.make_iterator())
        _, size = corpus_url()
        assert cache_bytes(self.cache_dir) <= 5 * size


class TestRemoteBatchColumnarCollate(RemoteTokens):
    iterator_cls = CollateIterator
    checkpoint_stride = 3
    picklable = True

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        s = self.source(num_instances, instance_rank).shuffle(8, seed=0)  # on positions
        return s.batch(7, columnar=True).collate(labels="shift")


class TestRemoteBatchCollate(RemoteTokens):
    iterator_cls = CollateIterator
    checkpoint_stride = 2

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        s = self.source(num_instances, instance_rank, shuffle=None)
        return s.batch(9).collate(keep=["id"], pad_to_multiple_of=8)


class TestRemoteConcatPack(RemoteTokens):
    iterator_cls = ConcatPackIterator
    checkpoint_stride = 8
    picklable = True

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        s = self.source(num_instances, instance_rank)
        return s.pack("input_ids", 16, batch_size=2, separator=0, tail="pad", read_ahead=9)


class TestRemoteBinPack(RemoteTokens):
    iterator_cls = BinPackIterator
    checkpoint_stride = 6

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        s = self.source(num_instances, instance_rank, shuffle="chunks")
        return s.pack("input_ids", 24, strategy="best_fit", batch_size=2, read_ahead=13)


class TestRemoteBudgetBucketCollate(RemoteTokens):
    iterator_cls = BudgetBucketIterator
    checkpoint_stride = 4
    # 4 documents (of at most 30 tokens) per batch, windows of 12, 12 and 6 batches: the
    # instance counts divide the batches left in every window, so remainder="drop" drops none
    elastic_grid = ((1, 2), (1, 3), (2, 3), (3, 2), (2, 1))
    elastic_steps = (0, 6)

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        s = self.source(1, 0)  # the same stream on every instance: the bucket deals
        shard = {"num_instances": num_instances, "instance_rank": instance_rank}
        b = s.budget_bucket("input_ids", 120, 48, max_batch_size=4, seed=1, **shard)
        return b.collate(max_length=20)


class TestRemoteBucketColumnarCollate(RemoteTokens):
    iterator_cls = CollateIterator
    checkpoint_stride = 3

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        s = self.source(num_instances, instance_rank)
        return s.bucket("input_ids", 5, 20, columnar=True, seed=4).collate()
