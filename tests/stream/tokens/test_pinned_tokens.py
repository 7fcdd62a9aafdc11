"""Token ids read chunk by chunk from pinned storage, and ``batch(n).collate()`` on its own."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from arrowmix._stream.row_source import TableRowSource
from arrowmix._stream.sources.rows import ArrowSource
from arrowmix._stream.tokens.collate import CollateIterator
from arrowmix._stream.tokens.column import TokenColumn
from arrowmix._stream.tokens.pinned import PinnedTokenColumn
from arrowmix.stream import Stream
from arrowmix.testing import CheckpointRoundTripTests
from tests.stream.tokens.token_helpers import token_source, token_table, tokens_of


class Storage:
    """Chunks of a token column served one at a time, recording what is pinned when."""

    def __init__(self, chunks: list[pa.ChunkedArray]) -> None:
        self.chunks = chunks
        self.offsets = np.cumsum([0, *(len(c) for c in chunks)], dtype=np.int64)
        self.pinned: set[int] = set()
        self.most_pinned = 0
        self.reads: list[list[int]] = []

    def read(self, which: Any) -> Any:
        self.reads.append(list(which))
        for c in which:
            self.pinned.add(c)
            self.most_pinned = max(self.most_pinned, len(self.pinned))
            try:
                yield c, self.chunks[c]
            finally:
                self.pinned.discard(c)


def storage_of(table: pa.Table, rows_per_chunk: int) -> Storage:
    """The column cut into chunks of several record batches each (one of them sliced)."""
    col = table.column("input_ids")
    chunks = []
    for start in range(0, len(col), rows_per_chunk):
        part = col.slice(start, rows_per_chunk)
        batches = [b for b in part.chunks if len(b)]
        batches.insert(1, batches[0].slice(0, 0))  # an empty record batch
        chunks.append(pa.chunked_array(batches, type=col.type))
    return Storage(chunks)


def pinned(storage: Storage, **kwargs: Any) -> PinnedTokenColumn:
    kind = storage.chunks[0].type
    return PinnedTokenColumn(storage.read, storage.offsets, kind, "input_ids", **kwargs)


def test_spans_and_gathers_equal_the_whole_column_one_pinned_chunk_at_a_time() -> None:
    table = token_table(90)
    whole = TokenColumn(table.column("input_ids"), "input_ids")
    storage = storage_of(table, 25)  # chunks of 25 rows over record batches of 17
    col = pinned(storage)
    pos = np.random.default_rng(0).permutation(90)[:40]
    owner, starts, lengths = col.spans(pos)
    assert lengths.tolist() == whole.lengths(pos).tolist()
    assert col.gather(pos).tolist() == whole.gather(pos).tolist()
    # spans looked up earlier are gathered later, heads and separators included
    heads = np.minimum(lengths, 5)
    seps = np.arange(40) % 3 == 0
    got = col.gather_spans(owner, starts, heads, sep_after=seps, sep=-1)
    ref = whole.gather_spans(*whole.spans(pos)[:2], heads, sep_after=seps, sep=-1)
    assert got.tolist() == ref.tolist()
    ids, mask = col.gather_padded(pos, 12, pad_id=7, left=True)
    ref_ids, ref_mask = whole.gather_padded(pos, 12, pad_id=7, left=True)
    assert ids.tolist() == ref_ids.tolist() and mask.tolist() == ref_mask.tolist()
    wide = int(lengths.max()) + 3  # right padding into a narrower type, nothing truncated
    ids, mask = col.gather_padded(pos, wide, dtype=np.int16)
    ref_ids, ref_mask = whole.gather_padded(pos, wide, dtype=np.int16)
    assert ids.dtype == ref_ids.dtype == np.int16
    assert ids.tolist() == ref_ids.tolist() and mask.tolist() == ref_mask.tolist()
    # each read pins one chunk at a time, in the order the positions first touch them
    assert storage.most_pinned == 1 and not storage.pinned
    assert storage.reads[0] == list(dict.fromkeys((pos // 25).tolist()))


def test_positions_go_through_the_views_mapping() -> None:
    table = token_table(60)
    perm = np.random.default_rng(1).permutation(60)[:30]
    col = pinned(storage_of(table, 20), mapper=lambda p: perm[p], view_rows=30)
    whole = TokenColumn(table.column("input_ids"), "input_ids")
    assert col.gather(np.arange(30)).tolist() == whole.gather(perm).tolist()
    with pytest.raises(IndexError, match="row 30 is out of range for column 'input_ids'"):
        col.lengths(np.array([30]))


def test_bad_columns_and_ids_are_named() -> None:
    storage = storage_of(token_table(30), 10)
    with pytest.raises(TypeError, match=r"column 'input_ids' must hold token ids"):
        PinnedTokenColumn(storage.read, storage.offsets, pa.list_(pa.float32()), "input_ids")
    col = pinned(storage)
    col.check_fits(np.int64)
    col.check_fits(np.int16)  # ids of 100000 and more do not fit: found when read
    with pytest.raises(
        ValueError, match=r"column 'input_ids' holds token id 10\d{4} \(its largest\)"
    ):
        col.gather(np.array([3]))
    with pytest.raises(TypeError, match="bounded cache"):
        col.buffers()
    nulls = Storage([pa.chunked_array([pa.array([[1], None], pa.list_(pa.int32()))])])
    with pytest.raises(ValueError, match=r"'input_ids' holds a null document"):
        pinned(nulls).lengths(np.array([0]))
    assert not nulls.pinned  # an error unpins what it read


# ---- batch(n).collate(): the token path without columnar=True ------------------------


class CountingRows(TableRowSource):
    """Counts whole-row gathers (the row-dict path makes one per block of rows)."""

    takes = 0

    def take(self, positions: np.ndarray) -> pa.Table:
        CountingRows.takes += 1
        return super().take(positions)


def source(rows: TableRowSource, **kwargs: Any) -> ArrowSource:
    return ArrowSource(rows, shuffle="global", seed=0, infinite=False, **kwargs)


@pytest.mark.parametrize(
    "options",
    [
        {"labels": "shift"},
        {"padding_side": "left", "max_length": 9, "pad_to_multiple_of": 4, "pad_id": 3},
        {"keep": ["id", "name"], "dtype": np.int32},
    ],
)
def test_batch_then_collate_takes_the_token_path_with_the_same_output(
    options: dict[str, Any],
) -> None:
    table = token_table(70).append_column("name", pa.array([f"d{k}" for k in range(70)]))
    rows_path = source(TableRowSource(table, chunk_rows=10)).map(lambda r: r)
    before = list(rows_path.batch(8).collate(**options))  # a map: no positions, row dicts
    CountingRows.takes = 0
    fast = list(source(CountingRows(table, chunk_rows=10)).batch(8).collate(**options))
    assert CountingRows.takes == 0  # no rows were gathered: ids came from the buffers
    assert len(fast) == len(before) == 9
    for a, b in zip(fast, before, strict=True):
        assert sorted(a) == sorted(b)
        for key in a:
            assert a[key].dtype == b[key].dtype and a[key].tolist() == b[key].tolist()


def test_batch_of_rows_keeps_its_rows_when_not_collating_tokens() -> None:
    table = token_table(30)
    plain = source(TableRowSource(table, chunk_rows=10)).batch(4)
    assert isinstance(next(plain)[0], dict)
    # a column that is not token ids: the rows path, with its error on the first batch
    s = source(TableRowSource(table, chunk_rows=10)).batch(4).collate("id")
    with pytest.raises(TypeError, match="'id' must be a list of token ids"):
        next(s)


def test_batch_then_collate_resumes_from_a_pickle() -> None:
    s = token_source(50).shuffle(6, seed=2).batch(5).collate()
    head = [next(s) for _ in range(3)]
    clone = pickle.loads(pickle.dumps(s))
    rest = list(s)
    assert [b["input_ids"].tolist() for b in clone] == [b["input_ids"].tolist() for b in rest]
    assert len(head) + len(rest) == 10


class TestBatchRowsCollate(CheckpointRoundTripTests):
    iterator_cls = CollateIterator
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        return self.make_sharded(1, 0)

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        s = token_source(45, num_instances=num_instances, instance_rank=instance_rank)
        return s.shuffle(8, seed=0).batch(7).collate(keep=["id"])

    def units(self, item: dict[str, Any]) -> list[int]:
        return tokens_of(item)


def test_concat_of_pinned_and_mapped_columns_reads_each_through_its_own() -> None:
    """What ``mix`` hands the token stages when an input reads a bounded remote cache."""
    from arrowmix._stream.tokens.concat import ConcatTokenColumn

    storage = storage_of(token_table(50, 1), 12)
    local = TokenColumn(token_table(30, 2).column("input_ids"), "input_ids")
    both = ConcatTokenColumn([pinned(storage), local])
    flat = ConcatTokenColumn([TokenColumn(token_table(50, 1).column("input_ids"), "ids"), local])
    assert not both.has_buffers and flat.has_buffers
    pos = np.array([79, 3, 50, 49, 0, 35, 12, 64, 13])
    assert both.gather(pos).tolist() == flat.gather(pos).tolist()
    owner, starts, lengths = both.spans(pos)
    sep_after = np.arange(len(pos)) % 2 == 0
    out = np.zeros(int(lengths.sum() + sep_after.sum()), dtype=np.int64)
    got = both.gather_spans(owner, starts, lengths, out=out, sep_after=sep_after, sep=-1)
    assert got is out
    assert got.tolist() == flat.gather_spans(*flat.spans(pos), sep_after=sep_after, sep=-1).tolist()
    assert [a.tolist() for a in both.gather_padded(pos, 7, pad_id=-1, left=True)] == [
        a.tolist() for a in flat.gather_padded(pos, 7, pad_id=-1, left=True)
    ]
    assert storage.most_pinned == 1  # one chunk pinned at a time
    with pytest.raises(ValueError, match="int8 cannot hold"):
        both.check_fits(np.int8)
    with pytest.raises(TypeError, match="no buffers of the whole column"):
        both.buffers()
