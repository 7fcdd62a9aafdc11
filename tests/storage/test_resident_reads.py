"""Reads that map pages outside a gather's rows count toward the resident gauge too.

Locating scattered rows reads their offsets (a fault maps the cached pages around each, so
the offsets of a large table's scattered rows can span all of it), and opening a file reads
its head, footer and record batch headers: those pages are handed back with the others.
"""

from __future__ import annotations

import sys

import numpy as np
import pyarrow as pa
import pytest

from arrowmix._storage import pages, resident
from arrowmix._storage.ipc import open_table

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="madvise, /proc")


def _resident_kb(under: str) -> int:
    """Resident kB of this process's mappings of files under ``under`` (from smaps)."""
    total, ours = 0, False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()
            if head and "-" in head[0] and len(head) >= 5:  # a mapping's first line
                ours = len(head) >= 6 and head[5].startswith(under)
            elif ours and line.startswith("Rss:"):
                total += int(head[1])
    return total


def _gauge(monkeypatch: pytest.MonkeyPatch, on: bool) -> None:
    """The gauge looking at every read with a 256 KiB limit (``on``), or never."""
    monkeypatch.setattr(resident, "CHECK_BYTES", 1 if on else 2**62)
    monkeypatch.setattr(resident, "RESIDENT_LIMIT", 2**18 if on else 2**62)
    monkeypatch.setattr(resident, "ADAPTIVE", False)
    resident.release_mapped()


def _write(path: str, table: pa.Table) -> None:
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


@pytest.mark.parametrize("on", [False, True])
def test_offsets_read_to_locate_scattered_rows_are_handed_back(tmp_path, monkeypatch, on):
    n = 400_000  # 1.6 MB of offsets
    offsets = np.arange(n + 1, dtype=np.int32)
    _write(str(tmp_path / "t.arrow"), pa.table({"ids": pa.ListArray.from_arrays(offsets, offsets)}))
    col = open_table(str(tmp_path / "t.arrow")).column("ids").chunk(0)
    _gauge(monkeypatch, on)
    rows = np.sort(np.random.default_rng(0).choice(n, 4_000, replace=False))
    parts = np.array_split(rows, 40)  # as a gather locates the rows of each batch
    located = [pages.row_ranges(col, part, part + 1) for part in parts]
    grown = _resident_kb(str(tmp_path))
    if on:
        assert grown <= 700  # the 256 KiB limit and one look's reads, not the offsets' 1.6 MB
    else:
        assert grown >= 1_200  # without the gauge, the faults map (nearly) every offset page
    # the ranges located (offsets, then values, of each row) whatever was handed back
    offs, vals = col.buffers()[1].address, col.buffers()[3].address
    for part, (lo, hi) in zip(parts, located, strict=True):
        k = len(part)
        assert np.array_equal(lo[:k] - offs, part * 4) and np.array_equal(hi[:k] - lo[:k], [8] * k)
        assert np.array_equal(lo[k:] - vals, part * 4) and np.array_equal(hi[k:] - lo[k:], [4] * k)


@pytest.mark.parametrize("on", [False, True])
def test_pages_an_open_reads_are_handed_back(tmp_path, monkeypatch, on):
    table = pa.table({"v": np.arange(64_000, dtype=np.int64)})  # 512 kB a file
    for i in range(24):
        _write(str(tmp_path / f"{i}.arrow"), table)
    _gauge(monkeypatch, on)
    opened = [open_table(str(tmp_path / f"{i}.arrow")) for i in range(24)]
    grown = _resident_kb(str(tmp_path))
    if on:
        assert grown <= 700
    else:
        assert grown >= 1_200  # a head and a footer of each of 24 files, mapped around
    assert all(t.equals(table) for t in opened)
