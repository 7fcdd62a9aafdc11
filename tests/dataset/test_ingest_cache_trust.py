"""Ingested chunks (``load_dataset``, ``from_json``...) are a cache, checked before served.

Their marker (``_COMPLETE.json``, with each input file's row count: the streaming shards),
manifest and chunks are checked as ``from_generator``'s corpus is: damage of any of them, or
an edited marker, makes the next load convert the files again with a ``CacheWarning``; it
never serves wrong shards nor fails for good on a cache it can rebuild.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

import arrowmix as am
from arrowmix.exceptions import CacheWarning

LENGTHS = (2, 3, 4)


def _files(tmp_path: Any) -> str:
    start = 0
    for i, n in enumerate(LENGTHS):
        rows = "".join(json.dumps({"x": start + j}) + "\n" for j in range(n))
        (tmp_path / f"f{i}.jsonl").write_text(rows)
        start += n
    return str(tmp_path / "*.jsonl")


def _only(tmp_path: Any, pattern: str) -> str:
    [found] = (tmp_path / "cache" / "ingested").glob(pattern)
    return str(found)


def _flip(path: str) -> None:
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        data[len(data) // 2] ^= 1
        f.seek(0)
        f.write(data)


def _counts(path: str) -> None:  # a marker edited to other per-file counts, same total
    with open(path) as f:
        info = json.load(f)
    info["input_rows"] = [3, 2, 4]
    with open(path, "w") as f:
        f.write(json.dumps(info))


DAMAGE = {
    "marker-counts": ("*/_COMPLETE.json", _counts),
    "marker-empty": ("*/_COMPLETE.json", lambda p: os.truncate(p, 0)),
    "marker-flip": ("*/_COMPLETE.json", _flip),
    "manifest-flip": ("*/_manifest.json", _flip),
    "manifest-deleted": ("*/_manifest.json", os.remove),
    "chunk-flip": ("*/chunk-*.arrow", _flip),
    "chunk-truncated": ("*/chunk-*.arrow", lambda p: os.truncate(p, 100)),
    "chunk-deleted": ("*/chunk-*.arrow", os.remove),
}


FAST = ("marker-counts", "marker-flip", "chunk-flip", "chunk-deleted")


@pytest.mark.parametrize(
    "damage", [d if d in FAST else pytest.param(d, marks=pytest.mark.slow) for d in sorted(DAMAGE)]
)
def test_a_damaged_ingest_cache_is_converted_again(tmp_path: Any, damage: str) -> None:
    files, cache = _files(tmp_path), str(tmp_path / "cache")

    def shards() -> list[list[int]]:
        s = am.load_dataset("json", data_files=files, split="train", streaming=True,
                            cache_dir=cache)  # fmt: skip
        return [[r["x"] for r in s.shard(len(LENGTHS), i)] for i in range(len(LENGTHS))]

    want = [[0, 1], [2, 3, 4], [5, 6, 7, 8]]  # one shard per file, as HF
    assert shards() == want
    pattern, hurt = DAMAGE[damage]
    hurt(_only(tmp_path, pattern))
    with pytest.warns(CacheWarning, match="ingested corpus .* Converting its input files again"):
        assert shards() == want
    assert shards() == want  # rebuilt: no warning now (warnings are errors in the tests)
    ds = am.load_dataset("json", data_files=files, split="train", cache_dir=cache)
    assert ds["x"] == list(range(9))
