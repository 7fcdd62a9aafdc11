"""Numpy rows over a bounded remote cache: each row outlives the chunk it was read from.

A numpy row's arrays are slices of one copy of its block's values, never views of the
cached chunk file, so rows kept while the stream evicts their chunks keep their values.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

import arrowmix as am

pytestmark = pytest.mark.integration

ROWS_PER_CHUNK = 150
CHUNKS = 8


def tokens(i: int) -> list[int]:
    return [(i * 7 + j) % 50_000 for j in range(200 + i % 57)]


def write_tokens(url: str, so: dict[str, object]) -> None:
    am.write_chunks(
        ({"id": i, "input_ids": np.asarray(tokens(i), np.int32)}
         for i in range(CHUNKS * ROWS_PER_CHUNK)),
        url, rows_per_chunk=ROWS_PER_CHUNK, storage_options=so,
    )  # fmt: skip


def test_numpy_rows_kept_over_an_epoch_outlive_their_evicted_chunks(
    s3_url, s3_storage_options, tmp_path
):
    so = s3_storage_options
    write_tokens(s3_url, so)
    cache = str(tmp_path / "c")
    ds = am.Dataset.from_chunks(
        s3_url, storage_options=so, cache_limit="400KB", chunk_cache_dir=cache
    )
    plain = ds.to_stream(shuffle="chunks", seed=5, infinite=False)
    stream = ds.with_format("numpy").to_stream(shuffle="chunks", seed=5, infinite=False)
    kept = []
    for row in stream:  # every row kept: the cache evicts the chunks they came from
        kept.append(row)
        assert sum(os.path.getsize(os.path.join(cache, n)) for n in os.listdir(cache)) <= 400_000
    assert stream.stats()["evicted"] > 0
    assert [int(r["id"]) for r in kept] == [r["id"] for r in plain]
    assert sorted(int(r["id"]) for r in kept) == list(range(CHUNKS * ROWS_PER_CHUNK))
    for r in kept:
        ids = r["input_ids"]
        assert isinstance(ids, np.ndarray) and ids.dtype == np.int64
        assert ids.tolist() == tokens(int(r["id"]))


def test_a_numpy_stream_resumes_in_a_fresh_stream_over_the_cache(
    s3_url, s3_storage_options, tmp_path
):
    so = s3_storage_options
    write_tokens(s3_url, so)

    def stream(cache: str) -> Any:
        ds = am.Dataset.from_chunks(
            s3_url, storage_options=so, cache_limit="400KB", chunk_cache_dir=cache
        )
        return ds.with_format("numpy").to_stream(shuffle="chunks", seed=2, infinite=False)

    first = stream(str(tmp_path / "a"))
    head = [next(first) for _ in range(500)]
    state = first.state_dict()
    rest = [int(r["id"]) for r in first]
    again = stream(str(tmp_path / "b"))
    again.load_state_dict(state)
    tail = list(again)
    assert [int(r["id"]) for r in tail] == rest
    assert sorted([int(r["id"]) for r in head] + rest) == list(range(CHUNKS * ROWS_PER_CHUNK))
    assert all(r["input_ids"].tolist() == tokens(int(r["id"])) for r in tail)
