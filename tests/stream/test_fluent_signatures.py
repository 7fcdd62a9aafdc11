"""Each fluent builder of ``Stream`` takes exactly its stage's parameters, with its defaults."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from arrowmix._stream.stages import (
    BatchIterator,
    BudgetBucketIterator,
    BufferShuffleIterator,
    FilterIterator,
    FlatMapIterator,
    LengthBucketIterator,
    LimitIterator,
    PrefetchIterator,
    WindowIterator,
)
from arrowmix._stream.tokens import BinPackIterator, ConcatPackIterator
from arrowmix._stream.tokens.collate import Collator
from arrowmix.stream import Stream


def params(fn: Any, skip: int) -> dict[str, tuple[Any, Any]]:
    sig = inspect.signature(fn)
    items = list(sig.parameters.values())[skip:]
    return {p.name: (p.kind, p.default) for p in items}


@pytest.mark.parametrize(
    ("method", "stage"),
    [
        ("filter", FilterIterator),
        ("flat_map", FlatMapIterator),
        ("window", WindowIterator),
        ("shuffle", BufferShuffleIterator),
        ("batch", BatchIterator),
        ("bucket", LengthBucketIterator),
        ("budget_bucket", BudgetBucketIterator),
        ("prefetch", PrefetchIterator),
        ("take", LimitIterator),
    ],
)
def test_builder_matches_its_stage(method: str, stage: type) -> None:
    mine = params(getattr(Stream, method), 1)  # self
    theirs = params(stage.__init__, 2)  # self, source
    assert [(n, d) for n, (_, d) in mine.items()] == [(n, d) for n, (_, d) in theirs.items()]


def test_collate_and_pack_match_their_parts() -> None:
    assert {n: d for n, (_, d) in params(Stream.collate, 1).items()} == {
        n: d for n, (_, d) in params(Collator.__init__, 1).items()
    }
    pack = {n: d for n, (_, d) in params(Stream.pack, 1).items()}
    for stage in (ConcatPackIterator, BinPackIterator):
        for name, (_, default) in params(stage.__init__, 2).items():
            if name != "strategy":  # pack's "concat" picks ConcatPackIterator
                assert pack[name] == default, (stage.__name__, name)
