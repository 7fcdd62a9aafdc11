"""A Megatron corpus on the token path, sharded, mixed with an arrowmix corpus, resumed."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._stream.stages.budget_bucket import BudgetBucketIterator
from arrowmix._stream.tokens.pack import ConcatPackIterator
from arrowmix.stream import Stream, mix
from arrowmix.testing import CheckpointRoundTripTests
from tests.dataset.megatron_helpers import build_with_megatron
from tests.stream.tokens.token_helpers import tokens_of

pytestmark = pytest.mark.filterwarnings("ignore::arrowmix.exceptions.DroppedDataWarning")

_DIR = ""  # the corpora's directory, set by the module fixture


def unique_docs(n: int, base: int) -> list[list[int]]:
    """Documents of 1..24 tokens, token ids unique per corpus (``base + 30 k + j``)."""
    rng = np.random.default_rng(base)
    return [(base + 30 * k + np.arange(int(rng.integers(1, 25)))).tolist() for k in range(n)]


MEGATRON_DOCS = unique_docs(90, 1)
ARROW_DOCS = unique_docs(70, 30_000)


@pytest.fixture(scope="module", autouse=True)
def _corpora(tmp_path_factory: pytest.TempPathFactory) -> None:
    global _DIR
    _DIR = str(tmp_path_factory.mktemp("megatron-stream"))
    build_with_megatron(os.path.join(_DIR, "web_text_document"), MEGATRON_DOCS, np.uint16)
    table = pa.table({"input_ids": pa.array(ARROW_DOCS, pa.list_(pa.uint16()))})
    am.write_chunks(table, os.path.join(_DIR, "sft"), rows_per_chunk=25)


def megatron() -> am.Dataset:
    return am.Dataset.from_megatron(os.path.join(_DIR, "web_text_document"))


def arrow() -> am.Dataset:
    return am.Dataset.from_chunks(os.path.join(_DIR, "sft"))


def test_token_path_equals_the_same_rows_in_an_arrowmix_corpus(tmp_path: Any) -> None:
    """budget_bucket + collate and pack give the same batches over both storages."""
    table = pa.table({"input_ids": pa.array(MEGATRON_DOCS, pa.list_(pa.uint16()))})
    am.write_chunks(table, str(tmp_path / "same"), rows_per_chunk=40)
    same = am.Dataset.from_chunks(str(tmp_path / "same"))

    def bucketed(ds: am.Dataset) -> list[Any]:
        s = ds.to_stream(seed=3, infinite=False).budget_bucket("input_ids", 64, 30, seed=1)
        return [{k: v.tolist() for k, v in b.items()} for b in s.collate()]

    def packed(ds: am.Dataset) -> list[Any]:
        s = ds.to_stream(shuffle="blocks", block_size=16, seed=2, infinite=False)
        return [{k: v.tolist() for k, v in b.items()} for b in s.pack("input_ids", 32)]

    assert bucketed(megatron()) == bucketed(same)
    assert packed(megatron()) == packed(same)
    assert sorted(t for b in bucketed(megatron()) for t in tokens_of(b)) == sorted(
        t for d in MEGATRON_DOCS for t in d
    )


def test_mix_of_a_megatron_and_an_arrowmix_corpus_uses_both() -> None:
    s = mix([megatron().to_stream(seed=0), arrow().to_stream(seed=0)], [0.5, 0.5], seed=0)
    rows = [r["input_ids"] for r, _ in zip(s, range(200), strict=False)]
    from_megatron = sum(1 for r in rows if r[0] < 30_000)
    assert 60 < from_megatron < 140
    known = {tuple(d) for d in MEGATRON_DOCS + ARROW_DOCS}
    assert all(tuple(r) in known for r in rows)


class TestMegatronBudgetBucketResume(CheckpointRoundTripTests):
    """Exact resume of budget_bucket + collate over a Megatron corpus."""

    iterator_cls = BudgetBucketIterator
    picklable = True
    checkpoint_stride = 3

    def make_iterator(self) -> Stream[Any]:
        s = megatron().to_stream(seed=5, infinite=False)
        return s.budget_bucket("input_ids", 48, 20, seed=2).collate()


class TestMegatronShardedResume(CheckpointRoundTripTests):
    """A Megatron corpus sharded over ranks: exact and elastic resume of batch + collate."""

    iterator_cls = Stream
    picklable = True
    checkpoint_stride = 2

    def make_iterator(self) -> Stream[Any]:
        return self.make_sharded(1, 0)

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        s = megatron().to_stream(
            seed=5, infinite=False, num_instances=num_instances, instance_rank=instance_rank
        )
        return s.batch(4).collate()

    def units(self, item: dict[str, Any]) -> list[int]:
        return tokens_of(item)


class TestMixedFormatsPackResume(CheckpointRoundTripTests):
    """A Megatron corpus mixed with an arrowmix corpus, packed: exact and elastic resume."""

    iterator_cls = ConcatPackIterator
    picklable = True
    checkpoint_stride = 2

    def make_iterator(self) -> Stream[Any]:
        return self.make_sharded(1, 0)

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        kw = {"infinite": False, "num_instances": num_instances, "instance_rank": instance_rank}
        streams = [megatron().to_stream(seed=1, **kw), arrow().to_stream(seed=2, **kw)]
        return mix(streams, [0.6, 0.4], seed=4).pack(
            "input_ids", 40, batch_size=2, tail="pad", read_ahead=16
        )

    def units(self, item: dict[str, Any]) -> list[int]:
        return tokens_of(item)
