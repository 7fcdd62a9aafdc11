"""Pages of memory-mapped input are released during a pass, and the data stay correct."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import arrowmix as am
from arrowmix._dataset.mapping.residency import release_mapped_pages

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="madvise via /proc")


def _resident_kb(under):
    """Resident kB of this process's mappings of files under ``under`` (from smaps)."""
    total, ours = 0, False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()
            if head and "-" in head[0] and len(head) >= 5:  # a mapping's first line
                ours = len(head) >= 6 and head[5].startswith(str(under))
            elif ours and line.startswith("Rss:"):
                total += int(head[1])
    return total


@linux
def test_release_drops_resident_pages_keeps_data(tmp_path):
    values = np.arange(4_000_000, dtype=np.int64)  # 32 MB
    am.write_chunks(am.Dataset.from_dict({"v": values}), tmp_path / "c")
    ds = am.Dataset.from_chunks(str(tmp_path / "c"))
    total = int(ds.with_format("numpy")["v"].sum())  # touch every page
    before = _resident_kb(tmp_path)
    assert before >= 16_000  # the sum touched the mapped pages
    assert release_mapped_pages(ds.cache_files) >= 32_000_000
    assert _resident_kb(tmp_path) < before / 4
    assert int(ds.with_format("numpy")["v"].sum()) == total == int(values.sum())


def test_release_ignores_unmapped_and_remote_paths(tmp_path):
    assert release_mapped_pages([str(tmp_path / "nothing.arrow")]) == 0
    assert release_mapped_pages([]) == 0


def test_map_over_chunks_gives_same_result_with_frequent_releases(tmp_path, monkeypatch):
    from arrowmix._dataset.mapping import residency

    monkeypatch.setattr(residency, "RELEASE_BYTES", 1)
    am.write_chunks(
        ({"t": "x" * (i % 50), "n": i} for i in range(3000)), tmp_path / "c", rows_per_chunk=700
    )
    ds = am.Dataset.from_chunks(str(tmp_path / "c"))
    out = ds.map(lambda b: {"len": [len(t) for t in b["t"]]}, batched=True, batch_size=100)
    assert out["len"] == [i % 50 for i in range(3000)] and out["t"] == ds["t"]
