"""Narrow ``dtype``s of the token stages: every value fits, or the stage refuses when built."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from arrowmix._stream.row_source import TableRowSource
from arrowmix._stream.sources.rows import ArrowSource
from arrowmix._stream.tokens.collate import Collator
from arrowmix.stream import Stream, from_iterable

pytestmark = pytest.mark.filterwarnings("ignore::arrowmix.exceptions.DroppedDataWarning")

STRATEGIES = ("concat", "first_fit", "best_fit")


def small_ids(n: int = 30, seed: int = 0) -> list[list[int]]:
    """Documents of 1..40 ids below 60 000 (they fit uint16, not int8)."""
    rng = np.random.default_rng(seed)
    return [(1000 + 100 * k + np.arange(int(rng.integers(1, 41)))).tolist() for k in range(n)]


def index_stream(docs: list[list[int]]) -> Stream[Any]:
    table = pa.table({"input_ids": pa.array(docs, pa.list_(pa.int32()))})
    return ArrowSource(TableRowSource(table, chunk_rows=7), shuffle=None, infinite=False)


def iterable_stream(docs: list[list[int]]) -> Stream[Any]:
    return from_iterable([{"input_ids": d} for d in docs])


SOURCES = {"index": index_stream, "iterable": iterable_stream}


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_pack_refuses_a_dtype_that_cannot_number_seq_len_positions(strategy: str) -> None:
    s = iterable_stream(small_ids())
    with pytest.raises(ValueError, match=r"`dtype=int8` cannot hold `seq_len`.* 300 .*127"):
        s.pack("input_ids", seq_len=300, dtype=np.int8, strategy=strategy)
    # no position or segment ids asked for: nothing to number
    s.pack("input_ids", seq_len=300, dtype=np.int64, strategy=strategy, outputs=())


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_int8_positions_and_segments_never_wrap_when_seq_len_fits(strategy: str) -> None:
    docs = [[1] * 3] * 200  # short documents: up to 43 segments in a row of 127
    kw: dict[str, Any] = {"seq_len": 127, "batch_size": 2, "strategy": strategy}
    kw.update({"tail": "pad"} if strategy == "concat" else {})
    narrow = list(iterable_stream(docs).pack("input_ids", dtype=np.int8, **kw))
    wide = list(iterable_stream(docs).pack("input_ids", **kw))
    assert len(narrow) == len(wide) > 0
    for a, b in zip(narrow, wide, strict=True):
        for key in ("input_ids", "segment_ids", "position_ids"):
            assert a[key].dtype == np.int8
            assert a[key].astype(np.int64).tolist() == b[key].tolist()
        assert int(a["position_ids"].min()) >= 0


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("separator", [None, 7])
def test_uint16_pack_equals_int64_pack_for_ids_that_fit(
    source: str, strategy: str, separator: int | None
) -> None:
    docs = small_ids()
    kw: dict[str, Any] = {"seq_len": 16, "batch_size": 2, "strategy": strategy}
    if strategy == "concat":
        kw.update(separator=separator, tail="pad")
    elif separator is not None:
        pytest.skip("bin packing takes no separator")
    narrow = list(SOURCES[source](docs).pack("input_ids", dtype=np.uint16, **kw))
    wide = list(SOURCES[source](docs).pack("input_ids", **kw))
    assert len(narrow) == len(wide) > 0
    for a, b in zip(narrow, wide, strict=True):
        assert sorted(a) == sorted(b)
        for key in ("input_ids", "segment_ids", "position_ids"):
            assert a[key].dtype == np.uint16
            assert a[key].astype(np.int64).tolist() == b[key].tolist()


@pytest.mark.parametrize("source", SOURCES)
def test_collate_of_empty_documents_keeps_the_dtype(source: str) -> None:
    c = Collator("input_ids", dtype=np.int32, labels="shift")
    out = c([[], []])
    assert {k: v.dtype for k, v in out.items()} == dict.fromkeys(out, np.dtype(np.int32))
    assert out["input_ids"].shape == (2, 0)
    batches = list(SOURCES[source]([[], [], []]).batch(3).collate("input_ids", dtype=np.int32))
    assert [b["input_ids"].dtype for b in batches] == [np.dtype(np.int32)]


def test_values_a_dtype_cannot_hold_are_refused_when_the_stage_is_built() -> None:
    s = iterable_stream(small_ids())
    with pytest.raises(TypeError, match=r"`labels='shift'` needs a signed `dtype`.*-100.*uint16"):
        s.batch(2).collate("input_ids", labels="shift", dtype=np.uint16)
    with pytest.raises(ValueError, match=r"`dtype=int8` cannot hold `pad_id` 1000 .*-128, 127"):
        s.batch(2).collate("input_ids", dtype=np.int8, pad_id=1000)
    for strategy in STRATEGIES:
        with pytest.raises(ValueError, match=r"`dtype=uint16` cannot hold `pad_id` -1 "):
            s.pack("input_ids", seq_len=8, dtype=np.uint16, pad_id=-1, strategy=strategy)
    # the same values fit a wider dtype
    s.batch(2).collate("input_ids", dtype=np.int16, pad_id=1000)
    s.pack("input_ids", seq_len=8, dtype=np.int16, pad_id=-1)
