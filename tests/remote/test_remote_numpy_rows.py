"""Numpy rows over a bounded remote cache: each row outlives the chunk it was read from.

A numpy row's arrays are slices of one copy of its block's values, never views of the
cached chunk file, so rows kept while the stream evicts their chunks keep their values.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrowmix as am
from tests.remote.test_remote_tokens import local_bytes

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
        # read-ahead downloads run meanwhile: a file listed may be gone when it is sized
        assert local_bytes(cache) <= 400_000
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


def mixed_table() -> pa.Table:
    """Token rows, a chunk of which holds null documents, and columns converted as Arrow."""
    n = CHUNKS * ROWS_PER_CHUNK
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "input_ids": pa.array([tokens(i) for i in range(n)], pa.list_(pa.int32())),
            "gaps": pa.array(
                [None if 300 <= i < 450 and i % 5 == 0 else tokens(i)[:7] for i in range(n)],
                pa.list_(pa.uint16()),
            ),
            "score": pa.array([[i / 3] for i in range(n)], pa.list_(pa.float64())),
            "text": [f"t{i}" for i in range(n)],
        }
    )


@pytest.mark.parametrize(
    "view",
    [lambda d: d, lambda d: d.shuffle(seed=4).select(range(100, 1000)),
     lambda d: d.select([7, 1190, 7, 450, 449, 300, 0])],
    ids=["whole", "shuffled range", "selection"],
)  # fmt: skip
def test_numpy_rows_of_mixed_columns_equal_the_local_rows(
    s3_url, s3_storage_options, tmp_path, view
):
    so = s3_storage_options
    table = mixed_table()
    am.write_chunks(table, s3_url, rows_per_chunk=ROWS_PER_CHUNK, storage_options=so)
    cache = str(tmp_path / "c")
    remote = am.Dataset.from_chunks(
        s3_url, storage_options=so, cache_limit="600KB", chunk_cache_dir=cache
    )
    stream = view(remote).with_format("numpy").to_stream(shuffle="chunks", seed=1, infinite=False)
    rows = list(stream)  # all kept while the cache evicts their chunks
    local = view(am.Dataset(table)).with_format("numpy")
    local_rows = list(local.to_stream(shuffle=None, infinite=False))
    assert sorted(int(r["id"]) for r in rows) == sorted(int(r["id"]) for r in local_rows)
    want = {int(r["id"]): r for r in local_rows}
    for r in rows:
        ref = want[int(r["id"])]
        assert list(r) == list(ref)
        for name in ("input_ids", "gaps", "score"):
            a, b = r[name], ref[name]
            assert (a is None) == (b is None), (int(r["id"]), name)
            if b is not None:
                assert a.dtype == b.dtype and a.tolist() == b.tolist(), (int(r["id"]), name)
        assert r["text"] == ref["text"]
    if len(rows) > 500:
        assert stream.stats()["evicted"] > 0


def test_numpy_rows_download_what_plain_rows_download(s3_url, s3_storage_options, tmp_path):
    """The list columns are copied out in the same pass over a chunk as the others."""
    so = s3_storage_options
    am.write_chunks(mixed_table(), s3_url, rows_per_chunk=ROWS_PER_CHUNK, storage_options=so)

    def downloaded(cache: str, fmt: str | None) -> int:
        ds = am.Dataset.from_chunks(
            s3_url, storage_options=so, cache_limit="600KB", chunk_cache_dir=cache
        )
        view = ds.select(list(range(0, 1200, 3)) + list(range(1, 1200, 3)))  # scattered
        stream = view.with_format(fmt).to_stream(shuffle=None, infinite=False)
        assert len(list(stream)) == 800
        return int(stream.stats()["bytes_downloaded"])

    plain = downloaded(str(tmp_path / "a"), None)
    assert downloaded(str(tmp_path / "b"), "numpy") <= plain
