"""Pages of memory-mapped input are handed back during passes and gathers; data stay correct."""

from __future__ import annotations

import itertools
import sys

import numpy as np
import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._dataset.mapping.residency import release_mapped_pages
from arrowmix._dataset.state import state_of
from arrowmix._storage import resident
from arrowmix._stream.tokens.column import TokenColumn

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
    assert release_mapped_pages(["s3://bucket/chunk-00000.arrow"]) == 0
    assert release_mapped_pages([]) == 0


def _gauge(monkeypatch, on):
    """The resident gauge looking at every read (``on``) or never, from a fresh floor."""
    monkeypatch.setattr(resident, "CHECK_BYTES", 1 if on else 2**62)
    monkeypatch.setattr(resident, "RESIDENT_LIMIT", 2**20 if on else 2**62)
    monkeypatch.setattr(resident, "ADAPTIVE", False)  # as with ARROWMIX_RESIDENT_MB set
    resident.release_mapped()


@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    """4 MB of token documents in 4 chunk files (rows of 1 to 40 ids), opened mapped."""
    lengths = np.random.default_rng(0).integers(1, 40, 50_000)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    ids = pa.ListArray.from_arrays(offsets, pa.array(np.arange(offsets[-1], dtype=np.int32)))
    tmp_path = tmp_path_factory.mktemp("docs")
    am.write_chunks(pa.table({"ids": ids}), tmp_path / "c", rows_per_chunk=12_500)
    rows = [np.arange(a, b, dtype=np.int32) for a, b in itertools.pairwise(offsets)]
    return am.Dataset.from_chunks(str(tmp_path / "c")), rows, tmp_path


@linux
@pytest.mark.parametrize("gather", ["take", "flatten", "tokens"])
def test_gathers_hand_back_mapped_pages(docs, monkeypatch, gather):
    ds, ids, root = docs
    pos = np.random.default_rng(1).permutation(len(ids))[:12_000]

    def run():
        if gather == "take":
            return list(ds.with_format("numpy")[pos]["ids"])
        if gather == "flatten":
            return ds.select(pos).flatten_indices().with_format("numpy")["ids"]
        return TokenColumn(state_of(ds).table.column("ids"), "ids").gather_each(pos, np.int32)

    _gauge(monkeypatch, on=False)
    kept = _resident_kb(root)
    run()
    assert _resident_kb(root) - kept >= 1_500  # without the gauge the gather's pages stay
    _gauge(monkeypatch, on=True)
    got = run()
    assert _resident_kb(root) <= 1_200  # the gauge's 1 MiB, not the corpus's 4 MB
    assert np.array_equal(np.concatenate(list(got)), np.concatenate([ids[p] for p in pos]))


@linux
@pytest.mark.parametrize("available_mb", [1, 100_000])
def test_by_default_pages_are_handed_back_only_past_memory(docs, monkeypatch, available_mb):
    """A corpus larger than half the memory available is read with bounded resident pages;
    one that fits keeps them mapped (its re-reads fault nothing)."""
    ds, ids, root = docs
    pos = np.random.default_rng(available_mb).permutation(len(ids))[:12_000]  # no cache hit
    _gauge(monkeypatch, on=True)
    monkeypatch.setattr(resident, "ADAPTIVE", True)
    monkeypatch.setattr(resident, "memory_available", lambda: available_mb * 2**20)
    got = ds.select(pos).flatten_indices().with_format("numpy")["ids"]
    if available_mb == 1:  # 4 MB of mapped chunks > half of 1 MiB: past memory
        assert _resident_kb(root) <= 1_200
    else:
        assert _resident_kb(root) >= 1_500
    assert np.array_equal(np.concatenate(list(got)), np.concatenate([ids[p] for p in pos]))


@linux
def test_memory_available_reads_meminfo():
    with open("/proc/meminfo") as f:
        total_kb = int(next(x for x in f if x.startswith("MemTotal:")).split()[1])
    assert 0 < resident.memory_available() <= total_kb * 1024


def test_map_over_chunks_gives_same_result_with_frequent_releases(tmp_path, monkeypatch):
    monkeypatch.setattr(resident, "CHECK_BYTES", 1)
    monkeypatch.setattr(resident, "RESIDENT_LIMIT", 0)
    am.write_chunks(
        ({"t": "x" * (i % 50), "n": i} for i in range(3000)), tmp_path / "c", rows_per_chunk=700
    )
    ds = am.Dataset.from_chunks(str(tmp_path / "c"))
    out = ds.map(lambda b: {"len": [len(t) for t in b["t"]]}, batched=True, batch_size=100)
    assert out["len"] == [i % 50 for i in range(3000)] and out["t"] == ds["t"]


def test_resident_limit_from_the_environment():
    assert resident._limit(None) == resident._limit(" ") == 64 * 2**20
    assert resident._limit("16") == 16 * 2**20 and resident._limit("0.5") == 2**19
    assert resident._limit("OFF") >= 2**62
    for bad in ("-1", "lots", "nan", "inf"):
        with pytest.raises(ValueError, match="ARROWMIX_RESIDENT_MB must be a number of MiB"):
            resident._limit(bad)


def test_a_corpus_that_fits_is_asked_about_memory_once_per_limit_of_growth(monkeypatch):
    """Past the limit, a corpus that fits is not looked up in ``/proc/meminfo`` at every look:
    only once the resident pages grew by the limit again (its pages stay mapped)."""
    now, asked, released = [100 << 20], [], []
    monkeypatch.setattr(resident, "_ON", True)
    monkeypatch.setattr(resident, "CHECK_BYTES", 1)
    monkeypatch.setattr(resident, "RESIDENT_LIMIT", 10 << 20)
    monkeypatch.setattr(resident, "ADAPTIVE", True)
    monkeypatch.setattr(resident._GAUGE, "floor", -1)
    monkeypatch.setattr(resident, "resident_file_bytes", lambda: now[0])
    monkeypatch.setattr(resident, "past_memory", lambda: asked.append(now[0] >> 20) or False)
    monkeypatch.setattr(resident, "release_mapped", lambda: released.append(now[0]) or 0)
    resident.touched(1)  # the first look sets the floor
    for mb in range(101, 140):
        now[0] = mb << 20
        resident.touched(1)
        resident.touched(1)  # no growth since the last look
    assert asked == [111, 122, 133] and not released
    monkeypatch.setattr(resident, "past_memory", lambda: True)  # memory became scarce
    now[0] = 150 << 20
    resident.touched(1)
    assert released == [150 << 20]
