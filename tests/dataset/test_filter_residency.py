"""A filter's finishing passes keep a window of its mapped files resident, not every page.

A filter gathers its kept positions from its segments into one file-backed array, compares
it with a stored indices file, writes, seals and checks the indices file. Each pass touches
every page of a mapping, and a touched page of a mapping counts in the process's resident
set, and so in its peak (``VmHWM``, ``ru_maxrss``), until the mapping goes. ``mincore``
cannot show this (it reports the page cache, where the pages rightly stay); the peak can,
reset through ``/proc/self/clear_refs`` before the step.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._storage import windows

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and madvise")
MiB = 2**20


def _status_kb(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1])
    raise AssertionError(f"no {key} in /proc/self/status")


def _peak_growth(fn):  # type: ignore[no-untyped-def]
    """``fn()`` and how far the resident set rose above where it stood, in bytes."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # VmHWM := VmRSS
    except OSError:
        pytest.skip("cannot reset the peak resident set here")
    before = _status_kb("VmRSS:")
    out = fn()
    return out, (_status_kb("VmHWM:") - before) * 1024


KW = {"batched": True, "input_columns": ["v"], "batch_size": 100_000}


def _counting(tmp_path: Path, n: int) -> am.Dataset:
    """``v = 0..n-1`` in chunk files, in numpy format."""
    am.write_chunks(pa.table({"v": np.arange(n, dtype=np.int32)}), str(tmp_path / "c"))
    ds = am.Dataset.from_chunks(str(tmp_path / "c"), cache_dir=str(tmp_path / "cache"))
    return ds.with_format("numpy")


def even(v: np.ndarray) -> np.ndarray:
    return v % 2 == 0


@linux
def test_a_large_filter_keeps_a_window_of_its_positions_resident(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    n = 2_000_000  # every other row kept: 8 MB of positions (segments, array, file)
    ds = _counting(tmp_path, n)
    ds.select(range(1000)).filter(even, **KW)  # imports and first-call caches
    monkeypatch.setattr(windows, "WINDOW", 256 * 1024)
    kept, grew = _peak_growth(lambda: ds.filter(even, **KW))
    positions = n // 2 * 8
    # before: every page of the segments, of the gathered array and of the file sealed and
    # checked (3x the positions); now a window of each pass
    assert grew < positions * 1.5, f"the filter's resident set grew by {grew / MiB:.1f} MiB"
    assert len(kept) == n // 2
    assert kept[-3:]["v"].tolist() == [n - 6, n - 4, n - 2]
    assert int(kept["v"][::100_000].sum()) == sum(range(0, n, 200_000))
    again, grew = _peak_growth(lambda: ds.filter(even, load_from_cache_file=False, **KW))
    assert grew < positions * 1.5  # and compared with the stored file, a window at a time
    assert again["v"][-1] == n - 2


def test_only_pages_of_file_mappings_made_here_are_handed_back(tmp_path: Path) -> None:
    anon = np.arange(1 << 20, dtype=np.int64)
    assert windows.release_array(anon) == 0  # handing back anonymous memory would zero it
    assert int(anon[-1]) == (1 << 20) - 1
    mm = windows.scratch(str(tmp_path), 8 * MiB)
    arr = np.frombuffer(mm, dtype=np.int64)
    arr[:] = np.arange(len(arr))
    released = windows.release_array(arr[1:])  # widened to whole pages, inside the mapping
    assert released == (8 * MiB if sys.platform.startswith("linux") else 0)
    assert int(arr.sum()) == len(arr) * (len(arr) - 1) // 2  # back from the page cache
    assert windows.equal(arr, np.arange(len(arr))) and not windows.equal(arr, arr[::-1])


def test_a_windowed_pass_sees_every_byte_once_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(windows, "WINDOW", 1 << 16)
    path = tmp_path / "f.bin"
    path.write_bytes(bytes(range(256)) * 4099)  # not a whole number of windows
    buf = windows.map_pass(str(path))
    parts = [bytes(p) for p in windows.windows(memoryview(buf), buf.address)]
    assert b"".join(parts) == path.read_bytes() and len(parts) == 17
    small = windows.map_pass(str(path))
    monkeypatch.setattr(windows, "WINDOW", 1 << 21)
    assert len(list(windows.windows(memoryview(small), small.address))) == 1


@pytest.mark.slow
@linux
def test_a_filter_over_a_shuffled_view_composes_its_positions_a_window_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    n = 2_000_000  # half kept: 8 MB of positions, composed through the shuffle's 16 MB
    ds = _counting(tmp_path, n)
    ds.select(range(1000)).filter(even, **KW)  # imports and first-call caches
    shuffled = ds.shuffle(seed=0)
    shuffled.filter(lambda v: v % 2 == 1, **KW)  # the rows' and the shuffle's pages read
    monkeypatch.setattr(windows, "WINDOW", 256 * 1024)
    kept, grew = _peak_growth(lambda: shuffled.filter(even, **KW))
    # before: the kept positions and their composition in anonymous memory (16 bytes a
    # kept row) and every page of the shuffle's indices file
    assert grew < n // 2 * 8 * 1.5, f"the filter's resident set grew by {grew / MiB:.1f} MiB"
    perm = np.random.default_rng(0).permutation(n)
    expected = perm[perm % 2 == 0]
    assert np.array_equal(kept["v"][:], expected)
    again = shuffled.filter(even, **KW)  # a rerun maps the stored positions
    assert again._fingerprint == kept._fingerprint
    assert np.array_equal(again["v"][-1000:], expected[-1000:])


def test_a_filter_over_selected_views_keeps_their_rows_in_order(tmp_path: Path) -> None:
    n = 120_000  # above the size kept in memory: the positions are composed in a file
    ds = _counting(tmp_path, n)

    def third(v: np.ndarray) -> np.ndarray:
        return v % 3 == 0

    backwards = np.arange(n - 1, -1, -1)
    views = [(ds.select(backwards), backwards), (ds.select(range(7, n)), np.arange(7, n))]
    for view, rows in views:
        kept = view.filter(third, **KW)
        assert np.array_equal(kept["v"][:], rows[rows % 3 == 0])
        assert np.array_equal(kept[5:8]["v"], rows[rows % 3 == 0][5:8])
