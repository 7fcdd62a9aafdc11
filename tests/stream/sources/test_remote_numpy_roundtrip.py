"""Numpy rows of a bounded remote corpus through the checkpoint round-trip harness.

The corpus lives on fsspec's in-process ``memory://`` filesystem and is read through a
chunk cache of three chunks' size, so the token column's rows are copied out of pinned
cached chunks (``DatasetRows.take_lists``) while chunks are evicted; one chunk holds
null documents, so its rows of that column are converted as Arrow. Every step is a
resume point, most of them inside a block.
"""

from __future__ import annotations

import functools
import uuid
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._stream.sources.rows import ArrowSource
from arrowmix.stream import Stream
from arrowmix.testing import CheckpointRoundTripTests

ROWS, PER_CHUNK = 60, 8


def ids(i: int) -> list[int]:
    return [(i * 31 + j) % 1000 for j in range(i % 11)]


@functools.lru_cache(maxsize=1)
def corpus_url() -> tuple[str, int]:
    """The corpus (8 chunks of 8 rows), written once; and its largest chunk's size."""
    import fsspec

    table = pa.table(
        {
            "id": pa.array(range(ROWS), pa.int64()),
            "input_ids": pa.array([ids(i) for i in range(ROWS)], pa.list_(pa.int32())),
            "labels": pa.array(
                [None if 24 <= i < 32 and i % 3 == 0 else ids(i)[:3] for i in range(ROWS)],
                pa.list_(pa.int16()),
            ),
            "text": [f"t{i}" for i in range(ROWS)],
        }
    )
    url = f"memory://remote-numpy-{uuid.uuid4().hex[:8]}"
    am.write_chunks(table, url, rows_per_chunk=PER_CHUNK)
    fs = fsspec.filesystem("memory")
    sizes = [f["size"] for f in fs.ls(url[len("memory://") :]) if f["name"].endswith(".arrow")]
    return url, max(sizes)


class TestRemoteNumpyRowsRoundTrip(CheckpointRoundTripTests):
    iterator_cls = ArrowSource
    checkpoint_stride = 3
    picklable = True
    elastic_steps = (0, 2)
    cache_dir: ClassVar[str] = ""

    @pytest.fixture(autouse=True)
    def _cache(self, tmp_path_factory: pytest.TempPathFactory) -> None:
        if not type(self).cache_dir:
            type(self).cache_dir = str(tmp_path_factory.mktemp("chunk-cache"))

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        url, size = corpus_url()
        ds = am.Dataset.from_chunks(url, cache_limit=3 * size, chunk_cache_dir=self.cache_dir)
        view = ds.shuffle(seed=2).select(range(3, 55))  # an indices mapping over the chunks
        return view.with_format("numpy").to_stream(
            shuffle="chunks", seed=0, infinite=False, num_instances=num_instances,
            instance_rank=instance_rank, shard="rows",
        )  # fmt: skip

    def make_iterator(self) -> Stream[Any]:
        return self.make_sharded(1, 0)

    def units(self, item: dict[str, Any]) -> list[int]:
        return [int(item["id"])]

    def test_rows_hold_their_values(self) -> None:
        rows = list(self.make_iterator())
        assert len(rows) == len({int(r["id"]) for r in rows}) == 52
        for r in rows:
            i = int(r["id"])
            assert r["input_ids"].dtype == np.int64 and r["input_ids"].tolist() == ids(i)
            want = None if 24 <= i < 32 and i % 3 == 0 else ids(i)[:3]
            assert (r["labels"] is None) == (want is None)
            if want is not None:
                assert r["labels"].dtype == np.int64 and r["labels"].tolist() == want
            assert r["text"] == f"t{i}"
