"""Lance datasets read in place equal pylance's own reads, one version pinned at open."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._dataset.state import state_of
from arrowmix.exceptions import ChunkFileError

lance = pytest.importorskip("lance")

N = 1000


def table(n: int = N, start: int = 0) -> pa.Table:
    """Columns of the types a training corpus holds, with nulls where Arrow allows."""
    i = np.arange(start, start + n)
    null = i % 7 == 3
    return pa.table({
        "id": pa.array(i), "i8": pa.array((i % 100).astype(np.int8)),
        "u32": pa.array(i.astype(np.uint32)),
        "f32": pa.array((i / 3).astype(np.float32), mask=null),
        "s": pa.array([f"doc {k} é" for k in i], mask=null),
        "bin": pa.array([bytes([k % 256]) * (k % 5) for k in i], pa.binary()),
        "input_ids": pa.array([list(range(k % 9)) for k in i], pa.list_(pa.int32())),
        "st": pa.array([{"a": int(k), "b": str(k)} for k in i],
                       pa.struct([("a", pa.int64()), ("b", pa.string())])),
    })  # fmt: skip


@pytest.fixture
def uri(tmp_path: Path) -> str:
    path = str(tmp_path / "corpus.lance")
    lance.write_dataset(table(), path, max_rows_per_file=300)  # 4 fragments
    return path


def test_every_row_equals_lance_to_table_and_take(uri: str) -> None:
    ref = lance.dataset(uri)
    ds = am.Dataset.from_lance(uri, block_rows=128)
    assert len(ds) == N and ds.column_names == ref.schema.names
    assert ds[:] == ref.to_table().to_pydict()
    rng = np.random.default_rng(0)
    pos = rng.integers(0, N, 200)  # any order, repeats
    assert ds.select(pos.tolist())[:] == ref.take(pos).to_pydict()
    for i in rng.integers(0, N, 30).tolist():  # ds[i]: one row taken alone
        assert ds[i] == {k: v[0] for k, v in ref.take([i]).to_pydict().items()}
    assert [r["id"] for r in ds] == list(range(N))
    some = ref.take(range(5, 9), columns=["s", "id"]).to_pydict()
    assert ds.select_columns(["s", "id"])[5:9] == some


def test_columns_projection_and_pickling(uri: str) -> None:
    ds = am.Dataset.from_lance(uri, columns=["input_ids", "s"], block_rows=100)
    assert ds.column_names == ["input_ids", "s"]
    assert ds[:] == lance.dataset(uri).to_table(columns=["input_ids", "s"]).to_pydict()
    again = pickle.loads(pickle.dumps(ds))
    assert again[:] == ds[:] and again.fingerprint == ds.fingerprint
    with pytest.raises(ValueError, match=r"Column 'nope' is not in the Lance dataset"):
        am.Dataset.from_lance(uri, columns=["nope"])


def test_version_is_pinned_at_open(uri: str) -> None:
    ds = am.Dataset.from_lance(uri)
    before, fp = ds[:], ds.fingerprint
    lance.write_dataset(table(50, N), uri, mode="append")
    lance.dataset(uri).delete("id < 10")
    assert len(ds) == N and ds[:] == before  # the open Dataset reads its version
    assert pickle.loads(pickle.dumps(ds))[:] == before  # another process too
    latest = am.Dataset.from_lance(uri)
    assert latest[:] == lance.dataset(uri).to_table().to_pydict()
    assert len(latest) == N + 40 and latest.fingerprint != fp
    old = am.Dataset.from_lance(uri, version=1)
    assert old[:] == before and old.fingerprint == fp


def double(row: dict) -> dict:
    return {"twice": row["id"] * 2}


def test_map_cache_reused_for_a_version_and_not_for_the_next(uri: str, tmp_path: Path) -> None:
    cache = tmp_path / "results"
    first = am.Dataset.from_lance(uri, cache_dir=cache).map(double)
    assert first.cache_files and all(f.startswith(str(cache)) for f in first.cache_files)
    second = am.Dataset.from_lance(uri, cache_dir=cache).map(double)
    assert second.cache_files == first.cache_files  # the rerun loads the cache
    assert second["twice"] == [2 * k for k in range(N)]
    lance.dataset(uri).delete("id >= 500")
    third = am.Dataset.from_lance(uri, cache_dir=cache).map(double)
    assert third.cache_files != first.cache_files  # a new version: never stale rows
    assert third["twice"] == [2 * k for k in range(500)]


def test_streams_deliver_every_row_once(uri: str) -> None:
    ds = am.Dataset.from_lance(uri, block_rows=64)
    for shuffle in ("global", "blocks", "chunks", None):
        got = sorted(r["id"] for r in ds.to_stream(shuffle=shuffle, seed=3, infinite=False))
        assert got == list(range(N)), shuffle
    ranks = [
        [r["id"] for r in ds.to_stream(seed=1, infinite=False, num_instances=3, instance_rank=k)]
        for k in range(3)
    ]
    assert sorted(r for rank in ranks for r in rank) == list(range(N))


def test_block_cache_stays_within_its_budget(uri: str) -> None:
    ds = am.Dataset.from_lance(uri, block_rows=50, cache_size="16KB")
    list(ds.to_stream(shuffle="chunks", seed=0, infinite=False))
    stats = state_of(ds).reader.stats()
    assert stats["evicted"] > 0 and stats["cached_bytes"] <= 16 << 10


def test_not_a_dataset_is_named(tmp_path: Path) -> None:
    with pytest.raises(ChunkFileError, match=r"nothing.lance.* is not a readable Lance dataset"):
        am.Dataset.from_lance(tmp_path / "nothing.lance")
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "x.txt").write_text("not lance")
    with pytest.raises(ChunkFileError, match=r"plain.* is not a readable Lance dataset"):
        am.Dataset.from_lance(tmp_path / "plain")


def test_missing_version_and_removed_files_are_named(uri: str) -> None:
    with pytest.raises(ChunkFileError, match=r"at version 9 is not a readable Lance dataset"):
        am.Dataset.from_lance(uri, version=9)
    ds = am.Dataset.from_lance(uri, block_rows=100)
    for f in (Path(uri) / "data").iterdir():
        f.unlink()
    with pytest.raises(ChunkFileError, match=r"Lance data file '.*corpus.lance/data/.*' changed "
                       r"since it was opened \(it cannot be read now"):  # fmt: skip
        ds[:]
    with pytest.raises(ValueError, match="block_rows"):
        am.Dataset.from_lance(uri, block_rows=0)
