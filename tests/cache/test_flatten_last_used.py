"""A flatten_indices cache hit counts as a use: size-based cleanup keeps it like a map hit."""

from __future__ import annotations

import os
import time
from typing import Any

import arrowmix as am


def test_a_flatten_indices_cache_hit_refreshes_its_last_used_time(tmp_path: Any) -> None:
    out = tmp_path / "corpus"
    am.write_chunks(iter([{"x": i} for i in range(100)]), str(out))
    view = am.Dataset.from_chunks(str(out)).shuffle(seed=0)
    first = view.flatten_indices()
    path = first.cache_files[0]
    assert os.path.basename(path).startswith("cache-")
    del first
    long_ago = time.time() - 30 * 86400
    os.utime(path, (long_ago, long_ago))
    again = view.flatten_indices()  # a cache hit
    assert again.cache_files[0] == path
    assert os.stat(path).st_mtime > time.time() - 3600
    assert again["x"] == view["x"]
