"""The default global shuffle says so when its corpus is larger than the page cache."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

import arrowmix as am
from arrowmix._dataset import page_cache
from arrowmix._dataset.state import state_of
from arrowmix.exceptions import PerformanceWarning


@pytest.fixture(scope="module")
def ds(tmp_path_factory: Any) -> am.Dataset:
    out = tmp_path_factory.mktemp("c")
    am.write_chunks(({"id": i, "ids": [i] * 9} for i in range(4000)), out, rows_per_chunk=1000)
    return am.Dataset.from_chunks(str(out))


@pytest.fixture
def small_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(page_cache, "available_memory", lambda: 1000)


def ids(stream: Any) -> list[int]:
    return [r["id"] for r in stream]


def test_the_default_warns_past_memory_naming_blocks_and_sizes(ds: Any, small_memory: Any) -> None:
    with pytest.warns(PerformanceWarning) as record:
        s = ds.to_stream(seed=3, infinite=False)
    assert len(record) == 1
    msg = str(record[0].message)
    assert "shuffle='blocks'" in msg and "GiB" in msg and "shuffle='global'" in msg
    assert record[0].filename == __file__  # points at the user's call
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        explicit = ds.to_stream(shuffle="global", seed=3, infinite=False)
    assert ids(s) == ids(explicit)  # the same order: only the warning differs


@pytest.mark.parametrize("mode", ["global", "blocks", "chunks", None])
def test_explicit_modes_do_not_warn(ds: Any, small_memory: Any, mode: str | None) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds.to_stream(shuffle=mode, seed=0)


def test_small_or_in_memory_corpora_do_not_warn(ds: Any, monkeypatch: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds.to_stream(seed=0)  # this machine's memory holds a few hundred KB
        monkeypatch.setattr(page_cache, "available_memory", lambda: 1000)
        am.Dataset.from_dict({"x": list(range(5000))}).to_stream(seed=0)  # in RAM already
        monkeypatch.setattr(page_cache, "available_memory", lambda: None)  # unknown
        ds.to_stream(seed=0)


def test_a_view_counts_its_share_of_the_storage(ds: Any) -> None:
    whole = page_cache.mapped_bytes(state_of(ds))
    quarter = page_cache.mapped_bytes(state_of(ds.select(range(1000))))
    assert whole > 4000 * 9 * 4 and quarter == whole * 1000 // 4000
    only_id = page_cache.mapped_bytes(state_of(ds.with_format("numpy", columns=["id"])))
    assert 0 < only_id < whole


def test_available_memory_reads_meminfo_capped_by_the_cgroup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    meminfo, cgroup = tmp_path / "meminfo", tmp_path / "memory.max"
    meminfo.write_text("MemTotal: 900 kB\nMemFree: 10 kB\nMemAvailable: 500 kB\n")
    monkeypatch.setattr(page_cache, "_MEMINFO", str(meminfo))
    monkeypatch.setattr(page_cache, "_CGROUP_MAX", str(tmp_path / "absent"))
    assert page_cache.available_memory() == 500 * 1024
    monkeypatch.setattr(page_cache, "_CGROUP_MAX", str(cgroup))
    cgroup.write_text("max\n")
    assert page_cache.available_memory() == 500 * 1024
    cgroup.write_text("4096\n")
    assert page_cache.available_memory() == 4096
    monkeypatch.setattr(page_cache, "_MEMINFO", str(tmp_path / "absent"))
    assert page_cache.available_memory() is None
