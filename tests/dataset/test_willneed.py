"""Row ranges a stream reads next are advised to the kernel as exactly their bytes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._dataset import willneed
from arrowmix._dataset.rows import DatasetRows
from arrowmix._dataset.willneed import WillNeed


@pytest.fixture
def advised(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    monkeypatch.setattr(willneed, "will_need", lambda s: spans.extend(s))
    return spans


def covers(spans: list[tuple[int, int]], addr: int, length: int) -> bool:
    return any(a <= addr and addr + length <= a + n for a, n in spans)


def test_list_string_and_fixed_columns_advise_their_rows_bytes(advised: Any) -> None:
    ids = pa.array([[1, 2, 3], [4], [], [5, 6], [7, 8, 9, 10]], type=pa.list_(pa.int32()))
    t = pa.table({"ids": ids, "s": ["a", "bb", "ccc", "d", "ee"], "x": np.arange(5.0)})
    WillNeed(t)(np.array([1]), np.array([4]))
    ids_off = t.column("ids").chunk(0).buffers()[1].address
    ids_val = t.column("ids").chunk(0).buffers()[3].address
    s_off, s_val = (b.address for b in t.column("s").chunk(0).buffers()[1:3])
    x_val = t.column("x").chunk(0).buffers()[1].address
    assert covers(advised, ids_off + 4, 4 * 4)  # offsets of rows 1..4
    assert covers(advised, ids_val + 3 * 4, 3 * 4)  # ids 4, 5, 6
    assert covers(advised, s_off + 4, 4 * 4)
    assert covers(advised, s_val + 1, 6)  # "bb", "ccc", "d"
    assert covers(advised, x_val + 8, 3 * 8)
    lo = min(a for a, _ in advised)
    # nothing of rows 0 or 4 beyond the shared offsets: no value of ids 1-3 or 7-10
    assert not covers(advised, ids_val, 4) and not covers(advised, ids_val + 6 * 4, 4)
    assert lo >= min(ids_off, ids_val, s_off, s_val, x_val)


def test_ranges_across_record_batches_and_sliced_arrays(advised: Any) -> None:
    a = pa.chunked_array([pa.array(np.arange(10, dtype=np.int64)).slice(3), np.arange(5)])
    WillNeed(pa.table({"v": a}))(np.array([5]), np.array([9]))
    first, second = a.chunk(0), a.chunk(1)
    assert covers(advised, first.buffers()[1].address + (3 + 5) * 8, 2 * 8)
    assert covers(advised, second.buffers()[1].address, 2 * 8)
    assert not covers(advised, second.buffers()[1].address + 2 * 8, 8)


def test_a_dataset_streams_blocks_through_its_prefetch(tmp_path: Any, advised: Any) -> None:
    rows = ({"id": i, "ids": list(range(i % 7))} for i in range(3000))
    am.write_chunks(rows, tmp_path / "c", rows_per_chunk=700)
    ds = am.Dataset.from_chunks(str(tmp_path / "c"))
    s = ds.select(range(100, 2900)).to_stream(
        shuffle="blocks", seed=0, infinite=False, block_size=64, window_blocks=4
    )
    got = sorted(r["id"] for r in s)
    assert got == list(range(100, 2900))
    assert advised  # the windows' bytes were advised
    scattered = ds.shuffle(seed=1).to_stream(shuffle="blocks", seed=0, infinite=False)
    advised.clear()
    assert sorted(r["id"] for r in scattered) == list(range(3000))
    assert advised == []  # rows of an index view are scattered: no ranges to advise


def test_prefetch_of_a_real_mapping_is_harmless(tmp_path: Any) -> None:
    am.write_chunks(({"ids": [i] * 5} for i in range(500)), tmp_path / "c", rows_per_chunk=100)
    rows = DatasetRows(am.Dataset.from_chunks(str(tmp_path / "c")))
    rows.prefetch(np.array([0, 150, 490]), np.array([10, 260, 500]))
    assert rows.take(np.array([499])).column("ids").to_pylist() == [[499] * 5]
