"""MDS columns whose values change shape from shard to shard, and compressed shards read twice.

The shards are written by mosaicml-streaming's own ``MDSWriter`` in small shards, so the
first shard's values do not show every shape the later ones hold.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import arrowmix as am
from arrowmix._dataset.state import state_of
from arrowmix.exceptions import SchemaMismatchError
from tests.formats.mds_helpers import read_with_streaming, write_mds

N = 40


def meta(k: int) -> Any:
    """JSON values of every shape: dicts of other keys and types, lists, strings, null."""
    if k < 10:  # the first shards: one shape
        return {"k": k, "lang": "en"}
    shapes = [
        {"k": k / 2, "tags": ["a", "b"][: k % 3], "nested": {"deep": [k, None]}},
        [k, "mixed", {"x": 1}],
        f"plain text {k}",
        None,
        {},
        k,
    ]
    return shapes[k % len(shapes)]


def obj(k: int) -> Any:
    """Pickled dicts gaining keys and turning ints into floats in later shards."""
    if k < 10:
        return {"n": k, "tags": []}
    return {"n": k + 0.5, "tags": [f"t{k}"], "extra": {"flag": k % 2 == 0}}


@pytest.fixture(scope="module")
def shaped(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = str(tmp_path_factory.mktemp("mds-shapes") / "corpus")
    rows = ({"id": k, "meta": meta(k), "obj": obj(k)} for k in range(N))
    cols = {"id": "int", "meta": "json", "obj": "pkl"}
    return write_mds(out, cols, rows, compression="zstd", size_limit=400)


def test_json_values_of_every_shard_equal_streaming_reader(shaped: str, tmp_path: Path) -> None:
    assert len(list(Path(shaped).glob("shard.*"))) > 4
    ref = read_with_streaming(shaped, str(tmp_path / "ref"))
    ds = am.Dataset.from_mds(shaped, columns=["id", "meta"])
    assert ds["meta"] == [r["meta"] for r in ref] == [meta(k) for k in range(N)]
    assert [ds[i]["meta"] for i in (0, 13, 39)] == [meta(i) for i in (0, 13, 39)]
    assert type(ds.features["meta"]).__name__ == "Json"  # HF's feature for JSON text
    stream = ds.to_stream(shuffle="chunks", seed=0, infinite=False)  # rows hold the text
    got = {r["id"]: json.loads(r["meta"]) for r in stream}
    assert [got[k] for k in range(N)] == [meta(k) for k in range(N)]


def test_pkl_types_are_unified_over_every_shard(shaped: str, tmp_path: Path) -> None:
    ref = read_with_streaming(shaped, str(tmp_path / "ref"))
    ds = am.Dataset.from_mds(shaped, columns=["obj"], allow_unsafe_types=True)
    kind = state_of(ds).reader.schema.field("obj").type
    assert str(kind) == "struct<n: double, tags: list<item: string>, extra: struct<flag: bool>>"
    got = ds["obj"]
    for row, want in zip(got, (r["obj"] for r in ref), strict=True):
        assert row == {"extra": None, **want}  # a key the shard lacks reads as None


def test_pkl_values_of_no_one_type_name_both_shards(tmp_path: Path) -> None:
    rows = ({"obj": k if k < 4 else f"s{k}"} for k in range(8))
    out = write_mds(str(tmp_path / "bad"), {"obj": "pkl"}, rows, size_limit=100)
    with pytest.raises(SchemaMismatchError, match=r"'obj'.*int64.*shard\.000\d\d\.mds.*string.*"
                       r"shard\.000\d\d\.mds"):  # fmt: skip
        am.Dataset.from_mds(out, allow_unsafe_types=True)


def test_a_compressed_shard_is_decompressed_once_for_its_columns(tmp_path: Path) -> None:
    cols = {"text": "str", "input_ids": "ndarray:int32", "id": "int"}
    rows = ({"text": f"t{k}" * 20, "input_ids": np.arange(k % 30 + 1, dtype=np.int32), "id": k}
            for k in range(200))  # fmt: skip
    out = write_mds(str(tmp_path / "z"), cols, rows, compression="zstd", size_limit=4000)
    shards = len(list(Path(out).glob("shard.*.mds.zstd")))
    assert shards > 4
    ds = am.Dataset.from_mds(out)

    def read(d: am.Dataset, column: str) -> list[Any]:
        return d.select_columns([column])[column]  # projections share the caches

    assert read(ds, "input_ids")[5] == list(range(6))
    assert read(ds, "id") == list(range(200)) and read(ds, "text")[3] == "t3" * 20
    stats = state_of(ds).reader.stats()
    assert stats["columns_decoded"] >= 3 * shards  # every column of every shard
    assert stats["shards_decompressed"] == shards and stats["shard_hits"] >= 2 * shards
    assert 0 < stats["shard_cached_bytes"] <= stats["shard_limit"] == (256 << 20) // 4
    # a budget below one shard keeps none: each new column decompresses it again
    tight = am.Dataset.from_mds(out, cache_size="8KB")
    assert read(tight, "input_ids")[5] == list(range(6)) and read(tight, "id") == list(range(200))
    stats = state_of(tight).reader.stats()
    assert stats["shards_decompressed"] > shards
    assert stats["shard_cached_bytes"] <= stats["shard_limit"] == 8000 // 4
