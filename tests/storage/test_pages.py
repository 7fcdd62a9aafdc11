"""Page advice: mappings advised random, cold opens and random rows read their own pages only."""

from __future__ import annotations

import os
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import arrowmix as am
from arrowmix._dataset.reader import TableReader
from arrowmix._storage.ipc import open_table
from arrowmix._storage.pages import map_file, row_ranges
from tests.storage.page_tools import drop, vm_flags

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux madvise")


def _read_bytes() -> int:
    with open("/proc/self/io", encoding="ascii") as f:
        return next(int(x.split()[1]) for x in f if x.startswith("read_bytes"))


def _counts_disk_reads(path: str) -> bool:
    """Whether a cold read of ``path`` moves ``read_bytes`` (not on tmpfs and the like)."""
    drop(path)
    before = _read_bytes()
    with open(path, "rb") as f:
        f.read(1 << 16)
    return _read_bytes() > before


def _many_batches(path: str, batches: int = 200, rows: int = 4096) -> None:
    """A chunk file of ``batches`` record batches of ``list<int32>`` documents (~40 MB)."""
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 24, rows)
    offsets = np.r_[0, np.cumsum(lengths)].astype(np.int32)
    values = pa.array(rng.integers(0, 30_000, int(offsets[-1]), dtype=np.int32))
    ids = pa.ListArray.from_arrays(pa.array(offsets), values)
    batch = pa.record_batch({"input_ids": ids})
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, batch.schema) as w:
        for _ in range(batches):
            w.write_batch(batch)


@linux
def test_an_opened_chunk_is_mapped_random(tmp_path):
    am.write_chunks([pa.record_batch({"x": list(range(1000))})], str(tmp_path / "c"))
    ds = am.Dataset.from_chunks(str(tmp_path / "c"))
    path = ds.cache_files[0]
    flags = vm_flags(path)
    assert flags, f"{path} is not mapped"
    assert all("rr" in f for f in flags), flags  # MADV_RANDOM: no read-around on a fault
    assert ds[999]["x"] == 999


@linux
def test_a_cold_open_and_random_rows_read_their_own_pages(tmp_path):
    path = str(tmp_path / "many.arrow")
    _many_batches(path)
    if not _counts_disk_reads(path):
        pytest.skip("reads of this directory are not counted (tmpfs?)")
    drop(path)
    before = _read_bytes()
    table = open_table(path)
    opened = _read_bytes() - before
    # footer and 200 record batch headers: a page or two each, never a read-around each
    assert opened <= 2 * 2**20, f"a cold open read {opened} bytes"
    rows = np.random.default_rng(1).integers(0, table.num_rows, 20)
    reader = TableReader(table)
    before = _read_bytes()
    got = [reader.take(np.array([r])).column(0)[0].as_py() for r in rows.tolist()]
    used = _read_bytes() - before
    assert used <= 20 * 64 * 1024, f"20 random rows read {used} bytes"
    assert got == [table.column(0)[r].as_py() for r in rows.tolist()]


@linux
def test_a_sequential_pass_over_a_random_mapping_reads_each_page_once(tmp_path):
    path = str(tmp_path / "many.arrow")
    _many_batches(path, batches=40)
    if not _counts_disk_reads(path):
        pytest.skip("reads of this directory are not counted (tmpfs?)")
    drop(path)
    table = open_table(path)
    reader = TableReader(table)
    before = _read_bytes()
    total = 0
    for start in range(0, table.num_rows, 5000):
        part = reader.slice(start, start + 5000).column(0)
        total += pc.sum(pc.list_flatten(part)).as_py()  # reads every token id
    used = _read_bytes() - before
    assert total == pc.sum(pc.list_flatten(table.column(0))).as_py()
    assert used <= os.path.getsize(path) * 1.1


_TYPES = {
    "ints": (pa.int64(), st.integers(-(2**40), 2**40)),
    "text": (pa.string(), st.text(max_size=30)),
    "ids": (pa.list_(pa.int32()), st.lists(st.integers(0, 1000), max_size=20)),
    "flags": (pa.bool_(), st.booleans()),
}


@given(
    data=st.data(),
    batch_rows=st.lists(st.integers(1, 40), min_size=1, max_size=6),
    nulls=st.booleans(),
)
# 40 examples in CI, the dev profile's count (conftest.py) in the fast tier
@settings(max_examples=min(40, settings.default.max_examples), deadline=None)
def test_reads_of_a_mapped_file_equal_pyarrows(tmp_path_factory, data, batch_rows, nulls):
    schema = pa.schema(
        [(n, t) for n, (t, _) in _TYPES.items()]
        + [("pair", pa.struct([("a", pa.int32()), ("b", pa.string())]))]
    )
    batches = []
    for n in batch_rows:
        cols = {}
        for name, (kind, values) in _TYPES.items():
            item = st.one_of(st.none(), values) if nulls else values
            cols[name] = pa.array(data.draw(st.lists(item, min_size=n, max_size=n)), kind)
        cols["pair"] = pa.array([{"a": i, "b": str(i)} for i in range(n)], schema.field(4).type)
        batches.append(pa.record_batch(cols, schema=schema))
    path = str(tmp_path_factory.mktemp("m") / "f.arrow")
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, schema) as w:
        for b in batches:
            w.write_batch(b)
    table = open_table(path)
    expected = pa.Table.from_batches(batches, schema=schema)
    n = table.num_rows
    positions = np.asarray(data.draw(st.lists(st.integers(0, n - 1), max_size=60)), np.int64)
    reader = TableReader(table)
    assert reader.take(positions).to_pylist() == expected.take(positions).to_pylist()
    start = data.draw(st.integers(0, n))
    stop = data.draw(st.integers(start, n))
    for _ in range(2):  # a repeated slice continues the pass: it asks ahead
        assert (
            reader.slice(start, stop).to_pylist() == expected.slice(start, stop - start).to_pylist()
        )
    for batch in table.to_batches():
        for col in batch.columns:
            for values in (False, True):
                lo, hi = row_ranges(col, np.array([0]), np.array([len(col)]), values=values)
                assert (lo <= hi).all()


def test_an_empty_file_is_not_arrow(tmp_path):
    path = tmp_path / "empty.arrow"
    path.write_bytes(b"")
    assert map_file(str(path)).size == 0
    with pytest.raises(am.exceptions.ChunkFileError, match=r"empty\.arrow"):
        open_table(str(path))


@linux
def test_a_cold_open_asks_for_every_files_headers_before_reading_one(tmp_path, monkeypatch):
    from arrowmix._storage import corpus_open

    batches = [pa.record_batch({"x": np.arange(i, i + 50_000)}) for i in range(0, 600_000, 50_000)]
    am.write_chunks(batches, str(tmp_path / "c"), rows_per_chunk=300_000)
    asked: list[tuple[str, list[int]]] = []
    real = corpus_open.ask_heads

    def record(files):
        files = [(path, list(at)) for path, at in files]
        asked.extend(files)
        assert not opened, "asked after an open"
        real(files)

    opened: list[str] = []
    real_open = corpus_open.open_table
    monkeypatch.setattr(corpus_open, "ask_heads", record)
    monkeypatch.setattr(
        corpus_open, "open_table", lambda p, **kw: opened.append(p) or real_open(p, **kw)
    )
    ds = am.Dataset.from_chunks(str(tmp_path / "c"))
    assert [os.path.basename(p) for p, _ in asked] == [os.path.basename(p) for p in ds.cache_files]
    for path, positions in asked:
        with open(path, "rb") as f:
            data = f.read()
        # each position starts an IPC message (continuation marker): the next batch's header,
        # or the end-of-stream marker before the footer
        assert len(positions) == pa.ipc.open_file(path).num_record_batches >= 2
        assert all(data[at : at + 4] == b"\xff\xff\xff\xff" for at in positions), positions
    assert ds["x"] == list(range(600_000))


@linux
def test_a_warm_open_asks_for_nothing(tmp_path, monkeypatch):
    am.write_chunks([pa.record_batch({"x": np.arange(1000)})] * 3, str(tmp_path / "c"))
    path = am.Dataset.from_chunks(str(tmp_path / "c")).cache_files[0]
    with open(path, "rb") as f:
        f.read()  # every page in memory
    calls: list[int] = []
    real = os.posix_fadvise
    monkeypatch.setattr(os, "posix_fadvise", lambda *a: calls.append(1) or real(*a))
    assert am.Dataset.from_chunks(str(tmp_path / "c"))["x"][-1] == 999
    assert calls == []  # a rerun's open costs no advice
    drop(path)
    assert am.Dataset.from_chunks(str(tmp_path / "c"))["x"][-1] == 999
    if _counts_disk_reads(path):
        assert calls  # cold: its footer and headers are asked for
