"""Pages of memory-mapped input are released during a pass, and the data stay correct."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import arrowmix as am
from arrowmix._dataset.mapping.residency import release_mapped_pages

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="madvise via /proc")


def _rss_file_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssFile:"):
                return int(line.split()[1])
    raise AssertionError("no RssFile in /proc/self/status")


@linux
def test_release_drops_resident_pages_keeps_data(tmp_path):
    values = np.arange(4_000_000, dtype=np.int64)  # 32 MB
    am.write_chunks(am.Dataset.from_dict({"v": values}), tmp_path / "c")
    ds = am.Dataset.from_chunks(str(tmp_path / "c"))
    total = int(ds.with_format("numpy")["v"].sum())  # touch every page
    before = _rss_file_kb()
    assert release_mapped_pages(ds.cache_files) >= 32_000_000
    assert _rss_file_kb() < before - 16_000
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
