"""The public stage kit: a packing stage written as a user would, resumed elastically."""

from __future__ import annotations

import unittest
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from arrowmix.exceptions import ElasticResumeError
from arrowmix.stream import (
    ElasticRole,
    PassThrough,
    Stream,
    TableRowSource,
    WindowReplayStage,
    from_row_source,
    merge_states,
)
from arrowmix.testing import CheckpointRoundTripTests

SEQ_LEN = 7
ROWS = 60


def _rows() -> TableRowSource:
    lengths = np.random.default_rng(0).integers(1, 12, ROWS)
    ids = [[1000 * i + k for k in range(int(n))] for i, n in enumerate(lengths)]
    return TableRowSource(pa.table({"id": np.arange(ROWS), "ids": ids}), chunk_rows=8)


ROW_SOURCE = _rows()
ALL_TOKENS = sorted(t for r in ROW_SOURCE.take(np.arange(ROWS)).to_pylist() for t in r["ids"])


def source(n: int = 1, r: int = 0) -> Stream[Any]:
    return from_row_source(
        ROW_SOURCE, seed=3, infinite=False, num_instances=n, instance_rank=r, block_rows=5
    )


class Pack(WindowReplayStage[list[int]]):
    """The trial packing stage: concatenate the token lists of a window, cut at seq_len.

    A plain subclass of the public base: ``compute`` reads ``rows`` rows and returns the
    pieces; the last piece of a window may be shorter (nothing is carried over).
    """

    def __init__(self, source: Stream[Any], seq_len: int, rows: int = 6) -> None:
        super().__init__(source)
        self.seq_len, self.rows = seq_len, rows

    def describe(self) -> dict[str, Any]:
        return {"seq_len": self.seq_len, "rows": self.rows}

    def compute(self, window: int) -> list[list[int]] | None:
        rows = self.source.pull(self.rows)
        if not rows:
            return None
        tokens = [t for row in rows for t in row["ids"]]
        return [tokens[i : i + self.seq_len] for i in range(0, len(tokens), self.seq_len)]


class NaivePack(Stream[list[int]]):
    """Packing the way a bare ``Stream`` subclass does it: carries tokens across calls.

    Its state is the source's state plus the carried tokens' count, which resumes on
    the same instance count; it declares no elastic role.
    """

    STATE_KEYS = ("source", "carry")

    def __init__(self, source: Stream[Any], seq_len: int) -> None:
        super().__init__()
        self.source, self.seq_len = source, seq_len

    def children(self) -> list[Stream[Any]]:
        return [self.source]

    def reset(self, state: dict[str, Any] | None = None) -> None:
        super().reset(state)
        self.source.reset(None if state is None else state["source"])
        self.carry: list[int] = []

    def get_state(self) -> dict[str, Any]:
        return {"source": self.source.get_state(), "carry": len(self.carry)}

    def next(self) -> list[int]:
        while len(self.carry) < self.seq_len:
            try:
                self.carry += self.source.next()["ids"]
            except StopIteration:
                if not self.carry:
                    raise
                break
        out, self.carry = self.carry[: self.seq_len], self.carry[self.seq_len :]
        return out


class MisdeclaredPack(NaivePack):
    """Claims to be transparent although it holds tokens between calls."""

    ELASTIC_ROLE = ElasticRole.TRANSPARENT


class TestPackStage(CheckpointRoundTripTests):
    iterator_cls = Pack
    picklable = True
    elastic_grid = ((1, 2), (2, 3), (3, 2), (3, 1))

    def make_iterator(self) -> Stream[Any]:
        return Pack(source().shuffle(9, seed=1), SEQ_LEN)

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        return Pack(source(num_instances, instance_rank).shuffle(9, seed=1), SEQ_LEN)

    def units(self, item: list[int]) -> list[int]:
        return list(item)


def test_pack_pieces_and_tokens() -> None:
    pieces = list(Pack(source(), SEQ_LEN))
    assert all(1 <= len(p) <= SEQ_LEN for p in pieces)
    assert sorted(t for p in pieces for t in p) == ALL_TOKENS


def test_pack_elastic_resume_exactly_once_by_hand() -> None:
    old = [Pack(source(3, r), SEQ_LEN) for r in range(3)]
    seen = [t for s in old for _ in range(2) for t in next(s)]
    merged = merge_states([s.state_dict() for s in old])
    rest = []
    for r in range(2):
        new = Pack(source(2, r), SEQ_LEN)
        new.load_state_dict(merged)
        rest += [t for piece in new for t in piece]
    assert sorted(seen + rest) == ALL_TOKENS


def test_undeclared_stage_is_refused_with_a_clear_error() -> None:
    old = [NaivePack(source(2, r), SEQ_LEN) for r in range(2)]
    for s in old:
        next(s)
    merged = merge_states([s.state_dict() for s in old])
    with pytest.raises(ElasticResumeError, match="NaivePack: the stage declares no elastic role"):
        NaivePack(source(3, 0), SEQ_LEN).load_state_dict(merged)


def test_harness_skips_a_refused_pipeline_and_fails_a_misdeclared_one() -> None:
    class Naive(TestPackStage):
        iterator_cls = NaivePack

        def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
            return NaivePack(source(num_instances, instance_rank), SEQ_LEN)

    with pytest.raises(unittest.SkipTest, match="declares no elastic role"):
        Naive().test_elastic_resume_exactly_once()

    class Misdeclared(Naive):
        def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
            return MisdeclaredPack(source(num_instances, instance_rank), SEQ_LEN)

    with pytest.raises(AssertionError, match=r"elastic resume \d -> \d instances"):
        Misdeclared().test_elastic_resume_exactly_once()


def test_harness_skips_checks_that_do_not_apply() -> None:
    class Plain(CheckpointRoundTripTests):
        def make_iterator(self) -> Stream[Any]:
            return Pack(source(), SEQ_LEN)

    for name in ("test_seeds", "test_pickle_resumes", "test_elastic_resume_exactly_once"):
        with pytest.raises(unittest.SkipTest):
            getattr(Plain(), name)()


def test_pass_through_base_is_transparent_to_elastic_resume() -> None:
    class Lengths(PassThrough[int]):
        def next(self) -> int:
            return len(self.source.next()["ids"])

    old = [Lengths(source(2, r)) for r in range(2)]
    seen = [next(s) for s in old for _ in range(3)]
    merged = merge_states([s.state_dict() for s in old])
    rest = []
    for r in range(3):
        new = Lengths(source(3, r))
        new.load_state_dict(merged)
        rest += list(new)
    assert sum(seen + rest) == len(ALL_TOKENS)
