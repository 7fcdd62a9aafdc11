"""Pinned fingerprints and cache file names: a refactor must leave them byte-identical.

The values were computed on main before the map engine moved into its own package. A change
here invalidates every user's cache and every shipped checkpoint that records a fingerprint,
so it must be deliberate (a ``version=`` bump), never a side effect of moving code.
"""

from __future__ import annotations

import os

import pyarrow as pa

import arrowmix as am

PINS = {
    "from_dict": "e176192990ee01c8",
    "map_batched": "2cac9870248bd0a5",
    "map_rows_indices": "baf58eb4149e21da",
    "filter": "de606e210af612af",
    "select": "bbc03a7411783ec1",
    "shuffle": "e4b6be61eac9981d",
    "chain": "b9b1abf2872321c7",
}
FILE_PINS = {
    "map_file": "cache-c4b45917390b4d02.arrow",
    "filter_file": "cache-eec0f314e570f001.arrow",
    "map_nproc_file": "cache-f8a700629d160a25.arrow",
}


def add_one(batch):
    return {"y": [x + 1 for x in batch["x"]]}


def with_index(row, idx):
    return {"z": row["x"] * 10 + idx}


def is_even(row):
    return row["x"] % 2 == 0


def _base():
    return am.Dataset.from_dict({"x": list(range(12)), "s": [str(i) for i in range(12)]})


def _fingerprints():
    ds = _base()
    return {
        "from_dict": ds.fingerprint,
        "map_batched": ds.map(add_one, batched=True, batch_size=5).fingerprint,
        "map_rows_indices": ds.map(with_index, with_indices=True).fingerprint,
        "filter": ds.filter(is_even).fingerprint,
        "select": ds.select([3, 1, 4, 1, 5]).fingerprint,
        "shuffle": ds.shuffle(seed=42).fingerprint,
        "chain": ds.shuffle(seed=1)
        .select(range(8))
        .map(add_one, batched=True)
        .filter(is_even)
        .fingerprint,
    }


def _cache_names(tmp_path):
    am.write_chunks(({"x": i, "s": str(i)} for i in range(12)), tmp_path / "src", rows_per_chunk=5)
    ds = am.Dataset.from_chunks(str(tmp_path / "src"))
    mapped = ds.map(add_one, batched=True, batch_size=4)
    kept = ds.filter(is_even)
    multi = ds.map(with_index, with_indices=True, num_proc=2)
    assert mapped["y"] == [i + 1 for i in range(12)]
    assert kept["x"] == list(range(0, 12, 2))
    assert multi["z"] == [i * 11 for i in range(12)]
    return {
        "map_file": os.path.basename(mapped.cache_files[-1]),
        "filter_file": os.path.basename(kept.cache_files[-1]),
        "map_nproc_file": os.path.basename(multi.cache_files[-1]),
    }


def test_fingerprints_are_pinned():
    assert _fingerprints() == PINS


def test_cache_file_names_are_pinned(tmp_path):
    assert _cache_names(tmp_path) == FILE_PINS


def test_memory_table_chunking_does_not_change_the_pin():
    table = pa.table({"x": list(range(12)), "s": [str(i) for i in range(12)]})
    assert am.Dataset.from_arrow(table.to_batches(5)).fingerprint == PINS["from_dict"]
