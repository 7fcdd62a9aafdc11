"""Token stages over a map result joined with Parquet read in place, through the harness.

Two joins of the same Parquet corpus (the Parquet token corpus's files): one whose token ids
are *derived* (a map copies the stored ``src`` lists into ``input_ids``, removing ``src``: the
ids come from the cache file, ``id`` from the Parquet files), and one whose token ids stay
*in place* (a map over rows 10..109 adds a length column: the ids are read from the row
groups, shifted by the view's first row). Both are resumed exactly and elastically.
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
from arrowmix._dataset.tables.joined import JoinedTable
from arrowmix.stream import Stream
from tests.stream.tokens import test_parquet_token_roundtrip as parquet
from tests.stream.tokens import test_remote_token_roundtrip as remote

pytestmark = pytest.mark.slow  # about 40 s: the fast tier covers the joined token path once


@functools.cache
def renamed() -> list[str]:
    """The Parquet token corpus with its ids stored as ``src`` (a map derives ``input_ids``)."""
    # under the test session's home directory (conftest), removed when the session ends
    d = tempfile.mkdtemp(prefix="joined-tokens-", dir=os.path.expanduser("~"))
    paths = []
    for k, path in enumerate(parquet.corpus()):
        t = pq.read_table(path)
        out = f"{d}/part-{k}.parquet"
        pq.write_table(t.rename_columns(["src", "id"]), out, row_group_size=15)
        paths.append(out)
    return paths


def copy_ids(batch: dict) -> dict:
    return {"input_ids": batch["src"]}


def lengths(batch: dict) -> dict:
    return {"n": [len(x) for x in batch["input_ids"]]}


class DerivedTokens(parquet.ParquetTokens):
    def source(self, num_instances: int, instance_rank: int, **kwargs: Any) -> Stream[Any]:
        ds = am.Dataset.from_parquet(renamed(), in_place=True, cache_size=parquet.CACHE)
        ds = ds.map(copy_ids, batched=True, remove_columns=["src"])
        assert isinstance(state_of(ds).table, JoinedTable)
        return remote.token_stream(ds, num_instances, instance_rank, **kwargs)

    def test_cache_stays_within_its_limit(self) -> None:
        pytest.skip("the token ids come from the cache file")


class InPlaceTokens(parquet.ParquetTokens):
    def source(self, num_instances: int, instance_rank: int, **kwargs: Any) -> Stream[Any]:
        ds = am.Dataset.from_parquet(parquet.corpus(), in_place=True, cache_size=parquet.CACHE)
        ds = ds.select(range(10, parquet.ROWS - 10)).map(lengths, batched=True)
        table = state_of(ds).table
        assert isinstance(table, JoinedTable) and table.start == 10
        return remote.token_stream(ds, num_instances, instance_rank, **kwargs)

    def test_cache_stays_within_its_limit(self) -> None:
        pytest.skip("covered over the Parquet files themselves")


class TestDerivedConcatPack(DerivedTokens, remote.TestRemoteConcatPack):
    pass


class TestDerivedBudgetBucketCollate(DerivedTokens, remote.TestRemoteBudgetBucketCollate):
    elastic_grid = ((1, 2), (2, 1))


class TestInPlaceBatchColumnarCollate(InPlaceTokens, remote.TestRemoteBatchColumnarCollate):
    pass


class TestInPlaceConcatPack(InPlaceTokens, remote.TestRemoteConcatPack):
    pass
