"""The token stages after ``mix`` of bounded S3 corpora (a real moto server), against local ones.

Two corpora (24 chunks each, distinct token ids) are read through one chunk cache holding
half of them: each corpus's two windows of 4 chunks (where a batch straddles them) and its
read-ahead of 4. ``mix`` of their chunk-shuffled epochs, deterministic or seeded, then
``batch(n).collate()``, ``batch(columnar=True)`` (with or without ``collate``), both
``pack`` strategies (with their ``segment_ids``/``position_ids``/labels), ``budget_bucket``
and ``bucket(columnar=True)``: the batches equal those of the same mix of local copies, the
token ids are never gathered as rows, the cache stays under its limit after every batch,
each source downloads its corpus exactly once, and a state taken mid-epoch resumes exactly
in a fresh reader with an empty cache. A remote corpus mixed with a local one works too.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._remote.table import RemoteTable
from arrowmix.stream import Stream, mix
from tests.remote.test_remote_cache import chunk_sizes
from tests.remote.test_remote_tokens import local_bytes, stages

DOCS, PER_CHUNK, CHUNKS = 600, 25, 24


def table(corpus: int) -> pa.Table:
    """Documents of 20..400 ids; token ``j`` of document ``k`` of ``corpus`` is unique."""
    rng = np.random.default_rng(11 + corpus)
    base = 10_000_000 * (corpus + 1)
    docs = [(base + 1000 * k + np.arange(int(rng.integers(20, 400)))).tolist() for k in range(DOCS)]
    ids = pa.array(docs, pa.list_(pa.int32()))
    return pa.table({"input_ids": ids, "id": np.arange(DOCS) + corpus * DOCS})


def all_stages() -> dict[str, Callable[[Any], Stream[Any]]]:
    """The token stages of ``test_remote_tokens``, plus plain columnar batches and pack fields."""
    return {
        **stages(),
        "batch_columnar": lambda src: src.batch(32, columnar=True),
        "pack_fields": lambda src: src.pack(
            "input_ids",
            512,
            strategy="best_fit",
            batch_size=4,
            read_ahead=100,
            outputs=("segment_ids", "position_ids", "cu_seqlens"),
            labels="shift",
        ),
    }


@pytest.fixture(scope="module")
def corpora(
    s3_storage_options: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> list[tuple[str, str, int]]:
    """``(s3 url, local directory, corpus bytes)`` of each of the two corpora."""
    out = []
    for corpus in range(2):
        url = f"s3://arrowmix-test/mix-tokens-{uuid.uuid4().hex[:8]}"
        am.write_chunks(
            table(corpus), url, rows_per_chunk=PER_CHUNK, storage_options=s3_storage_options
        )
        local = str(tmp_path_factory.mktemp(f"local-mix-{corpus}"))
        am.write_chunks(table(corpus), local, rows_per_chunk=PER_CHUNK)
        sizes = chunk_sizes(s3_storage_options, url)
        assert len(sizes) == CHUNKS
        out.append((url, local, sum(sizes)))
    return out


def limit_of(corpora: list[tuple[str, str, int]]) -> int:
    """The shared cache's limit: half of both corpora (24 of their 48 chunks)."""
    return sum(total for _, _, total in corpora) // 2


def open_remote(corpora: Any, k: int, so: dict[str, Any], cache: str) -> am.Dataset:
    return am.Dataset.from_chunks(
        corpora[k][0], storage_options=so, cache_limit=limit_of(corpora), chunk_cache_dir=cache
    )


def epoch(ds: am.Dataset, k: int) -> Any:
    return ds.to_stream(shuffle="chunks", seed=5 + k, infinite=False)


def mixed(sources: list[Any], seed: int | None) -> Any:
    return mix(sources, [0.6, 0.4], seed=seed)


def local_mix(corpora: Any, seed: int | None) -> Any:
    return mixed([epoch(am.Dataset.from_chunks(corpora[k][1]), k) for k in range(2)], seed)


def as_lists(batch: Any) -> dict[str, Any]:
    if isinstance(batch, pa.Table):
        return batch.to_pydict()
    return {k: np.asarray(v).tolist() for k, v in batch.items()}


@pytest.fixture
def no_row_gathers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Token ids are copied out of the pinned chunks, never gathered as rows."""
    take = RemoteTable.take

    def ids_never_gathered(table: RemoteTable, positions: Any) -> Any:
        assert "input_ids" not in table.column_names, "token ids were gathered as rows"
        return take(table, positions)

    monkeypatch.setattr(RemoteTable, "take", ids_never_gathered)


CASES = [(stage, 4) for stage in sorted(all_stages())] + [
    (stage, None) for stage in ("batch_collate", "pack_concat", "budget_bucket_collate")
]


@pytest.mark.parametrize(("stage", "seed"), CASES)
def test_token_stages_after_mix_of_s3_corpora_equal_the_local_mix_within_the_limit(
    stage: str, seed: int | None, corpora: Any, s3_storage_options: dict[str, Any],
    tmp_path: Any, request: pytest.FixtureRequest,
) -> None:  # fmt: skip
    build = all_stages()[stage]
    local = local_mix(corpora, seed)
    expected = [as_lists(b) for b in build(local)]
    if stage != "batch_columnar":  # a columnar batch is a table: it gathers its rows
        request.getfixturevalue("no_row_gathers")
    cache = str(tmp_path / "cache")
    sources = [epoch(open_remote(corpora, k, s3_storage_options, cache), k) for k in range(2)]
    m = mixed(sources, seed)
    pipe = build(m)
    got, most = [], 0
    for b in pipe:
        got.append(as_lists(b))
        most = max(most, local_bytes(cache))
    assert got == expected and len(got) > 4
    assert most <= limit_of(corpora)  # the disk stays under the limit after every batch
    # the mix counts the rows (and the tokens a collate or pack yielded) of each source
    keys = ("counts", "tokens")
    assert {k: m.stats().get(k) for k in keys} == {k: local.stats().get(k) for k in keys}
    for k, src in enumerate(sources):  # every chunk of each corpus, about once
        # Two read-aheads share a cache of half the corpora: when one runs late (a loaded
        # machine), a chunk it asked for can be evicted for the other's before it is read,
        # and is fetched again. Full CI runs saw one such chunk (1.04x); never more than 1.1x.
        stats = src.stats()
        assert corpora[k][2] <= stats["bytes_downloaded"] <= 1.1 * corpora[k][2]
        assert CHUNKS <= stats["chunks_downloaded"] <= 1.1 * CHUNKS
        src.close()


@pytest.mark.parametrize(("stage", "seed"), [("batch_collate", 4), ("pack_concat", None)])
def test_a_remote_corpus_mixed_with_a_local_one(
    stage: str, seed: int | None, corpora: Any, s3_storage_options: dict[str, Any],
    tmp_path: Any, no_row_gathers: None,
) -> None:  # fmt: skip
    build = all_stages()[stage]
    expected = [as_lists(b) for b in build(local_mix(corpora, seed))]
    cache = str(tmp_path / "cache")
    remote = epoch(open_remote(corpora, 0, s3_storage_options, cache), 0)
    local = epoch(am.Dataset.from_chunks(corpora[1][1]), 1)
    assert [as_lists(b) for b in build(mixed([remote, local], seed))] == expected
    assert remote.stats()["bytes_downloaded"] == corpora[0][2]
    remote.close()


@pytest.mark.parametrize(
    ("stage", "seed"),
    [
        ("batch_collate", 4),
        pytest.param("pack_concat", None, marks=pytest.mark.slow),
        pytest.param("budget_bucket_collate", 4, marks=pytest.mark.slow),
        ("pack_best_fit", 4),
    ],
)
def test_a_token_pipeline_after_mix_of_s3_corpora_resumes_exactly_in_a_fresh_reader(
    stage: str, seed: int | None, corpora: Any, s3_storage_options: dict[str, Any], tmp_path: Any
) -> None:
    build = all_stages()[stage]
    so = s3_storage_options

    def pipeline(cache: str) -> tuple[Stream[Any], list[Any]]:
        sources = [epoch(open_remote(corpora, k, so, cache), k) for k in range(2)]
        return build(mixed(sources, seed)), sources

    pipe, _ = pipeline(str(tmp_path / "a"))
    head = [next(pipe) for _ in range(5)]
    state = json.loads(json.dumps(pipe.state_dict()))
    rest = [as_lists(b) for b in pipe]
    fresh = str(tmp_path / "b")  # a new reader: fresh datasets, an empty cache directory
    again, sources = pipeline(fresh)
    again.load_state_dict(state)
    resumed, most = [], 0
    for b in again:
        resumed.append(as_lists(b))
        most = max(most, local_bytes(fresh))
    assert resumed == rest and len(head) == 5 and rest
    assert most <= limit_of(corpora)
    for src in sources:
        src.close()
