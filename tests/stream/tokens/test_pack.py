"""Packing stages: concat-then-split and bin packing, against plain-Python references."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from arrowmix._stream.row_source import TableRowSource
from arrowmix._stream.sources.rows import ArrowSource
from arrowmix._stream.tokens.pack import BinPackIterator, ConcatPackIterator
from arrowmix.stream import Stream, from_iterable, mix
from arrowmix.testing import CheckpointRoundTripTests
from tests.stream.tokens.token_helpers import docs_in_order, token_source, tokens_of

# The end of a finite stream drops a partial batch with tail="drop" and warns; the
# warning and its count are tested in test_token_integrity.py.
pytestmark = pytest.mark.filterwarnings("ignore::arrowmix.exceptions.DroppedDataWarning")


def concat_reference(
    docs: list[list[int]], seq_len: int, rows: int, sep: int | None, tail: str, window: int
) -> list[dict[str, list[list[int]]]]:
    """group_texts by hand on each window of documents: ids, segment and position ids."""
    out = []
    for w in range(0, len(docs), window):
        out += _concat_window(docs[w : w + window], seq_len, rows, sep, tail)
    return out


def _concat_window(
    docs: list[list[int]], seq_len: int, rows: int, sep: int | None, tail: str
) -> list[dict[str, list[list[int]]]]:
    toks: list[tuple[int, int]] = []  # (token, document number)
    for k, d in enumerate(docs):
        toks += [(x, k) for x in d] + ([(sep, k)] if sep is not None else [])
    unit = seq_len * rows
    n = len(toks) // unit * unit if tail == "drop" else len(toks)
    cut = [toks[i : i + seq_len] for i in range(0, n, seq_len)]
    out = []
    for b in range(0, len(cut), rows):
        batch: dict[str, list[list[int]]] = {"input_ids": [], "segment_ids": [], "position_ids": []}
        for row in cut[b : b + rows]:
            ids, seg, pos = [], [], []
            for j, (x, k) in enumerate(row):
                new = j == 0 or row[j - 1][1] != k
                seg.append(1 if j == 0 else seg[-1] + new)
                pos.append(0 if new else pos[-1] + 1)
                ids.append(x)
            pad = seq_len - len(row)
            batch["input_ids"].append(ids + [0] * pad)
            batch["segment_ids"].append(seg + [0] * pad)
            batch["position_ids"].append(pos + [0] * pad)
        out.append(batch)
    return out


def as_lists(batches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v.tolist() for k, v in b.items()} for b in batches]


@pytest.mark.parametrize("sep", [None, 0])
@pytest.mark.parametrize("tail", ["drop", "pad"])
@pytest.mark.parametrize("rows", [1, 3])
@pytest.mark.parametrize("read_ahead", [1, 6, 1000])
def test_concat_matches_group_texts(sep: int | None, tail: str, rows: int, read_ahead: int) -> None:
    docs = docs_in_order(token_source(50))
    # the documents are one token stream: read-ahead windows do not cut it
    expected = concat_reference(docs, 16, rows, sep, tail, len(docs))
    s = token_source(50).pack(
        "input_ids", 16, batch_size=rows, separator=sep, tail=tail, read_ahead=read_ahead
    )
    assert isinstance(s, ConcatPackIterator)
    assert as_lists(list(s)) == expected
    plain = from_iterable(docs).pack(
        "input_ids", 16, batch_size=rows, separator=sep, tail=tail, read_ahead=read_ahead
    )
    assert as_lists(list(plain)) == expected


@pytest.mark.parametrize("sep", [None, 7])
def test_concat_empty_documents_and_narrow_dtype(sep: int | None) -> None:
    # empty documents between full ones, rows spanning several documents, int32 output
    docs = [[1, 2, 3], [], [4, 5, 6, 7, 8], [], [], [9], [10, 11, 12, 13, 14, 15, 16], [17]]
    table = pa.table({"input_ids": pa.array(docs)})
    rows = ArrowSource(TableRowSource(table, chunk_rows=3), shuffle=None, infinite=False)
    expected = concat_reference(docs, 4, 2, sep, "drop", 100)
    assert expected
    for src in (rows, from_iterable(docs)):
        s = src.pack("input_ids", 4, batch_size=2, separator=sep, read_ahead=100, dtype="int32")
        got = list(s)
        assert all(v.dtype == np.int32 for b in got for v in b.values())
        assert as_lists(got) == expected


@pytest.mark.parametrize("strategy", ["first_fit", "best_fit"])
def test_bin_packing_keeps_documents_whole(strategy: str) -> None:
    docs = docs_in_order(token_source(80))
    out = list(
        token_source(80).pack("input_ids", 40, strategy=strategy, batch_size=2, read_ahead=30)
    )
    assert all(b["input_ids"].shape == (2, 40) for b in out)
    found = []
    for b in out:
        for ids, seg, pos in zip(b["input_ids"], b["segment_ids"], b["position_ids"], strict=True):
            used = int((seg > 0).sum())
            assert (seg[used:] == 0).all() and (ids[used:] == 0).all()
            for k in range(1, int(seg.max(initial=0)) + 1):
                piece = ids[seg == k]
                assert pos[seg == k].tolist() == list(range(len(piece)))
                found.append(piece.tolist())
    assert sorted(found) == sorted(docs)  # every document once, whole (all are <= 40)


def test_bin_packing_fills_rows_better_than_arrival_order() -> None:
    lengths = [30, 30, 30, 10, 10, 10]
    docs = [[k + 1] * n for k, n in enumerate(lengths)]
    out = list(from_iterable(docs).pack("ids", 40, strategy="best_fit", read_ahead=6))
    assert len(out) == 3  # 30+10 three times: first fit decreasing is optimal here
    assert all(int((b["segment_ids"] > 0).sum()) == 40 for b in out)


def test_long_documents_rule() -> None:
    docs = [[1] * 25, [2] * 3]
    split = list(from_iterable(docs).pack("ids", 10, strategy="first_fit", read_ahead=4))
    pieces = sorted(int((b["segment_ids"] == k).sum()) for b in split for k in (1, 2, 3))
    assert sorted(p for p in pieces if p) == [3, 5, 10, 10]
    trunc = list(from_iterable(docs).pack("ids", 10, strategy="best_fit", long_docs="truncate"))
    assert sum(int((b["segment_ids"] > 0).sum()) for b in trunc) == 13
    with pytest.raises(ValueError, match="document 0 of window 0 has 25 tokens"):
        list(from_iterable(docs).pack("ids", 10, strategy="first_fit", long_docs="error"))


def test_pack_argument_errors() -> None:
    with pytest.raises(ValueError, match="`seq_len` must be a positive int"):
        token_source(5).pack("input_ids", 0)
    with pytest.raises(ValueError, match="`tail`"):
        token_source(5).pack("input_ids", 8, tail="keep")
    with pytest.raises(ValueError, match="apply to strategy='concat'"):
        token_source(5).pack("input_ids", 8, strategy="best_fit", separator=1)
    with pytest.raises(KeyError, match="no column 'ids' to pack"):
        token_source(5).pack("ids", 8)
    with pytest.raises(TypeError, match="'id' must hold token ids"):
        token_source(5).pack("id", 8)


def test_pack_torch_tensors() -> None:
    torch = pytest.importorskip("torch")
    b = next(token_source(30).pack("input_ids", 16, batch_size=2, return_tensors="pt"))
    assert b["input_ids"].dtype == torch.int64 and tuple(b["segment_ids"].shape) == (2, 16)


class TestConcatPack(CheckpointRoundTripTests):
    iterator_cls = ConcatPackIterator
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        return self.make_sharded(1, 0)

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        s = token_source(40, num_instances=num_instances, instance_rank=instance_rank)
        return s.shuffle(7, seed=1).pack(
            "input_ids", 12, batch_size=2, separator=0, tail="pad", read_ahead=5
        )

    def units(self, item: dict[str, Any]) -> list[int]:
        return [t for t in tokens_of(item) if t]  # separators are not units


@pytest.mark.slow
class TestMixConcatPackDrop(CheckpointRoundTripTests):
    """A mix of two corpora packed with tail="drop": each instance drops only its tail.

    The N old instances' drains end with a padded full batch (nothing they had read is
    dropped); each new instance drops its own last partial batch.
    """

    iterator_cls = ConcatPackIterator
    checkpoint_stride = 13
    elastic_drop_tail = 2 * 12
    elastic_steps = (1, 3)

    def make_iterator(self) -> Stream[Any]:
        return self.make_sharded(1, 0)

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        shard = {"num_instances": num_instances, "instance_rank": instance_rank}
        m = mix({"a": token_source(50, seed=1, **shard), "b": token_source(40, seed=2, **shard)})
        return m.pack("input_ids", 12, batch_size=2, tail="drop", read_ahead=5)

    def units(self, item: dict[str, Any]) -> list[int]:
        return [t for t in tokens_of(item) if t]


class TestConcatPackRows(CheckpointRoundTripTests):
    iterator_cls = ConcatPackIterator

    def make_iterator(self) -> Stream[Any]:
        docs = [list(range(1, 1 + (k * 7) % 23 + 1)) for k in range(30)]
        return from_iterable(docs).pack("ids", 10, read_ahead=4)


class TestBinPack(CheckpointRoundTripTests):
    iterator_cls = BinPackIterator
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        return self.make_sharded(1, 0)

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        s = token_source(60, num_instances=num_instances, instance_rank=instance_rank)
        return s.pack("input_ids", 24, strategy="best_fit", batch_size=2, read_ahead=13)

    def units(self, item: dict[str, Any]) -> list[int]:
        return tokens_of(item)
