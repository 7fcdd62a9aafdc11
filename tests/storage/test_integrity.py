"""Damaged files are detected: cache files are recomputed (CacheWarning), chunk files raise.

Each damage runs in a subprocess, since reading some of them without the checks crashes the
interpreter (SIGSEGV); the tests assert the exit code and what the child printed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._storage import integrity
from arrowmix._storage.ipc import open_table, read_meta, write_file
from arrowmix.exceptions import CacheCorruptedError, CacheWarning, ChunkFileError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Shared by the children: damage a buffer of a column of the first record batch in place.
_PRELUDE = """
import os, sys, warnings
import numpy as np
import pyarrow as pa
import arrowmix as am
from arrowmix.exceptions import CacheWarning, ChunkFileError

def buffer_offset(path, column, index):
    base = pa.memory_map(path).read_buffer()
    batch = pa.ipc.open_file(base).get_batch(0)
    return batch.column(column).buffers()[index].address - base.address

def poke(path, column, index, slot, value, dtype=np.int32):
    at = buffer_offset(path, column, index) + slot * np.dtype(dtype).itemsize
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(np.array(value, dtype=dtype).tobytes())

def fn(batch):
    return {"n": [len(s) for s in batch["s"]], "t": [s.upper() for s in batch["s"]],
            "l": [[len(s)] * 3 for s in batch["s"]]}

def data(d):
    if not os.path.isdir(d):
        am.write_chunks(pa.table({"s": ["ab" * (i % 50) for i in range(3000)]}), d)
    return am.Dataset.from_chunks(d)

def cache_file(d):
    return next(os.path.join(d, n) for n in os.listdir(d) if n.startswith("cache-")
                and n.endswith(".arrow"))

warnings.simplefilter("always")
"""


def run_child(code: str, tmp_path: Any) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": ROOT,
        "ARROWMIX_CACHE": str(tmp_path / "amcache"),
        "ARROWMIX_PROGRESS": "0",
    }
    script = _PRELUDE + textwrap.dedent(code)
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


# (column, buffer index, slot, value, dtype): a value, string offsets, list offsets
SEGMENT_DAMAGE = {
    "value": ("n", 1, 7, 12345, np.int64),
    "string_offsets": ("t", 1, 10, 10**9, np.int32),
    "list_offsets": ("l", 1, 10, 10**9, np.int32),
}


@pytest.mark.parametrize("damage", sorted(SEGMENT_DAMAGE))
def test_damaged_map_segment_is_recomputed_with_a_warning(tmp_path, damage):
    column, index, slot, value, dtype = SEGMENT_DAMAGE[damage]
    code = f"""
    ds = data("c")
    want = ds.map(fn, batched=True).to_table().to_pylist()
    path = cache_file("c")
    poke(path, {column!r}, {index}, {slot}, {value}, np.{np.dtype(dtype).name})
    with warnings.catch_warnings(record=True) as caught:
        again = am.Dataset.from_chunks("c").map(fn, batched=True)
        got = again.to_table().to_pylist()
    assert got == want, "damaged data served"
    msgs = [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]
    assert len(msgs) == 1 and path in msgs[0] and "checksum mismatch" in msgs[0], msgs
    print("OK")
    """
    res = run_child(code, tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip().endswith("OK")


@pytest.mark.parametrize("writer", ["arrowmix", "pyarrow"])
def test_chunk_with_damaged_string_offsets_raises_naming_the_file(tmp_path, writer):
    if writer == "arrowmix":
        make = 'am.write_chunks(pa.table({"s": ["ab" * i for i in range(300)]}), "c")\n'
    else:  # a foreign file without a checksum: structural validation
        make = """
        os.makedirs("c")
        t = pa.table({"s": ["ab" * i for i in range(300)]})
        with pa.OSFile("c/chunk-00000.arrow", "wb") as f, pa.ipc.new_file(f, t.schema) as w:
            w.write_table(t)
        """
    code = textwrap.dedent(make) + textwrap.dedent("""
    assert len(am.Dataset.from_chunks("c")) == 300  # a clean open is remembered on disk
    poke("c/chunk-00000.arrow", "s", 1, 10, 10**9)
    try:
        ds = am.Dataset.from_chunks("c")
        print(ds["s"][:20])
    except ChunkFileError as exc:
        print("ERROR", exc)
    """)
    res = run_child(code, tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.startswith("ERROR")
    assert "chunk-00000.arrow" in res.stdout and "Offset invariant failure" in res.stdout


def test_damage_is_seen_even_with_the_modification_time_restored(tmp_path):
    am.write_chunks(pa.table({"s": ["ab" * i for i in range(100)]}), tmp_path / "c")
    path = str(tmp_path / "c" / "chunk-00000.arrow")
    assert am.Dataset.from_chunks(str(tmp_path / "c"))["s"][7] == "ab" * 7
    st = os.stat(path)
    at = _data_offset(path, "s", buffer=1) + 10 * 4  # the 11th string offset
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(np.int32(10**9).tobytes())
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    with pytest.raises(ChunkFileError, match=r"chunk-00000\.arrow.*Offset invariant failure"):
        am.Dataset.from_chunks(str(tmp_path / "c"))


def _data_offset(path: str, column: str, buffer: int = 1) -> int:
    base = pa.memory_map(path).read_buffer()
    batch = pa.ipc.open_file(base).get_batch(0)
    return int(batch.column(column).buffers()[buffer].address - base.address)


def _flip_value(path: str, column: str, slot: int) -> None:
    at = _data_offset(path, column) + slot * 8
    with open(path, "r+b") as f:
        f.seek(at)
        old = np.frombuffer(f.read(8), dtype=np.int64)[0]
        f.seek(at)
        f.write(np.int64(old ^ 1).tobytes())


def test_damaged_indices_file_is_rewritten(tmp_path, monkeypatch):
    from arrowmix._dataset import indices

    monkeypatch.setattr(indices, "INDICES_FILE_MIN_ROWS", 10)
    am.write_chunks(pa.table({"v": list(range(50))}), tmp_path / "c")
    ds = am.Dataset.from_chunks(str(tmp_path / "c"))
    want = ds.shuffle(seed=1)["v"]
    (path,) = [str(p) for p in (tmp_path / "c").glob("indices-*.arrow")]
    _flip_value(path, "indices", 3)
    with pytest.warns(CacheWarning, match="indices-.*checksum mismatch.*Rewriting"):
        again = am.Dataset.from_chunks(str(tmp_path / "c")).shuffle(seed=1)
    assert again["v"] == want


def test_damaged_flatten_file_is_recomputed(tmp_path):
    am.write_chunks(pa.table({"v": list(range(50))}), tmp_path / "c")
    ds = am.Dataset.from_chunks(str(tmp_path / "c")).shuffle(seed=2)
    want = ds.flatten_indices()["v"]
    (path,) = [str(p) for p in (tmp_path / "c").glob("cache-*.arrow")]
    _flip_value(path, "v", 3)
    with pytest.warns(CacheWarning, match="cache-.*checksum mismatch.*Recomputing"):
        again = ds.flatten_indices()
    assert again["v"] == want


def test_damaged_filter_file_is_recomputed(tmp_path):
    am.write_chunks(pa.table({"v": list(range(50))}), tmp_path / "c")
    ds = am.Dataset.from_chunks(str(tmp_path / "c"))
    want = ds.filter(lambda r: r["v"] % 3 == 0)["v"]
    (path,) = [str(p) for p in (tmp_path / "c").glob("cache-*.arrow")]
    _flip_value(path, "indices", 2)  # 6 -> 7: still in range, so only the checksum tells
    with pytest.warns(CacheWarning, match="checksum mismatch"):
        again = am.Dataset.from_chunks(str(tmp_path / "c")).filter(lambda r: r["v"] % 3 == 0)
    assert again["v"] == want


def test_cache_file_without_checksum_is_not_served(tmp_path):
    t = pa.table({"x": [1, 2]})
    path = str(tmp_path / "cache-0123456789abcdef.arrow")
    with pa.OSFile(path, "wb") as f, pa.ipc.new_file(f, t.schema) as w:
        w.write_table(t)
    with pytest.raises(CacheCorruptedError, match="no checksum"):
        open_table(path, check="checksum")
    assert open_table(path, check="chunk").num_rows == 2  # as data: validated instead


def test_chunk_files_stay_plain_arrow_files(tmp_path):
    am.write_chunks(pa.table({"v": [1]}), tmp_path / "c")
    # Only the chunk marker (no checksum: chunks are identified by their content digest).
    meta = read_meta(open_table(str(tmp_path / "c" / "chunk-00000.arrow")).schema)
    assert meta == {"kind": "chunk", "format": 1}


def test_written_files_carry_a_matching_checksum(tmp_path):
    path = str(tmp_path / "f.arrow")
    t = pa.table({"s": ["x" * i for i in range(100)]})
    write_file(path, t.to_batches(max_chunksize=30), t.schema, meta={"kind": "map"})
    meta = read_meta(open_table(path).schema)
    assert len(meta[integrity.CHECKSUM_KEY]) == 16 and meta["kind"] == "map"
    buf = pa.memory_map(path).read_buffer()
    assert integrity.problem(buf, structural=False) is None
    data = bytearray(buf.to_pybytes())
    data[len(data) // 2] ^= 0xFF
    assert "checksum mismatch" in str(integrity.problem(pa.py_buffer(data), structural=False))


@pytest.mark.parametrize("damage", ["truncated", "empty"])
def test_truncated_or_empty_cache_files_are_recomputed(tmp_path, monkeypatch, damage):
    from arrowmix._dataset import indices

    monkeypatch.setattr(indices, "INDICES_FILE_MIN_ROWS", 10)
    am.write_chunks(pa.table({"v": list(range(50))}), tmp_path / "c")

    def derived(ds: am.Dataset) -> tuple[list[Any], ...]:
        view = ds.shuffle(seed=1)
        doubled = ds.map(lambda r: {"w": 2 * r["v"]})
        return view["v"], view.flatten_indices()["v"], doubled["w"]

    want = derived(am.Dataset.from_chunks(str(tmp_path / "c")))
    damaged = sorted(p for p in (tmp_path / "c").glob("*.arrow") if "chunk" not in p.name)
    assert len(damaged) == 3  # indices, flatten, map
    for p in damaged:
        with open(p, "r+b") as f:
            f.truncate(p.stat().st_size // 2 if damage == "truncated" else 0)
    with pytest.warns(CacheWarning) as caught:
        got = derived(am.Dataset.from_chunks(str(tmp_path / "c")))
    assert got == want
    warned = " ".join(str(w.message) for w in caught)
    assert all(str(p) in warned for p in damaged)
    assert derived(am.Dataset.from_chunks(str(tmp_path / "c"))) == want  # repaired for good
