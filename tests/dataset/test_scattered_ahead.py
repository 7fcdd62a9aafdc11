"""Scattered rows of a cold table are asked for by their exact pages before they are read."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._dataset import page_ahead, reader
from arrowmix._dataset.state import state_of
from tests.storage.page_tools import drop

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux madvise")


@pytest.fixture
def cold(tmp_path: Any) -> am.Dataset:
    """40,000 documents in two chunk files, their pages dropped."""
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 40, 40_000)
    offsets = pa.array(np.r_[0, np.cumsum(lengths)].astype(np.int32))
    values = pa.array(rng.integers(0, 30_000, int(lengths.sum()), dtype=np.int32))
    ids = pa.ListArray.from_arrays(offsets, values)
    batches = [pa.record_batch({"ids": ids.slice(a, 4000)}) for a in range(0, 40_000, 4000)]
    am.write_chunks(batches, str(tmp_path / "c"), rows_per_chunk=20_000)
    ds = am.Dataset.from_chunks(str(tmp_path / "c"))
    for path in ds.cache_files:
        drop(path)
    if reader.resident(np.array([_first_address(ds)])) == 1.0:
        pytest.skip("pages of this directory cannot be dropped (tmpfs?)")
    return ds


def _chunks(ds: am.Dataset) -> list[Any]:
    """The record batches of column ``ids``, untouched (no page is read)."""
    return list(state_of(ds).table.column("ids").chunks)


def _first_address(ds: am.Dataset) -> int:
    return int(_chunks(ds)[0].values.buffers()[1].address)


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[tuple[bool, set[int]]]:
    """``(values, table rows)`` of every call asking for single rows' pages (not ranges)."""
    out: list[tuple[bool, set[int]]] = []
    real = reader.prefetch_rows

    def record(parts: Any, values: bool = True, **kw: Any) -> int:
        parts = list(parts)
        if parts and np.ndim(parts[0][1]) == 1:  # single rows, not ranges
            rows: set[int] = set()
            for arr, starts, _ in parts:
                rows.update((_FIRST_ROW[int(arr.buffers()[1].address)] + starts).tolist())
            out.append((values, rows))
        return real(parts, values=values, **kw)

    monkeypatch.setattr(reader, "prefetch_rows", record)
    return out


_FIRST_ROW: dict[int, int] = {}  # offsets' address of each record batch -> its first row


def _index_batches(ds: am.Dataset) -> None:
    _FIRST_ROW.clear()
    first = 0
    for chunk in _chunks(ds):
        _FIRST_ROW[int(chunk.buffers()[1].address)] = first
        first += len(chunk)


def test_a_global_stream_asks_for_its_next_rows_offsets_first(
    cold: am.Dataset, asked: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(page_ahead, "_HORIZON", 64)  # no batch is crowded: rows are scattered
    _index_batches(cold)
    order = cold.to_stream(seed=0, infinite=False)
    order.reset(None)
    expected = order.pull_positions(3 * page_ahead.DEPTH).tolist()
    stream = cold.to_stream(seed=0, infinite=False)
    first = [row["ids"] for _, row in zip(range(10), stream, strict=False)]
    assert page_ahead._settle()  # values are asked for by a background thread
    assert first == [cold[i]["ids"] for i in expected[:10]]
    heads = set().union(*(rows for values, rows in asked if not values))
    bodies = set().union(*(rows for values, rows in asked if values))
    assert set(expected[: 2 * page_ahead.DEPTH]) <= heads
    assert set(expected[: page_ahead.DEPTH]) <= bodies
    assert asked[0][0] is False  # the offsets of the first rows before their values


def test_an_index_streams_first_window_asks_for_all_its_offsets_at_once(
    cold: am.Dataset, asked: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # budget_bucket looks up the lengths of its whole read-ahead window at once: the
    # offsets of all those rows are asked for before that lookup reads them (cold, a fault
    # each one after the other: 1.2 s of a 1.7 s first batch at 140M documents)
    monkeypatch.setattr(page_ahead, "_HORIZON", 64)
    monkeypatch.setattr(reader, "resident", lambda addresses: 0.0)  # the open read a few
    _index_batches(cold)
    window = 4 * page_ahead.DEPTH
    order = cold.to_stream(seed=0, infinite=False)
    order.reset(None)
    expected = order.pull_positions(window).tolist()
    assert page_ahead._settle()  # that order's own asks are made before the count starts
    asked.clear()
    stream = cold.to_stream(seed=0, infinite=False).budget_bucket("ids", 2_000, window, seed=1)
    first = next(iter(stream))
    assert page_ahead._settle()
    assert asked[0][0] is False and set(expected) <= asked[0][1]
    # then their values, from the background thread: the next window's offsets may be asked
    # for before or after that, so the values ask is found among the later ones
    assert any(values and set(expected) <= rows for values, rows in asked[1:])
    window_docs = {tuple(cold[i]["ids"]) for i in expected}
    assert first and all(tuple(row["ids"]) in window_docs for row in first)


def test_a_gather_asks_for_its_rows_then_reads_them(cold: am.Dataset, asked: Any) -> None:
    _index_batches(cold)
    pos = np.random.default_rng(2).choice(40_000, 500, replace=False)
    got = cold.select(pos).with_format("arrow")[:]
    assert [values for values, _ in asked] == [False, True]
    assert asked[0][1] == asked[1][1] == set(pos.tolist())
    expected = cold.with_format("arrow")[:].column("ids").take(pa.array(pos))
    assert got.column("ids").to_pylist() == expected.to_pylist()


def test_warm_rows_are_not_asked_for(tmp_path: Any, asked: Any) -> None:
    am.write_chunks(({"ids": [i] * 9} for i in range(20_000)), str(tmp_path / "w"))
    ds = am.Dataset.from_chunks(str(tmp_path / "w"))
    ds.with_format("arrow")[:].column("ids").to_pylist()  # every page in memory
    pos = np.random.default_rng(3).choice(20_000, 300, replace=False)
    assert ds.select(pos)["ids"] == [[int(i)] * 9 for i in pos]
    assert asked == []


def test_a_random_row_asks_for_nothing_a_row_by_row_pass_reads_ahead(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    am.write_chunks(({"ids": [i] * 3} for i in range(5000)), str(tmp_path / "r"))
    ds = am.Dataset.from_chunks(str(tmp_path / "r"))
    calls: list[int] = []
    monkeypatch.setattr(reader, "prefetch_rows", lambda parts, **kw: calls.append(1))
    assert [ds[i]["ids"] for i in (4000, 17, 2500)] == [[4000] * 3, [17] * 3, [2500] * 3]
    assert calls == []  # its two faults read its pages: asking would cost more
    assert [ds[i]["ids"][0] for i in range(18, 30)] == list(range(18, 30))
    assert calls  # ds[17], ds[18], ...: a sequential pass asks ahead
