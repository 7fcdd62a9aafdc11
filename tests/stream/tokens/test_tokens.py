"""Token columns, columnar batches, collation, and mixing by row positions."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from arrowmix._stream.mixing.mixed_rows import MixedRows
from arrowmix._stream.root import root_of
from arrowmix._stream.row_source import TableRowSource
from arrowmix._stream.tokens.collate import CollateIterator, Collator
from arrowmix._stream.tokens.column import TokenColumn
from arrowmix._stream.tokens.concat import ConcatTokenColumn
from arrowmix.stream import Stream, from_iterable, mix
from arrowmix.testing import CheckpointRoundTripTests
from tests.stream.tokens.token_helpers import (
    docs_in_order,
    token_rows,
    token_source,
    token_table,
    tokens_of,
)


def _pad(docs: list[list[int]], width: int, pad: int = 0, left: bool = False) -> list[list[int]]:
    out = []
    for d in docs:
        d = d[:width]
        fill = [pad] * (width - len(d))
        out.append(fill + d if left else d + fill)
    return out


# ------------------------------------------------------------------ TokenColumn
def test_token_column_views_are_zero_copy_and_gathers_match() -> None:
    t = token_table(50)
    col = TokenColumn(t.column("input_ids"), "input_ids")
    assert len(col._values) == 3  # one view per record batch
    chunk = t.column("input_ids").chunks[0]
    assert col._values[0].ctypes.data == chunk.values.buffers()[1].address
    pos = np.array([49, 0, 17, 16, 33, 5])
    docs = t.column("input_ids").to_pylist()
    assert col.lengths(pos).tolist() == [len(docs[i]) for i in pos]
    assert col.gather(pos).tolist() == [x for i in pos for x in docs[i]]
    ids, mask = col.gather_padded(pos, 12, pad_id=-1, left=True)
    assert ids.tolist() == _pad([docs[i] for i in pos], 12, -1, left=True)
    assert mask.sum() == sum(min(len(docs[i]), 12) for i in pos)


def test_token_column_errors_name_the_column() -> None:
    with pytest.raises(TypeError, match=r"'text'.*list<int"):
        TokenColumn(pa.chunked_array([["a"]]), "text")
    with pytest.raises(ValueError, match="null document"):
        TokenColumn(pa.chunked_array([[[1], None]], pa.list_(pa.int32())), "ids")
    col = TokenColumn(pa.chunked_array([[[1], [2]]]), "ids")
    with pytest.raises(IndexError, match="row 2 is out of range for column 'ids'"):
        col.lengths(np.array([2]))


def test_concat_token_column() -> None:
    a = TokenColumn(token_table(20, 1).column("input_ids"), "input_ids")
    b = TokenColumn(token_table(30, 2).column("input_ids"), "input_ids")
    both = ConcatTokenColumn([a, b])
    docs = token_table(20, 1)["input_ids"].to_pylist() + token_table(30, 2)["input_ids"].to_pylist()
    pos = np.array([49, 3, 20, 19, 0, 35])
    assert both.gather(pos).tolist() == [x for i in pos for x in docs[i]]


def test_dataset_token_column_through_indices(tmp_path: Any) -> None:
    import arrowmix

    ds = arrowmix.Dataset.from_arrow(token_table(40)).select([5, 1, 39, 1])
    col = ds.to_stream(shuffle=None, infinite=False).row_source().token_column("input_ids")
    docs = token_table(40)["input_ids"].to_pylist()
    assert col.gather(np.array([0, 2, 3])).tolist() == docs[5] + docs[39] + docs[1]
    with pytest.raises(IndexError, match="row 4 is out of range"):
        col.lengths(np.array([4]))


# ---------------------------------------------------------------- collation
def test_collator_options() -> None:
    c = Collator("ids", pad_id=9, pad_to_multiple_of=4, labels="copy")
    out = c([[1, 2, 3, 4, 5], [6]])
    assert out["input_ids"].tolist() == [[1, 2, 3, 4, 5, 9, 9, 9], [6, 9, 9, 9, 9, 9, 9, 9]]
    assert out["labels"].tolist() == [[1, 2, 3, 4, 5] + [-100] * 3, [6] + [-100] * 7]
    left = Collator("ids", padding_side="left", max_length=3, labels="shift")(
        [[1, 2, 3, 4], [5, 6]]
    )
    assert left["input_ids"].tolist() == [[1, 2, 3], [0, 5, 6]]
    assert left["attention_mask"].tolist() == [[1, 1, 1], [0, 1, 1]]
    assert left["labels"].tolist() == [[2, 3, -100], [-100, 6, -100]]
    rows = Collator("ids")([{"ids": [1, 2]}, {"ids": np.array([3])}])
    assert rows["input_ids"].tolist() == [[1, 2], [3, 0]]
    with pytest.raises(KeyError, match="no column 'ids'"):
        Collator("ids")([{"x": [1]}])
    with pytest.raises(ValueError, match="padding_side"):
        Collator("ids", padding_side="middle")


def test_collate_after_budget_bucket_equals_row_path() -> None:
    def build(columnar: bool) -> Stream[Any]:
        s = token_source(60).budget_bucket("input_ids", 64, 25, seed=3)
        if not columnar:
            s = s.map(lambda batch: [r["input_ids"] for r in batch])
        return s.collate("input_ids", labels="shift")

    fast, slow = list(build(True)), list(build(False))
    assert isinstance(build(True), CollateIterator) and build(True)._rows is not None
    assert len(fast) == len(slow) > 3
    for a, b in zip(fast, slow, strict=True):
        for k in ("input_ids", "attention_mask", "labels"):
            assert a[k].tolist() == b[k].tolist()
        assert a["input_ids"].size <= 64  # the budget holds for the padded batch


def test_columnar_batch_and_bucket_tables() -> None:
    ref = docs_in_order(token_source(40))
    tables = list(token_source(40).batch(16, columnar=True))
    assert [t.num_rows for t in tables] == [16, 16, 8]
    assert [d for t in tables for d in t["input_ids"].to_pylist()] == ref
    batches = list(token_source(40).bucket("input_ids", 4, 20, columnar=True, seed=0))
    lens = [[len(x) for x in t["input_ids"].to_pylist()] for t in batches]
    assert all(b == sorted(b, reverse=True) for b in lens)
    assert sorted(x for t in batches for x in t["id"].to_pylist()) == list(range(40))


def test_bucket_columnar_gathers_the_window_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = TableRowSource.take

    def counting(self: TableRowSource, positions: np.ndarray) -> pa.Table:
        calls.append(len(positions))
        return real(self, positions)

    monkeypatch.setattr(TableRowSource, "take", counting)
    list(token_source(40).bucket("input_ids", 4, 20, columnar=True, seed=0))
    assert calls == [20, 20]  # one take per read-ahead window, lengths from the offsets
    calls.clear()
    list(token_source(40).bucket("input_ids", 4, 20, columnar=True, seed=0).collate())
    assert calls == []  # collation copies from the token views, no take at all


def test_bucket_columnar_after_mix_matches_row_mix() -> None:
    def inputs() -> list[Stream[Any]]:
        return [token_source(30, 1), token_source(50, 2).shuffle(7, seed=1)]

    rows = [r["input_ids"] for r in mix(inputs(), [0.7, 0.3])]
    positions = mix(inputs(), [0.7, 0.3])
    rs = positions.row_source()
    assert isinstance(rs, MixedRows)
    view = positions.as_positions()
    assert view is not None
    root_of(positions).ensure_started()
    pos = np.concatenate([view.pull(n) for n in (5, 40, 1, 100)])
    assert rs.take(pos)["input_ids"].to_pylist() == rows
    out = list(mix(inputs(), [0.7, 0.3]).bucket("input_ids", 4, 16, columnar=True).collate())
    assert int(sum(b["attention_mask"].sum() for b in out)) == sum(map(len, rows))


@pytest.mark.parametrize("stopping", ["shortest", "longest_cycle", "longest_drop"])
def test_mix_positions_follow_the_stopping_rule(stopping: str) -> None:
    def inputs() -> list[Stream[Any]]:
        return [token_source(7, 1), token_source(20, 2)]

    rows = [r["input_ids"] for r in mix(inputs(), stopping=stopping)]
    m = mix(inputs(), stopping=stopping)
    view = m.as_positions()
    assert view is not None
    root_of(m).ensure_started()
    got = view.rows.take(view.pull(1000))["input_ids"].to_pylist()
    assert got == rows


def test_collate_to_torch_tensors() -> None:
    torch = pytest.importorskip("torch")
    s = token_source(30).batch(8, columnar=True).collate(return_tensors="pt")
    batch = next(s)
    assert batch["input_ids"].dtype == torch.int64 and batch["input_ids"].shape[0] == 8
    loader = torch.utils.data.DataLoader(
        token_source(30).batch(8, columnar=True).collate(return_tensors="pt").to_torch(),
        batch_size=None,
    )
    first = next(iter(loader))
    assert torch.equal(first["input_ids"], batch["input_ids"])


def test_collate_pickles_without_token_buffers() -> None:
    s = token_source(30).batch(8, columnar=True).collate()
    next(s)
    again = pickle.loads(pickle.dumps(s))
    assert "_tokens" not in again.__dict__
    assert [b["input_ids"].tolist() for b in again] == [b["input_ids"].tolist() for b in s]


def test_collate_refuses_a_non_token_column() -> None:
    with pytest.raises(TypeError, match="'id' must hold token ids"):
        token_source(10).batch(4, columnar=True).collate("id")


# ---------------------------------------------------------------- round trips
class TestCollateColumnar(CheckpointRoundTripTests):
    iterator_cls = CollateIterator
    picklable = True
    elastic_grid = ((1, 2), (1, 3), (2, 3), (3, 2), (2, 1))
    elastic_steps = (0, 6)

    def make_iterator(self) -> Stream[Any]:
        return self.make_sharded(1, 0)

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        s = token_source(144)  # the same stream on every instance
        shard = {"num_instances": num_instances, "instance_rank": instance_rank}
        # 4 documents (of at most 30 tokens) per batch, 12 batches per window: the new
        # instance count divides the batches left in the open window (elastic_steps) and
        # in every later one, so remainder="drop" drops nothing
        b = s.budget_bucket("input_ids", 120, 48, max_batch_size=4, seed=1, **shard)
        return b.collate(labels="shift")

    def units(self, item: dict[str, Any]) -> list[int]:
        return tokens_of(item)


class TestCollateRows(CheckpointRoundTripTests):
    iterator_cls = CollateIterator

    def make_iterator(self) -> Stream[Any]:
        docs = token_table(40)["input_ids"].to_pylist()
        return from_iterable(docs).batch(6).collate(padding_side="left")


class TestBucketColumnarAfterMix(CheckpointRoundTripTests):
    iterator_cls = CollateIterator

    def make_iterator(self) -> Stream[Any]:
        return self.make_sharded(1, 0)

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        shard = {"num_instances": num_instances, "instance_rank": instance_rank}
        a = token_source(30, 1, **shard)
        b = token_source(40, 2, **shard).shuffle(5, seed=0)
        m = mix([a, b], [0.5, 0.5])
        return m.bucket("input_ids", 3, 11, columnar=True, seed=4).collate()

    def units(self, item: dict[str, Any]) -> list[int]:
        return tokens_of(item)


class TestBatchColumnar(CheckpointRoundTripTests):
    iterator_cls = CollateIterator

    def make_iterator(self) -> Stream[Any]:
        return self.make_sharded(1, 0)

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        s = token_source(45, num_instances=num_instances, instance_rank=instance_rank)
        return s.shuffle(8, seed=0).batch(7, columnar=True).collate()

    def units(self, item: dict[str, Any]) -> list[int]:
        return tokens_of(item)


def test_table_row_source_token_column() -> None:
    col = token_rows(20).token_column("input_ids")
    assert col.num_rows == 20
    with pytest.raises(KeyError, match="no column 'x'"):
        token_rows(20).token_column("x")


def budget_of(longest: Any) -> int:
    return max(1, 64 // len(longest["input_ids"]))


def test_bucket_positions_with_a_callable_batch_size_match_rows() -> None:
    def build(columnar: bool) -> Stream[Any]:
        s = token_source(50).bucket("input_ids", budget_of, 20, columnar=columnar, seed=2)
        if not columnar:
            s = s.map(lambda batch: [r["input_ids"] for r in batch])
        return s.collate("input_ids", pad_to_multiple_of=8)

    fast, slow = list(build(True)), list(build(False))
    assert len(fast) == len(slow) > 5
    for a, b in zip(fast, slow, strict=True):
        assert a["input_ids"].tolist() == b["input_ids"].tolist()
        assert a["input_ids"].shape[1] % 8 == 0


def test_budget_bucket_reads_lengths_of_a_token_column() -> None:
    docs = token_table(40)["input_ids"].to_pylist()
    batches = list(token_source(40).budget_bucket("input_ids", 60, 40, seed=0))
    for batch in batches:
        lens = [len(r["input_ids"]) for r in batch]
        assert len(lens) * max(lens) <= 60
    assert sorted(len(r["input_ids"]) for b in batches for r in b) == sorted(map(len, docs))


def test_collate_keeps_other_columns_in_row_order() -> None:
    # index streams (spans from budget_bucket, positions from batch), tables and row dicts
    table = token_table(30)
    ids_of = {tuple(d): k for k, d in enumerate(table["input_ids"].to_pylist())}
    for s in (
        token_source(30).budget_bucket("input_ids", 64, 10, seed=0).collate(keep=["id"]),
        token_source(30).batch(4, columnar=True).collate(keep=["id"]),
        from_iterable(table.to_pylist()).batch(4).collate(keep=["id"]),
        from_iterable([table.slice(0, 5), table.slice(5, 9)]).collate(keep=["id"]),
    ):
        seen = 0
        for b in s:
            assert set(b) == {"input_ids", "attention_mask", "id"}
            assert isinstance(b["id"], np.ndarray) and len(b["id"]) == len(b["input_ids"])
            for row, mask, k in zip(b["input_ids"], b["attention_mask"], b["id"], strict=True):
                assert ids_of[tuple(row[mask > 0].tolist())] == k
            seen += len(b["id"])
        assert seen in (30, 14)


def test_collate_keep_errors_name_the_column() -> None:
    with pytest.raises(KeyError, match="'nope' to keep"):
        token_source(10).batch(4, columnar=True).collate(keep=["nope"])
    with pytest.raises(ValueError, match="output of collate"):
        token_source(10).batch(4, columnar=True).collate(keep=["labels"])
    with pytest.raises(TypeError, match="list of column names"):
        token_source(10).batch(4, columnar=True).collate(keep="id")
    with pytest.raises(TypeError, match="rows with columns"):
        next(from_iterable([[1, 2], [3]]).batch(2).collate(keep=["id"]))
