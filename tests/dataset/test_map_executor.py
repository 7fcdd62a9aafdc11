"""The ``executor=`` hook of map/filter: names, objects, and that only missing segments go."""

from __future__ import annotations

import os

import pytest

import arrowmix as am


@pytest.fixture
def chunked(tmp_path):
    am.write_chunks(({"n": i} for i in range(40)), tmp_path / "c", rows_per_chunk=15)
    return am.Dataset.from_chunks(str(tmp_path / "c"))


class InProcess:
    """An executor that runs segments in this process, in reverse order, and records them."""

    def __init__(self):
        self.seen = []

    def run_segments(self, fn, job, segments, num_proc, *, on_segment):
        for seg in reversed(segments):
            self.seen.append((seg.index, num_proc))
            fn(job, seg, lambda n: None)
            on_segment(seg.num_input_rows)


def test_executor_object_gets_only_missing_segments(chunked, small_segments):
    ex = InProcess()
    out = chunked.map(lambda r: {"sq": r["n"] ** 2}, executor=ex, num_proc=3)
    assert ex.seen == [(3, 3), (2, 3), (1, 3), (0, 3)]
    assert out["sq"] == [n * n for n in range(40)]
    os.unlink(next(f for f in out.cache_files if "-00002-of-" in f))
    ex.seen.clear()
    again = chunked.map(lambda r: {"sq": r["n"] ** 2}, executor=ex)
    assert ex.seen == [(2, None)] and again["sq"] == out["sq"]
    ex.seen.clear()
    assert chunked.map(lambda r: {"sq": r["n"] ** 2}, executor=ex)["sq"] == out["sq"]
    assert ex.seen == []  # a cache hit runs nothing


def test_executor_filter_and_local_name(chunked, small_segments):
    ex = InProcess()
    kept = chunked.filter(lambda r: r["n"] % 4 == 0, executor=ex)
    assert kept["n"] == list(range(0, 40, 4)) and len(ex.seen) == 4
    local = chunked.filter(lambda r: r["n"] % 4 == 0, executor="local")
    assert local.fingerprint == kept.fingerprint and local["n"] == kept["n"]


def test_executor_errors_name_the_culprit(chunked):
    with pytest.raises(ValueError, match=r"Unknown executor 'dask'.*\['ray'\]"):
        chunked.map(lambda r: {}, executor="dask")
    with pytest.raises(ValueError, match="run_segments method; got int"):
        chunked.filter(lambda r: True, executor=3)
