"""The token stages over a bounded S3 corpus (a real moto server), against the local corpus.

``batch(columnar=True)`` and ``batch(n)`` then ``collate``, both ``pack`` strategies,
``budget_bucket`` and ``bucket(columnar=True)`` read token ids from the pinned cached
chunks (never gathering rows); their output equals the local corpus's, the cache stays
under its limit (a quarter of the corpus), every chunk is downloaded once per epoch, and a
state taken mid-epoch resumes exactly in a fresh reader with an empty cache.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import arrowmix as am
from arrowmix._remote.table import RemoteTable
from arrowmix.stream import Stream
from tests.remote.test_remote_cache import chunk_sizes

DOCS, PER_CHUNK, CHUNKS = 1200, 25, 48


def docs() -> list[list[int]]:
    """Documents of 20..400 token ids; token ``j`` of document ``k`` is ``1000 * k + j``."""
    rng = np.random.default_rng(7)
    return [(1000 * k + np.arange(int(rng.integers(20, 400)))).tolist() for k in range(DOCS)]


def write(url: str, so: dict[str, Any] | None = None) -> None:
    import pyarrow as pa

    table = pa.table({"input_ids": pa.array(docs(), pa.list_(pa.int32())), "id": np.arange(DOCS)})
    am.write_chunks(table, url, rows_per_chunk=PER_CHUNK, storage_options=so)


def local_bytes(directory: str) -> int:
    """Bytes of the copies and partial downloads in the cache directory now."""
    total = 0
    for name in os.listdir(directory) if os.path.isdir(directory) else ():
        if name.endswith((".arrow", ".partial")):
            with contextlib.suppress(FileNotFoundError):  # evicted meanwhile
                total += os.path.getsize(os.path.join(directory, name))
    return total


def batches(pipe: Stream[Any]) -> list[dict[str, list[Any]]]:
    return [{k: np.asarray(v).tolist() for k, v in b.items()} for b in pipe]


def stages() -> dict[str, Callable[[Any], Stream[Any]]]:
    """Each token stage, over a chunk-shuffled epoch ``src`` (as a user writes them).

    The windows (4 chunks of the shuffle, 100 documents of ``pack`` and ``budget_bucket``)
    fit in the cache: it holds 12 of the 48 chunks.
    """
    return {
        "batch_columnar_collate": lambda src: (
            src.shuffle(64, seed=1).batch(32, columnar=True).collate(labels="shift")
        ),
        "batch_collate": lambda src: src.batch(32).collate(keep=["id"], pad_to_multiple_of=8),
        "pack_concat": lambda src: src.pack(
            "input_ids", 512, batch_size=4, separator=0, tail="pad", read_ahead=100
        ),
        "pack_best_fit": lambda src: src.pack(
            "input_ids", 512, strategy="best_fit", batch_size=4, read_ahead=100
        ),
        "budget_bucket_collate": lambda src: src.budget_bucket(
            "input_ids", 8192, 100, seed=2
        ).collate(max_length=300),
        "bucket_columnar_collate": lambda src: src.bucket(
            "input_ids", 16, 200, columnar=True, seed=3
        ).collate(),
    }


@pytest.fixture(scope="module")
def corpora(
    s3_storage_options: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, str, int, int]:
    """``(s3 url, local directory, corpus bytes, largest chunk bytes)``."""
    import uuid

    so = s3_storage_options
    url = f"s3://arrowmix-test/tokens-{uuid.uuid4().hex[:8]}"
    write(url, so)
    local = str(tmp_path_factory.mktemp("local-tokens"))
    write(local)
    sizes = chunk_sizes(so, url)
    assert len(sizes) == CHUNKS
    return url, local, sum(sizes), max(sizes)


def open_remote(corpora: Any, so: dict[str, Any], cache: str) -> am.Dataset:
    url, _, total, _ = corpora
    return am.Dataset.from_chunks(
        url, storage_options=so, cache_limit=total // 4, chunk_cache_dir=cache
    )


def epoch(ds: am.Dataset) -> Any:
    return ds.to_stream(shuffle="chunks", seed=5, infinite=False)


@pytest.mark.parametrize("stage", sorted(stages()))
def test_token_stages_over_s3_equal_the_local_corpus_within_the_limit(
    stage: str, corpora: Any, s3_storage_options: dict[str, Any], tmp_path: Any, monkeypatch: Any
) -> None:
    _, local, total, largest = corpora
    build = stages()[stage]
    expected = batches(build(epoch(am.Dataset.from_chunks(local))))

    take = RemoteTable.take

    def ids_never_gathered(table: RemoteTable, positions: Any) -> Any:
        assert "input_ids" not in table.column_names, "token ids were gathered as rows"
        return take(table, positions)

    monkeypatch.setattr(RemoteTable, "take", ids_never_gathered)
    cache = str(tmp_path / "cache")
    src = epoch(open_remote(corpora, s3_storage_options, cache))
    got, most = [], 0
    for b in build(src):
        got.append({k: np.asarray(v).tolist() for k, v in b.items()})
        most = max(most, local_bytes(cache))
    assert got == expected and len(got) > 4
    assert largest <= most <= total // 4  # the disk stays under the limit
    stats = src.stats()
    assert stats["bytes_downloaded"] == total  # every chunk once: 1.00x the corpus
    assert stats["chunks_downloaded"] == CHUNKS
    src.close()
    assert not [n for n in os.listdir(cache) if n.endswith(".partial")]


@pytest.mark.parametrize("stage", ["batch_collate", "pack_concat", "budget_bucket_collate"])
def test_a_token_pipeline_over_s3_resumes_exactly_in_a_fresh_reader(
    stage: str, corpora: Any, s3_storage_options: dict[str, Any], tmp_path: Any
) -> None:
    build = stages()[stage]
    so = s3_storage_options
    pipe = build(epoch(open_remote(corpora, so, str(tmp_path / "a"))))
    head = [next(pipe) for _ in range(5)]
    state = json.loads(json.dumps(pipe.state_dict()))
    rest = batches(pipe)
    # a new reader (a fresh dataset, an empty cache directory) resumes where the state was
    fresh_cache = str(tmp_path / "b")
    src = epoch(open_remote(corpora, so, fresh_cache))
    again = build(src)
    again.load_state_dict(state)
    resumed, most = [], 0
    for b in again:
        resumed.append({k: np.asarray(v).tolist() for k, v in b.items()})
        most = max(most, local_bytes(fresh_cache))
    assert resumed == rest and len(head) == 5 and rest
    assert most <= corpora[2] // 4
    src.close()
