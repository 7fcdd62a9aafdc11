"""``shuffle="blocks"`` over remote chunks read through a bounded cache."""

from __future__ import annotations

from typing import Any

import pytest

import arrowmix as am

pytestmark = pytest.mark.integration


def test_blocks_over_a_bounded_remote_corpus_read_every_row(
    s3_url: str, s3_storage_options: dict[str, Any], tmp_path: Any
) -> None:
    rows = ({"id": i, "ids": [i % 50] * (i % 9)} for i in range(1200))
    am.write_chunks(rows, s3_url, rows_per_chunk=300, storage_options=s3_storage_options)
    ds = am.Dataset.from_chunks(
        s3_url, storage_options=s3_storage_options, cache_limit="50MB",
        chunk_cache_dir=str(tmp_path),
    )  # fmt: skip
    for world in (1, 3):
        seen = []
        for rank in range(world):
            s = ds.to_stream(
                shuffle="blocks", seed=2, infinite=False, num_instances=world,
                instance_rank=rank, block_size=64, window_blocks=3,
            )  # fmt: skip
            seen += [r["id"] for r in s]
        assert sorted(seen) == list(range(1200))
