"""Resume exactness with provenance on (the shared round-trip harness, elastic N -> M).

The units each resumed run must deliver exactly once are the source references the
items carry, and every item's references are checked against the tokens it holds: a
resume that lost, repeated or mislabelled a row fails either way.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from arrowmix._stream.mixing.mix import WeightedMixIterator
from arrowmix._stream.tokens.pack import ConcatPackIterator
from arrowmix.stream import Stream, mix
from arrowmix.testing import CheckpointRoundTripTests
from tests.stream.test_provenance import A, B, check_collated, check_packed

A_SMALL, B_SMALL = A.select(range(20)), B.select(range(12))  # rows read back: A[i], B[i]


def sharded(n: int, r: int) -> Stream[Any]:
    def src(ds: Any, seed: int) -> Stream[Any]:
        return ds.to_stream(
            seed=seed, infinite=False, num_instances=n, instance_rank=r, provenance=True
        )

    return mix({"a": src(A_SMALL, 1), "b": src(B_SMALL, 2)}, {"a": 2, "b": 1})


class TestCollatedSources(CheckpointRoundTripTests):
    """mix -> shuffle -> batch -> collate: each batch row's source, exactly once."""

    iterator_cls = WeightedMixIterator
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        return self.make_sharded(1, 0)

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        return sharded(num_instances, instance_rank).shuffle(5, seed=0).batch(3).collate("ids")

    def units(self, item: dict[str, Any]) -> list[Any]:
        arrays = {k: np.asarray(v) for k, v in item.items() if k != "sources"}
        check_collated({**item, **arrays})
        return [(r["source"], r["index"]) for r in item["sources"]]


@pytest.mark.slow
class TestPackedSources(CheckpointRoundTripTests):
    """mix -> shuffle -> concat pack: every token's (source, row, offset), exactly once."""

    iterator_cls = ConcatPackIterator
    picklable = True
    checkpoint_stride = 3

    def make_iterator(self) -> Stream[Any]:
        return self.make_sharded(1, 0)

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        s = sharded(num_instances, instance_rank).shuffle(7, seed=1)
        return s.pack("ids", 12, batch_size=2, tail="pad", read_ahead=5)

    def units(self, item: dict[str, Any]) -> list[Any]:
        arrays = {k: np.asarray(v) for k, v in item.items() if k != "segment_sources"}
        check_packed({**arrays, "segment_sources": item["segment_sources"]})
        out = []
        for seg, refs in zip(arrays["segment_ids"], item["segment_sources"], strict=True):
            for k, ref in enumerate(refs, start=1):
                n = int((seg == k).sum())
                out += [(ref["source"], ref["index"], ref["start"] + j) for j in range(n)]
        return out
