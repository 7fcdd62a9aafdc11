"""The token stages after ``mix`` of bounded remote corpora through the round-trip harness.

Two ``memory://`` corpora (distinct token ids) read through one chunk cache of ten chunks'
size; the mixed documents' token ids come from each corpus's pinned cached copies. Every
class also runs the elastic-resume checks where the same mix of local corpora supports
them. The S3 tests against a real server are in ``tests/remote/test_remote_mix_tokens.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import arrowmix as am
from arrowmix._stream.stages.budget_bucket import BudgetBucketIterator
from arrowmix._stream.tokens.collate import CollateIterator
from arrowmix._stream.tokens.pack import BinPackIterator, ConcatPackIterator
from arrowmix.stream import Stream, mix
from tests.stream.tokens.test_remote_token_roundtrip import (
    PER_CHUNK,
    ROWS,
    RemoteTokens,
    cache_bytes,
    corpus_url,
)
from tests.stream.tokens.token_helpers import token_source, token_table


class RemoteMix(RemoteTokens):
    """Mixes two bounded corpora (seeds 1 and 2) in one cache directory of ten chunks."""

    elastic_grid = ((1, 2), (3, 2))  # a smaller grid than the local tests' (these read more)
    elastic_steps = (2,)

    def source(self, num_instances: int, instance_rank: int, **kwargs: Any) -> Stream[Any]:
        return self.corpus(1, num_instances, instance_rank, **kwargs)

    def corpus(
        self, seed: int, num_instances: int, instance_rank: int, **kwargs: Any
    ) -> Stream[Any]:
        url, size = corpus_url(seed)
        ds = am.Dataset.from_chunks(url, cache_limit=10 * size, chunk_cache_dir=self.cache_dir)
        kwargs.setdefault("shuffle", "chunks")
        return ds.to_stream(
            seed=seed, infinite=False, num_instances=num_instances, instance_rank=instance_rank,
            shard="rows", **kwargs,
        )  # fmt: skip

    def mixed(self, num_instances: int, instance_rank: int, seed: int | None) -> Stream[Any]:
        a = self.corpus(1, num_instances, instance_rank)
        b = self.corpus(2, num_instances, instance_rank, shuffle=None)
        return mix([a, b], [0.6, 0.4], seed=seed)

    def test_cache_stays_within_its_limit(self) -> None:
        list(self.make_iterator())
        _, size = corpus_url(1)
        assert cache_bytes(self.cache_dir) <= 10 * size


class TestRemoteMixBatchCollate(RemoteMix):
    iterator_cls = CollateIterator
    checkpoint_stride = 5

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        m = self.mixed(num_instances, instance_rank, seed=3)
        return m.batch(9).collate(keep=["id"], pad_to_multiple_of=8)


class TestRemoteMixBatchColumnarCollate(RemoteMix):
    iterator_cls = CollateIterator
    checkpoint_stride = 5
    picklable = True

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        m = self.mixed(num_instances, instance_rank, seed=None).shuffle(8, seed=0)
        return m.batch(7, columnar=True).collate(labels="shift")


class TestRemoteMixConcatPack(RemoteMix):
    iterator_cls = ConcatPackIterator
    checkpoint_stride = 17
    picklable = True

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        m = self.mixed(num_instances, instance_rank, seed=None)
        return m.pack("input_ids", 16, batch_size=2, separator=0, tail="pad", read_ahead=9)


class TestRemoteMixBinPack(RemoteMix):
    iterator_cls = BinPackIterator
    checkpoint_stride = 11

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        m = self.mixed(num_instances, instance_rank, seed=5)
        return m.pack(
            "input_ids", 24, strategy="best_fit", batch_size=2, read_ahead=13,
            outputs=("segment_ids", "position_ids", "cu_seqlens"), labels="shift",
        )  # fmt: skip


class TestRemoteMixBudgetBucketCollate(RemoteMix):
    iterator_cls = BudgetBucketIterator
    checkpoint_stride = 7
    elastic_grid = ((1, 2), (2, 1))
    elastic_steps = (6,)

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        m = self.mixed(1, 0, seed=2)  # the same stream on every instance: the bucket deals
        shard = {"num_instances": num_instances, "instance_rank": instance_rank}
        b = m.budget_bucket("input_ids", 120, 48, max_batch_size=4, seed=1, **shard)
        return b.collate(max_length=20)


class TestRemoteMixBucketColumnarCollate(RemoteMix):
    iterator_cls = CollateIterator
    checkpoint_stride = 5

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        m = self.mixed(num_instances, instance_rank, seed=7)
        return m.bucket("input_ids", 5, 20, columnar=True, seed=4).collate()


class TestRemoteAndLocalMixCollate(RemoteMix):
    """A bounded remote corpus mixed with a local one."""

    iterator_cls = CollateIterator
    checkpoint_stride = 5

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        shard = {"num_instances": num_instances, "instance_rank": instance_rank}
        local = token_source(90, 3, **shard)
        m = mix([self.corpus(1, num_instances, instance_rank), local], [0.5, 0.5], seed=1)
        return m.batch(8).collate(keep=["id"])


@pytest.mark.parametrize("stopping", ["shortest", "longest_cycle"])
def test_nested_mixes_of_bounded_and_local_corpora_pack_as_local_ones(
    stopping: str, tmp_path: Path
) -> None:
    """A mix inside a mix, then a shuffle of the positions, then ``pack``: as locally."""
    local = {}
    for seed in (1, 2, 3):
        local[seed] = str(tmp_path / f"local-{seed}")
        am.write_chunks(token_table(ROWS, seed), local[seed], rows_per_chunk=PER_CHUNK)
    cache = str(tmp_path / "cache")

    def corpus(seed: int, remote: bool) -> Stream[Any]:
        url, size = corpus_url(seed)
        ds = (
            am.Dataset.from_chunks(url, cache_limit=10 * size, chunk_cache_dir=cache)
            if remote
            else am.Dataset.from_chunks(local[seed])
        )
        return ds.to_stream(shuffle="chunks", seed=seed, infinite=False)

    def packed(remote: bool) -> list[Any]:
        inner = mix([corpus(1, remote), corpus(2, False)], seed=1, stopping=stopping)
        outer = mix([inner, corpus(3, remote)], [0.3, 0.7], seed=2, stopping=stopping)
        pipe = outer.shuffle(16, seed=3).pack("input_ids", 16, batch_size=2, tail="pad")
        return [b["input_ids"].tolist() for b in pipe]

    expected = packed(remote=False)
    assert packed(remote=True) == expected and len(expected) > 4
