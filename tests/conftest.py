"""Cache-directory factory for the cache and CLI tests: result files with metadata and an age."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

from arrowmix._cache.paths import cache_file_name, indices_file_name
from arrowmix._storage.ipc import write_file

MakeCache = Callable[..., list[str]]


def write_entry(
    directory: str,
    fp: str,
    *,
    kind: str = "map",
    rows: int = 10,
    segments: int | None = None,
    present: int | None = None,
    age: float = 0.0,
    parent: str = "a" * 16,
    extra: dict[str, Any] | None = None,
) -> list[str]:
    """Write ``cache-<fp>.arrow`` (``indices-<fp>.arrow`` for kind "indices"), or ``present``
    of ``segments`` segments, recording our metadata; mtime ``age`` seconds ago."""
    table = pa.table({"x": list(range(rows))})
    if kind == "indices":
        names = [indices_file_name(fp)]
    elif segments is None:
        names = [cache_file_name(fp)]
    else:
        count = segments if present is None else present
        names = [cache_file_name(fp, i, segments) for i in range(count)]
    paths = []
    for i, name in enumerate(names):
        path = os.path.join(directory, name)
        meta = {
            "kind": kind,
            "fingerprint": fp,
            "parent": parent,
            "transform": kind,
            "rows": rows,
            "segment": i,
            "num_segments": segments or 1,
            "created": time.time() - age,
            **(extra or {}),
        }
        write_file(path, table.to_batches(), table.schema, meta=meta)
        stamp = time.time() - age
        os.utime(path, (stamp, stamp))
        paths.append(path)
    return paths


@pytest.fixture
def make_cache(tmp_path: Any) -> MakeCache:
    """``make_cache(fp, directory=None, **options) -> paths`` (default directory: tmp_path)."""

    def make(fp: str, directory: str | None = None, **options: Any) -> list[str]:
        return write_entry(directory or str(tmp_path), fp, **options)

    return make


@pytest.fixture
def small_segments(monkeypatch: pytest.MonkeyPatch) -> None:
    """Map/filter segments of 10 rows (4 for 40 rows), so segment tests stay tiny."""
    from arrowmix._cache import segments as segmod

    monkeypatch.setattr(segmod, "SEGMENT_ROWS", 10)
    monkeypatch.setattr(segmod, "MIN_SEGMENT_ROWS", 10)
