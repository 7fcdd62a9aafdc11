"""A whole column read at once streams through the kernel's read-ahead, then reads go random."""

from __future__ import annotations

import os
import resource
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import arrowmix as am
from arrowmix._storage import pages
from tests.storage.page_tools import drop, vm_flags

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux madvise")


def _major_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_majflt


@pytest.fixture
def big(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[am.Dataset]:
    """~32 MB of token ids, "large" past 1 MiB (the 256 MiB of real reads, scaled down)."""
    monkeypatch.setattr(pages, "_AHEAD_CAP", 2**20)
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 80, 200_000)
    offsets = pa.array(np.r_[0, np.cumsum(lengths)].astype(np.int32))
    values = pa.array(rng.integers(0, 30_000, int(lengths.sum()), dtype=np.int32))
    ids = pa.ListArray.from_arrays(offsets, values)
    am.write_chunks([pa.record_batch({"ids": ids})], str(tmp_path / "c"))
    ds = am.Dataset.from_chunks(str(tmp_path / "c"))
    drop(ds.cache_files[0])
    yield ds
    pages.random_again()


def test_a_cold_whole_column_streams_then_random_rows_read_their_own_pages(big: Any) -> None:
    path = big.cache_files[0]
    before = _major_faults()
    column = big.with_format("arrow")["ids"]
    total = pc.sum(pc.list_flatten(column)).as_py()  # every token id
    faults = _major_faults() - before
    pages_read = os.path.getsize(path) // 4096
    if faults == 0:
        pytest.skip("no major faults counted here (pages not dropped?)")
    # one fault per read-ahead window, not one per 4 KiB page
    assert faults < pages_read // 20, f"{faults} faults for {pages_read} pages"
    assert any("sr" in f for f in vm_flags(path))  # the column's bytes: sequential
    assert big[123]["ids"] == column[123].as_py()  # a random read advises random again
    assert all("rr" in f and "sr" not in f for f in vm_flags(path))
    assert total == int(pc.sum(pc.list_flatten(column)).as_py())


def test_smaller_reads_keep_random_advice(big: Any) -> None:
    part = big.with_format("arrow")[:1000]["ids"]
    assert len(part) == 1000
    assert all("rr" in f for f in vm_flags(big.cache_files[0]))
    assert not pages.streamed()
