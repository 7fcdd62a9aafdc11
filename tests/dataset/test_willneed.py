"""The row ranges a stream announces are asked for, batch by batch, as exactly those rows."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import arrowmix as am
from arrowmix._dataset import reader
from arrowmix._dataset.rows import DatasetRows


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, int, int]]:
    """``(column type, batch length, start, stop)`` of every piece asked for."""
    out: list[tuple[str, int, int, int]] = []

    def record(parts: Any, values: bool = True, **kw: Any) -> int:
        parts = list(parts)
        if values:  # the offsets-first call asks for the same pieces
            out.extend((str(a.type), len(a), s, e) for a, s, e in parts)
        return 0

    monkeypatch.setattr(reader, "prefetch_rows", record)
    return out


@pytest.fixture(scope="module")
def ds(tmp_path_factory: Any) -> am.Dataset:
    out = tmp_path_factory.mktemp("c")
    rows = ({"id": i, "ids": list(range(i % 7))} for i in range(3000))
    am.write_chunks(rows, out, rows_per_chunk=700)
    return am.Dataset.from_chunks(str(out))


def test_ranges_become_pieces_of_each_batch_and_read_column(ds: Any, asked: Any) -> None:
    DatasetRows(ds).prefetch(np.array([10, 690]), np.array([20, 1500]))
    per_column = sorted((s, e) for t, _, s, e in asked if t == "int64")
    # rows 10-20 of the first file; 690-700, 0-700 and 0-100 of the first three
    assert per_column == [(0, 100), (0, 700), (10, 20), (690, 700)]
    assert len(asked) == 2 * len(per_column)  # both columns
    asked.clear()
    DatasetRows(ds.select_columns(["ids"])).prefetch(np.array([0]), np.array([5]))
    assert [t for t, *_ in asked] == ["list<item: int64>"]


def test_a_range_view_shifts_and_an_index_view_asks_nothing(ds: Any, asked: Any) -> None:
    DatasetRows(ds.select(range(1400, 2100))).prefetch(np.array([0]), np.array([700]))
    assert sorted((s, e) for t, _, s, e in asked if t == "int64") == [(0, 700)]
    asked.clear()
    DatasetRows(ds.shuffle(seed=1)).prefetch(np.array([0]), np.array([700]))
    assert asked == []  # rows of an index view are scattered: no ranges to ask for


def test_a_block_stream_asks_for_each_window_once(ds: Any, monkeypatch: Any) -> None:
    ranges: list[tuple[int, int]] = []
    original = DatasetRows.prefetch

    def spy(self: DatasetRows, starts: np.ndarray, stops: np.ndarray) -> None:
        ranges.extend(zip(starts.tolist(), stops.tolist(), strict=True))
        original(self, starts, stops)

    monkeypatch.setattr(DatasetRows, "prefetch", spy)
    view = ds.select(range(100, 2900))
    s = view.to_stream(shuffle="blocks", seed=0, infinite=False, block_size=64, window_blocks=4)
    assert sorted(r["id"] for r in s) == list(range(100, 2900))
    covered = sorted(r for a, z in ranges for r in range(a, z))
    assert covered == list(range(2800))  # view rows: every block once, the short tail too


def test_asking_through_a_real_mapping_is_harmless(tmp_path: Any) -> None:
    am.write_chunks(({"ids": [i] * 5} for i in range(500)), tmp_path / "c", rows_per_chunk=100)
    rows = DatasetRows(am.Dataset.from_chunks(str(tmp_path / "c")))
    rows.prefetch(np.array([0, 150, 490]), np.array([10, 260, 500]))
    assert rows.take(np.array([499])).column("ids").to_pylist() == [[499] * 5]


def test_the_offsets_of_variable_width_pieces_are_asked_for_first() -> None:
    import pyarrow as pa

    from arrowmix._storage.pages import row_ranges

    def heads(arr: Any, s: int, e: int) -> list[tuple[int, int]]:
        lo, hi = row_ranges(arr, np.array([s]), np.array([e]), values=False)
        return list(zip(lo.tolist(), hi.tolist(), strict=True))

    ids = pa.array([[1], [2, 3], [], [4]], type=pa.list_(pa.int32())).slice(1)
    base = ids.buffers()[1].address
    assert heads(ids, 1, 3) == [(base + (1 + 1) * 4, base + (1 + 3 + 1) * 4)]
    big = pa.array(["a", "bb"], type=pa.large_string())
    assert heads(big, 0, 2) == [(big.buffers()[1].address, big.buffers()[1].address + 24)]
    i32 = pa.array([1, 2], pa.int32())  # fixed widths: their values, in the first call
    assert heads(i32, 0, 2) == [(i32.buffers()[1].address, i32.buffers()[1].address + 8)]


def test_the_batch_read_ahead_leaves_announced_ranges_to_prefetch(
    ds: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arrowmix._dataset.page_ahead import PageAhead

    calls: list[str] = []
    monkeypatch.setattr(PageAhead, "__call__", lambda self, upcoming: calls.append("guess"))
    for mode in ("blocks", "chunks"):
        calls.clear()
        list(ds.to_stream(shuffle=mode, seed=0, infinite=False))
        assert bool(calls) == (mode == "chunks"), mode
